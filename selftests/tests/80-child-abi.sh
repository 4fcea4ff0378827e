#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 300
#
# The pkey child ABI as the in-tree driver defines it (sysfs create_child,
# delete_child, pkey/mode/umcast/parent; netlink kind "ipoib"): exact
# errnos, nothing created on error, names, readback, ip -d link.

source "$(dirname "$0")/../lib.sh"

S=/sys/class/net/ib0

nlinks() {
	ip -o link show | wc -l
}

# write_err FILE VALUE: prints the errno name write() got, or OK
write_err() {
	python3 - "$1" "$2" <<'PY'
import errno, os, sys
try:
    fd = os.open(sys.argv[1], os.O_WRONLY)
    try:
        os.write(fd, sys.argv[2].encode())
    finally:
        os.close(fd)
    print("OK")
except OSError as e:
    print(errno.errorcode[e.errno])
PY
}

gone() {
	! ip link show "$1" >/dev/null 2>&1
}

ktap_header 10
ktap_diag "IPOIB=$IPOIB"

modprobe ib_cm
load_softib && slowwait 10 softib_ports_active >/dev/null && load_ipoib &&
	slowwait 10 test -d $S >/dev/null
ktap_result $? "softib and ib_ipoib up" || ktap_finish
defer unload_softib
defer unload_ipoib
softib_policy "Default=0x7fff, ipoib : ALL=full;" "p1=0x0001, ipoib : ALL=full;" \
	"p2=0x0002, ipoib : ALL=full;"

RET=0
[[ $(write_err $S/create_child 0x8001) == OK ]]
check_err $? "create_child 0x8001 failed"
slowwait 5 test -d /sys/class/net/ib0.8001 >/dev/null
check_err $? "no ib0.8001"
[[ $(cat /sys/class/net/ib0.8001/pkey) == 0x8001 ]]
(($? == 0)) || check_err 1 "pkey reads $(cat /sys/class/net/ib0.8001/pkey)"
[[ $(cat /sys/class/net/ib0.8001/mode) == datagram && $(cat /sys/class/net/ib0.8001/umcast) == 0 ]]
check_err $? "mode/umcast readback"
[[ $(cat /sys/class/net/ib0.8001/parent) == ib0 ]]
(($? == 0)) || check_err 1 "parent reads $(cat /sys/class/net/ib0.8001/parent)"
[[ $(cat $S/pkey) == 0xffff ]]
(($? == 0)) || check_err 1 "parent pkey reads $(cat $S/pkey)"
ip -d link show ib0.8001 | grep -q "ipoib pkey 0x8001 mode datagram"
(($? == 0)) || check_err 1 "ip -d link: $(ip -d link show ib0.8001 | grep ipoib)"
log_test "create_child 0x8001: ib0.8001 with pkey/mode/umcast/parent"

RET=0
n=$(nlinks)
for bad in abc 0 0x8000 0x10000 -1; do
	e=$(write_err $S/create_child "$bad")
	[[ $e == EINVAL ]]
	check_err $? "create_child '$bad': $e, not EINVAL"
done
[[ $(nlinks) == "$n" ]]
check_err $? "a rejected create_child created an interface"
log_test "create_child: bad values get EINVAL and create nothing"

RET=0
e=$(write_err $S/create_child 0x8001)
[[ $e == ENOTUNIQ ]]
check_err $? "second create_child 0x8001: $e"
e=$(write_err $S/create_child 0xffff)
[[ $e == ENOTUNIQ ]]
check_err $? "create_child of the parent's P_Key: $e"
[[ $(nlinks) == "$n" ]]
check_err $? "a duplicate created an interface"
log_test "create_child: duplicates and the parent's P_Key get ENOTUNIQ"

RET=0
e=$(write_err $S/delete_child 0x8005)
[[ $e == ENODEV ]]
check_err $? "delete_child of an unknown P_Key: $e"
e=$(write_err $S/delete_child 0x10000)
[[ $e == EINVAL ]]
check_err $? "delete_child 0x10000: $e"
[[ $(write_err $S/delete_child 0x8001) == OK ]]
check_err $? "delete_child 0x8001 failed"
slowwait 5 gone ib0.8001 >/dev/null
check_err $? "ib0.8001 still there"
log_test "delete_child: ENODEV, EINVAL, and removal"

