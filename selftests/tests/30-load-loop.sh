#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 400
# timeout-long: 1200
#
# Load and unload softib + ib_ipoib 5 times (20 with LONG=1): nothing may
# stay behind (module references, slab caches, verbs objects,
# unreclaimable memory). The verbs object counters catch a leaked object
# in the first round it leaks; the rounds add up leaks too small to count.

source "$(dirname "$0")/../lib.sh"

LOOPS=5
[[ $LONG == 1 ]] && LOOPS=20
OBJ=/sys/kernel/debug/softib/softib0/objects

ports_active() {
	grep -q ACTIVE /sys/class/infiniband/softib0/ports/1/state &&
		grep -q ACTIVE /sys/class/infiniband/softib0/ports/2/state
}

sunreclaim_kb() {
	awk '/^SUnreclaim:/ { print $2 }' /proc/meminfo
}

ktap_header 4
ktap_diag "IPOIB=$IPOIB"

# One warm-up round so that ib_core & co. have their steady-state memory.
load_softib && slowwait 10 ports_active >/dev/null && load_ipoib &&
	slowwait 3 true && unload_ipoib && unload_softib
ktap_result $? "warm-up round"

core_ref=$(cat /sys/module/ib_core/refcnt)
sync
echo 3 >/proc/sys/vm/drop_caches
mem0=$(sunreclaim_kb)

RET=0
for ((i = 1; i <= LOOPS; i++)); do
	load_softib
	check_err $? "round $i: softib load"
	slowwait 10 ports_active >/dev/null
	check_err $? "round $i: ports not ACTIVE"
	base=$(cat $OBJ)
	load_ipoib
	check_err $? "round $i: ib_ipoib load"
	[[ $IPOIB == intree ]] && slowwait 10 test -d /sys/class/net/ib1 >/dev/null
	unload_ipoib
	check_err $? "round $i: ib_ipoib unload"
	[[ $(cat $OBJ) == "$base" ]]
	(($? == 0)) || check_err 1 "round $i: verbs objects left: $(tr '\n' ' ' <$OBJ)"
	unload_softib
	check_err $? "round $i: softib unload"
	[[ $RET -eq 0 ]] || break
done
log_test "$LOOPS load/unload rounds"

RET=0
[[ $(cat /sys/module/ib_core/refcnt) -eq $core_ref ]]
(($? == 0)) || check_err 1 "ib_core refcnt $(cat /sys/module/ib_core/refcnt), was $core_ref"
! grep -qiE '^(softib|ipoib)' /proc/slabinfo
(($? == 0)) || check_err 1 "slab caches left: $(grep -iE '^(softib|ipoib)' /proc/slabinfo)"
log_test "no module references or slab caches left"

# A leaked QP, CQ or SRQ costs at least its ring (a page or more), and is
# counted above anyway; 1 MiB is above this measurement's noise. Leaks of a few bytes are below this
# check's resolution; the verbs object counters above catch those objects.
sync
echo 3 >/proc/sys/vm/drop_caches
mem1=$(sunreclaim_kb)
ktap_diag "SUnreclaim: ${mem0} kB before, ${mem1} kB after $LOOPS rounds"
((mem1 - mem0 < 1024))
ktap_result $? "unreclaimable slab grew by less than 1 MiB"

ktap_finish
