#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 120
#
# Sustained sends must not hold the receive softirq: a 10 s UDP flood
# (iperf3 -u -b 0) from ib0 with pings beside it, over a P_Key child
# (ib0.8001): the child has a send queue and a qdisc of its own, so the
# flood cannot drop the pings there, while its receives still need the
# same softirq as the parent's. Ours, like in-tree,
# polls sends and receives on CQs of their own, each with a NAPI; a poll
# of either handles at most its budget (debugfs stats napi_max_polled and
# send_napi_max_polled against napi_poll_cap; once, with one CQ, a poll
# took 129 completions with a budget of 64). Neither driver may report a
# soft lockup or an RCU stall, and the pings keep answering.

source "$(dirname "$0")/../lib.sh"

require_cmd iperf3 ping

ktap_header 4
ktap_diag "IPOIB=$IPOIB"

ipoib_fabric_up && softib_policy "Default=0x7fff, ipoib : ALL=full;" \
	"p1=0x0001, ipoib : ALL=full;" &&
	ipoib_child "$A" ib0 8001 198.51.100.1/24 &&
	ipoib_child "$B" ib1 8001 198.51.100.2/24 &&
	slowwait 20 ipoib_lower_up "$A" ib0.8001 &&
	slowwait 20 ipoib_lower_up "$B" ib1.8001 &&
	slowwait 20 ip netns exec "$A" ping -c 1 -W 1 198.51.100.2 >/dev/null
ktap_result $? "ib0/ib1 up in two netns, children 0x8001 pinging" || ktap_finish

ours_stat() { ipoib_dbg_stat ib0 "$1" 2>/dev/null; }

dmesg_mark=$(dmesg | wc -l)
ip netns exec "$A" ping -i 0.2 -c 40 -W 2 198.51.100.2 >/tmp/58-ping.$$ 2>&1 &
ping_pid=$!
# small datagrams from two streams: as many send completions as possible
mbps=$(iperf_mbps "$A" "$B" 192.0.2.2 10 -u -b 0 -l 64 -P 2)
ktap_result $? "iperf3 UDP flood 10 s (${mbps:-0} Mbit/s received)"
kill -INT "$ping_pid" 2>/dev/null
wait "$ping_pid" 2>/dev/null

RET=0
stalls=$(dmesg | tail -n +$((dmesg_mark + 1)) |
	 grep -E "soft lockup|rcu_sched self-detected stall|rcu: INFO|NOHZ tick-stop")
[[ -z $stalls ]]
check_err $? "$stalls"
ktap_diag "ping during the flood: $(grep -E 'packets transmitted|rtt' /tmp/58-ping.$$ | tr '\n' ' ')"
# the pings' RTT is reported, not judged (an emulated guest queues for
# seconds). A softirq held by the poll loses nearly all of them: at
# least half must be answered. (When they shared ib0's saturated send
# queue, its qdisc dropped 15-57% of them on a loaded host.)
max=$(sed -n 's|.* = [0-9.]*/[0-9.]*/\([0-9.]*\)/.*|\1|p' /tmp/58-ping.$$)
lost=$(sed -n 's/.* \([0-9.]*\)% packet loss.*/\1/p' /tmp/58-ping.$$)
[[ -n $lost ]] && ((${lost%.*} <= 50))
check_err $? "ping loss ${lost:-?}%"
log_test "no soft lockup or RCU stall, pings answered (max RTT ${max:-?} ms)"
rm -f /tmp/58-ping.$$

RET=0
if [[ $IPOIB == ours ]]; then
	polled=$(ours_stat napi_max_polled)
	spolled=$(ours_stat send_napi_max_polled)
	cap=$(ours_stat napi_poll_cap)
	ktap_diag "napi_max_polled $polled, send_napi_max_polled $spolled, cap $cap"
	[[ -n $polled && -n $spolled && -n $cap ]] && ((polled <= cap && spolled <= cap))
	check_err $? "a poll handled $polled receive / $spolled send completions (cap $cap)"
	# the flood's sends did complete through the send poll
	((spolled > 0))
	check_err $? "no send completion was polled"
	log_test "a NAPI poll handles at most its budget of completions"
else
	ktap_skip "a NAPI poll handles at most its budget of completions" \
		"in-tree polls sends on a CQ of their own"
fi

ktap_finish