RET=0
ip link add link ib0 name nl1 type ipoib pkey 0x8002
check_err $? "netlink child with pkey 0x8002"
ip -d link show nl1 | grep -q "ipoib pkey 0x8002 mode datagram"
(($? == 0)) || check_err 1 "nl1: $(ip -d link show nl1 | grep ipoib)"
ip link add link ib0 name nl2 type ipoib pkey 0x0002
check_err $? "netlink child with pkey 0x0002"
ip -d link show nl2 | grep -q "ipoib pkey 0x8002 "
(($? == 0)) || check_err 1 "0x0002 not stored as 0x8002: $(ip -d link show nl2 | grep ipoib)"
ip link add link ib0 type ipoib
check_err $? "netlink child without a name or P_Key"
ip -d link show ipoib0 | grep -q "ipoib pkey 0xffff "
(($? == 0)) || check_err 1 "default name ipoib0 with the parent's P_Key: $(ip -d link show ipoib0 2>&1 | tail -1)"
[[ ! -e /sys/class/net/nl1/parent ]] || [[ $(cat /sys/class/net/nl1/parent) == ib0 ]]
check_err $? "netlink child has a wrong parent attribute"
log_test "netlink children: pkey (0x8000 OR-ed in), default name and P_Key"

RET=0
n=$(nlinks)
ip link add link ib0 name bad0 type ipoib pkey 0x8000 2>/dev/null
check_fail $? "pkey 0x8000 accepted"
ip link add link ib0 name bad1 type ipoib pkey 0 2>/dev/null
check_fail $? "pkey 0 accepted"
ip link add name bad2 type ipoib pkey 0x8003 2>/dev/null
check_fail $? "a child without a parent accepted"
ip link add link nl1 name bad3 type ipoib pkey 0x8003 2>/dev/null
check_fail $? "a child of a child accepted"
ip link add link lo name bad4 type ipoib 2>/dev/null
check_fail $? "a child of lo accepted"
[[ $(nlinks) == "$n" ]]
check_err $? "a rejected newlink left an interface"
log_test "netlink: invalid P_Key, no parent, child of child, non-IPoIB parent rejected"

RET=0
for ((i = 1; i <= 20; i++)); do
	echo "link add link ib0 name same$i type ipoib pkey 0x8002"
done | ip -batch -
check_err $? "20 children with P_Key 0x8002"
[[ $(ip -o link show | grep -c ' same[0-9]*@ib0') -eq 20 ]]
check_err $? "not 20 children with P_Key 0x8002"
for ((i = 1; i <= 20; i++)); do
	echo "link del same$i"
done | ip -batch -
check_err $? "deleting the 20 children"
log_test "20 netlink children with the same P_Key"

RET=0
# (in-tree netlink children have no sysfs files: read back over netlink)
ip link set nl1 type ipoib umcast 1
check_err $? "changelink umcast 1"
ip -d link show nl1 | grep -q "umcast 0001"
(($? == 0)) || check_err 1 "umcast not reported: $(ip -d link show nl1 | grep ipoib)"
echo 1 >$S/umcast && [[ $(cat $S/umcast) == 1 ]] && echo 0 >$S/umcast &&
	[[ $(cat $S/umcast) == 0 ]]
check_err $? "umcast sysfs write/readback on ib0"
[[ $(write_err $S/mode "bogus") == EINVAL ]]
check_err $? "mode accepted 'bogus'"
[[ $(write_err $S/mode "datagram
") == OK ]]
check_err $? "mode refused 'datagram'"
[[ $(write_err $S/mode "connected") == EINVAL ]]
check_err $? "mode accepted 'connected' without the newline (in-tree needs it)"
ip link set nl1 type ipoib mode connected
check_err $? "changelink mode connected"
ip -d link show nl1 | grep -q "mode connected" && ip link show nl1 | grep -q " mtu 65520 "
(($? == 0)) || check_err 1 "connected: $(ip -d link show nl1 | grep -E 'mtu|ipoib' | xargs)"
ip link set nl1 type ipoib mode datagram
check_err $? "changelink mode datagram"
dmtu=$(ip -o link show nl1 | sed -n 's/.* mtu \([0-9]*\) .*/\1/p')
ip -d link show nl1 | grep -q "mode datagram" && ((dmtu <= 4092))
(($? == 0)) || check_err 1 "datagram again: $(ip -d link show nl1 | grep -E 'mtu|ipoib' | xargs)"
log_test "umcast and mode: changelink, sysfs, readback"

RET=0
ip link del nl1 && ip link del nl2 && ip link del ipoib0
check_err $? "ip link del of children"
gone nl1 && gone nl2 && gone ipoib0
check_err $? "children still there"
log_test "ip link del removes netlink children"

ktap_finish
