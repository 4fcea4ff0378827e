#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
#
# Debian's OpenSM manages the whole fabric through the link, from either
# node: both nodes load softib without an SM (sm=none), so their ports
# and their switches' ports to each other wait in Init with no LIDs.
# OpenSM on one node discovers the other node's switch and CA by
# directed routes across the link, gives every port a LID, programs
# both switches and brings every port Active; the other node's ports
# take its SM LID. ibnetdiscover on each node sees both switches cabled
# by their link ports and both CAs; the node without OpenSM reads its
# SMInfo and its SA (sminfo, saquery) across the link. IPoIB, in-tree on
# one node and ours on the other, joins the broadcast group at OpenSM's
# SA and pings. In both arrangements: OpenSM runs on node 1 in the
# first, on node 2 in the second.

# shellcheck source=/dev/null
source "$(dirname "$0")/../lib.sh"

pair_require
require_cmd ping sminfo saquery ibnetdiscover
modprobe -a ib_umad ib_cm || { echo "# SKIP: no ib_umad"; exit $ksft_skip; }

ME=$(pair_node)
PEER=$(pair_peer)
# softib's two CA ports, then the switch's port to the other node
LINK_PORT=3
# node K's switch GUID
sw_guid() { printf '%016x' $((0x02110bff00010000 | $1 << 24)); }

cleanup() {
	osm_stop
	unload_ipoib
	unload_softib
}
defer cleanup

# sw_port_state N: the state (enum ib_port_state) of this switch's port N
sw_port_state() {
	awk -v n="$1" '$1 == "port" && $2 == n { print $4 }' "$SOFTIB_DBG/switch"
}

# sw_port_is N STATE: this switch's port N is in STATE
sw_port_is() { [[ $(sw_port_state "$1") == "$2" ]]; }

# ports_init: both CA ports in Init, as without an SM
ports_init() {
	grep -q INIT "$SOFTIB_SYS/ports/1/state" &&
		grep -q INIT "$SOFTIB_SYS/ports/2/state"
}

# lids_set SM_LID: both CA ports have a LID and SM LID SM_LID
lids_set() {
	local p

	for p in 1 2; do
		(($(<"$SOFTIB_SYS/ports/$p/lid") != 0 &&
		  $(<"$SOFTIB_SYS/ports/$p/sm_lid") == $1)) || return 1
	done
}

ktap_header 8

