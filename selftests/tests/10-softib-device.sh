#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: none
# timeout: 120
#
# softib registers a real IB-link-layer CA: ib_core, ib_mad and the tools
# (rdma, ibstat, sysfs) see ACTIVE ports with LIDs and an SM LID; GUIDs are
# stable; a bad "ports" value is refused and leaves nothing behind.

source "$(dirname "$0")/../lib.sh"

DEV=softib0
SYS=/sys/class/infiniband/$DEV

ktap_header 14

# ib_cm is a client that must find the device too (it sets CM_SUP).
modprobe ib_cm

load_softib
ktap_result $? "softib loads"
defer unload_softib

rdma dev show | grep -q "^[0-9]*: $DEV: node_type ca "
ktap_result $? "rdma dev shows $DEV as a CA"

slowwait 10 softib_ports_active 1 2 >/dev/null
ktap_result $? "both ports reach ACTIVE after the sweep"

RET=0
for p in 1 2; do
	[[ $(cat "$SYS/ports/$p/link_layer") == InfiniBand ]]
	(($? == 0)) || check_err 1 "port $p link_layer is $(cat "$SYS/ports/$p/link_layer")"
	rdma link show "$DEV/$p" | grep -q "lid $p sm_lid 256 lmc 0 state ACTIVE physical_state LINK_UP"
	(($? == 0)) || check_err 1 "rdma link $DEV/$p: $(rdma link show "$DEV/$p")"
done
log_test "sysfs and rdma link: InfiniBand, LID = port, SM LID 256"

out=$(ibstat "$DEV")
RET=0
[[ $(grep -c "State: Active" <<<"$out") -eq 2 ]]
check_err $? "ibstat does not show two Active ports"
[[ $(grep -c "Link layer: InfiniBand" <<<"$out") -eq 2 ]]
check_err $? "ibstat link layer"
grep -q "Base lid: 1" <<<"$out" && grep -q "Base lid: 2" <<<"$out"
check_err $? "ibstat base LIDs"
[[ $(grep -c "SM lid: 256" <<<"$out") -eq 2 ]]
check_err $? "ibstat SM lid"
grep -q "Physical state: LinkUp" <<<"$out"
check_err $? "ibstat physical state"
[[ $RET -eq 0 ]] || ktap_diag "$out"
log_test "ibstat: Active/LinkUp, LIDs 1 and 2, SM lid 256"

RET=0
node=$(cat "$SYS/node_guid")
[[ $node == 0211:0bff:0000:0000 ]]
check_err $? "node GUID $node"
for p in 1 2; do
	gid=$(cat "$SYS/ports/$p/gids/0")
	[[ $gid == fe80:0000:0000:0000:0211:0bff:0000:000$p ]]
	check_err $? "port $p GID $gid"
done
log_test "GUIDs and GIDs derived from the port number"

[[ $(cat "$SYS/ports/1/pkeys/0") == 0xffff ]]
ktap_result $? "default P_Key table: 0xffff at index 0"

# ib_mad opened QP0 (SMI) and QP1 (GSI) on each port.
res=$(rdma res show qp link "$DEV" 2>&1)
RET=0
for p in 1 2; do
	for q in 0 1; do
		grep -qE "link $DEV/$p lqpn $q type (SMI|GSI) state RTS .*comm \[ib_core\]" <<<"$res"
		check_err $? "no QP$q on port $p"
	done
done
[[ $RET -eq 0 ]] || ktap_diag "$res"
log_test "ib_mad attached: QP0 and QP1 on both ports"

# ib_cm set the CM capability bit through modify_port.
RET=0
for p in 1 2; do
	cap=$(cat "$SYS/ports/$p/cap_mask")
	(( (cap >> 16) & 1 ))
	check_err $? "port $p cap_mask $cap lacks IsCommunicationManagementSupported"
done
log_test "ib_cm set CM_SUP on both ports"

unload_softib
[[ ! -d $SYS ]]
ktap_result $? "unload removes $DEV"

RET=0
for bad in 0 17; do
	out=$(load_softib ports=$bad 2>&1)
	rc=$?
	check_fail $rc "ports=$bad was accepted"
	# kmod prints EINVAL from init_module as "Invalid parameters"
	grep -q "Invalid parameters" <<<"$out"
	check_err $? "ports=$bad: '$out' is not EINVAL"
	[[ ! -d /sys/module/softib && ! -d $SYS ]]
	check_err $? "ports=$bad left softib behind"
	dmesg | grep -q "softib: ports=$bad is out of range: load with ports=1..16"
	check_err $? "ports=$bad: no log line naming the fix"
done
log_test "ports=0 and ports=17 refused with EINVAL and a log line"

RET=0
out=$(load_softib sm=opensm 2>&1)
check_fail $? "sm=opensm was accepted"
grep -q "Invalid parameters" <<<"$out" && [[ ! -d /sys/module/softib ]]
check_err $? "sm=opensm: '$out', or softib left behind"
dmesg | grep -q "softib: sm=opensm is not a subnet manager mode: load with sm=builtin or sm=none"
check_err $? "sm=opensm: no log line naming the fix"
out=$(load_softib sm=none vnodes=4 2>&1)
check_fail $? "sm=none with vnodes=4 was accepted"
grep -q "Invalid parameters" <<<"$out" && [[ ! -d /sys/module/softib ]]
check_err $? "sm=none vnodes=4: '$out', or softib left behind"
dmesg | grep -q "softib: vnodes=4 needs the built-in SM's SA: load with sm=builtin or vnodes=0"
check_err $? "sm=none vnodes=4: no log line naming the fix"
log_test "sm=opensm, and vnodes with sm=none, refused with EINVAL and a log line"

load_softib ports=4 && slowwait 10 softib_ports_active 1 2 3 4 >/dev/null &&
	[[ $(rdma link show | grep -c "^link $DEV/") -eq 4 ]] &&
	[[ $(cat "$SYS/ports/4/gids/0") == fe80:0000:0000:0000:0211:0bff:0000:0004 ]]
ktap_result $? "ports=4 gives four ACTIVE ports with stable GIDs"

# Loading ran ib_mad's modify_qp on QP0/QP1 (SQ lock, then RQ lock) and
# ib_mad's receives; with one lockdep class for every queue lock that was
# "possible recursive locking". Only a lockdep kernel can tell.
lockdep_silent "no lockdep report from softib's queue locks"

ktap_finish
