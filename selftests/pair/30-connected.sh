#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 600
#
# IPoIB connected mode between two kernels on one softib fabric: node 1
# (6.1) and node 2 (6.12), in-tree ib_ipoib on one and ours on the other
# in both arrangements. The CM's MADs cross the link as datagrams, the
# RC connections as SEND packets with PSNs and ACKs (rc_remote.c). Big
# pings, a TCP stream and 30000-byte UDP datagrams in connected mode,
# a remote access error NAKed across the link (the requester connects
# again), P_Key children moved into a netns on both nodes, a mode flip on one
# side while the other keeps sending; then pings under netem loss,
# duplication and reordering on the underlay with no RC connection torn
# down (in-tree asks for retry_cnt 0: one lost RC packet would end it),
# and node 2 reloading its whole stack while node 1 keeps pinging: node
# 1's connection fails in bounded time and traffic resumes when node 2
# is back.

source "$(dirname "$0")/../lib.sh"

pair_require
require_cmd rdma iperf3 ping tc
modprobe sch_netem || { echo "# SKIP: no sch_netem"; exit $ksft_skip; }

ME=$(pair_node)
PEER=$(pair_peer)
DEV=$(pair_dev)
FAB=$SOFTIB_DBG/fabric
NS=pair-cni

rc_diag() {
	ktap_diag "$(grep -E '^(rc_|tx_ib|rx_ib)' "$FAB/stats" | grep -v ' 0$' | tr '\n' ' ')"
}

cleanup() {
	tc qdisc del dev "$DEV" root 2>/dev/null || true
	pkill -x iperf3 2>/dev/null || true
	pkill -x ping 2>/dev/null || true
	ip netns del "$NS" 2>/dev/null || true
	unload_ipoib
	unload_softib
}
defer cleanup

linked_softib() {
	pair_link_load && slowwait 15 pair_link_up &&
	softib_policy "Default=0x7fff, ipoib : ALL=full;" "p1=0x0001, ipoib : ALL=full;"
}

# ipoib_up DRIVER ADDR: ib0 in connected mode, MTU 65520, with carrier
ipoib_up() {
	IPOIB=$1 load_ipoib && slowwait 10 test -d /sys/class/net/ib0 &&
		echo connected >/sys/class/net/ib0/mode &&
		ip link set ib0 mtu 65520 && ip addr add "$2/24" dev ib0 &&
		ip link set ib0 up && slowwait 30 ipoib_lower_up "" ib0
}

ktap_header 19

modprobe ib_cm && linked_softib
ktap_result $? "softib on both nodes, linked" || ktap_finish