# arrangement DRV_NODE1 DRV_NODE2 SM_NODE SUBNET
arrangement() {
	local drv=$1 sm=$3 tag=$1-$2 out sm_lid n

	((ME == 2)) && drv=$2
	ktap_diag "node 1: $1, node 2: $2, OpenSM on node $sm"

	RET=0
	pair_link_load "$PAIR_KEY" sm=none && slowwait 15 pair_link_up
	check_err $? "softib sm=none on both nodes, linked"
	slowwait 10 ports_init
	check_err $? "ports $(cat "$SOFTIB_SYS"/ports/*/state | xargs), not Init"
	slowwait 5 sw_port_is $LINK_PORT 2
	check_err $? "the switch's link port: state '$(sw_port_state $LINK_PORT)', not Init (2)"
	[[ $(<"$SOFTIB_SYS/ports/1/lid") == 0x0 ]]
	check_err $? "port 1 has LID $(<"$SOFTIB_SYS/ports/1/lid") without an SM"
	pair_barrier "init-$tag"
	log_test "$1/$2: sm=none on both nodes: CA and link ports in Init, no LIDs"

	# OpenSM on node $sm brings up both nodes
	RET=0
	if ((ME == sm)); then
		rm -rf "$OSM_DIR"
		osm_start 1 "$ME"
		check_err $? "OpenSM on node $ME did not bring its ports up: $(tail -3 "$OSM_DIR/opensm.out" 2>/dev/null)"
		sm_lid=$(($(<"$SOFTIB_SYS/ports/1/lid")))
		pair_put "smlid-$tag" "$sm_lid"
	else
		sm_lid=$(pair_get "smlid-$tag" 90)
	fi
	slowwait 60 softib_ports_active >/dev/null
	check_err $? "ports $(cat "$SOFTIB_SYS"/ports/*/state | xargs), not Active"
	slowwait 10 lids_set "$sm_lid"
	check_err $? "LIDs $(cat "$SOFTIB_SYS"/ports/*/lid | xargs), SM LIDs $(cat "$SOFTIB_SYS"/ports/*/sm_lid | xargs), want SM LID $sm_lid"
	slowwait 10 sw_port_is $LINK_PORT 4
	check_err $? "the switch's link port: state '$(sw_port_state $LINK_PORT)', not Active (4)"
	out=$(sminfo 2>&1)
	[[ $out =~ ^"sminfo: sm lid $sm_lid sm guid 0x"[0-9a-f]+", activity count "[0-9]+" priority "[0-9]+" state 3 SMINFO_MASTER"$ ]]
	check_err $? "sminfo: $out"
	pair_barrier "active-$tag" 90
	log_test "$1/$2: OpenSM on node $sm: every port of both nodes Active, SM LID $sm_lid"

	# the fabric as the IB tools see it, from each node
	RET=0
	out=$(ibnetdiscover 2>&1)
	check_err $? "ibnetdiscover: $(tail -2 <<<"$out")"
	n=$(grep -c '^Switch' <<<"$out")
	((n == 2)) || check_err 1 "ibnetdiscover: $n switches, not 2"
	n=$(grep -c '^Ca' <<<"$out")
	((n == 2)) || check_err 1 "ibnetdiscover: $n CAs, not 2"
	# each switch's link port is cabled to the other's
	for n in 1 2; do
		awk -v g="S-$(sw_guid $n)" -v p="[$LINK_PORT]" \
			-v o="\"S-$(sw_guid $((3 - n)))\"[$LINK_PORT]" '
			/^Switch/ { sw = index($0, "\"" g "\"") > 0 }
			sw && $1 == p && $2 == o { found = 1 }
			END { exit !found }' <<<"$out"
		check_err $? "ibnetdiscover: node $n's switch port $LINK_PORT not cabled to node $((3 - n))'s: $(grep -E "^\[$LINK_PORT\]" <<<"$out" | xargs)"
	done
	if ((ME != sm)); then
		# the SA of OpenSM on the other node, across the link
		n=$(saquery 2>&1 | grep -c 'NodeRecord dump')
		# one a CA port (two on each node), one a switch
		((n == 6)) || check_err 1 "saquery: $n NodeRecords, not 6 (4 CA ports, 2 switches)"
	fi
	pair_barrier "discovered-$tag"
	log_test "$1/$2: ibnetdiscover on node $ME: both switches cabled by the link, both CAs"

	# IPoIB over OpenSM's SA
	RET=0
	IPOIB=$drv load_ipoib && slowwait 10 test -d /sys/class/net/ib0 &&
		ip addr add "$4.$ME/24" dev ib0 && ip link set ib0 up &&
		slowwait 30 ipoib_lower_up "" ib0
	check_err $? "$drv: ib0 up with carrier"
	pair_barrier "ib0-$tag"
	ping -c 2 -i 0.2 -w 20 -W 3 "$4.$PEER" >/dev/null
	check_err $? "no ping to node $PEER over OpenSM's SA"
	pair_barrier "pinged-$tag"
	log_test "$1/$2: IPoIB joins at OpenSM's SA, the nodes ping"

	# IPoIB leaves its groups at OpenSM's SA on both nodes before it
	# stops (else each leave waits out its SA timeouts)
	unload_ipoib
	pair_barrier "left-$tag"
	((ME == sm)) && osm_stop
	unload_softib
	pair_barrier "done-$tag"
}

arrangement intree ours 1 192.0.2
arrangement ours intree 2 198.51.100

ktap_finish
