# SPDX-License-Identifier: GPL-2.0
#
# The cases of 65-hostile-ud.sh, in one process: it joins netns B (setns)
# and reads ib1's counters from /proc/net/dev and the IP stack's SNMP
# files there, softib's from debugfs, because a shell snapshot (ip netns
# exec, cat, awk) costs seconds in TCG. Prints "# ..." diagnostics, one
# per case, and "FAIL ..." lines; exit 1 if any case failed.
#
# usage: 65-hostile-ud.py INJECT QPN NETNS ours|intree N FRAMES SEED MLID

import ctypes
import os
import random
import struct
import sys
import time

inj, qpn, ns, driver, n_case, frames, seed, bcast = sys.argv[1:9]
n_case, frames, seed = int(n_case), int(frames), int(seed)
counters = os.path.dirname(inj) + '/counters'
libc = ctypes.CDLL(None, use_errno=True)
if libc.setns(os.open('/run/netns/' + ns, os.O_RDONLY), 0x40000000):
    sys.exit('setns %s: errno %d' % (ns, ctypes.get_errno()))


def snap():
    s = {}
    for line in open('/proc/net/dev'):
        if line.strip().startswith('ib1:'):
            v = [int(x) for x in line.split(':', 1)[1].split()]
            # rx: bytes packets errs drop fifo frame compressed multicast;
            # "frame" is rx_length_errors + over + crc + frame errors
            s.update(rx_packets=v[1], rx_errors=v[2], rx_dropped=v[3],
                     rx_length_errors=v[5], multicast=v[7])
    for f in ('/proc/net/snmp', '/proc/net/netstat'):
        names = {}
        for line in open(f):
            k, rest = line.split(':', 1)
            if k in names:
                for n, v in zip(names[k], rest.split()):
                    s[k + ':' + n] = int(v)
            else:
                names[k] = rest.split()
    for line in open('/proc/net/snmp6'):
        k, v = line.split()
        s[k] = int(v)
    for line in open(counters):
        k, v = line.split()
        s['sib_' + k] = int(v)
    return s


def moved(a, b):
    return ' '.join('%s+%d' % (k, b[k] - a.get(k, 0))
                    for k in sorted(b) if b[k] != a.get(k, 0)) or 'nothing'


def csum(b):
    if len(b) % 2:
        b += b'\0'
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def ip4(payload, tot=None, ihl=5, proto=1):
    h = struct.pack('!BBHHHBBH4s4s', 0x40 | ihl, 0, tot or 20 + len(payload),
                    1, 0, 64, proto, 0, bytes([192, 0, 2, 1]),
                    bytes([192, 0, 2, 2]))
    return h[:10] + struct.pack('!H', csum(h)) + h[12:] + payload


def icmp_echo(seq):
    m = struct.pack('!BBHHH', 8, 0, 0, 0x1234, seq) + b'hostile'
    return m[:2] + struct.pack('!H', csum(m)) + m[4:]


def ip6(plen):
    src = bytes.fromhex('fe80' + '00' * 13 + '99')
    dst = bytes.fromhex('ff02' + '00' * 13 + '01')
    return struct.pack('!IHBB', 6 << 28, plen, 59, 255) + src + dst


def arp(hln=20):
    return struct.pack('!HHBBH', 32, 0x0800, hln, 4, 1) + bytes(2 * hln + 8)


def E(t):
    return struct.pack('!HH', t, 0)


