#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: none
# timeout: 600
#
# Ours on an rdma_netdev, in connected mode, against the in-tree driver
# on the same fabric: in-tree on port 1 (netns A), ours as the test-only
# ib_ipoib_interop.ko on port 2 (netns B), as in 99-interop.
#
# 1. softib enhanced=1 on both ports: both drivers run on the provider.
#    In-tree has no connected mode there and no RC flag in its hardware
#    address; ours, in connected mode, reaches it over datagrams and is
#    reached over datagrams: pings and TCP both ways, no RC QP.
# 2. enhanced_ports=2: port 1 without a provider (in-tree's own datapath,
#    connected mode), port 2 with one (ours, connected mode beside the
#    provider): RC connections both ways, pings up to 65000 bytes and
#    TCP both ways, then ours back in datagram mode and in-tree still
#    reaching it.

source "$(dirname "$0")/../lib.sh"

require_cmd ping iperf3 ethtool

ktap_header 7

ko=$KO_DIR/ib_ipoib_interop.ko
[[ -e $ko ]] || { ktap_skip "interop" "no ib_ipoib_interop.ko in KO_DIR"; ktap_finish; }

# ping_both SIZE...: every size both ways
ping_both() {
	local s

	for s in "$@"; do
		ip netns exec "$A" ping -c 2 -i 0.2 -w 4 -W 3 -s "$s" 192.0.2.2 >/dev/null
		check_err $? "in-tree -> ours ping -s $s"
		ip netns exec "$B" ping -c 2 -i 0.2 -w 4 -W 3 -s "$s" 192.0.2.1 >/dev/null
		check_err $? "ours -> in-tree ping -s $s"
	done
}

# fabric SOFTIB_PARAMS...: softib, in-tree ib0 in A and our ibx1 in B, up
fabric() {
	ipoib_quiesce
	rmmod ib_ipoib_interop 2>/dev/null
	rmmod ib_ipoib 2>/dev/null
	unload_softib
	ip netns del "$A" 2>/dev/null
	ip netns del "$B" 2>/dev/null
	load_softib "$@" && slowwait 10 softib_ports_active >/dev/null &&
		softib_policy "Default=0x7fff, ipoib : ALL=full;" &&
		modprobe ib_ipoib && insmod "$ko" &&
		slowwait 10 test -d /sys/class/net/ib0 >/dev/null &&
		slowwait 10 test -d /sys/class/net/ibx1 >/dev/null &&
		ip netns add "$A" && ip netns add "$B" &&
		ip link set ib0 netns "$A" && ip link set ibx1 netns "$B" &&
		ip -n "$A" addr add 192.0.2.1/24 dev ib0 &&
		ip -n "$B" addr add 192.0.2.2/24 dev ibx1 &&
		ip -n "$A" link set ib0 up && ip -n "$B" link set ibx1 up &&
		slowwait 20 ipoib_lower_up "$A" ib0 && slowwait 20 ipoib_lower_up "$B" ibx1
}

# channels NS DEV: the combined channels ethtool -l shows now
channels() {
	ip netns exec "$1" ethtool -l "$2" 2>/dev/null | awk '/^Combined:/ { v = $2 } END { print v + 0 }'
}

modprobe ib_cm
A=eia-$$ B=eib-$$
defer unload_softib
defer rmmod ib_ipoib
defer rmmod ib_ipoib_interop
defer ipoib_quiesce
defer ip netns del "$A"
defer ip netns del "$B"
ncpu=$(nproc)

# ---- 1: both on the provider ----
fabric enhanced=1 offloads=1
ktap_result $? "enhanced=1: in-tree ib0 (A, port 1) and our ibx1 (B, port 2) up" || ktap_finish

RET=0
ca=$(channels "$A" ib0) cb=$(channels "$B" ibx1)
((ca == ncpu && cb == ncpu))
check_err $? "ethtool -l: in-tree ib0 $ca, our ibx1 $cb, want $ncpu"
ip netns exec "$B" sh -c "echo connected > /sys/class/net/ibx1/mode"
check_err $? "ours: connected mode refused on the provider"
a=$(ipoib_hwaddr "$A" ib0) b=$(ipoib_hwaddr "$B" ibx1)
[[ ${a:0:2} == 00 && ${b:0:2} == 80 ]]
check_err $? "RC flags: in-tree $a, ours $b"
ping_both 56 1400 2000
n=$(rdma res show qp 2>/dev/null | grep -c "type RC" || true)
((n == 0))
check_err $? "$n RC QPs: ours connected to an in-tree peer without connected mode"
log_test "both enhanced, ours connected: datagrams both ways, no connection tried"

iperf_both "both enhanced, ours connected" 192.0.2.1 192.0.2.2

# ---- 2: in-tree on its own datapath, ours on the provider ----
fabric enhanced=1 offloads=1 enhanced_ports=2
ktap_result $? "enhanced_ports=2: in-tree ib0 legacy, our ibx1 enhanced, up" || ktap_finish

RET=0
ca=$(channels "$A" ib0) cb=$(channels "$B" ibx1)
((ca <= 1 && cb == ncpu))
check_err $? "ethtool -l: in-tree ib0 $ca (want none or 1), our ibx1 $cb (want $ncpu)"
ip netns exec "$A" sh -c "echo connected > /sys/class/net/ib0/mode" &&
	ip -n "$A" link set ib0 mtu 65520 &&
	ip netns exec "$B" sh -c "echo connected > /sys/class/net/ibx1/mode"
check_err $? "connected mode, MTU 65520"
ping_both 56 9000 65000
rcs=$(rdma res show qp link softib0/1 | grep -c 'type RC state RTS')
((rcs >= 2))
check_err $? "$rcs RC QPs in RTS on port 1 (in-tree's side)"
log_test "in-tree legacy and ours enhanced, both connected: RC both ways, pings to 65000"

iperf_both "in-tree legacy connected, ours enhanced connected" 192.0.2.1 192.0.2.2

RET=0
ip netns exec "$B" sh -c "echo datagram > /sys/class/net/ibx1/mode"
check_err $? "ours: back to datagram mode"
ping_both 56 1400
log_test "ours back to datagram mode: in-tree still reaches it"

ktap_finish
