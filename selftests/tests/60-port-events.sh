#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 240
#
# Subnet events: a client reregistration (the SM lost its state) and a
# link that goes down and comes back; traffic resumes within seconds.

source "$(dirname "$0")/../lib.sh"

require_cmd ping

ktap_header 5
ktap_diag "IPOIB=$IPOIB"

ipoib_fabric_up && ip netns exec "$A" ping -c 2 -i 0.2 -w 4 -W 2 192.0.2.2 >/dev/null
ktap_result $? "ib0/ib1 up and pinging" || ktap_finish

# returns when ping works again; prints how long that took
resumes_within() {
	local start end

	start=$(date +%s%3N)
	slowwait "$1" ip netns exec "$A" ping -c 1 -W 1 192.0.2.2 >/dev/null || return 1
	end=$(date +%s%3N)
	echo "$((end - start)) ms"
}

for p in 1 2; do
	echo client_reregister >"$SOFTIB_DBG/ports/$p/event"
done
t=$(resumes_within 20)
ktap_result $? "client_reregister on both ports: traffic resumes ($t)"

echo down >"$SOFTIB_DBG/ports/2/link"
RET=0
[[ $(cat "$SOFTIB_DBG/ports/2/link") == down ]] && grep -q DOWN $SOFTIB_SYS/ports/2/state
check_err $? "port 2 is not down"
slowwait 10 sh -c "! ip -n $B link show ib1 | grep -q LOWER_UP" >/dev/null
check_err $? "ib1 kept carrier with its link down"
ip netns exec "$A" ping -c 2 -W 1 192.0.2.2 >/dev/null
check_fail $? "ping crossed a down link"
log_test "link down: carrier off, no traffic"

echo up >"$SOFTIB_DBG/ports/2/link"
RET=0
slowwait 20 ipoib_lower_up "$B" ib1 >/dev/null
check_err $? "ib1 did not get carrier back"
t=$(resumes_within 20)
check_err $? "traffic did not resume"
log_test "link up: carrier and traffic back ($t)"

RET=0
echo sideways >"$SOFTIB_DBG/ports/1/link" 2>/dev/null
check_fail $? "link accepted 'sideways'"
echo nonsense >"$SOFTIB_DBG/ports/1/event" 2>/dev/null
check_fail $? "event accepted 'nonsense'"
log_test "bad link/event words rejected (EINVAL)"

ktap_finish