# arrangement DRV_NODE1 DRV_NODE2 SUBNET: one driver on each node
arrangement() {
	local drv a b tag=$1-$2 tx0 rx0 mbps out

	drv=$1
	((ME == 2)) && drv=$2
	a=$3.$ME
	b=$3.$PEER
	ktap_diag "node 1: $1, node 2: $2"

	RET=0
	ipoib_up "$drv" "$a"
	check_err $? "$drv: ib0 in connected mode"
	[[ $(cat /sys/class/net/ib0/mode) == connected ]]
	(($? == 0)) || check_err 1 "mode reads $(cat /sys/class/net/ib0/mode)"
	log_test "$1 on node 1, $2 on node 2: connected mode, MTU 65520"
	pair_barrier "up-$tag"

	RET=0
	tx0=$(pair_fab rc_tx_msgs)
	rx0=$(pair_fab rc_rx_msgs)
	ping -c 5 -i 0.2 -w 20 -W 5 -s 60000 "$b" >/dev/null
	check_err $? "no 60000-byte ping"
	pair_barrier "ping-$tag"
	[[ $(pair_fab rc_tx_msgs) -gt $tx0 && $(pair_fab rc_rx_msgs) -gt $rx0 ]]
	(($? == 0)) || check_err 1 "not over RC: rc_tx_msgs $tx0 -> $(pair_fab rc_tx_msgs), rc_rx_msgs $rx0 -> $(pair_fab rc_rx_msgs)"
	((RET)) && rc_diag
	log_test "$1 <-> $2: 60000-byte pings over RC connections"

	RET=0
	mbps=$(pair_tcp_stream "$tag" "$3.2")
	check_err $? "iperf3 gave '$mbps'"
	if ((ME == 1)); then
		ktap_diag "iperf3 TCP connected mode, node 1 ($1) -> node 2 ($2): $mbps Mbit/s"
		((RET)) && rc_diag
	fi
	log_test "$1 -> $2: a TCP stream in connected mode"

	# datagrams larger than a UD packet can carry: each an RC message
	RET=0
	tx0=$(pair_fab rc_tx_msgs)
	out=$(pair_udp_stream "$tag" "$3.2" 30000 120 40)
	check_err $? "UDP: $out"
	((ME == 1)) && [[ $(pair_fab rc_tx_msgs) -lt $((tx0 + 120)) ]] &&
		check_err 1 "not over RC: rc_tx_msgs $tx0 -> $(pair_fab rc_tx_msgs)"
	((ME == 2)) && ktap_diag "UDP connected mode, node 1 ($1) -> node 2 ($2): $out"
	log_test "$1 -> $2: 120 UDP datagrams of 30000 bytes, each arrives once"

	# A remote access error: node 2's responder answers node 1's next
	# message with a NAK (fault/rem_access on its RC QPs; only the
	# passive one receives). Node 1's send fails, its driver drops the
	# connection and connects again: pings go on.
	RET=0
	pair_barrier "nak-$tag"
	naks0=$(pair_fab rc_tx_naks)
	((ME == 1)) && naks0=$(pair_fab rc_rx_naks)
	if ((ME == 2)); then
		qpns=$(rc_qpns 1)
		[[ -n $qpns ]]
		check_err $? "no RC QP on node 2"
		for q in $qpns; do
			echo "$q" >"$SOFTIB_DBG/fault/rem_access"
		done
	fi
	pair_barrier "nak-armed-$tag"
	if ((ME == 1)); then
		ping -c 1 -W 3 -s 30000 "$b" >/dev/null
		slowwait 30 ping -c 1 -W 2 -s 30000 "$b" >/dev/null
		check_err $? "no ping after the NAK"
		[[ $(pair_fab rc_rx_naks) -gt $naks0 ]]
		(($? == 0)) || check_err 1 "no NAK came: rc_rx_naks $naks0 -> $(pair_fab rc_rx_naks)"
	fi
	pair_barrier "nak-done-$tag"
	if ((ME == 2)); then
		[[ $(pair_fab rc_tx_naks) -gt $naks0 ]]
		(($? == 0)) || check_err 1 "no NAK sent: rc_tx_naks $naks0 -> $(pair_fab rc_tx_naks)"
	fi
	((RET)) && rc_diag
	log_test "$1 -> $2: a remote access error NAKed across the link, then connected again"

	# A receiver that falls behind: node 2's RC QPs answer every message
	# with an RNR NAK (fault/rnr_stuck), until they take messages again
	# (fault/rnr_clear). The NAKs cross the link, and node 1's requester
	# retries as its connection's rnr_retry says: ours gives up after
	# its clamp and goes on over UD until it connects again; in-tree,
	# asked by ours for unlimited retries, waits; asked by in-tree for
	# none, its connection fails and it connects again. Pings go on
	# once node 2 takes messages.
	RET=0
	pair_barrier "rnr-$tag"
	rnr0=$(pair_fab rc_tx_rnr)
	((ME == 1)) && rnr0=$(pair_fab rc_rx_rnr)
	if ((ME == 2)); then
		qpns=$(rc_qpns 1)
		[[ -n $qpns ]]
		check_err $? "no RC QP on node 2"
		for q in $qpns; do
			echo "$q" >"$SOFTIB_DBG/fault/rnr_stuck"
		done
	fi
	pair_barrier "rnr-armed-$tag"
	if ((ME == 1)); then
		ping -c 1 -W 2 -s 30000 "$b" >/dev/null
		slowwait 10 stat_cmp "$FAB/stats" rc_rx_rnr -gt "$rnr0"
		check_err $? "no RNR NAK came: rc_rx_rnr $rnr0 -> $(pair_fab rc_rx_rnr)"
	fi
	pair_barrier "rnr-seen-$tag"
	if ((ME == 2)); then
		# a QP its driver destroyed meanwhile is gone: nothing to clear
		for q in $qpns; do
			echo "$q" >"$SOFTIB_DBG/fault/rnr_clear" 2>/dev/null
		done
		(($(pair_fab rc_tx_rnr) > rnr0)) ||
			check_err 1 "no RNR NAK sent: rc_tx_rnr $rnr0 -> $(pair_fab rc_tx_rnr)"
	fi
	pair_barrier "rnr-cleared-$tag"
	if ((ME == 1)); then
		slowwait 30 ping -c 1 -W 2 -s 30000 "$b" >/dev/null
		check_err $? "no ping once node 2 takes messages again"
	fi
	pair_barrier "rnr-done-$tag"
	((RET)) && rc_diag
	log_test "$1 -> $2: RNR NAKs across the link while node 2's receiver is stuck, pings after"

	# a P_Key child in a container's netns on each node (ipoib-cni)
	RET=0
	ip netns add "$NS" &&
		echo 0x8001 >/sys/class/net/ib0/create_child &&
		ip link set ib0.8001 netns "$NS" &&
		ip netns exec "$NS" sh -c 'echo connected >/sys/class/net/ib0.8001/mode' &&
		ip -n "$NS" addr add "203.0.113.$ME/24" dev ib0.8001 &&
		ip -n "$NS" link set ib0.8001 up &&
		slowwait 30 ipoib_lower_up "$NS" ib0.8001
	check_err $? "child 0x8001 in $NS"
	pair_barrier "child-$tag"
	ip netns exec "$NS" ping -c 3 -i 0.2 -w 20 -W 5 -s 30000 \
		"203.0.113.$PEER" >/dev/null
	check_err $? "no ping over the children"
	log_test "$1 <-> $2: P_Key children 0x8001 in a netns, connected, ping"
	pair_barrier "child-done-$tag"
	ip netns del "$NS"
	slowwait 10 sh -c '! test -d /sys/class/net/ib0.8001' 2>/dev/null
	echo 0x8001 >/sys/class/net/ib0/delete_child 2>/dev/null

	unload_ipoib
	pair_barrier "down-$tag"
}

