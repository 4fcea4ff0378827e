#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
#
# The softib link between two kernels (link=, node=, fabric_key=): each
# node has its own GUIDs and LIDs; frames arrive whole and in order both
# ways at once, also when the underlay loses, duplicates and reorders
# them (netem) and when the receiver stalls (credits, no drops); a lost
# frame is sent again alone, the frames after it kept; frames
# replayed, of a stale session, with a broken tag, from an unknown
# address or under another key are dropped and counted, never delivered;
# a node that goes silent is declared down and comes back.

source "$(dirname "$0")/../lib.sh"

pair_require
require_cmd tc python3
modprobe sch_netem || { echo "# SKIP: no sch_netem"; exit $ksft_skip; }

ME=$(pair_node)
PEER=$(pair_peer)
DEV=$(pair_dev)
BADKEY=0000000000000000000000000000000000000000000000000000000000000001
FAB=$SOFTIB_DBG/fabric

link_down() { grep -q " state down " "$FAB/peers"; }

# echo_both COUNT SIZE...: each node sends COUNT frames of each SIZE to
# the other at the same time; both check that all arrived intact and in
# order (echo_ok grew by all of them, echo_bad did not grow)
echo_both() {
	local count=$1 ok0 bad0 s total=0 rc=0

	shift
	ok0=$(pair_fab echo_ok)
	bad0=$(pair_fab echo_bad)
	pair_barrier echo-start || return 1
	for s in "$@"; do
		echo "$count $s" >"$FAB/echo" || { rc=1; echo "# echo $count $s: failed" >&2; }
		total=$((total + count))
	done
	pair_barrier echo-sent 120 || return 1
	slowwait 20 stat_cmp "$FAB/stats" echo_ok -ge $((ok0 + total)) || rc=1
	[[ $(pair_fab echo_ok) -eq $((ok0 + total)) && $(pair_fab echo_bad) -eq $bad0 ]] || {
		echo "# echo_ok $ok0 -> $(pair_fab echo_ok) (want +$total), echo_bad $bad0 -> $(pair_fab echo_bad)" >&2
		rc=1
	}
	pair_barrier echo-checked || return 1
	return $rc
}

# echo_got OK0 N: N more frames than OK0 arrived in order, none bad
echo_got() {
	slowwait 10 stat_cmp "$FAB/stats" echo_ok -ge $(($1 + $2))
	[[ $(pair_fab echo_ok) -eq $(($1 + $2)) && $(pair_fab echo_bad) -eq 0 ]]
}

cleanup() {
	tc qdisc del dev "$DEV" root 2>/dev/null || true
	ip addr del "10.99.0.1$ME/24" dev "$DEV" 2>/dev/null || true
	unload_softib
}
defer cleanup

ktap_header 11

pair_link_load && slowwait 15 pair_link_up
ktap_result $? "both nodes load softib with the link; it comes up" || ktap_finish

RET=0
guid=$(cat /sys/class/infiniband/softib0/node_guid)
[[ $guid == "0211:0bff:0$ME""00:0000" ]]
check_err $? "node GUID $guid"
for p in 1 2; do
	lid=$(cat /sys/class/infiniband/softib0/ports/$p/lid)
	[[ $((lid)) -eq $((32 * ME + p)) ]]
	(($? == 0)) || check_err 1 "port $p LID $lid, want $((32 * ME + p))"
done
pair_put guid "$guid"
other=$(pair_get guid)
[[ -n $other && $other != "$guid" ]]
check_err $? "both nodes have GUID $guid"
grep -q "^self node $ME .* ib_mtu 4096 " "$FAB/peers"
(($? == 0)) || check_err 1 "IB MTU over a 9000-byte underlay: $(head -n 1 "$FAB/peers")"
grep -q "state up node $PEER guid 0x0211*" "$FAB/peers"
(($? == 0)) || check_err 1 "peer line: $(tail -n 1 "$FAB/peers")"
log_test "node GUIDs and LIDs derived from node=, distinct; IB MTU 4096"

echo_both 500 64 1500 4096 8000
ktap_result $? "2000 frames each way at once, 64 to 8000 bytes, intact and in order"

RET=0
rt0=$(pair_fab retransmits)
dup0=$(($(pair_fab rx_dup) + $(pair_fab rx_ooo)))
tc qdisc add dev "$DEV" root netem loss 5% duplicate 2% delay 2ms reorder 25% 50%
check_err $? "netem"
echo_both 500 64 1500 4096 8000
check_err $? "frames lost, damaged or out of order under netem"
tc qdisc del dev "$DEV" root
[[ $(pair_fab retransmits) -gt $rt0 && $(($(pair_fab rx_dup) + $(pair_fab rx_ooo))) -gt $dup0 ]]
(($? == 0)) || check_err 1 "netem did nothing: retransmits $rt0 -> $(pair_fab retransmits), rx_dup+rx_ooo $dup0 -> $(($(pair_fab rx_dup) + $(pair_fab rx_ooo)))"
pair_link_up
check_err $? "the link went down under netem"
log_test "netem loss 5%, duplicate 2%, reorder 25%: all delivered, in order"

