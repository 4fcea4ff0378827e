#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 300
#
# softib's rdma_netdev (enhanced=1), as the unmodified in-tree ib_ipoib
# uses it on mlx5, and ours with ipoib_enhanced=1 (its default): the
# provider owns the datagram datapath of every IPoIB netdev.
#
# - ethtool: the provider's driver info, one channel per CPU (-l), a
#   receive ring of 512 (-g), per-queue counters (-S);
# - datagram traffic: pings of every size up to the MTU, TCP with TSO on
#   the sender (tx*_tso_packets) and checksums the receiver need not check
#   (rx*_csum_unnecessary), IPv6;
# - RSS: eight TCP streams land on more than one receive queue;
# - the netdev's own broadcasts come back from the fabric and are dropped
#   by the provider (rx*_mcast_echo), as mlx5 drops them;
# - connected mode: in-tree refuses "connected" (EINVAL), as on any
#   provider; ours runs it beside the provider's queues (RC QPs of its
#   own, the RC flag in the hardware address): big pings and TCP over RC,
#   then back to datagram;
# - P_Key children (sysfs and netlink) are netdevs of their own with
#   their own QPN, and carry traffic;
# - ethtool -L and -G restart the rings: traffic goes on, bad values are
#   refused;
# - down and up, and ib_ipoib removed under traffic: no object left.

source "$(dirname "$0")/../lib.sh"

require_cmd ethtool iperf3 ping

ncpu=$(nproc)
# rx_sum DEV NS FIELD: FIELD summed over the receive (or send) queues
q_sum() {
	ip netns exec "$1" ethtool -S "$2" |
		awk -v f="_$3:" 'index($1, f) && $1 ~ /^(rx|tx)[0-9]+_/ { s += $2 } END { print s + 0 }'
}
# queues_used NS DEV: how many receive queues got packets
queues_used() {
	ip netns exec "$1" ethtool -S "$2" |
		awk '$1 ~ /^rx[0-9]+_packets:$/ && $2 > 0 { n++ } END { print n + 0 }'
}

ktap_header 9
ktap_diag "IPOIB=$IPOIB, $ncpu CPUs"

ipoib_fabric_up enhanced=1 offloads=1
ktap_result $? "softib enhanced=1 offloads=1: ib0 and ib1 up in two netns" || ktap_finish

RET=0
out=$(ip netns exec "$A" ethtool -i ib0 2>&1)
grep -q "^driver: softib$" <<<"$out"
check_err $? "ethtool -i ib0: $out"
out=$(ip netns exec "$A" ethtool -l ib0 2>&1)
(($(awk '/^Combined:/ { n++; v[n] = $2 } END { print (v[1] == v[2]) ? v[1] : -1 }' <<<"$out") == ncpu))
check_err $? "ethtool -l ib0 (want $ncpu combined): $out"
out=$(ip netns exec "$A" ethtool -g ib0 2>&1)
grep -qE "^RX:[[:space:]]+512$" <<<"$out"
check_err $? "ethtool -g ib0: $out"
n=$(ip netns exec "$A" ethtool -S ib0 | grep -cE "^ +(rx|tx)[0-9]+_packets:")
((n == 2 * ncpu))
(($? == 0)) || check_err 1 "ethtool -S ib0: $n per-queue packet counters, want $((2 * ncpu))"
log_test "ethtool: the provider's driver, $ncpu channels, its ring and per-queue counters"

RET=0
for s in 1 56 1400 2044 4000 4064; do
	ip netns exec "$A" ping -c 2 -i 0.2 -W 2 -s "$s" 192.0.2.2 >/dev/null
	check_err $? "ping -s $s"
done
ip -n "$A" addr add 2001:db8::1/64 dev ib0 nodad && ip -n "$B" addr add 2001:db8::2/64 dev ib1 nodad &&
	slowwait 10 ip netns exec "$A" ping -6 -c 1 -W 1 2001:db8::2 >/dev/null
check_err $? "IPv6 ping"
t0=$(q_sum "$A" ib0 tso_packets) c0=$(q_sum "$B" ib1 csum_unnecessary)
mbps=$(iperf_mbps "$A" "$B" 192.0.2.2 3)
check_err $? "iperf3"
t1=$(q_sum "$A" ib0 tso_packets) c1=$(q_sum "$B" ib1 csum_unnecessary)
ktap_diag "TCP ${mbps:-0} Mbit/s; tso_packets +$((t1 - t0)), receiver csum_unnecessary +$((c1 - c0))"
((t1 > t0 && c1 > c0))
check_err $? "no TSO sends or no verified checksums"
log_test "datagram: pings up to the MTU, IPv6, TCP with TSO and checksums"

RET=0
iperf_server "$B" 192.0.2.2
ip netns exec "$A" timeout 30 iperf3 -c 192.0.2.2 -t 3 -P 8 >/dev/null 2>&1
check_err $? "iperf3 -P 8"
used=$(queues_used "$B" ib1)
ktap_diag "receive queues with packets on ib1: $used of $ncpu"
((ncpu == 1 || used > 1))
check_err $? "eight streams on one receive queue"
log_test "RSS: eight streams spread over the receive queues"

