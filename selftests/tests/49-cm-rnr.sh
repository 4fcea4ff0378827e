#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 180
#
# A connected-mode peer that accepts a connection and then takes nothing
# (its receive queue stays empty: every send to it is RNR NAKed) must not
# stop traffic to the others. ib0 (in A) is connected; ib1 (in B,
# datagram) is the stuck peer, through softib's fault/rnr_stuck on its
# passive QP; peer1, a child of ib1 in C (connected), is a healthy one.
# All of ib0's sends share one send ring and one queue.
#
# - A TCP stream to peer1 over RC runs into the per-connection share of
#   the ring and is held back (the queue stops), never dropped: ours
#   counts no cm_tx_stalled_drops.
# - While ib0 sends 200 pings a second to the stuck ib1, pings to peer1
#   are all answered, none held for a second (the queue stopped), and the
#   transmit watchdog never fires. Ours' REP asks
#   its peers for unlimited RNR retries; ib0's QP must still give up (it
#   clamps the count), so its sends fail with RNR_RETRY_EXC and ib1 is
#   reached over UD (cm_rnr_fallbacks), and until then the stuck
#   connection holds only its share of the ring and what is sent to it
#   beyond is dropped (cm_tx_stalled_drops). Before, ib0's sends to ib1
#   never completed, filled the ring, stopped the queue for peer1 too, and
#   the watchdog restarted ib0 every few seconds.
# - In-tree asks its peers for no RNR retries and an in-tree ib1 echoes
#   that: the first RNR NAK fails the connection and in-tree connects
#   again at once (to a new passive QP, which the fault does not cover).
#   It has no counters for either; the rest applies to it.

source "$(dirname "$0")/../lib.sh"

require_cmd ping rdma iperf3 ethtool

# received OUTPUT: the "N received" of ping's summary
received() {
	sed -n 's/.* \([0-9]*\) received.*/\1/p' <<<"$1"
}

tx_timeouts() { ip netns exec "$A" cat /sys/class/net/ib0/queues/tx-0/tx_timeout; }

ktap_header 7
ktap_diag "IPOIB=$IPOIB"

ipoib_fabric_up
ktap_result $? "ib0/ib1 up in datagram mode" || ktap_finish
intree_on_provider && intree_no_cm_finish "$A" ib0

RET=0
setup_ns C
ip netns exec "$A" sh -c "echo connected > /sys/class/net/ib0/mode"
check_err $? "ib0 connected"
ip -n "$B" link add link ib1 name peer1 type ipoib pkey 0xffff &&
	ip -n "$B" link set peer1 netns "$C" &&
	ip -n "$C" link set peer1 type ipoib mode connected &&
	ip -n "$C" addr add 192.0.2.3/24 dev peer1 &&
	ip -n "$C" link set peer1 up &&
	slowwait 20 ipoib_lower_up "$C" peer1 >/dev/null
check_err $? "peer1 (child of ib1, connected) in C"
# ib0 -> ib1 first: the only RC QP on port 2 is then ib1's passive one
slowwait 20 sh -c "ip netns exec $A ping -c 1 -W 1 192.0.2.2 >/dev/null && rdma res show qp link softib0/2 | grep -q 'type RC state RTS'" >/dev/null
check_err $? "no connection from ib0 to ib1"
stuck=$(rc_qpns 2)
[[ $(wc -w <<<"$stuck") == 1 ]]
(($? == 0)) || check_err 1 "expected one RC QP on port 2 (ib1's passive), found: $(xargs <<<"$stuck")"
slowwait 20 ip netns exec "$A" ping -c 1 -W 1 192.0.2.3 >/dev/null
check_err $? "no ping from ib0 to peer1"
log_test "ib0 connected to ib1 (passive QPN ${stuck:-?}) and to peer1"

# ---- a healthy stream keeps its packets ----
RET=0
d0=$([[ $IPOIB == ours ]] && ipoib_dbg_stat ib0 cm_tx_stalled_drops)
mbps=$(iperf_mbps "$A" "$C" 192.0.2.3 3)
check_err $? "iperf3 from ib0 to peer1 failed"
ktap_diag "ib0 -> peer1 TCP over RC: ${mbps:-?} Mbit/s"
if [[ $IPOIB == ours ]]; then
	d1=$(ipoib_dbg_stat ib0 cm_tx_stalled_drops)
	[[ -n $d0 && $d1 == "$d0" ]]
	check_err $? "a healthy connection lost packets: cm_tx_stalled_drops ${d0:-?} -> ${d1:-?}"