# node 2 stops delivering for a second; node 1 sends more than its
# credits: the sender waits (window_zero), the receiver drops nothing
RET=0
wz0=$(pair_fab window_zero)
over0=$(pair_fab rx_over_window)
((ME == 2)) && echo "rx_stall_ms 1500" >"$FAB/fault"
pair_barrier stalled
if ((ME == 1)); then
	echo "1000 1000" >"$FAB/echo"
	check_err $? "echo to a stalled receiver failed"
	[[ $(pair_fab window_zero) -gt $wz0 ]]
	check_err $? "the sender never ran out of credits"
	tp=$(sed -n 's/.* tx_peak \([0-9]*\) .*/\1/p' "$FAB/peers")
	[[ $tp -le 512 ]]
	check_err $? "tx_peak $tp over link_queue 512"
else
	slowwait 30 stat_cmp "$FAB/stats" echo_ok -ge $(($(pair_fab echo_ok) + 1000))
	check_err $? "the stalled receiver did not get all 1000 frames"
	rp=$(sed -n 's/.* rx_peak \([0-9]*\) .*/\1/p' "$FAB/peers")
	[[ $rp -le 256 && $(pair_fab rx_over_window) -eq $over0 && $(pair_fab echo_bad) -eq 0 ]]
	(($? == 0)) || check_err 1 "rx_peak $rp (cap 256), rx_over_window $over0 -> $(pair_fab rx_over_window), echo_bad $(pair_fab echo_bad)"
fi
pair_barrier stall-checked
log_test "a stalled receiver: the sender waits for credits, nothing dropped"

# node 1 receives each of the next 40 frames twice while node 2 sends
RET=0
dup0=$(($(pair_fab rx_dup) + $(pair_fab rx_replay)))
ok0=$(pair_fab echo_ok)
pair_barrier replay-base
((ME == 1)) && echo "replay 40" >"$FAB/fault"
pair_barrier replay-set
((ME == 2)) && { echo "200 512" >"$FAB/echo"; check_err $? "echo under replays"; }
pair_barrier replay-sent
if ((ME == 1)); then
	echo_got "$ok0" 200
	(($? == 0)) || check_err 1 "echo_ok $ok0 -> $(pair_fab echo_ok) (want +200), echo_bad $(pair_fab echo_bad)"
	[[ $(($(pair_fab rx_dup) + $(pair_fab rx_replay))) -ge $((dup0 + 40)) ]]
	(($? == 0)) || check_err 1 "40 replays, rx_dup+rx_replay $dup0 -> $(($(pair_fab rx_dup) + $(pair_fab rx_replay)))"
fi
pair_link_up
check_err $? "the link went down"
pair_barrier replay-checked
log_test "replayed frames are dropped and counted, never delivered twice"

# node 2's first DATA frame of 200 is lost on the way: node 1 keeps the
# frames after the gap, its NAK says so, and node 2 sends the lost frame
# alone (one retransmission; going back would resend at least the frame
# after it too). All 200 arrive in order, none twice. Only node 2's RTO,
# which sends all that is unacknowledged again, may resend more.
RET=0
ok0=$(pair_fab echo_ok)
dup0=$(pair_fab rx_dup)
ooo0=$(pair_fab rx_ooo)
rto0=$(pair_fab rto_expired)
rt0=$(pair_fab retransmits)
naks0=$(pair_fab tx_naks)
pair_barrier keep-base
if ((ME == 2)); then
	echo "drop_data 1" >"$FAB/fault" && echo "200 512" >"$FAB/echo"
	check_err $? "echo with a lost frame"
	pair_barrier keep-got
	rto=$(($(pair_fab rto_expired) - rto0))
	pair_put keep-rto "$rto"
	(($(pair_fab retransmits) == rt0 + 1 || rto > 0)) ||
		check_err 1 "not the lost frame alone: retransmits $rt0 -> $(pair_fab retransmits), no RTO"
else
	echo_got "$ok0" 200
	(($? == 0)) || check_err 1 "echo_ok $ok0 -> $(pair_fab echo_ok) (want +200), echo_bad $(pair_fab echo_bad)"
	(($(pair_fab rx_ooo) > ooo0 && $(pair_fab tx_naks) > naks0)) ||
		check_err 1 "no gap seen: rx_ooo $ooo0 -> $(pair_fab rx_ooo), tx_naks $naks0 -> $(pair_fab tx_naks)"
	pair_barrier keep-got
	rto=$(pair_get keep-rto)
	(($(pair_fab rx_dup) == dup0 || rto > 0)) ||
		check_err 1 "frames after the gap came twice without an RTO: rx_dup $dup0 -> $(pair_fab rx_dup)"
fi
pair_barrier keep-checked
log_test "a lost frame: the frames after it kept, it alone sent again"