ECHO = E(0x0800) + ip4(icmp_echo(1))
U = 'qpn=%s qkey=0xb' % qpn
# name, counter with ours, counter with in-tree, header, payload
cases = [
    # ours drops runts before the stack; in-tree passes them up, with a
    # protocol read past the frame
    ('short', 'rx_length_errors', 'rx_packets', U, b'\x08\x00'),
    ('zero-length', 'rx_length_errors', 'rx_packets', U, b''),
    # ours drops an ethertype IPoIB does not carry; in-tree delivers it
    # (rx_packets) and the stack drops it (rx_dropped too)
    ('ethertype', 'rx_dropped', 'rx_dropped', U, E(0x1234) + bytes(40)),
    ('ip4-trunc', 'Ip:InHdrErrors', 'Ip:InHdrErrors', U,
     E(0x0800) + ip4(b'')[:10]),
    ('ip4-ihl4', 'Ip:InHdrErrors', 'Ip:InHdrErrors', U,
     E(0x0800) + b'\x44' + ip4(bytes(8))[1:]),
    ('ip4-ihl15', 'Ip:InHdrErrors', 'Ip:InHdrErrors', U,
     E(0x0800) + b'\x4f' + ip4(b'')[1:]),
    ('ip4-totlen', 'IpExt:InTruncatedPkts', 'IpExt:InTruncatedPkts', U,
     E(0x0800) + ip4(bytes(8), tot=1000)),
    ('ip6-trunc', 'Ip6InHdrErrors', 'Ip6InHdrErrors', U,
     E(0x86dd) + ip6(0)[:20]),
    ('ip6-plen', 'Ip6InTruncatedPkts', 'Ip6InTruncatedPkts', U,
     E(0x86dd) + ip6(1000)),
    # ARP drops these without a counter of its own
    ('arp-trunc', 'rx_packets', 'rx_packets', U, E(0x0806) + arp()[:4]),
    ('arp-hln', 'rx_packets', 'rx_packets', U, E(0x0806) + arp(hln=6)),
    ('qkey', 'sib_drop_qkey', 'sib_drop_qkey', 'qpn=%s qkey=0x1234' % qpn,
     ECHO),
    ('pkey', 'sib_drop_pkey', 'sib_drop_pkey', U + ' pkey=0x1234', ECHO),
    ('pkey-index', 'sib_drop_pkey', 'sib_drop_pkey', U + ' pkey_index=7',
     ECHO),
    ('grh-ether', 'rx_dropped', 'rx_dropped',
     U + ' sgid=fe80::211:bff:0:1 dgid=fe80::211:bff:0:2',
     E(0x1234) + bytes(40)),
    ('grh-short', 'rx_length_errors', 'rx_packets', U + ' grh=1', b'\x08\x00'),
    ('oversized', 'sib_drop_too_long', 'sib_drop_too_long', U + ' len=4200',
     b''),
    ('bcast-qpn', 'sib_drop_no_qp', 'sib_drop_no_qp', 'qpn=0xffffff qkey=0xb',
     ECHO),
    ('mcast-short', 'rx_length_errors', 'rx_packets',
     'qpn=0xffffff qkey=0xb dlid=%s dgid=ff12:401b:ffff::ffff:ffff' % bcast,
     b'\x08\x00'),
    # one well-formed frame: an ICMP echo from ib0's address is answered
    ('echo', 'Icmp:InEchos', 'Icmp:InEchos', U + ' slid=1', ECHO),
]
fail = 0
f = open(inj, 'wb', buffering=0)
s0 = snap()
for name, ours, intree, hdr, payload in cases:
    want = intree if driver == 'intree' else ours
    t = time.monotonic()
    f.write(('%s count=%d\n' % (hdr, n_case)).encode() + payload)
    while True:
        time.sleep(0.05)
        s1 = snap()
        if s1.get(want, 0) - s0.get(want, 0) >= n_case or \
           time.monotonic() - t > 3:
            break
    time.sleep(0.1)
    s1 = snap()
    d = s1.get(want, 0) - s0.get(want, 0)
    ok = n_case <= d <= n_case + 5 if want == 'rx_packets' else d == n_case
    print('# %-12s %-22s %s' % (name, want, moved(s0, s1)), flush=True)
    if not ok:
        print('FAIL %s: %s grew by %d, expected %d' % (name, want, d, n_case))
        fail = 1
    s0 = s1

