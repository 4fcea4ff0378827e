#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 420
#
# IPoIB datagram mode between two kernels on one softib fabric: node 1
# (6.1) and node 2 (6.12), in-tree ib_ipoib on one and ours on the other
# in both arrangements. ARP (the broadcast group across the nodes),
# unicast paths from each node's SA to the other's ports, IPv6 (its
# solicited-node groups), a P_Key child on both sides, TCP and UDP streams,
# then the same under netem loss, duplication and reordering on the
# underlay: every datagram still arrives, because the link is lossless.
# A node under another fabric key, with IPoIB up, reaches nothing. Over a
# 1500-byte underlay ib0's datagram MTU is 1020.

source "$(dirname "$0")/../lib.sh"

pair_require
require_cmd iperf3 ping tc
modprobe sch_netem || { echo "# SKIP: no sch_netem"; exit $ksft_skip; }

ME=$(pair_node)
PEER=$(pair_peer)
DEV=$(pair_dev)
FAB=$SOFTIB_DBG/fabric
BADKEY=0000000000000000000000000000000000000000000000000000000000000001


cleanup() {
	tc qdisc del dev "$DEV" root 2>/dev/null || true
	pkill -x iperf3 2>/dev/null || true
	unload_ipoib
	unload_softib
	ip link set dev "$DEV" mtu "${IPOIB_NG_FABMTU:-9000}"
}
defer cleanup

ktap_header 17

modprobe ib_cm &&
	pair_link_load && slowwait 15 pair_link_up &&
	softib_policy "Default=0x7fff, ipoib : ALL=full;" "p1=0x0001, ipoib : ALL=full;"
ktap_result $? "softib on both nodes, linked" || ktap_finish

# arrangement DRV_NODE1 DRV_NODE2 SUBNET: one driver on each node
arrangement() {
	local drv a b ll other mbps out tag=$1-$2

	drv=$1
	((ME == 2)) && drv=$2
	a=$3.$ME
	b=$3.$PEER
	ktap_diag "node 1: $1, node 2: $2"

	RET=0
	IPOIB=$drv load_ipoib && slowwait 10 test -d /sys/class/net/ib0
	check_err $? "$drv ib_ipoib: no ib0"
	ip addr add "$a/24" dev ib0 && ip link set ib0 up &&
		slowwait 30 ipoib_lower_up "" ib0
	check_err $? "ib0 has no carrier"
	log_test "$1 on node 1, $2 on node 2: ib0 up with carrier"
	pair_barrier "up-$tag"

	RET=0
	ping -c 3 -i 0.2 -w 15 -W 3 "$b" >/dev/null
	check_err $? "no ping"
	if ((RET)); then
		ktap_diag "$(ip neigh show dev ib0)"
		ktap_diag "$(grep -E '^(tx_ib|rx_ib|tx_ib_dropped|rx_ib_bad|rx_delivered|tx_frames|rx_frames) ' "$FAB/stats" | tr '\n' ' ')"
		ktap_diag "$(cat "$SOFTIB_DBG/mcast" 2>&1 | head -n 5)"
		ktap_diag "$(grep -v ' 0$' "$SOFTIB_DBG/ports/1/counters" | tr '\n' ' ')"
	fi
	log_test "$1 <-> $2: IPv4 ping across the nodes (ARP, path records)"

	RET=0
	ll=$(ip -6 -o addr show dev ib0 scope link | awk '{print $4}' | cut -d/ -f1)
	pair_put "ll-$tag" "$ll"
	other=$(pair_get "ll-$tag")
	[[ -n $other ]] && ping -6 -c 3 -i 0.2 -w 15 -W 3 "$other%ib0" >/dev/null
	check_err $? "no IPv6 ping to '$other'"
	log_test "$1 <-> $2: IPv6 link-local ping (solicited-node groups)"

	RET=0
	echo 0x8001 >/sys/class/net/ib0/create_child &&
		ip addr add "203.0.113.$ME/24" dev ib0.8001 &&
		ip link set ib0.8001 up && slowwait 30 ipoib_lower_up "" ib0.8001
	check_err $? "child 0x8001"
	pair_barrier "child-$tag"
	ping -c 3 -i 0.2 -w 15 -W 3 "203.0.113.$PEER" >/dev/null
	check_err $? "no ping over the children"
	log_test "$1 <-> $2: P_Key children 0x8001 ping"

	RET=0
	mbps=$(pair_tcp_stream "$tag" "$3.2")
	check_err $? "iperf3 gave '$mbps'"
	((ME == 1)) && ktap_diag "iperf3 TCP node 1 ($1) -> node 2 ($2): $mbps Mbit/s"
	log_test "$1 -> $2: a TCP stream"

	RET=0
	out=$(pair_udp_stream "$tag" "$3.2" 1400 750 250)
	check_err $? "UDP: $out"
	((ME == 2)) && ktap_diag "UDP node 1 ($1) -> node 2 ($2): $out"
	log_test "$1 -> $2: 750 UDP datagrams of 1400 bytes, each arrives once"

	echo 0x8001 >/sys/class/net/ib0/delete_child
	unload_ipoib
	pair_barrier "down-$tag"
}

