#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 420
# timeout-long: 900
#
# Connected mode through pkey children: N child pairs (8; 16 with
# LONG=1), each in its own partition and each with its own RC connection
# both ways; a peer child deleted mid-stream and created again (new QPN)
# is reconnected to.

source "$(dirname "$0")/../lib.sh"

require_cmd ping iperf3

N=8
[[ $LONG == 1 ]] && N=16
ktap_header 6
ktap_diag "IPOIB=$IPOIB"

# keep 2 x 34 interfaces' receive rings (in-tree fills its SRQ at creation)
# well inside the guest's memory
modprobe ib_cm
load_softib && slowwait 10 softib_ports_active >/dev/null &&
	load_ipoib recv_queue_size=64 && slowwait 10 test -d /sys/class/net/ib1 >/dev/null
ktap_result $? "softib and ib_ipoib (recv_queue_size=64)" || ktap_finish
defer unload_softib
defer unload_ipoib
intree_on_provider && intree_no_cm_finish "" ib0

policy=("Default=0x7fff, ipoib : ALL=full;")
for i in $(seq 1 $N); do
	policy+=("p$i=$(printf 0x%04x "$i"), ipoib : ALL=full;")
done
softib_policy "${policy[@]}"
setup_ns A B
ip link set ib0 netns "$A" && ip link set ib1 netns "$B" &&
	ip -n "$A" link set ib0 up && ip -n "$B" link set ib1 up

# children_up NS PARENT: all N children of PARENT in NS have carrier
children_up() {
	local out

	out=$(ip -n "$1" -o link show | grep -c "$2\.80[0-9a-f]*@$2:.*LOWER_UP")
	((out == N))
}

RET=0
# one ip process per side for the links (a TCG guest pays ~0.2 s per
# process). In-tree's children are made through sysfs, because its
# mode is changed through sysfs (ipoib_set_mode in lib.sh: in-tree's
# netlink mode change can release another task's rtnl).
for side in "$A ib0 1" "$B ib1 2"; do
	set -- $side
	if [[ $IPOIB == intree ]]; then
		pks=()
		for ((i = 1; i <= N; i++)); do
			printf -v pk %04x $((0x8000 + i))
			pks+=("$pk")
		done
		ipoib_sysfs_children "$1" "$2" "${pks[@]}"
		check_err $? "sysfs children of $2"
	fi
	for ((i = 1; i <= N; i++)); do
		printf -v pk %04x $((0x8000 + i))
		[[ $IPOIB == intree ]] ||
			echo "link add link $2 name $2.$pk type ipoib pkey 0x$pk"
		echo "addr add 10.$i.0.$3/24 dev $2.$pk"
		echo "link set $2.$pk up"
	done | ip -n "$1" -batch -
	check_err $? "children of $2"
	for ((i = 1; i <= N; i++)); do
		printf -v pk %04x $((0x8000 + i))
		ipoib_set_mode "$1" "$2.$pk" connected &&
			ip -n "$1" link set "$2.$pk" mtu 65520
		check_err $? "$2.$pk: connected mode, MTU 65520"
	done
done
slowwait 60 children_up "$A" ib0 && slowwait 60 children_up "$B" ib1
(($? == 0)) || check_err 1 "children without carrier: $(ip -n "$A" -o link show | grep -vc LOWER_UP) in A, $(ip -n "$B" -o link show | grep -vc LOWER_UP) in B"
log_test "$N child pairs in $N partitions, connected mode, MTU 65520"

# The recreated peer child of case 5 sends its gratuitous ARP at
# NETDEV_UP, before it has carrier (either driver: carrier waits for the
# broadcast join), so it is lost; A learns the new address when its entry
# goes stale and is probed again. Short reachable and probe times make
# that seconds, not 20-50 s. Set before the entry exists: the timer of a
# REACHABLE entry keeps the reachable time it was armed with (15-45 s by
# default), and a failure waited that long (CI, stop 16).
ip netns exec "$A" sysctl -qw net.ipv4.neigh.ib0/8001.base_reachable_time_ms=2000 \
	net.ipv4.neigh.ib0/8001.delay_first_probe_time=1

