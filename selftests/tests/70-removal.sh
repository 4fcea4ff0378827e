#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 180
#
# The HCA disappears under a busy IPoIB: softib is unloaded while ib_ipoib
# is loaded and its interfaces (moved into netns) carry traffic. Removal
# must be clean (the runner fails on any kernel warning) and complete.

source "$(dirname "$0")/../lib.sh"

require_cmd ping

ktap_header 3
ktap_diag "IPOIB=$IPOIB"

ipoib_fabric_up &&
	softib_policy "Default=0x7fff, ipoib : ALL=full;" "p1=0x0001, ipoib : ALL=full;" &&
	ipoib_child "$A" ib0 8001 198.51.100.1/24 &&
	ipoib_child "$B" ib1 8001 198.51.100.2/24 &&
	slowwait 20 ipoib_lower_up "$A" ib0.8001 &&
	slowwait 20 ipoib_lower_up "$B" ib1.8001
ktap_result $? "parents and a child up in two netns" || ktap_finish

ip netns exec "$A" ping -f -W 1 -w 30 192.0.2.2 >/dev/null 2>&1 &
p1=$!
ip netns exec "$B" ping -i 0.01 -W 1 -w 30 198.51.100.1 >/dev/null 2>&1 &
p2=$!
defer kill $p1 $p2
sleep 2

unload_softib
RET=0
[[ ! -d /sys/module/softib && ! -d $SOFTIB_SYS ]]
check_err $? "softib still loaded"
ip -n "$A" link show ib0 >/dev/null 2>&1
check_fail $? "ib0 outlived its HCA"
ip -n "$B" link show ib1.8001 >/dev/null 2>&1
check_fail $? "ib1.8001 outlived its HCA"
log_test "softib unloads under traffic; every IPoIB interface goes"

kill $p1 $p2 2>/dev/null
wait $p1 $p2 2>/dev/null
unload_ipoib
[[ ! -d /sys/module/ib_ipoib ]]
ktap_result $? "ib_ipoib unloads afterwards"

ktap_finish
