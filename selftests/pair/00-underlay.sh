#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: none
# timeout: 60
#
# The pair's underlay, before any softib: each guest's fabric NIC (a
# virtio-net on a QEMU datagram link to the other guest) is up with its
# address and the link's MTU, the other node answers ping, with a
# frame of the whole MTU and DF set too (one byte more is refused
# locally), and the sync directory carries values both ways: each node's
# kernel release, checked against the kernels run.sh booted (EXPECT_ABI,
# EXPECT_PEER_ABI; under make check-pair node 1 runs 6.1, node 2 6.12).

# shellcheck source=/dev/null
source "$(dirname "$0")/../lib.sh"

pair_require
require_cmd ping ip

node=$(pair_node)
peer=$(pair_peer)
dev=$(pair_dev)
mtu=${IPOIB_NG_FABMTU:-9000}
addr=$(pair_addr "$peer")

ktap_header 9

link=$(ip -o link show dev "$dev")
check_err $? "no $dev"
[[ $link == *",UP,"* && $link == *" mtu $mtu "* ]]
check_err $? "$dev is not up with MTU $mtu: $link"
[[ $(<"/sys/class/net/$dev/address") == "52:54:00:5b:00:0$node" ]]
(($? == 0)) || check_err 1 "$dev has MAC $(<"/sys/class/net/$dev/address")"
a=$(ip -o -4 addr show dev "$dev")
[[ $a == *" $(pair_addr "$node")/24 "* ]]
check_err $? "$dev's addresses: $a"
log_test "node $node: $dev up, $(pair_addr "$node")/24, MTU $mtu"

out=$(ping -c 3 -i 0.2 -w 20 "$addr" 2>&1)
check_err $? "$out"
log_test "ping node $peer ($addr)"

n=$(ip neigh show "$addr" dev "$dev")
[[ $n == *" lladdr 52:54:00:5b:00:0$peer "* ]]
check_err $? "neighbour $addr: $n"
log_test "node $peer's MAC in the neighbour table"

out=$(ping -M "do" -s $((mtu - 28)) -c 3 -i 0.2 -w 20 "$addr" 2>&1)
check_err $? "$out"
log_test "ping node $peer with $mtu-byte packets, DF set"

out=$(ping -M "do" -s $((mtu - 27)) -c 1 -w 5 "$addr" 2>&1)
(($? != 0)) || check_fail 0 "a $((mtu + 1))-byte packet with DF got through: $out"
[[ ${out,,} == *"too long"* ]]
check_err $? "not refused for its size: $out"
log_test "a $((mtu + 1))-byte packet with DF is refused locally"

release=$(uname -r)
pair_put release "$release"
check_err $? "pair_put failed"
peer_release=$(pair_get release 30)
check_err $? "no release from node $peer"
[[ -n $peer_release ]]
check_err $? "node $peer's release is empty"
ktap_diag "node $node runs $release, node $peer $peer_release"
log_test "exchange kernel releases through the sync directory"

if [[ -n ${EXPECT_ABI:-} ]]; then
	[[ $release == "$EXPECT_ABI" ]]
	ktap_result $? "node $node runs $EXPECT_ABI (got $release)"
else
	ktap_skip "node $node's kernel" "EXPECT_ABI not set"
fi

if [[ -n ${EXPECT_PEER_ABI:-} ]]; then
	[[ $peer_release == "$EXPECT_PEER_ABI" ]]
	ktap_result $? "node $peer runs $EXPECT_PEER_ABI (got $peer_release)"
else
	ktap_skip "node $peer's kernel" "EXPECT_PEER_ABI not set"
fi

# the other node pings this one until it is done
pair_barrier end 60
ktap_result $? "both nodes done"

ktap_finish
