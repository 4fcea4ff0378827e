#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
#
# One subnet manager for the fabric, with IPoIB on both nodes: in-tree on
# one and ours on the other, in both arrangements. Node 1's built-in SM
# is master (equal priorities, the lower GUID): every port's SM LID is
# its switch's (32) and node 2's IPoIB joins the broadcast group at node
# 1's SA, which sets the group's MFT entry at node 2's switch. Node 1's
# stack goes away: node 2's SM takes over, its ports get its own SM LID
# (64) and a client reregister, and its IPoIB joins the group again, now
# at its own SA. Node 1 comes back with sm_priority=7: node 2 stays
# master, node 1's ports take SM LID 64, its IPoIB joins at node 2's SA,
# and the nodes ping each other. Node 1 vanishes (its link silent): the
# master forgets its port.

# shellcheck source=/dev/null
source "$(dirname "$0")/../lib.sh"

pair_require
require_cmd ping sminfo
modprobe ib_umad || { echo "# SKIP: no ib_umad"; exit $ksft_skip; }

ME=$(pair_node)
PEER=$(pair_peer)
# the IPv4 broadcast group of P_Key 0xffff, and port 1's GID on node K
BCAST=ff12:401b:ffff:0000:0000:0000:ffff:ffff
port_gid() { echo "fe80:0000:0000:0000:0211:0bff:0$1""00:0001"; }

cleanup() {
	unload_ipoib
	unload_softib
}
defer cleanup

# joined K: this node's SA has node K's port 1 in the broadcast group
joined() { grep -q "^0x[0-9a-f]* $BCAST $(port_gid "$1") " "$SOFTIB_DBG/sa_members"; }

not_joined() { ! joined "$1"; }

# mft_has MLID PORT: this node's switch forwards MLID out of port PORT
mft_has() {
	local mask

	mask=$(awk -v l="$1" '$1 == "mft" && $2 == l { print $3 }' "$SOFTIB_DBG/switch")
	[[ -n $mask ]] && ((mask & (1 << $2)))
}

# up DRIVER SUBNET [PARAM...]: softib linked (with PARAMs), the SM
# elected (SM LID $MASTER), then ib0 of DRIVER up with carrier
up() {
	local drv=$1 net=$2

	shift 2
	pair_link_load "$PAIR_KEY" "$@" && slowwait 15 pair_link_up &&
		slowwait 10 softib_sm_lid_is "$MASTER" &&
		IPOIB=$drv load_ipoib && slowwait 10 test -d /sys/class/net/ib0 &&
		ip addr add "$net.$ME/24" dev ib0 && ip link set ib0 up &&
		slowwait 30 ipoib_lower_up "" ib0
}

ktap_header 8

# arrangement DRV_NODE1 DRV_NODE2 SUBNET: one driver on each node
arrangement() {
	local drv=$1 tag=$1-$2 changes out mlid

	((ME == 2)) && drv=$2
	ktap_diag "node 1: $1, node 2: $2"

	RET=0
	MASTER=32
	up "$drv" "$3"
	check_err $? "$drv: softib and ib0 up under node 1's SM"
	if ((ME == 1)); then
		slowwait 20 joined 2
		check_err $? "node 2 not in the broadcast group at node 1's SA: $(grep -c . "$SOFTIB_DBG/sa_members") members"
		pair_put "mlid-$tag" "$(awk -v g=$BCAST '$2 == g { print $1; exit }' "$SOFTIB_DBG/sa_members")"
	else
		# the master set the group's MFT entry here, with port 1
		mlid=$(pair_get "mlid-$tag")
		slowwait 10 mft_has "$mlid" 1
		check_err $? "node 2's switch: no MFT entry of MLID '$mlid' with port 1: $(grep ^mft "$SOFTIB_DBG/switch" | tr '\n' ' ')"
	fi
	pair_barrier "up-$tag"
	ping -c 2 -i 0.2 -w 15 -W 3 "$3.$PEER" >/dev/null
	check_err $? "no ping to node $PEER"
	changes=$(softib_stat sm_master_changes)
	pair_barrier "pinged-$tag"
	log_test "$1/$2: node 1's SM is master, node 2's ports at SM LID 32 join its SA"

	# node 1's stack goes away; node 2's SM takes over
	RET=0
	if ((ME == 1)); then
		unload_ipoib && unload_softib
		check_err $? "unload"
		pair_barrier "gone-$tag"
	else
		pair_barrier "gone-$tag"
		slowwait 10 softib_sm_lid_is 64
		check_err $? "SM LID $(<"$SOFTIB_SYS/ports/1/sm_lid") after node 1 left, not 64"
		out=$(sminfo 2>&1)
		[[ $out == "sminfo: sm lid 64 sm guid 0x2110bff02010000,"*"priority 15 state 3 SMINFO_MASTER" ]]
		check_err $? "sminfo: $out"
		slowwait 20 joined 2
		check_err $? "ib0 did not join again at node 2's SA"
		(($(softib_stat sm_master_changes) == changes + 1))
		(($? == 0)) || check_err 1 "sm_master_changes $changes -> $(softib_stat sm_master_changes)"
		changes=$(softib_stat sm_master_changes)
	fi
	pair_barrier "taken-$tag"
	log_test "$1/$2: node 1 gone, node 2's SM takes over and its IPoIB joins again"

	# node 1 comes back with a lower priority: node 2 stays master
	RET=0
	MASTER=64
	if ((ME == 1)); then
		up "$drv" "$3" sm_priority=7
		check_err $? "$drv: softib and ib0 up under node 2's SM"
		out=$(sminfo 32 2>&1)
		[[ $out == "sminfo: sm lid 32 sm guid 0x2110bff01010000,"*"priority 7 state 2 SMINFO_STANDBY" ]]
		check_err $? "sminfo 32: $out"
	else
		slowwait 20 joined 1
		check_err $? "node 1 not in the broadcast group at node 2's SA"
	fi
	pair_barrier "back-$tag" 60
	slowwait 15 ping -c 1 -W 2 "$3.$PEER" >/dev/null
	check_err $? "no ping to node $PEER"
	pair_barrier "back-pinged-$tag"
	if ((ME == 2)); then
		(($(softib_stat sm_master_changes) == changes))
		(($? == 0)) || check_err 1 "master changed: sm_master_changes $changes -> $(softib_stat sm_master_changes)"
	fi
	log_test "$1/$2: node 1 back with sm_priority=7: node 2 stays master, the nodes ping"

	# node 1 vanishes (its link goes silent: no leave, no CLOSE): once
	# its link is down the master drops its port from the group
	RET=0
	if ((ME == 1)); then
		echo "blackhole 1" >"$SOFTIB_DBG/fabric/fault"
		check_err $? "blackhole"
	fi
	pair_barrier "left-$tag"
	if ((ME == 2)); then
		slowwait 15 not_joined 1
		check_err $? "node 2's SA still has node 1's port: $(grep -c . "$SOFTIB_DBG/sa_members") members"
	fi
	pair_barrier "forgot-$tag" 60
	log_test "$1/$2: node 1 vanishes: the master forgets its port"

	cleanup
	pair_barrier "down-$tag"
}

arrangement intree ours 192.0.2
arrangement ours intree 198.51.100

pair_barrier end 60
ktap_finish