arrangement intree ours 192.0.2
arrangement ours intree 198.51.100

# node 1 (in-tree) flips to datagram and back while node 2 (ours) pings
RET=0
if ((ME == 1)); then
	ipoib_up intree 192.0.2.1
else
	ipoib_up ours 192.0.2.2
fi
check_err $? "ib0 again"
pair_barrier flip
if ((ME == 2)); then
	ping -q -i 0.05 -s 1000 192.0.2.1 >/tmp/flip-ping 2>&1 &
	pinger=$!
fi
if ((ME == 1)); then
	for m in datagram connected datagram connected; do
		sleep 1
		echo $m >/sys/class/net/ib0/mode
		check_err $? "mode $m"
	done
fi
pair_barrier flip-done 60
if ((ME == 2)); then
	kill -INT "$pinger"
	wait "$pinger"
	ping -c 3 -i 0.2 -w 20 -W 5 -s 30000 192.0.2.1 >/dev/null
	(($? == 0)) || check_err 1 "no ping after the flips ($(grep -E 'transmitted' /tmp/flip-ping))"
fi
pair_barrier flip-ping 60
[[ $(cat /sys/class/net/ib0/mode) == connected ]]
(($? == 0)) || check_err 1 "mode is $(cat /sys/class/net/ib0/mode) after the flips"
log_test "in-tree node 1 flips datagram/connected while node 2 pings: traffic resumes"

