#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 180
#
# ARP and IPv6 ND resolve the 20-byte IPoIB address, and the datagram MTU
# limits: 68..4092 at a 4K port MTU, effective MTU capped by the 2K
# broadcast group while the administrator's choice is kept.

source "$(dirname "$0")/../lib.sh"

require_cmd ping

mtu() {
	ip -n "$1" -o link show "$2" | sed -n 's/.* mtu \([0-9]*\) .*/\1/p'
}

ktap_header 4
ktap_diag "IPOIB=$IPOIB"

ipoib_fabric_up
ktap_result $? "ib0/ib1 up in two netns" || ktap_finish

RET=0
ip netns exec "$A" ping -c 2 -i 0.2 -w 4 -W 2 192.0.2.2 >/dev/null
check_err $? "IPv4 ping"
hwb=$(ipoib_hwaddr "$B" ib1)
ip -n "$A" neigh show 192.0.2.2 dev ib0 | grep -q "lladdr $hwb "
(($? == 0)) || check_err 1 "ARP entry: $(ip -n "$A" neigh show dev ib0) (want $hwb)"
slowwait 10 test -n "$(ll_addr "$B" ib1)" >/dev/null
ip netns exec "$A" ping -6 -c 2 -W 2 "$(ll_addr "$B" ib1)%ib0" >/dev/null
check_err $? "IPv6 ping"
ip -n "$A" -6 neigh show "$(ll_addr "$B" ib1)" dev ib0 | grep -q "lladdr $hwb "
(($? == 0)) || check_err 1 "ND entry: $(ip -n "$A" -6 neigh show dev ib0)"
log_test "ARP and ND entries carry the peer's 20-byte address"

RET=0
ip -n "$A" link set ib0 mtu 4093 2>/dev/null
check_fail $? "MTU 4093 accepted in datagram mode"
ip -n "$A" link set ib0 mtu 67 2>/dev/null
check_fail $? "MTU 67 accepted"
log_test "MTU outside 68..4092 rejected"

RET=0
ip -n "$A" link set ib0 mtu 3000
check_err $? "MTU 3000 refused"
[[ $(mtu "$A" ib0) == 2044 ]]
(($? == 0)) || check_err 1 "MTU 3000 gave $(mtu "$A" ib0), not the group's 2044"
ip -n "$A" link set ib0 mtu 1500 && [[ $(mtu "$A" ib0) == 1500 ]]
(($? == 0)) || check_err 1 "MTU 1500 gave $(mtu "$A" ib0)"
ip netns exec "$A" ping -c 2 -i 0.2 -w 4 -W 2 -s 1472 -M do 192.0.2.2 >/dev/null
check_err $? "full-size ping at MTU 1500"
log_test "effective MTU is min(admin, broadcast group)"

ktap_finish
