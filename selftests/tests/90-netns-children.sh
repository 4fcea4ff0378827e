#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 300
#
# Containers: children of one parent in 8 namespaces all reach a peer,
# and the exact sequence ipoib-cni runs for a pod (create in the host
# namespace with umcast, move, proxy_arp, down, rename, MTU, up, read
# the address, gratuitous ARP, delete by name).

source "$(dirname "$0")/../lib.sh"

require_cmd ping

ktap_header 4
ktap_diag "IPOIB=$IPOIB"

ipoib_fabric_up && softib_policy "Default=0x7fff, ipoib : ALL=full;" \
	"p1=0x0001, ipoib : ALL=full;" &&
	ipoib_child "$B" ib1 8001 10.8.0.254/24 && slowwait 20 ipoib_lower_up "$B" ib1.8001
ktap_result $? "peer 10.8.0.254 on ib1.8001 in its own netns" || ktap_finish

RET=0
pods=()
for i in $(seq 1 8); do
	setup_ns P
	pods+=("$P")
	ip -n "$A" link add link ib0 name c$i type ipoib pkey 0x8001 &&
		ip -n "$A" link set c$i netns "$P" &&
		ip -n "$P" addr add 10.8.0.$i/24 dev c$i && ip -n "$P" link set c$i up
	check_err $? "child $i"
done
for i in $(seq 1 8); do
	slowwait 20 ipoib_lower_up "${pods[i - 1]}" c$i >/dev/null &&
		ip netns exec "${pods[i - 1]}" ping -c 2 -i 0.2 -w 4 -W 2 10.8.0.254 >/dev/null
	check_err $? "namespace $i cannot reach the peer"
done
log_test "children in 8 namespaces all ping the peer"

# ipoib-cni ADD, step by step
RET=0
setup_ns POD
tmp=ipoib$RANDOM
ip -n "$A" link add link ib0 name $tmp type ipoib pkey 0x8001 umcast 1
check_err $? "create $tmp"
ip -n "$A" link set $tmp netns "$POD"
check_err $? "move into the pod"
ip netns exec "$POD" sysctl -qw net.ipv4.conf.$tmp.proxy_arp=1
check_err $? "proxy_arp"
ip -n "$POD" link set $tmp down && ip -n "$POD" link set $tmp name net1 &&
	ip -n "$POD" link set net1 mtu 2000 && ip -n "$POD" link set net1 up &&
	ip -n "$POD" addr add 10.8.0.100/24 dev net1
check_err $? "down, rename, MTU, up"
hw=$(ipoib_hwaddr "$POD" net1)
[[ ${#hw} -eq 59 ]]
check_err $? "20-byte address: '$hw'"
slowwait 20 ipoib_lower_up "$POD" net1 >/dev/null
check_err $? "no carrier in the pod"
[[ $(ip -n "$POD" -o link show net1 | sed -n 's/.* mtu \([0-9]*\) .*/\1/p') == 2000 ]]
check_err $? "MTU not 2000"
if command -v arping >/dev/null; then
	ip netns exec "$POD" arping -q -U -c 1 -I net1 10.8.0.100
	check_err $? "gratuitous ARP"
fi
ip netns exec "$POD" ping -c 2 -i 0.2 -w 4 -W 2 10.8.0.254 >/dev/null
check_err $? "the pod cannot reach the peer"
log_test "ipoib-cni ADD sequence"

RET=0
ip -n "$POD" link del net1
check_err $? "delete by name"
! ip -n "$POD" link show net1 >/dev/null 2>&1 && ! ip link show net1 >/dev/null 2>&1
check_err $? "net1 still exists"
log_test "ipoib-cni DEL"

ktap_finish