fi
log_test "a TCP stream to a healthy peer is held back, not dropped"

# ---- the stuck peer ----
RET=0
to0=$(tx_timeouts)
f0=$([[ $IPOIB == ours ]] && ipoib_dbg_stat ib0 cm_rnr_fallbacks)
d0=$([[ $IPOIB == ours ]] && ipoib_dbg_stat ib0 cm_tx_stalled_drops)
echo "$stuck" >"$SOFTIB_DBG/fault/rnr_stuck"
check_err $? "fault/rnr_stuck $stuck"
mark="49-cm-rnr: stuck ($IPOIB, $$)"
echo "$mark" >/dev/kmsg
# 200 a second whether answered or not: 128 sends (the ring) in 0.64 s
ip netns exec "$A" ping -q -i 0.005 -w 8 -W 1 192.0.2.2 >/dev/null 2>&1 &
flood=$!
defer sh -c "kill $flood 2>/dev/null"
out=$(ip netns exec "$A" ping -c 30 -i 0.2 -W 3 192.0.2.3 2>&1)
got=$(received "$out")
# the slowest answer, in whole ms ("rtt min/avg/max/mdev = a/b/c/d ms")
slowest=$(sed -n 's|^rtt [^=]*= [^/]*/[^/]*/\([0-9]*\).*|\1|p' <<<"$out")
ktap_diag "pings to peer1 while ib1 is stuck: ${got:-?}/30 answered, the slowest in ${slowest:-?} ms"
[[ $got == 30 ]]
(($? == 0)) || check_err 1 "pings to the healthy peer were lost while another was stuck: $(tail -2 <<<"$out" | head -1)"
# Not a speed figure: a ping that waited for the stuck peer's sends (the
# whole ring, until its RNR retries ran out: seconds) is a stopped queue,
# which its share allows for 100 ms at most; a second is far from both.
((${slowest:-99999} < 1000 * ${TIMEOUT_SCALE:-1}))
check_err $? "a ping to the healthy peer waited ${slowest:-?} ms: the stuck peer stopped the queue"
wait "$flood"
log_test "pings to a healthy peer all answered while another peer takes nothing"

RET=0
to1=$(tx_timeouts)
said=$(dmesg | grep -F -A1000000 "$mark" | grep -E "restarting the interface|transmit queue 0 timed out")
[[ $to1 == "$to0" && -z $said ]]
(($? == 0)) || check_err 1 "the transmit watchdog fired (tx_timeout $to0 -> $to1): $(head -1 <<<"$said")"
log_test "no transmit timeout"

if [[ $IPOIB == ours ]]; then
	RET=0
	f1=$(ipoib_dbg_stat ib0 cm_rnr_fallbacks)
	d1=$(ipoib_dbg_stat ib0 cm_tx_stalled_drops)
	ktap_diag "cm_rnr_fallbacks ${f0:-?} -> ${f1:-?}, cm_tx_stalled_drops ${d0:-?} -> ${d1:-?}"
	((f1 > f0))
	check_err $? "the stuck connection never gave up (cm_rnr_fallbacks $f0 -> $f1): RNR retries for ever"
	((d1 > d0))
	check_err $? "nothing dropped for the stuck connection (cm_tx_stalled_drops $d0 -> $d1)"
	e=$(ip netns exec "$A" ethtool -S ib0 | awk '$1 == "cm_tx_stalled_drops:" { print $2 }')
	[[ $e == "$d1" ]]
	check_err $? "ethtool -S cm_tx_stalled_drops '${e}', debugfs $d1"
	log_test "RNR retries end (cm_rnr_fallbacks), the stuck share is dropped (cm_tx_stalled_drops)"
else
	ktap_skip "RNR retries end (cm_rnr_fallbacks), the stuck share is dropped (cm_tx_stalled_drops)" \
		"in-tree asks for no RNR retries and has neither counter"
fi

RET=0
slowwait 20 ip netns exec "$A" ping -c 1 -W 1 192.0.2.2 >/dev/null
check_err $? "no ping to ib1 after the fault"
ip netns exec "$A" ping -c 3 -i 0.2 -W 2 192.0.2.3 >/dev/null
check_err $? "no ping to peer1 after the fault"
log_test "ib1 and peer1 reached afterwards"

ktap_finish
