#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 240
#
# Without an SRQ (softib srq=0), a passive connection that the HCA fails
# on its own must be reaped at once, and its max_nonsrq_conn_qp slot (and
# its receive ring) be free for the next peer. ib0 (in A, datagram mode,
# max_nonsrq_conn_qp=1) accepts a connection from ib1 (in B, connected);
# softib's fault/qp_error fails ib0's passive QP as an HCA would (ERR,
# every posted receive flushed, no event: nothing that says "error" but
# the flushes of a connection that was live). Then:
#
# - the QP is destroyed within 3 s. ipoib-ng used to take a flush on a
#   live connection for its own teardown and leave the QP to the idle
#   scan, 512 s later; in-tree reaps it when its last receive flushed.
# - ours counts it (cm_passive_failed, debugfs stats and ethtool -S).
# - a second peer (peer2, a child of ib1 in C) gets the only slot: a
#   connection, not a refusal and UD.
# - ib1, refused now, still reaches ib0 over UD (ours; in-tree has no
#   fallback, its packets are dropped).

source "$(dirname "$0")/../lib.sh"

require_cmd ping rdma ethtool

ktap_header 6
ktap_diag "IPOIB=$IPOIB"

# rc_rts PORT: an RC QP on the port is in RTS
rc_rts() {
	rdma res show qp link "softib0/$1" 2>/dev/null | grep -q 'type RC state RTS'
}

modprobe ib_cm
load_softib srq=0 && slowwait 10 softib_ports_active >/dev/null &&
	load_ipoib max_nonsrq_conn_qp=1 recv_queue_size=64 &&
	slowwait 10 test -d /sys/class/net/ib1 >/dev/null
ktap_result $? "softib srq=0, ib_ipoib max_nonsrq_conn_qp=1" || ktap_finish
defer unload_softib
defer unload_ipoib
intree_on_provider && intree_no_cm_finish "" ib0

RET=0
setup_ns A B C
printf 'link set ib0 netns %s\nlink set ib1 netns %s\n' "$A" "$B" | ip -batch - &&
	printf 'addr add 192.0.2.1/24 dev ib0\nlink set ib0 up\n' | ip -n "$A" -batch - &&
	printf 'link set ib1 type ipoib mode connected\naddr add 192.0.2.2/24 dev ib1\nlink set ib1 up\n' |
	ip -n "$B" -batch - &&
	ip -n "$B" link add link ib1 name peer2 type ipoib pkey 0xffff &&
	ip -n "$B" link set peer2 netns "$C" &&
	printf 'link set peer2 type ipoib mode connected\naddr add 192.0.2.3/24 dev peer2\nlink set peer2 up\n' |
	ip -n "$C" -batch -
check_err $? "ib0 in A, ib1 in B, peer2 in C"
slowwait 20 ipoib_lower_up "$A" ib0 >/dev/null &&
	slowwait 20 ipoib_lower_up "$B" ib1 >/dev/null &&
	slowwait 20 ipoib_lower_up "$C" peer2 >/dev/null
check_err $? "no carrier"
ip netns exec "$B" ping -c 2 -i 0.2 -w 5 -W 3 192.0.2.1 >/dev/null
check_err $? "ib1 cannot reach ib0"
slowwait 10 rc_rts 1 >/dev/null
check_err $? "no passive RC QP on ib0's port"
qpns=$(rc_qpns 1)
qpn=$(head -1 <<<"$qpns")
[[ $(wc -w <<<"$qpns") == 1 && -n $qpn ]]
(($? == 0)) || check_err 1 "expected one passive RC QP on ib0's port, found: $(xargs <<<"$qpns")"
log_test "ib1 connected to ib0 (one passive QP without SRQ)"

RET=0
echo "$qpn" >"$SOFTIB_DBG/fault/qp_error"
check_err $? "fault/qp_error $qpn"
t0=$EPOCHREALTIME
busywait 3000 sh -c "! rdma res show qp link softib0/1 lqpn $qpn 2>/dev/null | grep -q RC" >/dev/null
(($? == 0)) || check_err 1 "QPN $qpn is still there 3 s after the HCA failed it: $(rdma res show qp link softib0/1 lqpn "$qpn" 2>&1 | xargs)"
ktap_diag "the failed QP went after $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }') s"
log_test "a passive QP the HCA failed is destroyed within 3 s"

RET=0
if [[ $IPOIB == ours ]]; then
	n=$(ipoib_dbg_stat ib0 cm_passive_failed)
	e=$(nic_stat "$A" ib0 cm_passive_failed)
	ktap_diag "cm_passive_failed: debugfs ${n:-?}, ethtool -S ${e:-?}"
	[[ $n == 1 && $e == 1 ]]
	check_err $? "cm_passive_failed ${n:-?} / ${e:-?}, not 1"
	log_test "the failure is counted (cm_passive_failed)"
else
	ktap_skip "the failure is counted (cm_passive_failed)" "ours only"
fi

RET=0
ip netns exec "$C" ping -c 2 -i 0.2 -w 5 -W 3 192.0.2.1 >/dev/null
check_err $? "peer2 cannot reach ib0"
slowwait 10 rc_rts 1 >/dev/null
check_err $? "peer2 got no connection: max_nonsrq_conn_qp's slot is still taken"
ktap_diag "RC QPs on ib0's port: $(rc_qpns 1 | xargs)"
log_test "the slot is free: a second peer connects"

# peer2 holds the only slot: ib1's new connection is refused
if [[ $IPOIB == ours ]]; then
	RET=0
	ip netns exec "$B" ping -c 2 -i 0.2 -w 5 -W 3 192.0.2.1 >/dev/null
	check_err $? "ib1 cannot reach ib0 after its connection failed"
	log_test "ib1 still reaches ib0 (over UD while refused)"
else
	ktap_skip "ib1 still reaches ib0 (over UD while refused)" \
		"in-tree drops what is for a peer that refused the connection"
fi

ktap_finish
