#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: none
# timeout: 600
# kernel: 6.12
#
# Wire compatibility: the in-tree ib_ipoib on port 1 (netns A) and ours on
# port 2 (netns B), side by side on one softib fabric. Ours runs as the
# test-only build ib_ipoib_interop.ko (rtnl kind ipoib_interop, names
# ibx%d) so both modules can be loaded at once. IPv4/IPv6 ping and
# iperf3 both ways, on the parents and through pkey children (ours made
# through sysfs: iproute2 parses "pkey" only for the kind it knows); then
# connected mode (RC over ib_cm) both ways, and each driver unloaded
# mid-stream and loaded again while the other reconnects to it. Last,
# in-tree is loaded with recv_queue_size=16: a UDP flood from ours meets its
# shared receive queue empty. Ours asks for no RNR retries, as in-tree
# does (with 7, each RNR would stall the connection for in-tree's 655 ms
# RNR timer, forever): the send fails and UD carries the traffic for a
# while (debugfs stats cm_rnr_fallbacks).
#
# When make check runs both series, this runs on 6.12 only: the pair
# (selftests/pair/) runs in-tree against ours across the two kernels, in
# both arrangements, in datagram and connected mode.

source "$(dirname "$0")/../lib.sh"

require_cmd ping iperf3

ktap_header 12

ko=$KO_DIR/ib_ipoib_interop.ko
[[ -e $ko ]] || { ktap_skip "interop" "no ib_ipoib_interop.ko in KO_DIR"; ktap_finish; }

modprobe ib_cm
load_softib && slowwait 10 softib_ports_active >/dev/null &&
	modprobe ib_ipoib && insmod "$ko" &&
	slowwait 10 test -d /sys/class/net/ib0 >/dev/null &&
	slowwait 10 test -d /sys/class/net/ibx1 >/dev/null
ktap_result $? "in-tree ib_ipoib and ib_ipoib_interop loaded side by side" || ktap_finish
defer unload_softib
defer rmmod ib_ipoib
defer rmmod ib_ipoib_interop
defer ipoib_quiesce
ktap_diag "ib0: $(ethtool -i ib0 | sed -n 's/^driver: //p'), ibx1: $(ethtool -i ibx1 | sed -n 's/^driver: //p')"
softib_policy "Default=0x7fff, ipoib : ALL=full;" "p1=0x0001, ipoib : ALL=full;"

setup_ns A B
# A reloaded driver has a new QPN; its gratuitous ARP goes out before it
# has carrier and is lost, so the other end learns it by probing its
# stale entry: seconds with these. Per interface, set before its entries
# exist: a netns has no neigh "default" of its own, and a REACHABLE
# entry's timer keeps the time it was armed with (15-45 s by default).
short_neigh() { # NS DEV
	ip netns exec "$1" sysctl -qw "net.ipv4.neigh.$2.base_reachable_time_ms=2000" \
		"net.ipv4.neigh.$2.delay_first_probe_time=1"
}
ip link set ib0 netns "$A" && ip link set ibx1 netns "$B" &&
	short_neigh "$A" ib0 && short_neigh "$B" ibx1 &&
	ip -n "$A" addr add 192.0.2.1/24 dev ib0 && ip -n "$B" addr add 192.0.2.2/24 dev ibx1 &&
	ip -n "$A" link set ib0 up && ip -n "$B" link set ibx1 up &&
	slowwait 20 ipoib_lower_up "$A" ib0 && slowwait 20 ipoib_lower_up "$B" ibx1
ktap_result $? "in-tree ib0 (A, port 1) and our ibx1 (B, port 2) have carrier" || ktap_finish

RET=0
# every ping here: all COUNT echoes answered within 4 s, sent 0.2 s apart
# (-w: it sends on until they are), instead of one of COUNT sent 1 s apart
ip netns exec "$A" ping -c 3 -i 0.2 -w 4 -W 2 192.0.2.2 >/dev/null
check_err $? "in-tree -> ours IPv4"
ip netns exec "$B" ping -c 3 -i 0.2 -w 4 -W 2 192.0.2.1 >/dev/null
check_err $? "ours -> in-tree IPv4"
slowwait 10 test -n "$(ll_addr "$B" ibx1)" >/dev/null
ip netns exec "$A" ping -6 -c 3 -i 0.2 -w 4 -W 2 "$(ll_addr "$B" ibx1)%ib0" >/dev/null
check_err $? "in-tree -> ours IPv6"
ip netns exec "$B" ping -6 -c 3 -i 0.2 -w 4 -W 2 "$(ll_addr "$A" ib0)%ibx1" >/dev/null
check_err $? "ours -> in-tree IPv6"
log_test "parents: IPv4 and IPv6 ping both ways"

iperf_both parents 192.0.2.1 192.0.2.2

ip -n "$A" link add link ib0 name ib0.8001 type ipoib pkey 0x8001 &&
	ip netns exec "$B" sh -c 'echo 0x8001 > /sys/class/net/ibx1/create_child' &&
	ip -n "$A" addr add 198.51.100.1/24 dev ib0.8001 &&
	ip -n "$B" addr add 198.51.100.2/24 dev ibx1.8001 &&
	ip -n "$A" link set ib0.8001 up && ip -n "$B" link set ibx1.8001 up &&
	slowwait 20 ipoib_lower_up "$A" ib0.8001 && slowwait 20 ipoib_lower_up "$B" ibx1.8001
ktap_result $? "children 0x8001 on both drivers have carrier" ||
	ktap_diag "$(ip -n "$A" -br link show; ip -n "$B" -br link show; cat /sys/kernel/debug/softib/softib0/ports/*/counters | grep -v ' 0$')"

