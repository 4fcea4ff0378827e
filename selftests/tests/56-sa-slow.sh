#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 180
# timeout-long: 1200
#
# A slow subnet administrator (softib's fault/sa_delay_ms holds every SA
# answer back): first slower than usual but within the drivers' 1 s path
# query timeout (resolution must work), then slower than it, with path
# queries in flight when the interface is torn down. A teardown must
# cancel what is in flight; nothing may outlive it
# (the path callback used to complete() its waiter before its last use of
# the path and the interface, a use-after-free on KASAN kernels); the
# late answers must be dropped harmlessly; and after the SA is fast again
# everything works.
#
# In each round B's ib1 (or its child ib1.8001) has just come up, so it
# knows no path, and its joins are answered: answering A's ARP request
# makes it ask the SA for the path to A, and the teardown (ifdown, child
# delete, or rmmod) comes while that query waits (softib stats
# "sa_replies_waiting" >= 1 before it). The teardown times are reported,
# not judged: both drivers' own 1 s query timeout bounds any wait, and the
# leaves a teardown sends are held back too.
#
# ROUNDS: 4 (ifdown; child delete; ifdown; rmmod), 30 with LONG=1 (the
# last is rmmod).

source "$(dirname "$0")/../lib.sh"

require_cmd ping

# under the 1 s timeout of both drivers' path queries (joins allow 3 s)
SLOW=600
# over it: the query is in flight until its own timeout, whatever the SA
DELAY=1500
# waits for the SA to answer what it holds (a debug kernel is slower)
DRAIN=$((DELAY / 1000 + 5))	# slowwait scales it (TIMEOUT_SCALE)
ROUNDS=4
[[ $LONG == 1 ]] && ROUNDS=30
BOTH="Default=0x7fff, ipoib : ALL=full;"
P1="p1=0x0001, ipoib : ALL=full;"

ktap_header 5
ktap_diag "IPOIB=$IPOIB SLOW=${SLOW}ms DELAY=${DELAY}ms ROUNDS=$ROUNDS"

ipoib_fabric_up && softib_policy "$BOTH" "$P1" &&
	ipoib_child "$A" ib0 8001 198.51.100.1/24 &&
	slowwait 20 ipoib_lower_up "$A" ib0.8001
ktap_result $? "ib0/ib1 up, child ib0.8001 in A" || ktap_finish

# ---- the knob ----
RET=0
F=$SOFTIB_DBG/fault/sa_delay_ms
echo 60001 >"$F" 2>/dev/null
check_fail $? "sa_delay_ms took 60001 (at most 60000)"
echo soon >"$F" 2>/dev/null
check_fail $? "sa_delay_ms took 'soon'"
echo "$SLOW" >"$F" && [[ $(<"$F") == "$SLOW" ]]
(($? == 0)) || check_err 1 "sa_delay_ms reads $(<"$F"), not $SLOW"
defer sh -c "echo 0 >$F"
log_test "fault/sa_delay_ms: 0-60000 taken, the rest refused"

# ---- a slow SA slows resolution down, nothing more ----
RET=0
d0=$(softib_stat sa_replies_delayed)
ip -n "$B" link set ib1 down && ip -n "$B" link set ib1 up &&
	slowwait 20 ipoib_lower_up "$B" ib1 >/dev/null
check_err $? "ib1 up again with the SA slow (its broadcast join waits)"
ip -n "$A" neigh flush dev ib0
slowwait 20 ip netns exec "$A" ping -c 1 -W 5 192.0.2.2 >/dev/null
check_err $? "no ping with the SA slow"
d1=$(softib_stat sa_replies_delayed)
ktap_diag "SA answers held back: $((d1 - d0))"
((d1 - d0 >= 2))
(($? == 0)) || check_err 1 "only $((d1 - d0)) SA answers were held back (a join and a path query at least)"
log_test "the SA answers ${SLOW} ms late: ib1 joins and resolves anyway"

# up_in_b KIND: B's interface for KIND comes up knowing no path (ib1 is
# restarted; the child is created anew), and its joins are done
up_in_b() {
	if [[ $1 == child ]]; then
		ip -n "$B" link set ib1 up &&
			ipoib_child "$B" ib1 8001 198.51.100.2/24 &&
			slowwait $((DELAY / 1000 + 20)) ipoib_lower_up "$B" ib1.8001 >/dev/null
	else
		ip -n "$B" link set ib1 down && ip -n "$B" link set ib1 up &&
			slowwait $((DELAY / 1000 + 20)) ipoib_lower_up "$B" ib1 >/dev/null
	fi &&
		# the multicast joins after carrier (all-hosts, IPv6) are answered
		slowwait_eq $DRAIN 0 softib_stat sa_replies_waiting
}

# down_in_b KIND: tear B's interface for KIND down (rmmod: the module)
down_in_b() {
	case $1 in
	child) ip -n "$B" link del ib1.8001 ;;
	rmmod) unload_ipoib ;;
	*) ip -n "$B" link set ib1 down ;;
	esac
}

waiting_ge1() { (($(softib_stat sa_replies_waiting) >= 1)); }

# ---- teardown under queries in flight ----
RET=0
echo "$DELAY" >"$F"
slowest=0
for ((r = 1; r <= ROUNDS; r++)); do
	case $r in
	"$ROUNDS") kind=rmmod ;;
	*) ((r % 2)) && kind=ifdown || kind=child ;;
	esac
	[[ $kind == child ]] && dst=198.51.100.2 dev=ib0.8001 || dst=192.0.2.2 dev=ib0
	up_in_b $kind
	check_err $? "round $r: B's side ($kind) did not come up"
	# A knows B's path already: the only query is B's, for A
	ip -n "$A" neigh flush dev $dev
	ip netns exec "$A" ping -c 1 -W 1 $dst >/dev/null 2>&1 &
	slowwait 5 waiting_ge1
	check_err $? "round $r: no SA query in flight in B"
	t0=${EPOCHREALTIME/./}
	down_in_b $kind
	check_err $? "round $r: $kind failed"
	ms=$(((${EPOCHREALTIME/./} - t0) / 1000))
	((ms > slowest)) && slowest=$ms
	wait
	[[ $RET == 0 ]] || break
done
ktap_diag "the slowest teardown took $slowest ms"
log_test "ifdown, child delete and rmmod with a path query in flight"

# ---- the late answers ----
RET=0
slowwait_eq $DRAIN 0 softib_stat sa_replies_waiting
(($? == 0)) || check_err 1 "$(softib_stat sa_replies_waiting) SA answers still held back"
echo 0 >"$F"
ipoib_fabric_reload &&
	slowwait 30 ip netns exec "$A" ping -c 1 -W 2 192.0.2.2 >/dev/null &&
	slowwait 30 ip netns exec "$B" ping -c 1 -W 2 192.0.2.1 >/dev/null
check_err $? "no ping both ways after the late answers"
log_test "late SA answers to cancelled queries are dropped; ib0/ib1 work again"

ktap_finish
