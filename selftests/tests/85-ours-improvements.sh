#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: ours
# timeout: 240
#
# Where our ib_ipoib deliberately differs from in-tree (each is a quirk
# of the in-tree driver; see Documentation/ABI/testing/sysfs-class-net-ipoib):
# both P_Key spellings for sysfs children, synchronous delete_child,
# carrier_reason with a log line naming the fix, sysfs children in the
# parent's namespace, children that die with their namespace, newlink only
# on real IPoIB parents.

source "$(dirname "$0")/../lib.sh"

S=/sys/class/net/ib0
BASE=("Default=0x7fff, ipoib : ALL=full;" "p1=0x0001, ipoib : ALL=full;")

reason() { # [NS] DEV
	if [[ $# -eq 2 ]]; then
		ip netns exec "$1" cat "/sys/class/net/$2/carrier_reason"
	else
		cat "/sys/class/net/$1/carrier_reason"
	fi
}

ktap_header 10

modprobe ib_cm
load_softib && slowwait 10 softib_ports_active >/dev/null && load_ipoib &&
	slowwait 10 test -d $S >/dev/null && softib_policy "${BASE[@]}"
ktap_result $? "softib and our ib_ipoib up" || ktap_finish
defer unload_softib
defer unload_ipoib

RET=0
echo 0x0001 >$S/create_child
check_err $? "create_child 0x0001 failed"
[[ -d /sys/class/net/ib0.8001 && $(cat /sys/class/net/ib0.8001/pkey) == 0x8001 ]]
check_err $? "0x0001 did not make ib0.8001 with P_Key 0x8001"
echo 0x8001 >$S/create_child 2>/dev/null
check_fail $? "0x8001 accepted next to 0x0001"
echo 0x0001 >$S/delete_child && [[ ! -e /sys/class/net/ib0.8001 ]]
check_err $? "delete_child 0x0001 did not remove ib0.8001 before returning"
log_test "create/delete_child: 0x0001 and 0x8001 are one P_Key; delete is synchronous"

RET=0
ip link set ib0 up &&
	slowwait 20 sh -c 'ip link show ib0 | grep -q LOWER_UP'
[[ $(reason ib0) == up ]]
(($? == 0)) || check_err 1 "ib0 up: carrier_reason $(reason ib0)"
ip link set ib0 down
slowwait 5 sh -c '[ "$(cat /sys/class/net/ib0/carrier_reason)" = down ]'
(($? == 0)) || check_err 1 "ib0 down: carrier_reason $(reason ib0)"
ip link set ib0 up
slowwait 20 sh -c '[ "$(cat /sys/class/net/ib0/carrier_reason)" = up ]'
(($? == 0)) || check_err 1 "ib0 up again: carrier_reason $(reason ib0)"
log_test "carrier_reason follows the parent: up, down, up"

RET=0
dmesg -C
ip link add link ib0 name c5 type ipoib pkey 0x8005 && ip link set c5 up
check_err $? "child 0x8005"
slowwait 10 sh -c '[ "$(cat /sys/class/net/c5/carrier_reason)" = pkey-absent ]'
(($? == 0)) || check_err 1 "carrier_reason is $(reason c5), not pkey-absent"
ip link show c5 | grep -q "state UP\|,UP" && ! ip link show c5 | grep -q LOWER_UP
check_err $? "c5 is not admin-up without carrier"
dmesg | grep -q "c5: P_Key 0x8005 is not in port 1's table: the subnet manager's partitions.conf must list 0x0005 for port GUID 0x02110bff00000001"
check_err $? "no log line naming the partitions.conf fix"
log_test "missing P_Key: admin-up, no carrier, carrier_reason pkey-absent, log names the fix"

RET=0
softib_policy "${BASE[@]}" "p5=0x0005 : ALL=full;"
slowwait 20 sh -c 'cat /sys/class/net/c5/carrier_reason | grep -q "^join-failed -"'
(($? == 0)) || check_err 1 "without a broadcast group: carrier_reason $(reason c5)"
! ip link show c5 | grep -q LOWER_UP
check_err $? "c5 has carrier without a broadcast group"
softib_policy "${BASE[@]}" "p5=0x0005, ipoib : ALL=full;"
slowwait 40 sh -c '[ "$(cat /sys/class/net/c5/carrier_reason)" = up ]'
(($? == 0)) || check_err 1 "c5 did not recover: $(reason c5)"
slowwait 10 sh -c 'ip link show c5 | grep -q LOWER_UP'
check_err $? "c5 has no carrier after recovering"
log_test "P_Key added without ipoib: join-failed; with ipoib: recovers to up"

RET=0
echo down >"$SOFTIB_DBG/ports/1/link"
slowwait 10 sh -c '[ "$(cat /sys/class/net/c5/carrier_reason)" = port-down ]'
(($? == 0)) || check_err 1 "port down: carrier_reason $(reason c5)"
echo up >"$SOFTIB_DBG/ports/1/link"
slowwait 30 sh -c '[ "$(cat /sys/class/net/c5/carrier_reason)" = up ]'
(($? == 0)) || check_err 1 "port up: carrier_reason $(reason c5)"
ip link del c5
log_test "carrier_reason port-down while the port is down"

RET=0
setup_ns A B
ip link set ib0 netns "$A"
ip netns exec "$A" sh -c 'echo 0x8001 > /sys/class/net/ib0/create_child'
check_err $? "create_child in netns A"
ip -n "$A" link show ib0.8001 >/dev/null 2>&1
check_err $? "ib0.8001 not in A"
! ip link show ib0.8001 >/dev/null 2>&1
check_err $? "ib0.8001 landed in init_net"
log_test "a sysfs child is created in its parent's namespace"

RET=0
ip link add link ib1 name pod0 type ipoib pkey 0x8001 && ip link set pod0 netns "$B"
check_err $? "child into netns B"
ip netns del "$B"
slowwait 10 sh -c '! ip link show pod0 >/dev/null 2>&1'
check_err $? "pod0 came back to init_net with its namespace gone"
ip netns del "$A"
slowwait 10 test -d $S >/dev/null
check_err $? "ib0 did not return to init_net"
! ip link show ib0.8001 >/dev/null 2>&1
check_err $? "ib0.8001 survived its namespace"
log_test "namespace destroyed: children die with it, parents return"

RET=0
if modprobe bonding 2>/dev/null && ip link add bond9 type bond mode active-backup 2>/dev/null &&
	ip link set ib1 down && ip link set ib1 master bond9 2>/dev/null &&
	[[ $(cat /sys/class/net/bond9/type) == 32 ]]; then
	ip link add link bond9 name bc0 type ipoib pkey 0x8001 2>/dev/null
	check_fail $? "a child on a bond of IPoIB was accepted"
	ip link del bond9
	log_test "newlink refuses an ARPHRD_INFINIBAND device that is not an IPoIB parent"
else
	ip link del bond9 2>/dev/null
	ktap_skip "newlink refuses a bond over IPoIB" "cannot build a bond over IPoIB here"
fi

RET=0
unload_ipoib
echo "<6>ipoib-selftest-$$-params" >/dev/kmsg
# a send ring in range but not a power of two, a receive ring out of range
# (21-ipoib-params has the other bad values)
load_ipoib send_queue_size=200 recv_queue_size=9000
check_err $? "load with out-of-range ring sizes"
P=/sys/module/ib_ipoib/parameters
[[ $(cat $P/send_queue_size) == 256 && $(cat $P/recv_queue_size) == 8192 ]]
(($? == 0)) || check_err 1 "rings $(cat $P/send_queue_size)/$(cat $P/recv_queue_size), expected 256/8192"
log=$(dmesg | sed -n "/ipoib-selftest-$$-params/,\$p")
grep -q "send_queue_size=200 is not a power of two: using 256" <<<"$log" &&
	grep -q "recv_queue_size=9000 is outside 2..8192: using 8192" <<<"$log"
(($? == 0)) || check_err 1 "no log line for the clamped values: $(grep queue_size <<<"$log")"
log_test "clamped ring sizes are logged, not silent"

ktap_finish
