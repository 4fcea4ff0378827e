#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 900
#
# Taking down an interface with many connections must not hold rtnl for
# long. ib0 (in A, connected mode) gets N = 80 (200 with LONG=1)
# connections from N children of ib1 (in B, one subnet, each pinging ib0
# bound to its own device). With ours the children are in connected mode: N passive
# connections on ib0, and its replies open active ones back (8: ours
# keeps 8 per destination GID, and the children share ib1's GID).
# In-tree's children stay in datagram mode (its netlink mode change
# drops rtnl and takes it back with a trylock: under load it fails with
# EBUSY and leaves netlink without rtnl), so ib0's replies open N
# active connections (in-tree has no per-GID cap). Then:
#
# - "ip link set ib0 down" (ndo_stop runs under rtnl) must return within
#   1 s. Waiting for each connection's teardown in turn, destroying QP
#   after QP under rtnl (a grace period each on softib), takes about
#   20 ms a connection: 1.6 s for 80. Instead every connection goes to
#   ERR at once, the flushes are waited for together, and the QPs are
#   destroyed by work items that do not hold rtnl. In-tree, with its N
#   active connections, returns within the limit too (79 ms on 6.12).
# - up again at once, while the old QPs are still being destroyed: the
#   interface works and connects again; a mode change and a second down
#   meanwhile; every RC QP of ib0's port goes.
# - unloading ib_ipoib gives softib back every object it had.

source "$(dirname "$0")/../lib.sh"

require_cmd ping rdma

N=${CM_STOP_N:-80}
[[ $LONG == 1 ]] && N=${CM_STOP_N:-200}
BATCH=20
LIMIT_MS=$((1000 * ${TIMEOUT_SCALE:-1}))
ktap_header 7
ktap_diag "IPOIB=$IPOIB"

# rc_count PORT: RC QPs on softib0's port PORT
rc_count() {
	rdma res show qp link "softib0/$1" 2>/dev/null | grep -c 'type RC'
}
# children_up: every child has carrier
children_up() {
	! ip -n "$B" -o link show 2>/dev/null | grep ' c[0-9]*@' | grep -qv LOWER_UP
}
# ping_from I: child I pings ib0
ping_from() {
	ip netns exec "$B" ping -c 1 -W 5 -I "c$1" 10.1.0.1 >/dev/null 2>&1
}
# ms CMD...: run CMD, print how long it took in ms; CMD's status
ms() {
	local t0=$EPOCHREALTIME rc

	"$@"
	rc=$?
	awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d\n", (b - a) * 1000 }'
	return $rc
}

# small rings: in-tree fills an SRQ for each of the N + 2 interfaces
modprobe ib_cm
load_softib && slowwait 10 softib_ports_active >/dev/null
ktap_result $? "softib" || ktap_finish
defer unload_softib
objs_base=$(softib_objs)
load_ipoib recv_queue_size=32 && slowwait 10 test -d /sys/class/net/ib1 >/dev/null
ktap_result $? "ib_ipoib recv_queue_size=32" || ktap_finish
defer unload_ipoib
intree_on_provider && intree_no_cm_finish "" ib0

RET=0
setup_ns A B
{
	echo "link set ib0 netns $A"
	echo "link set ib1 netns $B"
} | ip -batch -
check_err $? "ib0 into A, ib1 into B"
ip netns exec "$B" sysctl -qw net.ipv4.conf.all.arp_ignore=1 \
	net.ipv4.conf.all.arp_announce=2 net.ipv4.conf.all.rp_filter=0 \
	net.ipv4.conf.default.rp_filter=0
check_err $? "B: one subnet on many interfaces"
# sysfs: in-tree's netlink mode change may return without rtnl (above)
ip netns exec "$A" sh -c "echo connected > /sys/class/net/ib0/mode" &&
	printf 'addr add 10.1.0.1/16 dev ib0\nlink set ib0 up\n' | ip -n "$A" -batch -
check_err $? "ib0"
{
	for i in $(seq 1 "$N"); do
		echo "link add link ib1 name c$i type ipoib pkey 0xffff"
		[[ $IPOIB == ours ]] && echo "link set c$i type ipoib mode connected"
		echo "addr add 10.1.$((i / 250 + 1)).$((i % 250 + 1))/16 dev c$i"
	done
} | ip -n "$B" -batch -
check_err $? "$N children of ib1"
{
	echo "link set ib1 up"
	for i in $(seq 1 "$N"); do
		echo "link set c$i up"
	done
} | ip -n "$B" -batch -
check_err $? "$N children up"
slowwait 20 ipoib_lower_up "$A" ib0 >/dev/null
check_err $? "ib0 has no carrier"
slowwait 120 children_up >/dev/null
(($? == 0)) || check_err 1 "children without carrier: $(ip -n "$B" -o link show | grep ' c[0-9]*@' | grep -vc LOWER_UP)"
setup_rc=$RET
log_test "ib0 connected in A, $N children of ib1 in B"
((setup_rc == 0)) || ktap_finish