# The seeded random run: batches of 1000 generated in the kernel (count=
# seed=), each with an IPoIB header template, a length range and, for
# some, a wrong Q_Key or P_Key.
rnd = random.Random(seed)
t4 = bytes.fromhex('4500001c00010000400100000c0000020c000002')
t6 = bytes.fromhex('6000000000003bff') + bytes(32)
ta = bytes.fromhex('0020080014040001') + bytes(48)
protos = [(0x0800, t4), (0x86dd, t6), (0x0806, ta), (0x8035, ta), (None, b'')]
lens = [(0, 8), (0, 64), (0, 600), (20, 1500), (0, 4096)]
sent = qkey = pkey = 0
s0 = snap()
t0 = time.monotonic()
# bounded: 200,000 take 45-60 s on an idle host (TCG), up to 3x that on
# a loaded one
while sent < frames and time.monotonic() - t0 < 240:
    n = min(1000, frames - sent)
    t, tmpl = rnd.choice(protos)
    tmpl = struct.pack('!HH', rnd.randrange(65536) if t is None else t, 0) + \
        tmpl[:rnd.randrange(len(tmpl) + 1)]
    lo, hi = rnd.choice(lens)
    k = 'qkey=0xb'
    r = rnd.random()
    if r < 0.05:
        k = 'qkey=0x%x' % rnd.randrange(0xc, 1 << 32)
        qkey += n
    elif r < 0.08:
        k += ' pkey=0x%x' % rnd.randrange(1, 0x7fff)
        pkey += n
    hdr = 'qpn=%s %s count=%d seed=%d len=%d-%d keep=%d wait=100 grh=%d\n' % (
        qpn, k, n, rnd.randrange(1 << 63), lo, hi,
        rnd.randrange(min(len(tmpl), hi) + 1), rnd.randrange(2))
    f.write(hdr.encode() + tmpl)
    sent += n
secs = time.monotonic() - t0
delivered = sent - qkey - pkey
# Every delivered frame reached ib1's QP (rcv_packets) or found no
# receive posted (drop_no_rwqe), plus a little background traffic. Each
# of those completions must show in the driver's counters: in-tree counts
# every one as rx_packets; ours as rx_packets, rx_length_errors or
# rx_dropped (which /proc/net/dev sums with the stack's own drops, e.g.
# RARP that no protocol takes, so ours is checked as "at least").
for i in range(40):
    s1 = snap()
    if s1['sib_rcv_packets'] + s1['sib_drop_no_rwqe'] - \
       s0['sib_rcv_packets'] - s0['sib_drop_no_rwqe'] >= delivered:
        break
    time.sleep(0.25)
time.sleep(1)
s1 = snap()


def d(k):
    return s1[k] - s0[k]


rcv = d('sib_rcv_packets')
# (rcv_packets also counts the port's background MADs at QP1: slack 20)
if driver == 'ours':
    acc = d('rx_packets') + d('rx_length_errors') + d('rx_dropped')
    acc_ok = acc >= rcv - 20
else:
    acc = d('rx_packets')
    acc_ok = rcv - 20 <= acc <= rcv + 100
print('# random run: %d frames (seed %d) in %.1f s (%.0f/s): wrong qkey %d, '
      'wrong pkey %d, delivered %d: rcv_packets %d, drop_no_rwqe %d; '
      'driver counted %d' % (sent, seed, secs, sent / secs, qkey, pkey,
                             delivered, rcv, d('sib_drop_no_rwqe'), acc))
print('# random run moved: %s' % moved(s0, s1))
if sent != frames:
    print('FAIL random: sent %d of %d in %.0f s' % (sent, frames, secs))
    fail = 1
if d('sib_drop_qkey') != qkey or d('sib_drop_pkey') != pkey:
    print('FAIL random: drop_qkey +%d (expected %d), drop_pkey +%d '
          '(expected %d)' % (d('sib_drop_qkey'), qkey, d('sib_drop_pkey'),
                             pkey))
    fail = 1
if not delivered <= rcv + d('sib_drop_no_rwqe') <= delivered + 100:
    print('FAIL random: %d of %d delivered frames reached the QP'
          % (rcv + d('sib_drop_no_rwqe'), delivered))
    fail = 1
if not acc_ok:
    print('FAIL random: the driver counted %d of %d received frames'
          % (acc, rcv))
    fail = 1
sys.exit(fail)
