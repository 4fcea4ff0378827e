# SPDX-License-Identifier: GPL-2.0
#
# A requester that never acknowledges, for 11-softib-sma.sh: it asks the
# built-in SA for NodeRecord tables from a umad agent registered without
# RMPP, so ib_mad hands it the first segment of each answer and sends no
# ACK. Each answer then waits at the SA for an ACK that never comes: the
# SA must bound how many wait, resend, and give them up. Prints the
# number of tables whose first segment came; exit 1 if none came.
#
# usage: 11-softib-sa-tables.py UMAD_DEV COUNT

import fcntl
import os
import select
import struct
import sys

dev, count = sys.argv[1], int(sys.argv[2])

IOC_REGISTER = 0xC01C1B01       # _IOWR(0x1b, 1, struct ib_user_mad_reg_req)
IOC_ENABLE_PKEY = 0x1B03        # _IO(0x1b, 3): the header with pkey_index
HDR = '=IIIII'
ADDR = '>IIHBBBBBB16sI'
SA_CLASS, SA_VERSION, GET_TABLE, NODE_REC = 0x03, 2, 0x12, 0x0011
SA_LID, QP1_QKEY = 0x100, 0x80010000

fd = os.open(dev, os.O_RDWR)
fcntl.ioctl(fd, IOC_ENABLE_PKEY)
# a requester of the SA class, QP1, rmpp_version 0: no RMPP in ib_mad
req = bytearray(struct.pack('=I4IBBB3sB', 0, 0, 0, 0, 0, 1, SA_CLASS,
                            SA_VERSION, b'\0\0\0', 0) + b'\0')
fcntl.ioctl(fd, IOC_REGISTER, req)
agent = struct.unpack_from('=I', req)[0]

for i in range(count):
    m = bytearray(256)
    struct.pack_into('>BBBBHHQHHI', m, 0, 1, SA_CLASS, SA_VERSION,
                     GET_TABLE, 0, 0, 0x5a000000 + i, NODE_REC, 0, 0)
    hdr = struct.pack(HDR, agent, 0, 2000, 0, 0) + \
        struct.pack(ADDR, 1, QP1_QKEY, SA_LID, 0, 0, 0, 0, 0, 0,
                    b'\0' * 16, 0) + struct.pack('=H6x', 0)
    os.write(fd, hdr + bytes(m))

first = set()
while True:
    r, _, _ = select.select([fd], [], [], 3)
    if not r:
        break
    buf = os.read(fd, 64 + 256)
    mad = buf[64:]
    if len(mad) >= 36 and mad[3] == 0x92 and mad[25] == 1 and \
            struct.unpack_from('>I', mad, 28)[0] == 1:
        first.add(struct.unpack_from('>Q', mad, 8)[0])
print('# first segments received for %d of %d tables' % (len(first), count))
sys.exit(0 if first else 1)
