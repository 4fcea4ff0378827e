#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 300
# timeout-long: 1800
#
# One node talking to many peers: softib's virtual nodes (vnodes=N, see
# Documentation/softib.rst) answer ARP and UDP echo as N IPoIB hosts, and
# ib0 sends to each in turn, ROUNDS times (67-scale-peers.py). Measured,
# for either driver: PathRecord queries per peer (softib's SA counts
# them), path evictions, slab memory per peer, the time to reach all N,
# round trips p50/p99 and guest CPU. Then fabric-wide events with the
# sweep going on: the SA's busiest second and the time until every peer
# answered again.
#
# Both: every peer answers in a round within 30 s of each event.
# Ours: every peer reached, no path evicted, at most 1.1 queries per
# peer; after a client reregister or an SM change the peers keep
# answering (the paths stay in use) while ours asks the SA again at
# revalidate_rate (default 100 a second), so its busiest second stays
# under 1.1 x revalidate_rate + 10; a P_Key table change that keeps
# ib0's P_Key asks nothing. In-tree: the same sweep and events, its
# figures reported; it asks again for every peer as traffic reaches it
# after a reregister, and nothing after the other two.
# Last, ib0 in connected mode and the sweep again: the nodes accept
# IPoIB-CM connections (softib vnode_cm) and answer over UD. Both: every
# peer answers. Ours, whose max_cm_active is below N here: at most
# max_cm_active connections, the peers beyond it reached over UD
# (cm_active_refused), and no reconnection storm: the connections opened
# stay within the bound plus 10 closed a second to make room. In-tree
# (no bound): the connections per peer are reported.
# make check: N=1000 (ours with max_cm_active=250), a client reregister.
# LONG=1: N=10000 (the default max_cm_active, 4096), and a client
# reregister, an SM change and a P_Key table change (the SM adds a
# partition; ib0's P_Key keeps its index). make bench has the curves.

source "$(dirname "$0")/../lib.sh"

require_cmd python3 ethtool

N=${N:-1000}
EVENTS="client_reregister"
CM_MAX=$((N / 4))
if [[ $LONG == 1 ]]; then
	N=10000
	EVENTS="client_reregister sm_change pkey_change"
	CM_MAX=4096
fi
ROUNDS=3
[[ $IPOIB == ours ]] && IPOIB_LOAD_PARAMS="max_cm_active=$CM_MAX"

ktap_header $((7 + 2 * $(wc -w <<<"$EVENTS")))
ktap_diag "IPOIB=$IPOIB N=$N ROUNDS=$ROUNDS EVENTS=$EVENTS"

peers_neigh_bounds "$N"

ipoib_fabric_up vnodes="$N"
ktap_result $? "softib with $N virtual nodes, ib0/ib1 up in two netns" || ktap_finish

ip -n "$A" addr add 10.224.255.254/16 dev ib0

ours_stat() { [[ $IPOIB == ours ]] && ipoib_dbg_stat ib0 "$1"; }
field() { peers_field "$@"; }

# ---- the sweep ----
RET=0
q0=$(softib_stat sa_path_queries)
ev0=$(peers_evictions)
slab0=$(peers_slab)
read -r b0 i0 <<<"$(peers_cpu)"
out=$(peers_sweep "$N" --rounds $ROUNDS)
check_err $? "the sweep: $out"
read -r b1 i1 <<<"$(peers_cpu)"
slab1=$(peers_slab)
q1=$(softib_stat sa_path_queries)
ev1=$(peers_evictions)
while read -r l; do ktap_diag "sweep: $l"; done <<<"$out"
r0=$(sed -n 1p <<<"$out")
last=$(tail -n 1 <<<"$out")
reach=$(field secs "$r0")
cpu=$(( (b1 - b0) * 100 / (b1 - b0 + i1 - i0 + 1) ))
qpp=$(awk -v q=$((q1 - q0)) -v n="$N" 'BEGIN { printf "%.2f", q / n }')
mem=$(( (slab1 - slab0) * 1024 / N ))
ktap_diag "UDP receive buffer errors in A: $(ip netns exec "$A" awk '/^Udp:/ { if (!h) { for (i = 1; i <= NF; i++) if ($i == "RcvbufErrors") c = i; h = 1 } else print $c }' /proc/net/snmp)"
ktap_diag "figures: N=$N reach_all=${reach}s queries_per_peer=$qpp evictions=$(( ${ev1:-0} - ${ev0:-0} )) slab_per_peer=${mem}B p50=$(field p50_us "$last")us p99=$(field p99_us "$last")us guest_cpu=${cpu}%"
[[ $(field answered "$r0") == "$N" && $(field answered "$last") == "$N" ]]
(($? == 0)) || check_err 1 "not every peer answered: first round $(field answered "$r0"), last $(field answered "$last") of $N"
if ((RET)); then
	for ip in $(field silent "$last" | tr -d "[]',"); do
		ktap_diag "silent $ip: $(ip -n "$A" neigh show "$ip")"
	done
	ktap_diag "softib vnodes: $(tr '\n' ' ' <"$SOFTIB_DBG/vnodes")"
	ktap_diag "softib port 1: $(tr '\n' ' ' <"$SOFTIB_DBG/ports/1/counters")"
	[[ -r /sys/kernel/debug/ipoib/ib0_path ]] &&
		ktap_diag "in-tree paths: $(timeout 15 grep -c '^GID:' /sys/kernel/debug/ipoib/ib0_path)"
