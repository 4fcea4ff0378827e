#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 180
#
# The affiliated QP events an HCA raises when a QP fails, through
# softib's fault/ knobs, on the passive QP of a connection: ib0 (in A)
# is connected, ib1 (in B) datagram, so the only RC QP on ib1's port is
# the passive one of ib0's connection (on ib1's SRQ).
#
# - rem_inv_req: the next message to it is an invalid request. The
#   responder goes to ERR with IB_EVENT_QP_REQ_ERR, then (SRQ)
#   IB_EVENT_QP_LAST_WQE_REACHED; ib0's send completes with
#   IB_WC_REM_INV_REQ_ERR.
# - rem_access: the same as an access violation (IB_EVENT_QP_ACCESS_ERR,
#   IB_WC_REM_ACCESS_ERR).
# - qp_fatal: a local catastrophic error: IB_EVENT_QP_FATAL, then
#   LAST_WQE_REACHED, and no completion at all.
#
# Each event must be raised once (softib's stats count them), the failed
# QP must be destroyed by the driver and pings must go on over a new
# connection.

source "$(dirname "$0")/../lib.sh"

require_cmd ping rdma

# passive_qpn: ib1's passive QP, once ib0 connected to it
passive_qpn() {
	local q

	slowwait 20 sh -c "ip netns exec $A ping -c 1 -W 1 192.0.2.2 >/dev/null && rdma res show qp link softib0/2 | grep -q 'type RC state RTS'" >/dev/null ||
		return 1
	q=$(rc_qpns 2)
	[[ $(wc -w <<<"$q") == 1 ]] && echo "$q"
}

# gone QPN: the QP no longer exists
gone() {
	! rc_qpns 2 | grep -qx "$1"
}

ktap_header 5
ktap_diag "IPOIB=$IPOIB"

ipoib_fabric_up
ktap_result $? "ib0/ib1 up in datagram mode" || ktap_finish
intree_on_provider && intree_no_cm_finish "$A" ib0

RET=0
ip netns exec "$A" sh -c "echo connected > /sys/class/net/ib0/mode"
check_err $? "ib0 connected"
qpn=$(passive_qpn)
(($? == 0)) || check_err 1 "no connection from ib0 to ib1 (RC QPs on port 2: $(rc_qpns 2 | xargs))"
log_test "ib0 connected to ib1 (passive QPN ${qpn:-?})"

# fault KNOB EVENT: the knob on the current passive QP; EVENT (a stats
# name) and qp_last_wqe_events each grow by one; the QP goes, pings come
# back over a new connection
fault() {
	local knob=$1 ev=$2 e0 l0 e1 l1 old

	RET=0
	old=$(passive_qpn)
	check_err $? "no passive QP before $knob"
	e0=$(softib_stat "$ev")
	l0=$(softib_stat qp_last_wqe_events)
	echo "$old" >"$SOFTIB_DBG/fault/$knob"
	check_err $? "fault/$knob $old"
	# this ping meets the fault; the next ones the new connection
	ip netns exec "$A" ping -c 1 -W 1 192.0.2.2 >/dev/null 2>&1
	slowwait 10 stat_cmp "$SOFTIB_DBG/stats" "$ev" -gt "$e0" >/dev/null
	check_err $? "no $ev (still $e0)"
	slowwait 10 gone "$old" >/dev/null
	check_err $? "the failed QP $old was not destroyed"
	slowwait 20 ip netns exec "$A" ping -c 1 -W 1 192.0.2.2 >/dev/null
	check_err $? "no ping after fault/$knob"
	e1=$(softib_stat "$ev")
	l1=$(softib_stat qp_last_wqe_events)
	ktap_diag "fault/$knob on QPN $old: $ev $e0 -> $e1, qp_last_wqe_events $l0 -> $l1"
	((e1 == e0 + 1 && l1 >= l0 + 1))
	check_err $? "$ev $e0 -> $e1, qp_last_wqe_events $l0 -> $l1: want one each"
	log_test "fault/$knob: $ev and LAST_WQE_REACHED raised, QP destroyed, pings recover"
}

fault rem_inv_req qp_req_err_events
fault rem_access qp_access_err_events
fault qp_fatal qp_fatal_events

ktap_diag "softib: $(xargs <"$SOFTIB_DBG/stats")"

ktap_finish
