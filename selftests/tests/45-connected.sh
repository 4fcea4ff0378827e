#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 180
#
# Connected mode (RC over ib_cm) across the softib fabric: both ends
# switched to connected, MTU 65520, pings up to 65000 bytes and a 10 s
# iperf3 TCP stream, carried by RC QPs.

source "$(dirname "$0")/../lib.sh"

require_cmd iperf3 ping

ktap_header 5
ktap_diag "IPOIB=$IPOIB"

ipoib_fabric_up
ktap_result $? "ib0/ib1 up in datagram mode" || ktap_finish

RET=0
for pair in "$A ib0" "$B ib1"; do
	set -- $pair
	ip netns exec "$1" sh -c "echo connected > /sys/class/net/$2/mode"
	check_err $? "$2: mode connected refused"
	ip -n "$1" link set "$2" mtu 65520
	check_err $? "$2: MTU 65520 refused"
	[[ $(ip netns exec "$1" cat /sys/class/net/$2/mode) == connected ]]
	check_err $? "$2: mode reads $(ip netns exec "$1" cat /sys/class/net/"$2"/mode)"
done
log_test "mode connected and MTU 65520 on both ends"

RET=0
for size in 56 1400 9000 65000; do
	ip netns exec "$A" ping -c 2 -W 3 -s $size 192.0.2.2 >/dev/null
	check_err $? "ping -s $size failed"
done
log_test "ping 56/1400/9000/65000 bytes"

rcs=$(rdma res show qp link softib0/1 | grep -c 'type RC state RTS')
((rcs >= 1))
ktap_result $? "RC QPs connected (port 1 has $rcs in RTS)"

mbps=$(iperf_mbps "$A" "$B" 192.0.2.2 10)
ktap_result $? "iperf3 TCP 10 s"
ktap_diag "iperf3 TCP connected mode: ${mbps:-0} Mbit/s"

ktap_finish