fi
log_test "all $N peers answer, in the first round and the last"

RET=0
awk -v q=$((q1 - q0)) -v n="$N" 'BEGIN { exit !(q <= 1.1 * n) }'
(($? == 0)) || check_err 1 "$((q1 - q0)) PathRecord queries for $N peers ($qpp a peer)"
log_test "at most 1.1 PathRecord queries a peer over $ROUNDS rounds ($qpp)"

RET=0
if [[ $IPOIB == ours ]]; then
	((ev1 == ev0))
	(($? == 0)) || check_err 1 "$((ev1 - ev0)) paths evicted during the sweep"
	[[ $(ours_stat paths) -ge $N ]]
	(($? == 0)) || check_err 1 "ib0 holds $(ours_stat paths) paths for $N peers"
	log_test "no path evicted, a path a peer held"
else
	ktap_skip "no path evicted, a path a peer held" "in-tree: no path bound to evict by"
fi

# ---- SM events at scale ----
# peers_event_round EVENT: the event with the sweep going on until the
# revalidation is over (N / revalidate_rate seconds), its results
peers_event_round() {
	local ev=$1 q0 q1 rv0 rv1 t0 out r0 again peak rate

	RET=0
	echo reset >"$SOFTIB_DBG/sa_path_peak"
	q0=$(softib_stat sa_path_queries)
	rv0=$(ours_stat path_revalidations)
	t0=$EPOCHREALTIME
	peers_event "$ev"
	check_err $? "$ev"
	out=$(peers_sweep "$N" --rounds 2 --min-secs $((N / 100 + 3)))
	check_err $? "the sweep after $ev: $out"
	peak=$(<"$SOFTIB_DBG/sa_path_peak")
	q1=$(softib_stat sa_path_queries)
	rv1=$(ours_stat path_revalidations)
	while read -r l; do ktap_diag "after $ev: $l"; done <<<"$out"
	r0=$(sed -n 1p <<<"$out")
	# from the event to the end of the first round every peer answered
	full=$(grep -m1 "\"answered\": $N," <<<"$out")
	again=-1
	[[ -n $full ]] &&
		again=$(awk -v a="$t0" -v b="$(field end "$full")" 'BEGIN { printf "%.1f", b - a }')
	ktap_diag "figures: event=$ev N=$N peak_queries_per_sec=$peak queries=$((q1 - q0)) revalidated=$(( ${rv1:-0} - ${rv0:-0} )) first_round_answered=$(field answered "$r0") all_answered_after=${again}s"
	awk -v s="$again" 'BEGIN { exit !(s >= 0 && s <= 30) }'
	(($? == 0)) || check_err 1 "after $ev, no round reached all $N peers within 30 s (first round: $(field answered "$r0"); a full round ${again}s after the event)"
	log_test "after $ev every peer answers within 30 s (${again}s)"

	RET=0
	if [[ $IPOIB == ours && $ev == pkey_change ]]; then
		# the new entry changes no path: nothing to ask
		((rv1 == rv0 && peak == 0))
		(($? == 0)) || check_err 1 "$((rv1 - rv0)) paths asked for again, $peak queries in the busiest second"
		log_test "$ev: no path asked for again (ib0's P_Key kept its index)"
	elif [[ $IPOIB == ours ]]; then
		rate=$(</sys/module/ib_ipoib/parameters/revalidate_rate)
		# every path asked for again (N / rate seconds from the event)
		slowwait $((2 * N / rate + 10)) sh -c \
			"[ \$(awk '\$1 == \"path_revalidations\" { print \$2 }' $(ipoib_dbg_dir ib0)/stats) -ge $((rv0 + N)) ]" >/dev/null
		(($? == 0)) || check_err 1 "only $(($(ours_stat path_revalidations) - rv0)) of $N paths asked for again"
		peak=$(<"$SOFTIB_DBG/sa_path_peak")
		((peak <= rate * 11 / 10 + 10))
		check_err $? "the SA's busiest second had $peak queries (revalidate_rate $rate)"
		log_test "$ev: every path asked for again, the SA's busiest second had $peak queries (revalidate_rate $rate)"
	else
		ktap_skip "$ev: the SA's busiest second is bounded" \
			"in-tree: no rate bound; $peak queries in its busiest second"
	fi
}

