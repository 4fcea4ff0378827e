#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: ours
# timeout: 300
#
# Bounded connected-mode state: ours loaded with max_cm_passive=3 and
# max_cm_active=3. Six peers (children of ib1, each in its own netns)
# connect to ib0: at most three passive connections exist at any time,
# the least recently active is closed for a newcomer (evicted/refused
# counted in debugfs cm), and every peer still reaches ib0 (UD while
# refused). Then ib0 connects to the six: at most three active
# connections, evictions counted, every peer reached. Last, one GID named
# with 24 QPNs in turn (what a peer forging ARP can make ib0 do): ib0
# keeps at most IPOIB_CM_TX_PER_PATH (8) entries for it, idle ones are
# evicted and counted (before, every QPN kept one for the path's life).

source "$(dirname "$0")/../lib.sh"

require_cmd ping rdma

N=6
MAX=3
ktap_header 7

# cm_dbg DEV: the debugfs cm file of our interface DEV
cm_dbg() {
	local d

	d=$(ipoib_dbg_dir "$1") && echo "$d/cm"
}

# cm_limits DEV: "passive N active N pevicted N prefused N aevicted N arefused N"
cm_limits() {
	sed -n 's|^# passive \([0-9]*\)/[0-9]* evicted \([0-9]*\) refused \([0-9]*\), active \([0-9]*\)/[0-9]* evicted \([0-9]*\) refused \([0-9]*\)|\1 \4 \2 \3 \5 \6|p' "$(cm_dbg "$1")"
}

modprobe ib_cm
load_softib && slowwait 10 softib_ports_active >/dev/null &&
	load_ipoib max_cm_passive=$MAX max_cm_active=$MAX &&
	slowwait 10 test -d /sys/class/net/ib1 >/dev/null
ktap_result $? "ib_ipoib max_cm_passive=$MAX max_cm_active=$MAX" || ktap_finish
defer unload_softib
defer unload_ipoib

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
[[ -n $(cm_limits ib0) ]]
(($? == 0)) || check_err 1 "no limits line in $(cm_dbg ib0)"
log_test "$N connected-mode peers on ib1, ib0 in datagram mode"

# ---- passive: peers connect to ib0 ----
RET=0
maxseen=0
for round in 1 2; do
	for i in $(seq 1 $N); do
		ip netns exec "${peers[i - 1]}" ping -c 2 -i 0.3 -W 2 192.0.2.1 >/dev/null
		check_err $? "round $round: peer$i cannot reach ib0"
		read -r np _ <<<"$(cm_limits ib0)"
		((np > maxseen)) && maxseen=$np
		sleep 0.3
	done
done
read -r np na pev pref aev aref <<<"$(cm_limits ib0)"
ktap_diag "ib0 passive: at most $maxseen seen, now $np; evicted $pev, refused $pref"
((maxseen <= MAX))
check_err $? "$maxseen passive connections (max $MAX)"
((pev > 0 && pref > 0))
check_err $? "nothing evicted ($pev) or refused ($pref)"
log_test "passive connections stay within max_cm_passive, evictions counted"

RET=0
qps=$(rdma res show qp link softib0/1 | grep -c 'type RC')
ktap_diag "RC QPs on ib0's port: $qps"
((qps <= MAX))
check_err $? "$qps RC QPs on ib0's port (max $MAX passive, no active)"
log_test "RC QPs on ib0's port within the bound"

# ---- active: ib0 connects to the peers ----
RET=0
for i in $(seq 1 $N); do
	ip -n "${peers[i - 1]}" link set peer$i type ipoib mode datagram
done
ip netns exec "$A" sh -c "echo connected > /sys/class/net/ib0/mode"
check_err $? "ib0 connected"
maxseen=0
for round in 1 2; do
	for i in $(seq 1 $N); do
		ip netns exec "$A" ping -c 2 -i 0.3 -W 2 "192.0.2.$((10 + i))" >/dev/null
		check_err $? "round $round: ib0 cannot reach peer$i"
		read -r _ na _ <<<"$(cm_limits ib0)"
		((na > maxseen)) && maxseen=$na
		sleep 0.3
	done
done
read -r np na pev pref aev aref <<<"$(cm_limits ib0)"
ktap_diag "ib0 active: at most $maxseen seen, now $na; evicted $aev, packets over UD at the limit $aref"
((maxseen <= MAX))
check_err $? "$maxseen active connections (max $MAX)"
((aev > 0 && aref > 0))
check_err $? "nothing evicted ($aev) or sent over UD at the limit ($aref)"
log_test "active connections stay within max_cm_active, evictions counted"

RET=0
up=$(grep -c '^out .* up ' "$(cm_dbg ib0)")
ktap_diag "ib0 connections up: $up"
((up >= 1 && up <= MAX))
check_err $? "$up connections up (1..$MAX expected)"
log_test "connected mode still carries traffic at the limit"

# ---- one GID, many QPNs: static neighbours of 192.0.2.99 with peer1's GID
# and QPNs 0x100000.. (no such QP: ib1's CM refuses, softib drops the UD
# fallback); one UDP datagram to each
RET=0
NQ=24
PER_PATH=8
gid=$(ip netns exec "${peers[0]}" cat /sys/class/net/peer1/address | cut -d: -f5-)
ip netns exec "$A" bash -c '
	for ((q = 1; q <= '"$NQ"'; q++)); do
		printf -v ll "80:10:%02x:%02x:%s" $((q >> 8)) $((q & 255)) "'"$gid"'"
		ip neigh replace 192.0.2.99 dev ib0 nud permanent lladdr "$ll" || exit 1
		echo x >/dev/udp/192.0.2.99/9
	done'
check_err $? "cannot name 192.0.2.99 with $NQ QPNs"
slowwait 10 sh -c "grep -q '^# per path' '$(cm_dbg ib0)'" >/dev/null
(($? == 0)) || check_err 1 "no per-path line in $(cm_dbg ib0)"
read -r cap pev pref <<<"$(sed -n 's/^# per path \([0-9]*\), evicted \([0-9]*\) refused \([0-9]*\)/\1 \2 \3/p' "$(cm_dbg ib0)")"
kept=$(grep -c "^out [0-9a-f:]* 0x10[0-9a-f]\{4\} " "$(cm_dbg ib0)")
ktap_diag "QPNs of peer1's GID kept: $kept (cap ${cap:-?}); evicted ${pev:-?}, sent over UD ${pref:-?}"
((kept >= 1 && kept <= PER_PATH)) && [[ $cap == "$PER_PATH" ]]
check_err $? "$kept entries for the rotated QPNs (at most $PER_PATH)"
((pev > 0 && pev + pref >= NQ - PER_PATH))
(($? == 0)) || check_err 1 "evicted $pev + refused $pref < $((NQ - PER_PATH))"
ip -n "$A" neigh del 192.0.2.99 dev ib0
ip netns exec "$A" ping -c 2 -i 0.3 -W 2 192.0.2.11 >/dev/null
check_err $? "ib0 cannot reach peer1 afterwards"
log_test "one GID with $NQ QPNs: at most $PER_PATH entries kept, evictions counted"

ktap_finish
