#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: none
# timeout: 120
#
# Subnet management across the link, with infiniband-diags as on a
# fabric of cables: each node reads the other node's switch (NodeInfo,
# NodeDescription, SwitchInfo, by LID), its built-in SM (sminfo), its CA
# port (NodeInfo, PortInfo) and that port's counters (perfquery, the
# PMA), all LID-routed through the link, and the switch and CA port by
# directed route through the switches' ports to each other; a LID of a node that is not on
# the fabric answers nothing and the query fails in its timeout. One SM
# is master: node 1's (equal priorities, the lower GUID), node 2's is
# standby, and every port's SM LID is node 1's switch's, 32.

# shellcheck source=/dev/null
source "$(dirname "$0")/../lib.sh"

pair_require
require_cmd smpquery sminfo perfquery ibtracert

ME=$(pair_node)
PEER=$(pair_peer)
SW_LID=$((32 * PEER))
CA_LID=$((32 * PEER + 1))
NODE_GUID=$(printf 0x%016x $((0x02110bff00000000 | PEER << 24)))
SW_GUID=$(printf 0x%016x $((NODE_GUID | 0x10000)))
# the master: node 1
MASTER_LID=32
STATE=("" "3 SMINFO_MASTER" "2 SMINFO_STANDBY")

cleanup() {
	unload_softib
}
defer cleanup

ktap_header 9

modprobe ib_umad && pair_link_load && slowwait 15 pair_link_up
ktap_result $? "softib on both nodes, linked" || ktap_finish
# the election has run here: the ports have the master's SM LID
slowwait 10 softib_sm_lid_is "$MASTER_LID"
# what this node's switch answered before the other node asks it
answered=$(stat_of "$SOFTIB_DBG/switch" sma_answered)
pair_barrier start 60

RET=0
out=$(smpquery -L nodeinfo "$SW_LID" 2>&1)
check_err $? "smpquery -L nodeinfo $SW_LID: $out"
smp_expect "$out" NodeType Switch
smp_expect "$out" Guid "$SW_GUID"
smp_expect "$out" PortGuid "$SW_GUID"
smp_expect "$out" LocalPort 3	# the switch's port to this node
out=$(smpquery -L nodedesc "$SW_LID" 2>&1)
[[ $out == *"Node Description:"*"softib switch"* ]]
check_err $? "smpquery -L nodedesc $SW_LID: $out"
out=$(smpquery -L switchinfo "$SW_LID" 2>&1)
check_err $? "smpquery -L switchinfo $SW_LID: $out"
# its ports 1 and 2 and the other node's LIDs: up to node 2's port 2
smp_expect "$out" LinearFdbTop 66
log_test "node $PEER's switch by LID $SW_LID: NodeInfo, NodeDescription, SwitchInfo"

RET=0
out=$(sminfo "$SW_LID" 2>&1)
re="^sminfo: sm lid $SW_LID sm guid 0x${SW_GUID#0x0}, activity count [0-9]+ priority 15 state ${STATE[PEER]}$"
[[ $out =~ $re ]]
check_err $? "sminfo $SW_LID: $out"
log_test "node $PEER's built-in SM by sminfo $SW_LID: ${STATE[PEER]#* }"

# sminfo without a LID asks the port's SM LID: the master's
RET=0
softib_sm_lid_is "$MASTER_LID"
(($? == 0)) || check_err 1 "SM LIDs $(cat "$SOFTIB_SYS"/ports/*/sm_lid | xargs), not all $MASTER_LID"
[[ $(softib_stat sm_master) == 1 ]]
(($? == 0)) || check_err 1 "stats: sm_master $(softib_stat sm_master)"
out=$(sminfo 2>&1)
re="^sminfo: sm lid $MASTER_LID sm guid 0x2110bff01010000, activity count [0-9]+ priority 15 state 3 SMINFO_MASTER$"
[[ $out =~ $re ]]
check_err $? "sminfo: $out"
log_test "one master for the fabric: node 1's SM, at every port's SM LID $MASTER_LID"

