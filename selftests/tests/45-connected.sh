#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 300
#
# Connected mode (RC over ib_cm) across the softib fabric: both ends
# switched to connected, MTU 65520, pings up to 65000 bytes, a 5 s
# iperf3 TCP stream and 60000-byte UDP datagrams, carried by RC QPs;
# DF packets too big for UD (multicast) get ICMP "frag needed" with the
# datagram MTU; one end connected and the other datagram; switching the
# mode back and forth while a stream runs (in-tree may stall there: its
# known failure, see 47-mode-flip).

source "$(dirname "$0")/../lib.sh"

require_cmd iperf3 ping python3

# udp_loss CLIENT_NS SERVER_NS ADDR: 5 s of 60000-byte UDP datagrams;
# prints "received lost%", fails if nothing arrived
udp_loss() {
	local out

	iperf_server "$2" "$3" || return 1
	out=$(ip netns exec "$1" timeout 40 iperf3 -c "$3" -u -l 60000 -b 40M -t 5 -J) || return 1
	python3 -c 'import json,sys; s=json.load(sys.stdin)["end"]["sum"]; print(s["packets"] - s["lost_packets"], int(s["lost_percent"])); sys.exit(s["packets"] - s["lost_packets"] <= 0)' <<<"$out"
}

ktap_header 9
ktap_diag "IPOIB=$IPOIB"

ipoib_fabric_up
ktap_result $? "ib0/ib1 up in datagram mode" || ktap_finish
intree_on_provider && intree_no_cm_finish "$A" ib0

RET=0
for pair in "$A ib0" "$B ib1"; do
	set -- $pair
	ip netns exec "$1" sh -c "echo connected > /sys/class/net/$2/mode"
	check_err $? "$2: mode connected refused"
	ip -n "$1" link set "$2" mtu 65520
	check_err $? "$2: MTU 65520 refused"
	[[ $(ip netns exec "$1" cat /sys/class/net/$2/mode) == connected ]]
	(($? == 0)) || check_err 1 "$2: mode reads $(ip netns exec "$1" cat /sys/class/net/"$2"/mode)"
done
log_test "mode connected and MTU 65520 on both ends"

RET=0
# -c 2 -i 0.2 -w W+1: both echoes answered within the time the first of two
# sent 1 s apart had (1 + W s); it sends on until they are
W=$((3 * ${TIMEOUT_SCALE:-1}))
for size in 56 1400 9000 65000; do
	# the first waits for the connection (seconds on a debug kernel)
	ip netns exec "$A" ping -c 2 -i 0.2 -w $((W + 1)) -W $W -s $size 192.0.2.2 >/dev/null
	check_err $? "ping -s $size failed"
done
log_test "ping 56/1400/9000/65000 bytes"

rcs=$(rdma res show qp link softib0/1 | grep -c 'type RC state RTS')
((rcs >= 1))
ktap_result $? "RC QPs connected (port 1 has $rcs in RTS)"

mbps=$(iperf_mbps "$A" "$B" 192.0.2.2 3)
ktap_result $? "iperf3 TCP 3 s"
ktap_diag "iperf3 TCP connected mode: ${mbps:-0} Mbit/s"

RET=0
res=$(udp_loss "$A" "$B" 192.0.2.2)
check_err $? "no 60000-byte datagram arrived: $res"
read -r got loss <<<"$res"
((loss < 50))
check_err $? "$loss % of the 60000-byte datagrams lost"
ktap_diag "UDP 60000-byte datagrams: $got received, $loss % lost"
log_test "UDP with 60000-byte datagrams"

RET=0
# a peer without connected mode (flag 0x80 clear in its address, as an
# old stack would announce) is reached over UD: a 4000-byte DF packet
# cannot go, and the stack must hear why (the datagram MTU, 2044)
hw=$(ipoib_hwaddr "$B" ib1)
ip -n "$A" neigh replace 192.0.2.2 lladdr "00${hw:2}" dev ib0 nud permanent
check_err $? "static neighbour without the CM flag"
out=$(ip netns exec "$A" ping -c 1 -W 2 -M do -s 4000 192.0.2.2 2>&1)
grep -q "mtu = 2044" <<<"$out"
(($? == 0)) || check_err 1 "no frag-needed with mtu 2044: $(head -3 <<<"$out" | xargs)"
ip netns exec "$A" ping -c 1 -W 2 -s 1000 192.0.2.2 >/dev/null
check_err $? "the UD-only peer does not answer small pings"
ip -n "$A" neigh del 192.0.2.2 dev ib0
log_test "DF packet too big for a UD-only peer: ICMP frag needed, mtu 2044"

RET=0
ip netns exec "$B" sh -c "echo datagram > /sys/class/net/ib1/mode"
check_err $? "ib1: mode datagram refused"
mtu=$(ip -n "$B" -o link show ib1 | sed -n 's/.* mtu \([0-9]*\) .*/\1/p')
[[ $mtu == 2044 ]]
check_err $? "ib1 MTU $mtu after switching to datagram"
for size in 56 1400; do
	ip netns exec "$A" ping -c 2 -i 0.2 -w $((W + 1)) -W $W -s $size 192.0.2.2 >/dev/null
	check_err $? "connected -> datagram ping -s $size"
	ip netns exec "$B" ping -c 2 -i 0.2 -w $((W + 1)) -W $W -s $size 192.0.2.1 >/dev/null
	check_err $? "datagram -> connected ping -s $size"
done
mbps=$(iperf_mbps "$A" "$B" 192.0.2.2 3)
check_err $? "iperf3 connected -> datagram"
ktap_diag "iperf3 TCP connected -> datagram peer: ${mbps:-0} Mbit/s"
log_test "mixed: one end connected, the other datagram"

RET=0
ip netns exec "$B" sh -c "echo connected > /sys/class/net/ib1/mode"
mark="45-connected: switches ($IPOIB, $$)"
echo "$mark" >/dev/kmsg
iperf_start "$A" "$B" 192.0.2.2 10
for m in datagram connected datagram connected datagram connected; do
	sleep 1
	ip netns exec "$A" sh -c "echo $m > /sys/class/net/ib0/mode"
	check_err $? "switch to $m under traffic"
done
wait $IPERF_PID
check_err $? "iperf3 did not survive the mode switches"
ip netns exec "$A" ping -c 2 -W 3 -s 9000 192.0.2.2 >/dev/null
check_err $? "ping -s 9000 after the switches"
# in-tree's own bug (47-mode-flip): after datagram mode its connected
# mode can post IB_WR_LSO on RC, which fails (IB_WC_LOC_QP_OP_ERR = 2)
lso=$(dmesg | grep -F -A1000000 "$mark" | grep -c "failed cm send event (status=2,")
if [[ $IPOIB == intree && $RET != 0 ]] && ((lso)); then
	ktap_diag "$RETMSG"
	RET=0
	log_test "in-tree, known failure: mode switched six times while a TCP stream runs ($lso LSO sends failed on RC)"
else
	log_test "mode switched six times while a TCP stream runs"
fi

# each switch tore connections down; softib purges what their QPs left
ktap_diag "softib: $(xargs <"$SOFTIB_DBG/stats")"

ktap_finish