# netem on the underlay: the link hides it, no RC connection ends
RET=0
tc qdisc add dev "$DEV" root netem loss 5% duplicate 2% delay 2ms reorder 25% 50%
check_err $? "netem"
pair_barrier netem
rexc0=$(pair_fab rc_retry_exceeded)
naks0=$(pair_fab rc_tx_naks)
if ((ME == 1)); then
	# exactly 100 sent, each waited for (no -w, as in 20-datagram)
	out=$(timeout 100 ping -c 100 -i 0.02 -W 5 -s 30000 192.0.2.2 2>&1)
	grep -q "100 packets transmitted, 100 received" <<<"$out"
	(($? == 0)) || check_err 1 "lost under netem: $(grep -E 'transmitted|rtt' <<<"$out" | tr '\n' ' ')"
fi
pair_barrier netem-done 120
tc qdisc del dev "$DEV" root
[[ $(pair_fab rc_retry_exceeded) -eq $rexc0 && $(pair_fab rc_tx_naks) -eq $naks0 ]]
(($? == 0)) || check_err 1 "rc_retry_exceeded $rexc0 -> $(pair_fab rc_retry_exceeded), rc_tx_naks $naks0 -> $(pair_fab rc_tx_naks)"
((RET)) && rc_diag
ktap_diag "node $ME under netem: $(grep -E '^(rx_ooo|rx_dup|tx_naks|retransmits) ' "$FAB/stats" | tr '\n' ' ')"
log_test "100 30000-byte pings under netem loss/dup/reorder: none lost, no RC connection torn down"

# node 2 vanishes (its link goes silent, as a node that loses power),
# then reloads its stack, while node 1 pings: node 1's connection to it
# fails in bounded time (the QP's local ACK timeout), then traffic resumes
RET=0
pair_barrier reload
if ((ME == 1)); then
	rexc0=$(pair_fab rc_retry_exceeded)
	ping -q -i 0.1 -s 20000 192.0.2.2 >/tmp/reload-ping 2>&1 &
	pinger=$!
	pair_barrier reload-gone 60
	t0=$SECONDS
	slowwait 20 sh -c "[ \$(grep '^rc_retry_exceeded ' $FAB/stats | cut -d' ' -f2) -gt $rexc0 ]"
	check_err $? "the connection to the vanished node did not fail in 20 s"
	ktap_diag "node 1's RC to the vanished node failed after about $((SECONDS - t0)) s"
	pair_barrier reload-failed 60
	pair_barrier reload-back 120
	slowwait 60 ping -c 1 -W 2 -s 20000 192.0.2.2 >/dev/null
	check_err $? "no ping once node 2 is back"
	kill -INT "$pinger"
	wait "$pinger"
	ktap_diag "node 1's pings across the reload: $(grep -E 'transmitted' /tmp/reload-ping)"
else
	sleep 1
	echo "blackhole 1" >"$FAB/fault"
	check_err $? "blackhole"
	pair_barrier reload-gone 60
	# silent until node 1 has seen its connection fail
	pair_barrier reload-failed 60
	unload_ipoib && unload_softib
	check_err $? "unload"
	linked_softib && ipoib_up ours 192.0.2.2
	check_err $? "node 2's stack again"
	# Its ib0 has a new QPN, so a new hardware address: node 1 learns
	# it from this ping's ARP request, as from a rebooted node's first
	# packet (else only when its neighbour entry times out, 15-45 s).
	slowwait 20 ping -c 1 -W 2 192.0.2.1 >/dev/null
	check_err $? "node 2 back: no ping to node 1"
	pair_barrier reload-back 120
fi
pair_barrier reload-done 120
log_test "node 2 vanishes and reloads under traffic: node 1's RC fails in bounded time, traffic resumes"

RET=0
[[ $(pair_fab rx_ib_bad) -eq 0 ]]
(($? == 0)) || check_err 1 "rx_ib_bad $(pair_fab rx_ib_bad)"
rc_diag
log_test "no malformed IB packet on the link"

pair_barrier done
ktap_finish