for ev in $EVENTS; do
	peers_event_round "$ev"
done

# ---- connected mode ----
RET=0
ip netns exec "$A" sh -c 'echo connected >/sys/class/net/ib0/mode'
check_err $? "ib0 in connected mode"
c0=$(peers_vnode_stat cm_accepted)
if [[ $IPOIB == ours ]]; then
	aev0=$(nic_stat "$A" ib0 cm_active_evicted) aref0=$(nic_stat "$A" ib0 cm_active_refused)
fi
slab0=$(peers_slab)
t0=$EPOCHREALTIME
out=$(peers_sweep "$N" --rounds $ROUNDS)
check_err $? "the sweep in connected mode: $out"
t1=$EPOCHREALTIME
slab1=$(peers_slab)
c1=$(peers_vnode_stat cm_accepted)
while read -r l; do ktap_diag "connected: $l"; done <<<"$out"
r0=$(sed -n 1p <<<"$out")
last=$(tail -n 1 <<<"$out")
opened=$((c1 - c0))
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
line="N=$N connections_opened=$opened per_peer=$(awk -v c="$opened" -v n="$N" 'BEGIN { printf "%.2f", c / n }') secs=$secs slab_per_peer=$(( (slab1 - slab0) * 1024 / N ))B reach_all=$(field secs "$r0")s p50=$(field p50_us "$last")us p99=$(field p99_us "$last")us"
if [[ $IPOIB == ours ]]; then
	act=$(nic_stat "$A" ib0 cm_active)
	aev=$(($(nic_stat "$A" ib0 cm_active_evicted) - aev0))
	aref=$(($(nic_stat "$A" ib0 cm_active_refused) - aref0))
	line+=" max_cm_active=$CM_MAX active=$act evicted=$aev over_ud=$aref"
fi
ktap_diag "figures: connected $line"
[[ $(field answered "$r0") == "$N" && $(field answered "$last") == "$N" ]]
(($? == 0)) || check_err 1 "not every peer answered in connected mode: first round $(field answered "$r0"), last $(field answered "$last") of $N"
ktap_diag "softib vnodes: $(tr '\n' ' ' <"$SOFTIB_DBG/vnodes")"
log_test "connected mode: all $N peers answer, in the first round and the last"

RET=0
if [[ $IPOIB == ours ]]; then
	# the bound, the UD fallback, and turnover at 10 a second at most
	((act <= CM_MAX))
	check_err $? "$act connections (max_cm_active $CM_MAX)"
	((aref > 0))
	check_err $? "no packet went over UD at the limit ($N peers, max_cm_active $CM_MAX)"
	awk -v o="$opened" -v m="$CM_MAX" -v s="$secs" 'BEGIN { exit !(o <= m + 10 * s + 10) }'
	check_err $? "$opened connections opened in ${secs}s (max_cm_active $CM_MAX: a reconnection storm)"
	log_test "connected mode: at most $CM_MAX connections, the others over UD, $opened opened in ${secs}s"
else
	ktap_skip "connected mode: connections bounded" \
		"in-tree: no bound; $opened connections for $N peers"
fi

# Back to datagram mode: every connection is closed (a DREQ each, which
# the nodes count). Waited for, too: in-tree destroys its connections'
# QPs from a work item, and unloaded while that work is still going it
# destroys the CQs under them (a WARN at ib_destroy_cq).
RET=0
ip netns exec "$A" sh -c 'echo datagram >/sys/class/net/ib0/mode'
check_err $? "ib0 back in datagram mode"
peers_cm_closed "$c1"
(($? == 0)) || check_err 1 "$(peers_vnode_stat cm_closed) of $c1 connections closed after the switch to datagram mode"
log_test "back in datagram mode every connection is closed"

ktap_finish
