#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 240
#
# The subnet manager removes a partition while traffic runs: the child on
# that P_Key loses carrier, children on other P_Keys keep working; when
# the partition comes back the child recovers (on the PKEY_CHANGE event).

source "$(dirname "$0")/../lib.sh"

require_cmd ping

BOTH="Default=0x7fff, ipoib : ALL=full;"
P1="p1=0x0001, ipoib : ALL=full;"
P2="p2=0x0002, ipoib : ALL=full;"

ktap_header 5
ktap_diag "IPOIB=$IPOIB"

ipoib_fabric_up && softib_policy "$BOTH" "$P1" "$P2" &&
	ipoib_child "$A" ib0 8001 198.51.100.1/24 &&
	ipoib_child "$B" ib1 8001 198.51.100.2/24 &&
	ipoib_child "$A" ib0 8002 203.0.113.1/24 &&
	ipoib_child "$B" ib1 8002 203.0.113.2/24 &&
	slowwait 20 ipoib_lower_up "$A" ib0.8001 && slowwait 20 ipoib_lower_up "$B" ib1.8001 &&
	slowwait 20 ipoib_lower_up "$A" ib0.8002 && slowwait 20 ipoib_lower_up "$B" ib1.8002 &&
	ip netns exec "$A" ping -c 2 -i 0.2 -w 4 -W 2 198.51.100.2 >/dev/null &&
	ip netns exec "$A" ping -c 2 -i 0.2 -w 4 -W 2 203.0.113.2 >/dev/null
ktap_result $? "children 0x8001 and 0x8002 up and pinging" || ktap_finish

# traffic on 0x8002 for the whole change
ip netns exec "$A" ping -i 0.2 -W 1 -w 15 203.0.113.2 >"/tmp/ping8002.$$" 2>&1 &
pinger=$!
defer kill $pinger

softib_policy "$BOTH" "$P2"
RET=0
[[ $(cat $SOFTIB_SYS/ports/1/pkeys/1) == 0x0000 ]]
check_err $? "P_Key 0x8001 still in port 1's table"
slowwait 15 sh -c "! ip -n $A link show ib0.8001 | grep -q LOWER_UP" >/dev/null
check_err $? "ib0.8001 kept carrier without its P_Key"
log_test "P_Key removed: the 0x8001 child loses carrier"

RET=0
ip netns exec "$A" ping -c 3 -i 0.2 -w 5 -W 2 203.0.113.2 >/dev/null
check_err $? "0x8002 stopped working"
ipoib_lower_up "$A" ib0 && ip netns exec "$A" ping -c 2 -i 0.2 -w 4 -W 2 192.0.2.2 >/dev/null
check_err $? "the parent stopped working"
log_test "0x8002 child and the parent keep working"

softib_policy "$BOTH" "$P1" "$P2"
RET=0
slowwait 20 ipoib_lower_up "$A" ib0.8001 >/dev/null
check_err $? "ib0.8001 did not get carrier back"
slowwait 20 ip netns exec "$A" ping -c 1 -W 1 198.51.100.2 >/dev/null
check_err $? "0x8001 does not ping again"
log_test "P_Key back: the 0x8001 child recovers"

# the changes are over: the pinger's statistics now, not at its -w 15
kill -INT $pinger 2>/dev/null
wait $pinger
stats=$(grep -E 'packets transmitted' "/tmp/ping8002.$$")
rm -f "/tmp/ping8002.$$"
ktap_diag "0x8002 during the changes: $stats"
received=$(sed -n 's/.* \([0-9]*\) received.*/\1/p' <<<"$stats")
(( ${received:-0} > 0 ))
ktap_result $? "0x8002 traffic flowed during the changes"

ktap_finish
