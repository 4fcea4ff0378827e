#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 360
#
# Connected mode on an HCA without SRQ (softib srq=0): every passive
# connection has its own receive ring, at most max_nonsrq_conn_qp (MAX,
# 2 here) per interface. N = 2 * MAX peers (children of ib1, each in its
# own netns, connected mode) connect to ib0 (datagram mode, so it only
# accepts): exactly MAX connections are accepted, the others refused.
# Ours falls back to UD for refused peers, which keep working (and get
# ICMP frag-needed for what UD cannot carry); in-tree has no fallback.

source "$(dirname "$0")/../lib.sh"

require_cmd ping

MAX=2
N=$((2 * MAX))
ktap_header 5
ktap_diag "IPOIB=$IPOIB"

modprobe ib_cm
load_softib srq=0 && slowwait 10 softib_ports_active >/dev/null &&
	load_ipoib max_nonsrq_conn_qp=$MAX recv_queue_size=64 &&
	slowwait 10 test -d /sys/class/net/ib1 >/dev/null
ktap_result $? "softib srq=0, ib_ipoib max_nonsrq_conn_qp=$MAX" || ktap_finish
defer unload_softib
defer unload_ipoib
intree_on_provider && intree_no_cm_finish "" ib0

RET=0
setup_ns A
ip link set ib0 netns "$A" && ip -n "$A" addr add 192.0.2.1/24 dev ib0 &&
	ip -n "$A" link set ib0 up && ip link set ib1 up
check_err $? "ib0 in A"
peers=()
for i in $(seq 1 $N); do
	setup_ns P
	peers+=("$P")
	ip link add link ib1 name peer$i type ipoib pkey 0xffff &&
		ip link set peer$i netns "$P" &&
		ip -n "$P" link set peer$i type ipoib mode connected &&
		ip -n "$P" addr add "192.0.2.$((10 + i))/24" dev peer$i &&
		ip -n "$P" link set peer$i up
	check_err $? "peer$i"
done
slowwait 20 ipoib_lower_up "$A" ib0 >/dev/null
check_err $? "ib0 has no carrier"
for i in $(seq 1 $N); do
	slowwait 20 ipoib_lower_up "${peers[i - 1]}" peer$i >/dev/null
	check_err $? "peer$i has no carrier"
done
log_test "$N connected-mode peers on ib1, ib0 in datagram mode"

# one at a time, so that the first MAX are the ones accepted
reached=0
for i in $(seq 1 $N); do
	ip netns exec "${peers[i - 1]}" ping -c 2 -i 0.2 -w 4 -W 2 192.0.2.1 >/dev/null && reached=$((reached + 1))
done
ktap_diag "$reached of $N peers reached ib0"

RET=0
for i in $(seq 1 $MAX); do
	ip netns exec "${peers[i - 1]}" ping -c 1 -W 2 -s 9000 192.0.2.1 >/dev/null
	check_err $? "peer$i: ping -s 9000 (within the limit: RC)"
done
log_test "the first $MAX peers are connected (9000-byte pings)"

rcs=$(rdma res show qp link softib0/1 | grep -c 'type RC state RTS')
[[ $rcs == "$MAX" ]]
ktap_result $? "exactly $MAX passive RC QPs on port 1 (found $rcs)"

if [[ $IPOIB == ours ]]; then
	RET=0
	((reached == N))
	check_err $? "only $reached of $N peers reached ib0"
	out=$(ip netns exec "${peers[N - 1]}" ping -c 1 -W 2 -M do -s 4000 192.0.2.1 2>&1)
	grep -q "mtu = 2044" <<<"$out"
	(($? == 0)) || check_err 1 "refused peer: no frag-needed with mtu 2044: $(head -3 <<<"$out" | xargs)"
	log_test "refused peers fall back to UD and still work; DF 4000 gets frag-needed"
else
	ktap_skip "refused peers fall back to UD" "in-tree has no UD fallback: refused peers are black-holed ($reached of $N reached)"
fi

ktap_finish
