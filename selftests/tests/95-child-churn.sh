#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 1200
#
# Child lifetimes under churn: 12 create/delete rounds (200 with LONG=1)
# leak nothing (verbs objects exactly, unreclaimable memory within 2 MB:
# 96-churn-traffic's slab check over hundreds of children is the finer
# one), children deleted while they carry traffic, and ib_ipoib unloaded
# while children carry traffic.

source "$(dirname "$0")/../lib.sh"

require_cmd ping

ROUNDS=12
[[ $LONG == 1 ]] && ROUNDS=200

sunreclaim_kb() {
	awk '/^SUnreclaim:/ { print $2 }' /proc/meminfo
}

# what each child owns (PD, CQ, QP, SRQ, MR); address handles and groups
# also come and go with the parents' own background traffic (IPv6 ND)
child_objects() {
	grep -E '^(pd|cq|qp|srq|mr) ' "$SOFTIB_DBG/objects" | tr '\n' ' '
}

ktap_header 4
ktap_diag "IPOIB=$IPOIB"

ipoib_fabric_up && softib_policy "Default=0x7fff, ipoib : ALL=full;" \
	"p1=0x0001, ipoib : ALL=full;" &&
	ipoib_child "$B" ib1 8001 10.9.0.2/24 && slowwait 20 ipoib_lower_up "$B" ib1.8001
ktap_result $? "fabric and peer child up" || ktap_finish

# warm-up, then the baseline
ip -n "$A" link add link ib0 name w0 type ipoib pkey 0x8001 && ip -n "$A" link del w0
sync
echo 3 >/proc/sys/vm/drop_caches
objs=$(child_objects)
mem0=$(sunreclaim_kb)
RET=0
# child_gone: no ib0.8001 in A nor (in-tree creates it there) in init_net
child_gone() {
	! ip -n "$A" link show ib0.8001 >/dev/null 2>&1 && ! ip link show ib0.8001 >/dev/null 2>&1
}
for ((i = 1; i <= ROUNDS; i++)); do
	ip netns exec "$A" sh -c 'echo 0x8001 > /sys/class/net/ib0/create_child &&
		echo 0x8001 > /sys/class/net/ib0/delete_child'
	check_err $? "round $i: create_child/delete_child refused"
	# in-tree deletes asynchronously
	slowwait 5 child_gone
	check_err $? "round $i: ib0.8001 not deleted"
	[[ $RET -eq 0 ]] || break
done
slowwait_eq 10 "$objs" child_objects
(($? == 0)) || check_err 1 "verbs objects after $ROUNDS rounds: $(child_objects)(before: $objs)"
sync
echo 3 >/proc/sys/vm/drop_caches
mem1=$(sunreclaim_kb)
ktap_diag "SUnreclaim: $mem0 kB before, $mem1 kB after $ROUNDS rounds"
((mem1 - mem0 < 2048))
(($? == 0)) || check_err 1 "unreclaimable memory grew by $((mem1 - mem0)) kB"
log_test "$ROUNDS create_child/delete_child rounds leak nothing"

RET=0
for i in 1 2 3; do
	ipoib_child "$A" ib0 8001 10.9.0.1/24 && slowwait 20 ipoib_lower_up "$A" ib0.8001
	check_err $? "child up ($i)"
	ip netns exec "$A" ping -f -W 1 -w 10 10.9.0.2 >/dev/null 2>&1 &
	pinger=$!
	sleep 1
	ip -n "$A" link del ib0.8001
	check_err $? "delete under traffic ($i)"
	# the flood fails from here on (no device) until its deadline
	sleep 0.5
	kill -INT $pinger 2>/dev/null
	wait $pinger
done
log_test "children deleted while flooding"

RET=0
ipoib_child "$A" ib0 8001 10.9.0.1/24 && slowwait 20 ipoib_lower_up "$A" ib0.8001
ip netns exec "$A" ping -f -W 1 -w 10 10.9.0.2 >/dev/null 2>&1 &
p1=$!
ip netns exec "$B" ping -f -W 1 -w 10 10.9.0.1 >/dev/null 2>&1 &
p2=$!
sleep 1
unload_ipoib
check_err $? "rmmod ib_ipoib under traffic"
kill -INT $p1 $p2 2>/dev/null
wait $p1 $p2
! ip -n "$A" link show ib0.8001 >/dev/null 2>&1 && ! ip -n "$B" link show ib1 >/dev/null 2>&1
check_err $? "interfaces survived the module"
log_test "ib_ipoib unloads while children carry traffic"

ktap_finish
