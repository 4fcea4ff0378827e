#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 180
#
# Datagram mode across the softib fabric: each port's IPoIB parent in its
# own netns, IPv4 and IPv6 ping both ways, a 10 s iperf3 TCP stream.


source "$(dirname "$0")/../lib.sh"

require_cmd iperf3 ping

ktap_header 5
ktap_diag "IPOIB=$IPOIB"

ipoib_fabric_up
ktap_result $? "ib0/ib1 in two netns get carrier (broadcast group joined)" || ktap_finish

[[ $(ip -n "$A" -o link show ib0 | sed -n 's/.* mtu \([0-9]*\) .*/\1/p') == 2044 ]]
ktap_result $? "MTU 2044 from the 2K broadcast group"

RET=0
ip netns exec "$A" ping -c 3 -W 2 192.0.2.2 >/dev/null
check_err $? "A -> B IPv4"
ip netns exec "$B" ping -c 3 -W 2 192.0.2.1 >/dev/null
check_err $? "B -> A IPv4"
log_test "IPv4 ping both ways"

RET=0
slowwait 10 test -n "$(ll_addr "$B" ib1)" >/dev/null
ip netns exec "$A" ping -6 -c 3 -W 2 "$(ll_addr "$B" ib1)%ib0" >/dev/null
check_err $? "A -> B IPv6"
ip netns exec "$B" ping -6 -c 3 -W 2 "$(ll_addr "$A" ib0)%ib1" >/dev/null
check_err $? "B -> A IPv6"
log_test "IPv6 link-local ping both ways"

mbps=$(iperf_mbps "$A" "$B" 192.0.2.2 10)
ktap_result $? "iperf3 TCP 10 s"
ktap_diag "iperf3 TCP datagram mode: ${mbps:-0} Mbit/s"

ktap_finish
