#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 240
#
# ethtool -g/-G: the send and receive rings of an interface, changed while
# it carries a TCP stream. Ours makes new rings and a new UD QP (so a new
# QPN in the hardware address), which the stack hears of at once and the
# peers by gratuitous ARP and unsolicited NA: their neighbour entries
# must hold the new address without waiting for them to go stale, and
# the stream must survive it and move again (in datagram and in connected
# mode, where the SRQ and the connections are made anew too). How long
# it pauses is TCP's retransmission backoff over the restart (up to 4 s
# seen on 6.1 in connected mode): reported, not asserted. Out-of-range sizes get EINVAL and a log line
# that names the ranges; a send ring size is rounded up to a power of
# two; a refusal by the HCA (softib's fault/fail_create_qp) leaves the
# old rings, QP and address, and the interface runs on (in connected
# mode too, with the SRQ a connection filled); nothing leaks.
# In-tree has no ring parameters: its EOPNOTSUPP is expected and named.

source "$(dirname "$0")/../lib.sh"

require_cmd ethtool iperf3 ping python3

# ours: the ring change and the TCP backoff it causes fit in the stream
# with seconds of recovery after them; in-tree refuses the change at once
SECS=10
[[ $IPOIB == intree ]] && SECS=3

# rings NS DEV: "TX RX" of the current ring sizes ethtool -g reports
rings() {
	ip netns exec "$1" ethtool -g "$2" 2>/dev/null | awk '
		/^Current/ { cur = 1 }
		cur && $1 == "RX:" { rx = $2 }
		cur && $1 == "TX:" { tx = $2 }
		END { if (tx == "" || rx == "") exit 1; print tx, rx }'
}

# neigh_ll NS DEV ADDR: the link-layer address of DEV's entry for ADDR
neigh_ll() {
	ip -n "$1" neigh show "$3" dev "$2" | awk '{ for (i = 1; i < NF; i++) if ($i == "lladdr") print $(i + 1) }'
}

# neigh_is NS DEV ADDR LL: the entry for ADDR holds LL
neigh_is() {
	[[ $(neigh_ll "$1" "$2" "$3") == "$4" ]]
}