arrangement intree ours 192.0.2
arrangement ours intree 198.51.100

# both arrangements' traffic crossed the link as IB packets, none bad
RET=0
[[ $(pair_fab tx_ib) -gt 0 && $(pair_fab rx_ib) -gt 0 && $(pair_fab rx_ib_bad) -eq 0 ]]
(($? == 0)) || check_err 1 "tx_ib $(pair_fab tx_ib), rx_ib $(pair_fab rx_ib), rx_ib_bad $(pair_fab rx_ib_bad)"
log_test "IB packets both ways on the link, none malformed"

# a node off the fabric (softib under another fabric key) with IPoIB up
# on the same addresses: its handshakes are refused, no IB packet of it
# reaches node 1, nothing answers its ARP; under the fabric key the same
# node pings
RET=0
hs0=$(pair_fab hs_bad_mac)
pair_barrier offfab
if ((ME == 2)); then
	unload_softib && pair_link_load "$BADKEY" &&
		softib_policy "Default=0x7fff, ipoib : ALL=full;"
	check_err $? "softib under another key"
fi
IPOIB=ours load_ipoib && slowwait 10 test -d /sys/class/net/ib0 &&
	ip addr add "192.0.2.$ME/24" dev ib0 && ip link set ib0 up &&
	slowwait 30 ipoib_lower_up "" ib0
check_err $? "ib0 off the fabric"
# from here on no IB packet may come from node 2
slowwait 10 sh -c "! grep -q ' state up ' $FAB/peers"
check_err $? "the link is still up with node 2 under another key"
rx0=$(pair_fab rx_ib)
pair_barrier offfab-up
if ((ME == 2)); then
	ping -c 3 -i 0.2 -w 3 -W 1 "192.0.2.$PEER" >/dev/null
	check_fail $? "node 2 under another key reached node 1"
	pair_link_up
	check_fail $? "the link is up under another key"
fi
pair_barrier offfab-pinged 30
if ((ME == 1)); then
	[[ $(pair_fab rx_ib) -eq $rx0 && $(pair_fab hs_bad_mac) -gt $hs0 ]]
	(($? == 0)) || check_err 1 "rx_ib $rx0 -> $(pair_fab rx_ib), hs_bad_mac $hs0 -> $(pair_fab hs_bad_mac)"
	[[ $(ip neigh show to "192.0.2.$PEER" dev ib0) != *lladdr* ]]
	(($? == 0)) || check_err 1 "node 1 learnt node 2: $(ip neigh show 192.0.2.$PEER dev ib0)"
fi
# the same node under the fabric key: node 1's ib0 as it was
if ((ME == 2)); then
	unload_ipoib && unload_softib && pair_link_load &&
		softib_policy "Default=0x7fff, ipoib : ALL=full;" &&
		IPOIB=ours load_ipoib && slowwait 10 test -d /sys/class/net/ib0 &&
		ip addr add "192.0.2.$ME/24" dev ib0 && ip link set ib0 up &&
		slowwait 30 ipoib_lower_up "" ib0
	check_err $? "softib and ib0 under the fabric key"
