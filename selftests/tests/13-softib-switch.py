# SPDX-License-Identifier: GPL-2.0
#
# Program softib's switch as an SM does, for 13-softib-switch.sh: one
# LID-routed SMP Get, then a Set of the changed attribute, to the
# switch's LID from a local umad client (the interface opensm uses);
# infiniband-diags has no tool that writes forwarding tables or a
# switch port's P_Key table. Prints the value before the change.
#
# usage: 13-softib-switch.py UMAD_DEV SWITCH_LID CMD ARGS
#   lft LID PORT          LinearForwardingTable entry of LID
#   mft MLID MASK         MulticastForwardingTable entry (ports 0..15)
#   pkeys PORT P_KEY...   P_KeyTable of switch port PORT (block 0)
#   enforce PORT BITS     PortInfo PartitionEnforcement/FilterRaw bits
#                         (8 inbound, 4 outbound) of switch port PORT
#   get-mft MLID          print the MFT entry only
#   get-pkeys PORT        print the P_KeyTable only

import fcntl
import os
import select
import struct
import sys

IOC_REGISTER = 0xC01C1B01       # _IOWR(0x1b, 1, struct ib_user_mad_reg_req)
IOC_ENABLE_PKEY = 0x1B03        # _IO(0x1b, 3): the header with pkey_index
HDR = '=IIIII'
ADDR = '>IIHBBBBBB16sI'
LR = 0x01
GET, SET = 1, 2
PORT_INFO, PKEY_TABLE = 0x0015, 0x0016
LFT, MFT = 0x0019, 0x001b

dev, lid, cmd = sys.argv[1], int(sys.argv[2], 0), sys.argv[3]
args = [int(a, 0) for a in sys.argv[4:]]

fd = os.open(dev, os.O_RDWR)
fcntl.ioctl(fd, IOC_ENABLE_PKEY)
# a requester: no unsolicited methods, QP0, class version 1, no RMPP
req = bytearray(struct.pack('=I4IBBB3sB', 0, 0, 0, 0, 0, 0, LR, 1,
                            b'\0\0\0', 0) + b'\0')
fcntl.ioctl(fd, IOC_REGISTER, req)
agent = struct.unpack_from('=I', req)[0]
tid = 0x13000000


def smp(method, attr, mod, data=b''):
    """Send a LID-routed SMP and return its answer's 64 data bytes."""
    global tid
    tid += 1
    m = bytearray(256)
    struct.pack_into('>BBBBHBBQHHI', m, 0, 1, LR, 1, method, 0, 0, 0, tid,
                     attr, 0, mod)
    m[64:64 + len(data)] = data
    hdr = struct.pack(HDR, agent, 0, 1000, 2, 0) + \
        struct.pack(ADDR, 0, 0, lid, 0, 0, 0, 0, 0, 0, b'\0' * 16, 0) + \
        struct.pack('=H6x', 0)
    os.write(fd, hdr + bytes(m))
    while True:
        r, _, _ = select.select([fd], [], [], 5)
        if not r:
            sys.exit('no answer to attribute 0x%04x' % attr)
        buf = os.read(fd, 64 + 256)
        if struct.unpack_from('=I', buf, 4)[0]:
            sys.exit('attribute 0x%04x: timed out' % attr)
        mad = buf[64:]
        # ib_umad puts the agent's number in the TID's upper half
        if struct.unpack_from('>I', mad, 12)[0] != tid & 0xffffffff:
            continue
        status = struct.unpack_from('>H', mad, 4)[0]
        if status:
            sys.exit('attribute 0x%04x: status 0x%04x' % (attr, status))
        return bytearray(mad[64:128])


if cmd == 'lft':
    entry, port = args
    block = smp(GET, LFT, entry // 64)
    print(block[entry % 64])
    block[entry % 64] = port
    smp(SET, LFT, entry // 64, block)
elif cmd in ('mft', 'get-mft'):
    idx = args[0] - 0xc000
    block = smp(GET, MFT, idx // 32)
    print('0x%04x' % struct.unpack_from('>H', block, idx % 32 * 2)[0])
    if cmd == 'mft':
        struct.pack_into('>H', block, idx % 32 * 2, args[1])
        smp(SET, MFT, idx // 32, block)
elif cmd in ('pkeys', 'get-pkeys'):
    table = smp(GET, PKEY_TABLE, args[0] << 16)
    print(' '.join('0x%04x' % struct.unpack_from('>H', table, i * 2)[0]
                   for i in range(32)))
    if cmd == 'pkeys':
        table = bytearray(64)
        for i, p in enumerate(args[1:]):
            struct.pack_into('>H', table, i * 2, p)
        smp(SET, PKEY_TABLE, args[0] << 16, table)
elif cmd == 'enforce':
    port, bits = args
    pi = smp(GET, PORT_INFO, port)
    print(pi[43] & 0x0f)
    # PortState and PortPhysicalState 0: no change; the rest as it is
    pi[32] &= 0xf0
    pi[33] &= 0x0f
    pi[43] = (pi[43] & 0xf0) | (bits & 0x0f)
    smp(SET, PORT_INFO, port, pi)
else:
    sys.exit('unknown command ' + cmd)