# stream_across CMD...: an iperf3 stream from ib0 to ib1 for SECS;
# at 1 s CMD runs (its status in CMD_RC). Fails unless iperf3 ended well
# and the last second moved bytes; STREAM says how it went.
stream_across() {
	local out pid rc bytes iv

	out=$(mktemp)
	iperf_server "$B" 192.0.2.2 || { STREAM="no iperf3 server"; return 1; }
	ip netns exec "$A" timeout $((SECS + 10)) iperf3 -c 192.0.2.2 -t $SECS -i 1 -J >"$out" 2>&1 &
	pid=$!
	sleep 1
	"$@"
	CMD_RC=$?
	wait $pid
	rc=$?
	bytes=$(iperf_intervals "$(cat "$out")") || ((rc)) || rc=1
	STREAM="bytes per second: ${bytes:-none} (iperf3 status $rc)"
	((rc)) && STREAM+=": $(head -c 300 "$out" | tr -s '\n\t"' ' ')"
	rm -f "$out"
	ip netns exec "$B" pkill -x iperf3 2>/dev/null
	((rc == 0)) || return 1
	read -ra iv <<<"$bytes"
	((${#iv[@]} >= SECS && iv[-1] > 0))
}

# change_ib0 ARGS...: ethtool -G ib0 ARGS in A; B's entries for ib0 (IPv4
# and link-local IPv6) must hold its new address HW1 within 4 s: NEIGH_B
# 0 if they did, NEIGH_B_SEEN what they held, NEIGH_MS how long each took.
# B sends A only ACKs, to the old address, which nothing answers: only
# the gratuitous ARPs and NAs (three, a second apart) can have told it.
change_ib0() {
	local t0 t4 t6

	ip netns exec "$A" ethtool -G ib0 "$@" || return 1
	t0=${EPOCHREALTIME/./}
	HW1=$(ipoib_hwaddr "$A" ib0)
	busywait 4000 neigh_is "$B" ib1 192.0.2.1 "$HW1"
	NEIGH_B=$?
	t4=${EPOCHREALTIME/./}
	busywait 4000 neigh_is "$B" ib1 "$ll0" "$HW1" || NEIGH_B=1
	t6=${EPOCHREALTIME/./}
	NEIGH_MS="IPv4 $(((t4 - t0) / 1000)) ms, IPv6 $(((t6 - t0) / 1000)) ms"
	NEIGH_B_SEEN="$(neigh_ll "$B" ib1 192.0.2.1) and $(neigh_ll "$B" ib1 "$ll0")"
}

# both_sides: ib0 to 1024/1024 (tx asked as 1000), then ib1 in B to
# 512/512 (its own change flushes B's entries: checked before)
both_sides() {
	change_ib0 tx 1000 rx 1024 || return 1
	sleep 1
	ip netns exec "$B" ethtool -G ib1 tx 512 rx 512
}

# qp_objs: softib's PDs, CQs, QPs and SRQs, what rings are made of (the
# address handles of in-tree's cached paths outlive their use)
qp_objs() {
	softib_objs | awk '{ for (i = 1; i < NF; i += 2) if ($i ~ /^(pd|cq|qp|srq)$/) printf "%s %s ", $i, $(i + 1) }'
}

# objs_back: softib has the rings' objects it had at the start
objs_back() {
	[[ $(qp_objs) == "$snap" ]]
}

# ll_ready NS DEV: DEV's link-local address once DAD is over
ll_ready() {
	ip -n "$1" -6 addr show dev "$2" scope link -tentative |
		awk '/inet6/ { sub("/.*", "", $2); print $2; ok = 1 } END { exit !ok }'
}

ktap_header 9
ktap_diag "IPOIB=$IPOIB"

ipoib_fabric_up
ktap_result $? "ib0/ib1 up in datagram mode: ${FAILED_STEP:-}" || ktap_finish
snap=$(qp_objs)
hw0=$(ipoib_hwaddr "$A" ib0)

RET=0
g=$(ip netns exec "$A" ethtool -g ib0 2>&1)
rc=$?
if [[ $IPOIB == ours ]]; then
	check_err $rc "ethtool -g ib0: $g"
	[[ $(rings "$A" ib0) == "128 256" ]] &&
		grep -A2 "^Pre-set" <<<"$g" | grep -qE "^RX:[[:space:]]+8192$" &&
		grep -A4 "^Pre-set" <<<"$g" | grep -qE "^TX:[[:space:]]+8192$"
	(($? == 0)) || check_err 1 "ethtool -g: $(xargs <<<"$g")"
	log_test "ethtool -g: tx 128, rx 256 (the module parameters), maxima 8192"
else
	check_fail $rc "in-tree answered ethtool -g: $g"
	grep -q "Operation not supported" <<<"$g"
	check_err $? "in-tree: $g"
	log_test "in-tree, known failure: no ring parameters (ethtool -g: EOPNOTSUPP)"
fi

RET=0
mark="42-ringparam: refusals ($IPOIB, $$)"
echo "$mark" >/dev/kmsg
if [[ $IPOIB == ours ]]; then
	for args in "tx 64" "rx 1" "rx 9000" "tx 16384"; do
		# shellcheck disable=SC2086
		out=$(ip netns exec "$A" ethtool -G ib0 $args 2>&1)
		check_fail $? "ethtool -G ib0 $args accepted"
		grep -q "Invalid argument" <<<"$out"
		check_err $? "ethtool -G ib0 $args: $out (not EINVAL)"
	done
	dmesg | grep -F -A100 "$mark" | grep -q "ib0: rings of tx 64 rx 256 refused: tx takes 128-8192, rx 2-8192"
	(($? == 0)) || check_err 1 "no log line for tx 64: $(dmesg | grep -F -A100 "$mark" | tail -3 | xargs)"
	[[ $(rings "$A" ib0) == "128 256" && $(ipoib_hwaddr "$A" ib0) == "$hw0" ]]
	(($? == 0)) || check_err 1 "rings or address changed by a refusal: $(rings "$A" ib0)"
	log_test "out-of-range sizes: EINVAL, a log line with the ranges, nothing changed"
else
	out=$(ip netns exec "$A" ethtool -G ib0 rx 512 2>&1)
	check_fail $? "in-tree took ethtool -G"
	grep -q "Operation not supported" <<<"$out"
	check_err $? "in-tree: $out"
	log_test "in-tree, known failure: rings cannot be changed (ethtool -G: EOPNOTSUPP)"
fi

# the peers' entries for each other, IPv4 and the link-local IPv6 one
# (the link-local address is usable once DAD is over)
ll0=$(slowwait 10 ll_ready "$A" ib0)
ip netns exec "$B" ping -c 1 -W 3 192.0.2.1 >/dev/null &&
	slowwait 10 ip netns exec "$B" ping -6 -c 1 -W 1 "$ll0%ib1" >/dev/null &&
	ip netns exec "$A" ping -c 1 -W 3 192.0.2.2 >/dev/null
ktap_result $? "neighbour entries made both ways (IPv4, IPv6 link-local $ll0)"

RET=0
if [[ $IPOIB == ours ]]; then
	objs=$(softib_objs)
	echo 1 >"$SOFTIB_DBG/fault/fail_create_qp"
	out=$(ip netns exec "$A" ethtool -G ib0 rx 512 2>&1)
	check_fail $? "ethtool -G ib0 rx 512 taken with QP creation failing"
	echo 0 >"$SOFTIB_DBG/fault/fail_create_qp"
	grep -q "Cannot allocate memory" <<<"$out"
	check_err $? "not ENOMEM: $out"
	[[ $(rings "$A" ib0) == "128 256" && $(ipoib_hwaddr "$A" ib0) == "$hw0" ]]
	(($? == 0)) || check_err 1 "rings or address changed by the refusal: $(rings "$A" ib0)"
	softib_objs_le "$objs"
	(($? == 0)) || check_err 1 "objects left by the refusal: $objs -> $(softib_objs)"
	ip netns exec "$A" ping -c 1 -W 3 192.0.2.2 >/dev/null
	check_err $? "ib0 carries no ping after the refusal"
	log_test "the HCA refuses the new QP: ENOMEM, the old rings and address stay, ib0 runs on"
else
	log_test "in-tree, known failure: no ethtool -G to be refused"
fi

RET=0
stream_across both_sides
check_err $? "$STREAM"
ktap_diag "datagram: $STREAM"
if [[ $IPOIB == ours ]]; then
	check_err "$CMD_RC" "ethtool -G on ib0 or ib1 refused"
	[[ $(rings "$A" ib0) == "1024 1024" && $(rings "$B" ib1) == "512 512" ]]
	(($? == 0)) || check_err 1 "rings: ib0 $(rings "$A" ib0), ib1 $(rings "$B" ib1)"
	dmesg | grep -q "ib0: tx ring of 1000 rounded up to 1024 (a power of two)"
	check_err $? "no log line for the rounding"
	hwb=$(ipoib_hwaddr "$B" ib1)
	[[ $HW1 != "$hw0" ]]
	check_err $? "ib0 kept its address $hw0 with a new QP"
	check_err "$NEIGH_B" "B's entries for ib0 ($HW1) not updated: $NEIGH_B_SEEN"
	ktap_diag "datagram: B's entries for ib0 followed: $NEIGH_MS"
	slowwait 2 neigh_is "$A" ib0 192.0.2.2 "$hwb" >/dev/null
	(($? == 0)) || check_err 1 "A's entry for ib1 ($hwb) not updated: $(neigh_ll "$A" ib0 192.0.2.2)"
	log_test "datagram: rings changed on both ends under a TCP stream, peers told the new addresses"
else
	check_fail "$CMD_RC" "in-tree took ethtool -G"
	log_test "in-tree, known failure: rings cannot be changed under a stream (EOPNOTSUPP)"
fi

RET=0
ipoib_set_mode "$A" ib0 connected && ipoib_set_mode "$B" ib1 connected &&
	ip -n "$A" link set ib0 mtu 65520 && ip -n "$B" link set ib1 mtu 65520 &&
	ip netns exec "$A" ping -c 2 -i 0.2 -w 5 -W 3 192.0.2.2 >/dev/null
check_err $? "connected mode, MTU 65520 and a ping"
# B's own change flushed its entry for ib0's link-local address
ip netns exec "$B" ping -6 -c 1 -W 3 "$ll0%ib1" >/dev/null
check_err $? "B cannot ping ib0's link-local address"
stream_across change_ib0 tx 256 rx 512
check_err $? "$STREAM"
ktap_diag "connected: $STREAM"
if [[ $IPOIB == ours ]]; then
	ktap_diag "connected: B's entries for ib0 followed: $NEIGH_MS"
	check_err "$CMD_RC" "ethtool -G ib0 tx 256 rx 512 refused"
	check_err "$NEIGH_B" "B's entries for ib0 ($HW1) not updated: $NEIGH_B_SEEN"
	[[ $(rings "$A" ib0) == "256 512" ]]
	(($? == 0)) || check_err 1 "rings: ib0 $(rings "$A" ib0)"
	ip netns exec "$A" ping -c 2 -i 0.2 -w 5 -W 3 -s 9000 192.0.2.2 >/dev/null
	check_err $? "no 9000-byte ping over a new connection"
	log_test "connected: rings changed under a TCP stream, connections made anew"
else
	check_fail "$CMD_RC" "in-tree took ethtool -G"
	log_test "in-tree, known failure: rings cannot be changed in connected mode (EOPNOTSUPP)"
fi

# A refusal after a connection filled the SRQ: the old SRQ comes back with
# its buffers still posted, and must be known as filled, or the next REQ
# posts a second ring into a full SRQ (refused: no connection) and loses
# the first ring's buffers.
RET=0
if [[ $IPOIB == ours ]]; then
	echo 1 >"$SOFTIB_DBG/fault/fail_create_qp"
	ip netns exec "$A" ethtool -G ib0 rx 1024 >/dev/null 2>&1
	check_fail $? "ethtool -G ib0 rx 1024 taken with QP creation failing"
	echo 0 >"$SOFTIB_DBG/fault/fail_create_qp"
	[[ $(rings "$A" ib0) == "256 512" ]]
	(($? == 0)) || check_err 1 "rings changed by the refusal: $(rings "$A" ib0)"
	slowwait 20 ipoib_lower_up "$A" ib0 >/dev/null &&
		ip netns exec "$B" ping -c 2 -i 0.2 -w 5 -W 3 -s 9000 192.0.2.1 >/dev/null &&
		ip netns exec "$A" ping -c 2 -i 0.2 -w 5 -W 3 -s 9000 192.0.2.2 >/dev/null
	check_err $? "no 9000-byte ping over a connection after the refusal"
	log_test "connected: a refusal keeps the SRQ and its posted buffers; peers connect again"
else
	log_test "in-tree, known failure: no ethtool -G to be refused"
fi

# back to the start: the objects of every replaced set are gone
RET=0
ipoib_set_mode "$A" ib0 datagram && ipoib_set_mode "$B" ib1 datagram
check_err $? "back to datagram mode"
if [[ $IPOIB == ours ]]; then
	ip netns exec "$A" ethtool -G ib0 tx 128 rx 256 &&
		ip netns exec "$B" ethtool -G ib1 tx 128 rx 256
	check_err $? "rings back to 128/256"
fi
slowwait 20 objs_back >/dev/null
(($? == 0)) || check_err 1 "softib objects: $snap at the start, $(qp_objs) now"
log_test "no verbs object left behind"

ktap_finish
