#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: none
#
# make bench: throughput and latency of IPoIB on softib next to veth, all
# in the same guest boot so the numbers compare. Prints KTAP (one line per
# measurement that ran) and a table with ratios to veth and to the
# in-tree driver. Numbers under QEMU TCG are low in absolute terms; only
# ratios within one run mean something.
#
# Variants: veth; in-tree ib_ipoib datagram and connected; ours where its
# datapath exists (it joins the table once ib0 appears with our driver).
# Env BENCH_SECS (default 10) per iperf3 run.

source "$(dirname "$0")/lib.sh"

require_cmd iperf3 ping

SECS=${BENCH_SECS:-10}
declare -A TCP RTT

# rtt_us NS ADDR: average ping RTT over 20 pings, in microseconds
rtt_us() {
	local us

	us=$(ip netns exec "$1" ping -q -c 20 -i 0.05 -W 1 "$2" |
		awk -F/ '/^rtt/ { printf "%d\n", $5 * 1000 }')
	[[ -n $us ]] && echo "$us"
}

measure() { # NAME: iperf3 TCP and ping between $A and 192.0.2.2 in $B
	local name=$1

	TCP[$name]=$(iperf_mbps "$A" "$B" 192.0.2.2 "$SECS")
	ktap_result $? "$name: iperf3 TCP ${SECS}s: ${TCP[$name]:-0} Mbit/s"
	RTT[$name]=$(rtt_us "$A" 192.0.2.2)
	ktap_result $? "$name: ping RTT ${RTT[$name]:-0} us"
}

ktap_header 10

# veth: the ceiling of the netns + TCP stack in this guest (the guest's
# usermode helper cannot autoload modules: load veth explicitly)
modprobe veth
setup_ns A B
ip link add vA netns "$A" type veth peer name vB netns "$B" &&
	ip -n "$A" addr add 192.0.2.1/24 dev vA && ip -n "$B" addr add 192.0.2.2/24 dev vB &&
	ip -n "$A" link set vA up && ip -n "$B" link set vB up &&
	slowwait 10 ip netns exec "$A" ping -c 1 -W 1 192.0.2.2 >/dev/null
measure veth
cleanup_ns

for drv in intree ours; do
	IPOIB=$drv
	if ! ipoib_fabric_up 2>/dev/null; then
		for v in "datagram: iperf3" "datagram: ping" "connected: iperf3" "connected: ping"; do
			ktap_skip "$drv-$v" "no IPoIB datapath with IPOIB=$drv"
		done
		__defer_run
		cleanup_ns
		continue
	fi
	measure "$drv-datagram"
	cm=1
	for pair in "$A ib0" "$B ib1"; do
		set -- $pair
		ip netns exec "$1" sh -c "echo connected > /sys/class/net/$2/mode" 2>/dev/null &&
			ip -n "$1" link set "$2" mtu 65520 || cm=0
	done
	if ((cm)); then
		measure "$drv-connected"
	else
		ktap_skip "$drv-connected: iperf3" "IPOIB=$drv has no connected mode"
		ktap_skip "$drv-connected: ping" "IPOIB=$drv has no connected mode"
	fi
	__defer_run
	cleanup_ns
done

ratio() { # A B: A/B with two decimals, or -
	[[ -n $1 && -n $2 && $2 -gt 0 ]] || { echo -; return; }
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'
}

ktap_diag "variant            TCP Mbit/s  /veth  /in-tree   RTT us"
for v in veth intree-datagram ours-datagram intree-connected ours-connected; do
	[[ -n ${TCP[$v]:-} ]] || continue
	ref=${v/ours/intree}
	ktap_diag "$(printf '%-18s %10s %6s %8s %8s' "$v" "${TCP[$v]}" \
		"$(ratio "${TCP[$v]}" "${TCP[veth]:-}")" \
		"$(ratio "${TCP[$v]}" "${TCP[$ref]:-}")" "${RTT[$v]:-}")"
done

ktap_finish