RET=0
for i in $(seq 1 $N); do
	ip netns exec "$A" ping -c 1 -W 5 -s 9000 "10.$i.0.2" >/dev/null
	check_err $? "child pair $i: ping -s 9000"
done
for size in 56 1400 65000; do
	ip netns exec "$A" ping -c 1 -W 5 -s $size 10.1.0.2 >/dev/null
	check_err $? "child pair 1: ping -s $size"
done
log_test "every pair carries 9000-byte pings; pair 1 also 56/1400/65000"

# each pair: one connection each way, so 2N RC QPs in RTS on port 1 (on a
# debug kernel a slow REQ can time out: the pair uses UD for its backoff,
# and traffic connects it again)
rc_rts() { rdma res show qp link softib0/1 | grep -c 'type RC state RTS'; }
all_connected() {
	local i

	(($(rc_rts) >= 2 * N)) && return 0
	for i in $(seq 1 $N); do
		ip netns exec "$A" ping -c 1 -W 1 -s 9000 "10.$i.0.2" >/dev/null
	done
	return 1
}
slowwait 10 all_connected	# scaled by slowwait (TIMEOUT_SCALE)
ktap_result $? "$(rc_rts) RC QPs in RTS on port 1 (at least $((2 * N)))"

RET=0
# A's neighbour entry of 10.1.0.2 is probed and replaced after the peer
# child is recreated (below); the state changes, for a failure
ip -n "$A" -ts monitor neigh dev ib0.8001 >"/tmp/neigh46.$$" 2>&1 &
monitor=$!
defer rm -f "/tmp/neigh46.$$"
defer kill $monitor
iperf_start "$A" "$B" 10.1.0.2 8
sleep 3
old=$(ipoib_hwaddr "$B" ib1.8001)
ip -n "$B" link del ib1.8001
check_err $? "delete the peer child under traffic"
sleep 1
iperf_stop
ipoib_mode_child "$B" ib1 8001 10.1.0.2/24 && ipoib_set_mode "$B" ib1.8001 connected &&
	ip -n "$B" link set ib1.8001 mtu 65520 && slowwait 30 ipoib_lower_up "$B" ib1.8001
check_err $? "recreate the peer child"
[[ $(ipoib_hwaddr "$B" ib1.8001) != "$old" ]]
check_err $? "the new child has the old QPN"
# the stale neighbour entry is probed and replaced; then a new connection
t0=$SECONDS
if slowwait 30 ip netns exec "$A" ping -c 1 -W 2 -s 9000 10.1.0.2 >/dev/null; then
	ktap_diag "the recreated child answered after $((SECONDS - t0)) s"
else
	check_err 1 "no 9000-byte ping to the recreated child in $((SECONDS - t0)) s"
	ktap_diag "A: $(ip -n "$A" neigh show dev ib0.8001)" \
		"B: ib1.8001 $(ipoib_hwaddr "$B" ib1.8001), was $old" \
		"A: $(ip -n "$A" route get 10.1.0.2 2>&1 | head -2)" \
		"A: $(ip netns exec "$A" ping -c 1 -W 2 -s 9000 10.1.0.2 2>&1 | tail -3)" \
		"A: $(ip -n "$A" -s link show ib0.8001 | tail -4)" \
		"A's neighbour events:" "$(cat "/tmp/neigh46.$$")"
	d=$(ipoib_dbg_dir ib0.8001 2>/dev/null) &&
		ktap_diag "$(cd "$d" && grep . path cm stats 2>/dev/null | head -60)"
fi
log_test "peer child deleted mid-stream and recreated: reconnected"

RET=0
for i in $(seq 2 $N); do
	ip netns exec "$B" ping -c 1 -W 5 -s 9000 "10.$i.0.1" >/dev/null
	check_err $? "child pair $i: ping back -s 9000"
done
log_test "the other pairs were not disturbed"

ktap_finish