RET=0
out=$(smpquery -L nodeinfo "$CA_LID" 2>&1)
check_err $? "smpquery -L nodeinfo $CA_LID: $out"
smp_expect "$out" NodeType "Channel Adapter"
smp_expect "$out" Guid "$NODE_GUID"
smp_expect "$out" PortGuid "$(printf 0x%016x $((NODE_GUID | 1)))"
smp_expect "$out" LocalPort 1
out=$(smpquery -L portinfo "$CA_LID" 2>&1)
check_err $? "smpquery -L portinfo $CA_LID: $out"
smp_expect "$out" Lid "$CA_LID"
smp_expect "$out" SMLid "$MASTER_LID"
smp_expect "$out" LinkState Active
log_test "node $PEER's port 1 by LID $CA_LID: NodeInfo, PortInfo"

RET=0
out=$(perfquery "$CA_LID" 1 2>&1)
check_err $? "perfquery $CA_LID 1: $out"
smp_expect "$out" PortSelect 1
(($(smp_field "$out" PortRcvPkts) > 0))
(($? == 0)) || check_err 1 "PortRcvPkts of a port that answered SMPs: $out"
log_test "node $PEER's port 1 counters by perfquery $CA_LID 1"

# Directed routes cross the link, as OpenSM's discovery does: out of
# port 1, out of this switch's port to the other node (3), there its
# switch (which it entered at its port 3), then out of its port 1
RET=0
out=$(smpquery -D nodeinfo 0,1,3 2>&1)
check_err $? "smpquery -D nodeinfo 0,1,3: $out"
smp_expect "$out" NodeType Switch
smp_expect "$out" Guid "$SW_GUID"
smp_expect "$out" NumPorts 3	# two CA ports, one to this node
smp_expect "$out" LocalPort 3
out=$(smpquery -D portinfo 0,1,3 3 2>&1)
check_err $? "smpquery -D portinfo 0,1,3 3: $out"
smp_expect "$out" LinkState Active
smp_expect "$out" PhysLinkState LinkUp
out=$(smpquery -D nodeinfo 0,1,3,1 2>&1)
check_err $? "smpquery -D nodeinfo 0,1,3,1: $out"
smp_expect "$out" NodeType "Channel Adapter"
smp_expect "$out" Guid "$NODE_GUID"
smp_expect "$out" LocalPort 1
# the route the built-in SM programmed: out of each switch's link port
out=$(ibtracert $((32 * ME + 1)) "$CA_LID" 2>&1)
check_err $? "ibtracert $((32 * ME + 1)) $CA_LID: $out"
[[ $out == *"To ca "*"lid $CA_LID-$CA_LID"* ]]
check_err $? "ibtracert did not reach LID $CA_LID: $out"
log_test "node $PEER by directed route across the link: its switch, its port 1; ibtracert"

# Node 5 is not on the fabric: its LIDs lead nowhere, as a LID behind a
# switch port that is down. The query fails in its own timeout.
RET=0
start=$SECONDS
timeout 20 smpquery -L -t 500 nodeinfo 161 >/dev/null 2>&1
rc=$?
((rc != 0 && rc != 124))
check_err $? "smpquery of LID 161 (node 5): exit $rc after $((SECONDS - start))s"
log_test "a LID of a node that is not on the fabric: no answer, the query fails"

# the other node's queries reached this node's switch
pair_barrier queried 60
RET=0
(($(stat_of "$SOFTIB_DBG/switch" sma_answered) >= answered + 4))
(($? == 0)) || check_err 1 "switch sma_answered $(stat_of "$SOFTIB_DBG/switch" sma_answered), was $answered"
log_test "this node's switch answered node $PEER's SMPs"
pair_barrier end 60

ktap_finish
