# SPDX-License-Identifier: GPL-2.0
#
# Malformed and unusual SMPs from a local umad client (the interface
# opensm and infiniband-diags use), for 11-softib-sma.sh. It registers a
# directed-route and a LID-routed agent on /dev/infiniband/umadN and
# sends each case; a case that gets an answer must carry the expected
# MAD status, one that ib_mad or the SMA must drop must get none (or be
# refused by write()). Then a good NodeInfo must still be answered.
# Prints "# ..." per case and "FAIL ..." lines; exit 1 if any failed.
#
# usage: 11-softib-sma.py UMAD_DEV SEED

import errno
import fcntl
import os
import random
import select
import struct
import sys

dev, seed = sys.argv[1], int(sys.argv[2])

IOC_REGISTER = 0xC01C1B01       # _IOWR(0x1b, 1, struct ib_user_mad_reg_req)
IOC_ENABLE_PKEY = 0x1B03        # _IO(0x1b, 3): the header with pkey_index
# struct ib_user_mad_hdr (64 bytes): id, status, timeout_ms, retries,
# length, then the address in wire order (qpn, qkey, lid big-endian)
HDR = '=IIIII'
ADDR = '>IIHBBBBBB16sI'
LR, DR = 0x01, 0x81
NODE_INFO, NODE_DESC, PORT_INFO = 0x0011, 0x0010, 0x0015

fd = os.open(dev, os.O_RDWR)
fcntl.ioctl(fd, IOC_ENABLE_PKEY)
agents = {}
for cls in (LR, DR):
    # a requester: no unsolicited methods, QP0, class version 1, no RMPP
    req = bytearray(struct.pack('=I4IBBB3sB', 0, 0, 0, 0, 0, 0, cls, 1,
                                b'\0\0\0', 0) + b'\0')
    fcntl.ioctl(fd, IOC_REGISTER, req)
    agents[cls] = struct.unpack_from('=I', req)[0]

tid = 0x11000000
fails = 0


def smp(cls, method=1, attr=NODE_INFO, mod=0, version=1, hop_ptr=0,
        hop_cnt=0, path=(), data=b''):
    """A 256-byte SMP: header, M_Key 0, permissive DR LIDs, data, paths."""
    global tid
    tid += 1
    m = bytearray(256)
    struct.pack_into('>BBBBHBBQHHI', m, 0, 1, cls, version, method,
                     0, hop_ptr, hop_cnt, tid, attr, 0, mod)
    struct.pack_into('>HH', m, 32, 0xffff, 0xffff)
    m[64:64 + len(data)] = data
    for i, p in enumerate(path):
        m[128 + i] = p
    return m


def send(m, lid, timeout_ms=300):
    """Send; return (write errno or 0, answer MAD or None)."""
    cls = m[1]
    hdr = struct.pack(HDR, agents[cls], 0, timeout_ms, 0, 0) + \
        struct.pack(ADDR, 0, 0, lid, 0, 0, 0, 0, 0, 0, b'\0' * 16, 0) + \
        struct.pack('=H6x', 0)
    assert len(hdr) == 64
    try:
        os.write(fd, hdr + bytes(m))
    except OSError as e:
        return e.errno, None
    # ib_umad puts the agent's number in the TID's upper half
    want = struct.unpack_from('>I', m, 12)[0]
    while True:
        r, _, _ = select.select([fd], [], [], timeout_ms / 1000 + 1)
        if not r:
            return 0, None
        buf = os.read(fd, 64 + 256)
        status = struct.unpack_from('=I', buf, 4)[0]
        mad = buf[64:]
        if status:          # ib_umad: the request timed out (ETIMEDOUT)
            return 0, None
        if struct.unpack_from('>I', mad, 12)[0] == want:
            return 0, mad


def case(name, m, lid, status=None):
    """status None: no answer expected; else the answer's MAD status."""
    global fails
    err, ans = send(m, lid)
    got = 'refused (%s)' % errno.errorcode.get(err, err) if err else \
        'no answer' if ans is None else \
        'status 0x%04x' % struct.unpack_from('>H', ans, 4)[0]
    ok = (status is None and ans is None) or \
        (ans is not None and struct.unpack_from('>H', ans, 4)[0] == status)
    print('# %-44s %s' % (name, got))
    if not ok:
        fails += 1
        print('FAIL %s: %s, expected %s' % (name, got, 'no answer'
              if status is None else 'status 0x%04x' % status))


D = 0x8000      # the direction bit in a directed-route answer's status

case('DR NodeInfo to self', smp(DR), 0xffff, D)
case('DR class version 2', smp(DR, version=2), 0xffff, D | 0x0004)
case('DR method 0x7f', smp(DR, method=0x7f), 0xffff, D | 0x0008)
case('DR unknown attribute 0xabcd', smp(DR, attr=0xabcd), 0xffff, D | 0x000c)
case('DR NodeInfo Set', smp(DR, method=2), 0xffff, D | 0x000c)
case('DR PortInfo of port 9', smp(DR, attr=PORT_INFO, mod=9), 0xffff,
     D | 0x001c)
case('DR hop count 64', smp(DR, hop_cnt=64, path=[0] * 64), 0xffff)
case('DR hop pointer past the count',
     smp(DR, hop_ptr=5, hop_cnt=1, path=[0, 1]), 0xffff)
case('DR path out of port 0', smp(DR, hop_cnt=1, path=[0, 0]), 0xffff)
case('DR path out of port 200', smp(DR, hop_cnt=1, path=[0, 200]), 0xffff)
case('DR path through switch port 0',
     smp(DR, hop_cnt=2, path=[0, 1, 0]), 0xffff)
case('DR path 3 hops into a CA', smp(DR, hop_cnt=3, path=[0, 1, 2, 1]),
     0xffff)
case('LID-routed to LID 0', smp(LR), 0)
case('LID-routed to an MLID', smp(LR), 0xc001)
case('LID-routed SL2VL Set, VL 7', smp(LR, method=2, attr=0x0017,
                                        data=b'\x77' * 8), 2, 0x001c)
case('LID-routed VLArb block 2', smp(LR, attr=0x0018, mod=2 << 16), 2,
     0x001c)
rnd = random.Random(seed)
for i in range(64):
    # random attribute, method and modifier; never a PortInfo or
    # P_KeyTable Set (they would reconfigure the port under the test)
    attr = rnd.choice([0x0010, 0x0011, 0x0014, 0x0015, 0x0016, 0x0017,
                       0x0018, 0x0012, 0x0019, 0x001b, 0x0020,
                       rnd.randrange(0x10000)])
    method = rnd.choice([1, 1, 1, 2, 3, 5, 6, 7, rnd.randrange(0x100)])
    if method == 2 and attr in (0x0015, 0x0016, 0x0012, 0x0019, 0x001b):
        method = 1
    m = smp(rnd.choice([LR, DR]), method=method, attr=attr,
            mod=rnd.randrange(0x100000000), hop_cnt=rnd.randrange(4),
            path=[0] + [rnd.randrange(6) for _ in range(3)],
            data=bytes(rnd.randrange(256) for _ in range(64)))
    send(m, 0xffff if m[1] == DR else rnd.choice([1, 2, 0x100, 0x1234]),
         timeout_ms=100)
print('# 64 random SMPs sent')
case('DR NodeInfo to self, after', smp(DR), 0xffff, D)
sys.exit(1 if fails else 0)