fi
slowwait 15 pair_link_up
check_err $? "no link under the fabric key"
pair_barrier offfab-back
if ((ME == 2)); then
	ping -c 3 -i 0.2 -w 15 -W 3 "192.0.2.$PEER" >/dev/null
	check_err $? "no ping under the fabric key"
fi
pair_barrier offfab-done 30
unload_ipoib
log_test "a node under another fabric key: refused, no IB packet delivered; under the key it pings"

# netem on the underlay: no datagram lost (a flood ping counts them)
RET=0
IPOIB=ours load_ipoib && slowwait 10 test -d /sys/class/net/ib0 &&
	ip addr add "192.0.2.$ME/24" dev ib0 && ip link set ib0 up &&
	slowwait 30 ipoib_lower_up "" ib0
check_err $? "ib0 again"
tc qdisc add dev "$DEV" root netem loss 5% duplicate 2% delay 2ms reorder 25% 50%
check_err $? "netem"
pair_barrier netem
if ((ME == 1)); then
	# ARP and the path records on both nodes first: until its path is
	# known, IPoIB keeps 3 packets per destination and drops the rest
	# (in-tree too), which at 100 a second says nothing about the link
	ping -c 2 -i 0.2 -w 15 -W 3 "192.0.2.$PEER" >/dev/null
	check_err $? "no ping under netem"
	# exactly 300 sent (no -w: a deadline stops at 300 replies and
	# counts the requests still in flight as lost), each waited for
	out=$(timeout 90 ping -c 300 -i 0.01 -W 5 "192.0.2.$PEER" 2>&1)
	grep -q "300 packets transmitted, 300 received" <<<"$out"
	(($? == 0)) || check_err 1 "lost under netem: $(grep -E 'transmitted|rtt' <<<"$out" | tr '\n' ' ')"
fi
pair_barrier netem-done 90
tc qdisc del dev "$DEV" root
log_test "300 pings under netem loss 5%, duplicate 2%, reorder 25%: none lost"

# a 1500-byte underlay: IB MTU 1024, so the paths and the broadcast group
# say 1024 and ib0's datagram MTU is 1020 (in-tree on node 1, ours on
# node 2); a whole 1020-byte packet crosses, DF set
RET=0
unload_ipoib && unload_softib && ip link set dev "$DEV" mtu 1500
check_err $? "$DEV MTU 1500"
# both at 1500 before either loads: nodes of different IB MTUs refuse
# each other
pair_barrier mtu1500
pair_link_load && slowwait 15 pair_link_up &&
	softib_policy "Default=0x7fff, ipoib : ALL=full;"
check_err $? "softib linked over MTU 1500"
grep -q " ib_mtu 1024 " "$FAB/peers"
(($? == 0)) || check_err 1 "not IB MTU 1024: $(head -n 1 "$FAB/peers")"
drv=ours
((ME == 1)) && drv=intree
IPOIB=$drv load_ipoib && slowwait 10 test -d /sys/class/net/ib0 &&
	ip addr add "192.0.2.$ME/24" dev ib0 && ip link set ib0 up &&
	slowwait 30 ipoib_lower_up "" ib0
check_err $? "$drv ib0 over MTU 1500"
[[ $(</sys/class/net/ib0/mtu) == 1020 ]]
(($? == 0)) || check_err 1 "$drv ib0 MTU $(</sys/class/net/ib0/mtu), not 1020"
pair_barrier mtu1500-up
ping -c 3 -i 0.2 -w 15 -W 3 -M do -s 992 "192.0.2.$PEER" >/dev/null
check_err $? "no 1020-byte ping with DF"
pair_barrier mtu1500-pinged 30
unload_ipoib
unload_softib
ip link set dev "$DEV" mtu "${IPOIB_NG_FABMTU:-9000}"
log_test "a 1500-byte underlay: IB MTU 1024, ib0 MTU 1020, whole packets cross"

pair_barrier done
ktap_finish