# node 2 sends 5 probes with a stale session id, then 5 frames with a
# broken tag (they would take the broken tags too in the other order)
RET=0
mac0=$(pair_fab rx_bad_mac)
stale0=$(pair_fab rx_stale_session)
ok0=$(pair_fab echo_ok)
pair_barrier forge-base
if ((ME == 2)); then
	echo "stale 5" >"$FAB/fault" && echo "bad_mac 5" >"$FAB/fault" &&
		echo "100 512" >"$FAB/echo"
	check_err $? "echo under broken tags"
fi
pair_barrier forge-sent
if ((ME == 1)); then
	echo_got "$ok0" 100
	(($? == 0)) || check_err 1 "echo_ok $ok0 -> $(pair_fab echo_ok) (want +100), echo_bad $(pair_fab echo_bad)"
	[[ $(pair_fab rx_bad_mac) -eq $((mac0 + 5)) && $(pair_fab rx_stale_session) -eq $((stale0 + 5)) ]]
	(($? == 0)) || check_err 1 "rx_bad_mac $mac0 -> $(pair_fab rx_bad_mac), rx_stale_session $stale0 -> $(pair_fab rx_stale_session)"
fi
pair_link_up
check_err $? "the link went down"
pair_barrier forge-checked
log_test "frames of a stale session or with a broken tag: dropped and counted"

# frames from an address off the fabric, and a HELLO under a wrong key
# from the peer's own address: counted, nothing else
RET=0
unk0=$(pair_fab rx_unknown_src)
hs0=$(pair_fab hs_bad_mac)
pair_barrier offfab
if ((ME == 2)); then
	ip addr add "10.99.0.12/24" dev "$DEV" &&
		python3 - "$(pair_addr 1)" <<'EOF'
import os, socket, struct, sys
dst = (sys.argv[1], 17391)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("10.99.0.12", 0))
for _ in range(5):
    s.sendto(os.urandom(200), dst)
t = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
t.bind(("10.99.0.2", 0))
# HELLO: header with a tag that is not the fabric key's, and its payload
hs = struct.pack(">Q16s16sIHHBB6x", 0x02110bff02000000, os.urandom(16),
                 bytes(16), 7, 2, 4096, 2, 15)
hdr = struct.pack(">HBBIIIHBBHH", 0x5342, 1, 3, 0, 0, 0, 0, 0, 0, len(hs), 0)
for _ in range(5):
    t.sendto(hdr + os.urandom(16) + hs, dst)
EOF
	check_err $? "could not send the forged frames"
fi
pair_barrier offfab-sent
if ((ME == 1)); then
	slowwait 5 stat_cmp "$FAB/stats" rx_unknown_src -ge $((unk0 + 5))
	(($? == 0)) || check_err 1 "rx_unknown_src $unk0 -> $(pair_fab rx_unknown_src)"
	slowwait 5 stat_cmp "$FAB/stats" hs_bad_mac -ge $((hs0 + 5))
	(($? == 0)) || check_err 1 "hs_bad_mac $hs0 -> $(pair_fab hs_bad_mac)"
fi
pair_link_up
check_err $? "forged frames took the link down"
pair_barrier offfab-checked
log_test "frames from off the fabric and a HELLO under another key: counted"

# node 2 comes back with the wrong key: node 1 sees it go (CLOSE) and
# refuses its handshakes; with the right key it is up again
RET=0
down0=$(pair_fab peer_down)
hs0=$(pair_fab hs_bad_mac)
pair_barrier rekey
if ((ME == 2)); then
	unload_softib && pair_link_load "$BADKEY"
	check_err $? "reload with another key"
	sleep 3
	link_down
	check_err $? "the link came up under another key"
fi
pair_barrier badkey 60
if ((ME == 1)); then
	[[ $(pair_fab peer_down) -gt $down0 && $(pair_fab hs_bad_mac) -gt $hs0 ]]
	(($? == 0)) || check_err 1 "peer_down $down0 -> $(pair_fab peer_down), hs_bad_mac $hs0 -> $(pair_fab hs_bad_mac)"
	link_down
	check_err $? "node 1 still up with node 2"
fi
pair_barrier badkey-checked
if ((ME == 2)); then
	unload_softib && pair_link_load
	check_err $? "reload with the fabric key"
fi
slowwait 15 pair_link_up
check_err $? "no link after the reload with the right key"
pair_barrier rekeyed
log_test "a node under another key is kept out; with the fabric key it is back"

# node 1 stops hearing and sending: both declare the other down within
# link_dead_ms (3 s) and a second; then both are up again
RET=0
pair_barrier blackhole
((ME == 1)) && echo "blackhole 1" >"$FAB/fault"
slowwait 5 link_down
check_err $? "not down 5 s into the blackhole"
pair_barrier blackholed 30
((ME == 1)) && echo "blackhole 0" >"$FAB/fault"
slowwait 10 pair_link_up
check_err $? "not up 10 s after the blackhole"
echo_both 100 1000
check_err $? "echo after the blackhole"
log_test "a silent peer is declared down; the link comes back"

pair_barrier done
ktap_finish