RET=0
ip netns exec "$A" ping -c 3 -i 0.2 -w 4 -W 2 198.51.100.2 >/dev/null
check_err $? "in-tree child -> our child"
ip netns exec "$B" ping -c 3 -i 0.2 -w 4 -W 2 198.51.100.1 >/dev/null
check_err $? "our child -> in-tree child"
log_test "children: ping both ways"

iperf_both children 198.51.100.1 198.51.100.2

# ---- connected mode ----
RET=0
ip netns exec "$A" sh -c "echo connected > /sys/class/net/ib0/mode" &&
	ip -n "$A" link set ib0 mtu 65520 &&
	ip netns exec "$B" sh -c "echo connected > /sys/class/net/ibx1/mode" &&
	ip -n "$B" link set ibx1 mtu 65520
check_err $? "connected mode, MTU 65520"
for size in 56 9000 65000; do
	ip netns exec "$A" ping -c 2 -i 0.2 -w 4 -W 3 -s $size 192.0.2.2 >/dev/null
	check_err $? "in-tree -> ours ping -s $size"
	ip netns exec "$B" ping -c 2 -i 0.2 -w 4 -W 3 -s $size 192.0.2.1 >/dev/null
	check_err $? "ours -> in-tree ping -s $size"
done
rcs=$(rdma res show qp link softib0/1 | grep -c 'type RC state RTS')
((rcs >= 2))
check_err $? "$rcs RC QPs in RTS on port 1 (in-tree's side)"
log_test "connected mode: ping 56/9000/65000 both ways over RC"

iperf_both "connected mode" 192.0.2.1 192.0.2.2

# bring_up NS DEV ADDR: move a fresh parent in, connected, addressed, up
bring_up() {
	ip link set "$2" netns "$1" && short_neigh "$1" "$2" &&
		ip netns exec "$1" sh -c "echo connected > /sys/class/net/$2/mode" &&
		ip -n "$1" link set "$2" mtu 65520 &&
		ip -n "$1" addr add "$3/24" dev "$2" && ip -n "$1" link set "$2" up &&
		slowwait 20 ipoib_lower_up "$1" "$2"
}
# both ends announce new hardware addresses (gratuitous ARP)
ip netns exec "$A" sysctl -qw net.ipv4.conf.all.arp_notify=1
ip netns exec "$B" sysctl -qw net.ipv4.conf.all.arp_notify=1

RET=0
iperf_start "$B" "$A" 192.0.2.1 8
sleep 3
rmmod ib_ipoib
check_err $? "rmmod the in-tree ib_ipoib mid-stream"
# the client's peer is gone: it would wait for its timeout
iperf_stop
modprobe ib_ipoib && slowwait 10 test -d /sys/class/net/ib0 >/dev/null &&
	bring_up "$A" ib0 192.0.2.1
check_err $? "in-tree ib_ipoib reloaded"
slowwait 30 ip netns exec "$B" ping -c 1 -W 2 -s 9000 192.0.2.1 >/dev/null
check_err $? "ours did not reconnect to the reloaded in-tree driver"
log_test "in-tree unloaded mid-stream and reloaded: ours reconnects"

RET=0
iperf_start "$A" "$B" 192.0.2.2 8
sleep 3
rmmod ib_ipoib_interop
check_err $? "rmmod ours mid-stream"
iperf_stop
insmod "$ko" && slowwait 10 test -d /sys/class/net/ibx1 >/dev/null &&
	bring_up "$B" ibx1 192.0.2.2
check_err $? "ours reloaded"
slowwait 30 ip netns exec "$A" ping -c 1 -W 2 -s 9000 192.0.2.2 >/dev/null
check_err $? "in-tree did not reconnect to our reloaded driver"
log_test "ours unloaded mid-stream and reloaded: in-tree reconnects"

# ours_stat NAME: a line of ours' debugfs stats for ibx1
ours_stat() {
	IPOIB_DBG_ROOT=/sys/kernel/debug/ipoib_interop ipoib_dbg_stat ibx1 "$1" 2>/dev/null
}

RET=0
# connections down first (in-tree's rmmod can race its own QP teardown)
ipoib_quiesce && rmmod ib_ipoib && modprobe ib_ipoib recv_queue_size=16 &&
	slowwait 10 test -d /sys/class/net/ib0 >/dev/null && bring_up "$A" ib0 192.0.2.1 &&
	ip -n "$B" link set ibx1 up && slowwait 20 ipoib_lower_up "$B" ibx1
check_err $? "in-tree ib_ipoib reloaded with recv_queue_size=16"
slowwait 60 ip netns exec "$B" ping -c 1 -W 2 -s 9000 192.0.2.1 >/dev/null
check_err $? "ours does not reach in-tree (recv_queue_size=16)"
r0=$(ours_stat cm_rnr_fallbacks)
[[ -n $r0 ]]
check_err $? "no cm_rnr_fallbacks in ours' debugfs stats"
iperf_server "$A" 192.0.2.1 &&
	ip netns exec "$B" timeout 30 iperf3 -c 192.0.2.1 -u -b 0 -l 8000 -t 5 >/dev/null 2>&1
r1=$(ours_stat cm_rnr_fallbacks)
ktap_diag "UDP flood ours -> in-tree (16 receive buffers): RNR fallbacks to UD: $((${r1:-0} - ${r0:-0}))"
((${r1:-0} > ${r0:-0}))
check_err $? "no RNR fallback counted: did the connection stall on RNR retries?"
slowwait 30 ip netns exec "$B" ping -c 1 -W 2 -s 9000 192.0.2.1 >/dev/null
check_err $? "ours cannot reach in-tree after the flood"
log_test "in-tree's receive queue runs dry: ours falls back to UD (RNR), then reconnects"

ktap_finish