RET=0
e0=$(q_sum "$A" ib0 mcast_echo)
ip netns exec "$A" ping -b -c 3 -i 0.2 -W 1 192.0.2.255 >/dev/null 2>&1
e1=$(q_sum "$A" ib0 mcast_echo)
((e1 > e0))
check_err $? "no echo of ib0's own broadcasts dropped (mcast_echo $e0 -> $e1)"
log_test "the netdev's own broadcasts are dropped on the way back"

RET=0
if [[ $IPOIB == intree ]]; then
	intree_cm_refused "$A" ib0
	log_test "no connected mode on the provider: EINVAL, as in-tree gives it"
else
	for ns_dev in "$A ib0" "$B ib1"; do
		set -- $ns_dev
		ip netns exec "$1" sh -c "echo connected > /sys/class/net/$2/mode"
		check_err $? "$2: connected mode refused"
	done
	for s in 56 9000 65000; do
		slowwait 10 ip netns exec "$A" ping -c 1 -W 1 -s "$s" 192.0.2.2 >/dev/null
		check_err $? "ping -s $s in connected mode"
	done
	n=$(rdma res show qp 2>/dev/null | grep -c "type RC" || true)
	((n >= 2))
	check_err $? "$n RC QPs: the pings did not go over connections"
	mbps=$(iperf_mbps "$A" "$B" 192.0.2.2 3)
	check_err $? "iperf3 in connected mode"
	ktap_diag "TCP over RC beside the provider: ${mbps:-0} Mbit/s, $n RC QPs"
	for ns_dev in "$A ib0" "$B ib1"; do
		set -- $ns_dev
		ip netns exec "$1" sh -c "echo datagram > /sys/class/net/$2/mode"
		check_err $? "$2: back to datagram mode"
	done
	slowwait 10 ip netns exec "$A" ping -c 1 -W 1 -s 1400 192.0.2.2 >/dev/null
	check_err $? "no datagram traffic after connected mode"
	log_test "connected mode beside the provider: pings to 65000 bytes and TCP over RC"
fi

RET=0
softib_policy "Default=0x7fff, ipoib : ALL=full;" "p1=0x0001, ipoib : ALL=full;"
check_err $? "policy"
ip netns exec "$A" sh -c 'echo 0x8001 > /sys/class/net/ib0/create_child'
check_err $? "create_child"
# in-tree makes a sysfs child in init_net, whatever netns its parent is in
slowwait 10 sh -c "ip link show ib0.8001 || ip -n $A link show ib0.8001" >/dev/null
ip link show ib0.8001 >/dev/null 2>&1 && ip link set ib0.8001 netns "$A"
ip -n "$A" addr add 10.9.0.1/24 dev ib0.8001 && ip -n "$A" link set ib0.8001 up
ipoib_child "$B" ib1 8001 10.9.0.2/24
check_err $? "netlink child"
slowwait 20 ipoib_lower_up "$A" ib0.8001 && slowwait 20 ipoib_lower_up "$B" ib1.8001 &&
	slowwait 20 ip netns exec "$A" ping -c 1 -W 1 10.9.0.2 >/dev/null
check_err $? "no traffic over the children"
p=$(ipoib_hwaddr "$A" ib0) c=$(ipoib_hwaddr "$A" ib0.8001)
[[ -n $p && ${p:3:8} != "${c:3:8}" ]]
check_err $? "the child shares the parent's QPN: $p / $c"
log_test "P_Key children over sysfs and netlink: own QPN, traffic"

RET=0
ip netns exec "$A" ethtool -L ib0 combined 1
check_err $? "ethtool -L ib0 combined 1"
ip netns exec "$A" ping -c 2 -i 0.2 -W 2 192.0.2.2 >/dev/null
check_err $? "no traffic with one channel"
ip netns exec "$A" ethtool -L ib0 combined $((ncpu + 1)) 2>/dev/null
(($? != 0)) || check_fail 0 "ethtool -L combined $((ncpu + 1)) accepted"
ip netns exec "$A" ethtool -L ib0 combined "$ncpu"
check_err $? "ethtool -L back to $ncpu"
ip netns exec "$A" ethtool -G ib0 rx 128
check_err $? "ethtool -G ib0 rx 128"
ip netns exec "$A" ping -c 2 -i 0.2 -W 2 192.0.2.2 >/dev/null
check_err $? "no traffic with a 128-buffer ring"
ip netns exec "$A" ethtool -G ib0 rx 16 2>/dev/null
check_fail $? "ethtool -G rx 16 accepted"
log_test "ethtool -L and -G restart the rings; traffic goes on; bad values refused"

RET=0
ip -n "$A" link set ib0 down && ip -n "$A" link set ib0 up &&
	slowwait 20 ipoib_lower_up "$A" ib0 &&
	slowwait 20 ip netns exec "$A" ping -c 1 -W 1 192.0.2.2 >/dev/null
check_err $? "no traffic after down and up"
ip netns exec "$A" ping -f -w 3 192.0.2.2 >/dev/null 2>&1 &
pinger=$!
sleep 1
ipoib_quiesce
rmmod ib_ipoib
check_err $? "rmmod ib_ipoib"
wait "$pinger"
n=$(rdma res show qp 2>/dev/null | grep -c "type UD" || true)
((n == 0))
(($? == 0)) || check_err 1 "$n UD QPs left after rmmod: $(rdma res show qp 2>&1)"
log_test "down and up; ib_ipoib removed under traffic leaves no QP"

ktap_finish