RET=0
# connect_all: every child pings ib0, BATCH at once; prints the children
# that did not get through
connect_all() {
	local i failed=()

	for ((i = 1; i <= N; i += BATCH)); do
		local j pids=()

		for ((j = i; j < i + BATCH && j <= N; j++)); do
			ping_from "$j" &
			pids[j]=$!
		done
		for j in "${!pids[@]}"; do
			wait "${pids[j]}" || failed+=("$j")
		done
	done
	echo "${failed[*]}"
}
failed=($(connect_all))
ktap_diag "${#failed[@]} of $N children did not reach ib0 at first"
# those that lost a race to ARP or the connection try again (the others
# have reached ib0 already)
if ((${#failed[@]} < N / 4)); then
	for i in "${failed[@]}"; do
		ping_from "$i" || slowwait 10 ping_from "$i" >/dev/null
		check_err $? "c$i cannot reach ib0"
	done
else
	check_err 1 "${#failed[@]} children cannot reach ib0"
fi
rc1=$(rc_count 1)
if [[ $IPOIB == ours ]]; then
	cmf=$(ipoib_dbg_dir ib0)/cm
	ktap_diag "ib0: $(grep -c '^in .* live' "$cmf") passive live, $(grep -c '^out .* up ' "$cmf") active up; RC QPs on its port: $rc1"
else
	ktap_diag "RC QPs on ib0's port: $rc1"
fi
((rc1 >= N))
check_err $? "only $rc1 RC QPs on ib0's port"
log_test "$N children connected to ib0"

RET=0
mark="49-cm-stop: down ($IPOIB, $$)"
echo "$mark" >/dev/kmsg
down_ms=$(ms ip -n "$A" link set ib0 down)
check_err $? "ib0 down"
ktap_diag "ib0 down with $rc1 connections took $down_ms ms (rtnl held throughout)"
((down_ms < LIMIT_MS))
check_err $? "ib0 down took $down_ms ms (limit $LIMIT_MS)"
if [[ $IPOIB == ours ]]; then
	! dmesg | grep -F -A1000000 "$mark" | grep -qE "not drained|not flushed"
	(($? == 0)) || check_err 1 "$(dmesg | grep -E 'not drained|not flushed' | tail -1)"
fi
log_test "ib0 down with $N connections holds rtnl under $LIMIT_MS ms"

# at once, while the QPs of the old connections may still be destroyed
RET=0
ip -n "$A" link set ib0 up && slowwait 20 ipoib_lower_up "$A" ib0 >/dev/null
check_err $? "ib0 up again"
for i in 1 2 3 4 5 6 7 8 9 10; do
	slowwait 15 ping_from "$i" >/dev/null
	check_err $? "c$i cannot reach ib0 after down and up"
done
ktap_diag "RC QPs on ib0's port now: $(rc_count 1)"
ip netns exec "$A" sh -c "echo datagram > /sys/class/net/ib0/mode"
check_err $? "ib0 to datagram mode"
slowwait 15 ping_from 11 >/dev/null
check_err $? "c11 cannot reach ib0 in datagram mode"
ip netns exec "$A" sh -c "echo connected > /sys/class/net/ib0/mode" &&
	ip -n "$A" link set ib0 down
check_err $? "connected, and down again"
slowwait 120 sh -c "! rdma res show qp link softib0/1 | grep -q 'type RC'" >/dev/null
(($? == 0)) || check_err 1 "RC QPs left on ib0's port: $(rc_count 1)"
log_test "up at once, mode changes and down again; every RC QP of ib0 goes"

RET=0
t0=$EPOCHREALTIME
unload_ipoib
check_err $? "rmmod ib_ipoib"
ktap_diag "ib_ipoib unloaded in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s"
slowwait 10 softib_objs_le "$objs_base" >/dev/null
(($? == 0)) || check_err 1 "without ib_ipoib, softib objects before: $objs_base; after: $(softib_objs)"
log_test "no leak: softib's objects back where they were once ib_ipoib is unloaded"

ktap_finish
