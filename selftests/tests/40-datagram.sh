#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: intree
# timeout: 180
#
# Datagram mode across the softib fabric: each port's IPoIB parent in its
# own netns, IPv4 and IPv6 ping both ways, a 10 s iperf3 TCP stream.
# (Runs for our ib_ipoib too once its datapath lands.)

source "$(dirname "$0")/../lib.sh"

require_cmd iperf3 ping

ports_active() {
	grep -q ACTIVE /sys/class/infiniband/softib0/ports/1/state &&
		grep -q ACTIVE /sys/class/infiniband/softib0/ports/2/state
}

lower_up() {
	ip -n "$1" link show "$2" | grep -q LOWER_UP
}

ll_addr() {
	ip -n "$1" -6 addr show dev "$2" scope link | awk '/inet6/ { sub("/.*", "", $2); print $2 }'
}

ktap_header 6
ktap_diag "IPOIB=$IPOIB"

modprobe ib_cm
load_softib && slowwait 10 ports_active >/dev/null && load_ipoib &&
	slowwait 10 test -d /sys/class/net/ib1 >/dev/null
ktap_result $? "softib and ib_ipoib up, ib0/ib1 present"
defer unload_softib
defer unload_ipoib

setup_ns A B
ip link set ib0 netns "$A" && ip link set ib1 netns "$B" &&
	ip -n "$A" addr add 192.0.2.1/24 dev ib0 &&
	ip -n "$B" addr add 192.0.2.2/24 dev ib1 &&
	ip -n "$A" link set ib0 up && ip -n "$B" link set ib1 up &&
	slowwait 20 lower_up "$A" ib0 && slowwait 20 lower_up "$B" ib1
ktap_result $? "carrier on both ends (broadcast group joined)"

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

ip netns exec "$B" iperf3 -s -1 -D -B 192.0.2.2 >/dev/null
slowwait 5 ip netns exec "$B" sh -c 'ss -ltn | grep -q :5201' >/dev/null
out=$(ip netns exec "$A" timeout 40 iperf3 -c 192.0.2.2 -t 10 -J)
rc=$?
bps=$(python3 -c 'import json,sys; print(int(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]))' <<<"$out" 2>/dev/null)
ktap_diag "iperf3 TCP datagram mode: $((${bps:-0} / 1000000)) Mbit/s"
[[ $rc -eq 0 && ${bps:-0} -gt 0 ]]
ktap_result $? "iperf3 TCP 10 s"

ktap_finish
