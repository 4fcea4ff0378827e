#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 180
#
# umcast (sysfs umcast, netlink IFLA_IPOIB_UMCAST; Documentation/ABI/
# testing/sysfs-class-net-ipoib): with it set, an interface does not join,
# as a full member, an IP multicast group that another consumer of the
# same port already joined through the SA (in the field: an application
# joining through rdma_cm); it leaves the group to it. Without it, the
# interface joins as usual. The other consumer here is a netlink child u1
# of ib0 on ib0's own P_Key, whose join ib_sa records for the port.
# softib's debugfs mcast file counts the QPs attached to each group.
# Before the fix ours stored umcast and never used it.

source "$(dirname "$0")/../lib.sh"

require_cmd python3

# attached GROUP: QPs softib attached to the IPv4 group's MGID (P_Key ffff)
attached() {
	local o=(${1//./ }) mgid

	mgid=$(printf 'ff12:401b:ffff:0000:0000:0000:%04x:%04x' \
		$(((o[0] & 15) << 8 | o[1])) $((o[2] << 8 | o[3])))
	awk -v g="$mgid" '$2 == g { n = $3 } END { print n + 0 }' "$SOFTIB_DBG/mcast"
}

# attached_ge GROUP N: at least N QPs attached to GROUP (for slowwait)
attached_ge() {
	(($(attached "$1") >= $2))
}

ktap_header 4
ktap_diag "IPOIB=$IPOIB"

ipoib_fabric_up &&
	ip -n "$A" link add link ib0 name u1 type ipoib pkey 0xffff &&
	ip -n "$A" link set u1 up && slowwait 20 ipoib_lower_up "$A" u1
ktap_result $? "ib0 and a second interface u1 on its P_Key (netns A)" || ktap_finish

# control: umcast 0, u1 joins first, then ib0 joins too
RET=0
ip netns exec "$A" sh -c 'echo 0 > /sys/class/net/ib0/umcast'
check_err $? "umcast 0"
mcast_member "$A" u1 239.1.2.4
slowwait 10 attached_ge 239.1.2.4 1
(($? == 0)) || check_err 1 "u1 did not join 239.1.2.4 ($(attached 239.1.2.4) QPs attached)"
mcast_member "$A" ib0 239.1.2.4
slowwait 10 attached_ge 239.1.2.4 2
(($? == 0)) || check_err 1 "ib0 did not join 239.1.2.4 with umcast 0 ($(attached 239.1.2.4) QPs attached)"
ktap_diag "umcast 0: 239.1.2.4 has $(attached 239.1.2.4) QPs attached"
log_test "umcast 0: ib0 joins a group u1 already joined"

RET=0
ip netns exec "$A" sh -c 'echo 1 > /sys/class/net/ib0/umcast'
check_err $? "umcast 1"
[[ $(ip netns exec "$A" cat /sys/class/net/ib0/umcast) == 1 ]]
(($? == 0)) || check_err 1 "umcast reads $(ip netns exec "$A" cat /sys/class/net/ib0/umcast)"
mcast_member "$A" u1 239.1.2.3
slowwait 10 attached_ge 239.1.2.3 1
check_err $? "u1 did not join 239.1.2.3"
mcast_member "$A" ib0 239.1.2.3
# ib0's multicast list has the group now; give its join the time the
# control took, then count
sleep 3
n=$(attached 239.1.2.3)
ktap_diag "umcast 1: 239.1.2.3 has $n QPs attached"
((n == 1))
check_err $? "ib0 joined 239.1.2.3 that u1 had joined ($n QPs attached, expected 1)"
log_test "umcast 1: ib0 leaves a group another consumer joined to it"

RET=0
# a group nobody else joined is still joined with umcast 1
mcast_member "$A" ib0 239.1.2.5
slowwait 10 attached_ge 239.1.2.5 1
check_err $? "ib0 did not join 239.1.2.5, which nobody else had joined"
log_test "umcast 1: a group only ib0 wants is joined"

ktap_finish
