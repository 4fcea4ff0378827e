#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 180
#
# Send-only multicast groups are made by whoever sends: one UDP datagram
# to each of NGRP group addresses (any user can do this) makes NGRP
# send-only joins. They must go again once idle: in-tree leaves a
# send-only group whose neighbour was idle for two ARP gc_interval
# periods; ours leaves groups nobody sent to for two path-collector
# periods (the same interval). Ours also bounds them (max_sendonly): at
# the bound, a packet for a new group is dropped and counted, and the
# least recently used idle group is left to make room.

source "$(dirname "$0")/../lib.sh"

require_cmd python3

NGRP=60

ktap_header 4
ktap_diag "IPOIB=$IPOIB"

GC=/proc/sys/net/ipv4/neigh/default/gc_interval
old_gc=$(cat $GC)
echo 2 >$GC
defer sh -c "echo $old_gc >$GC"

ipoib_fabric_up
ktap_result $? "ib0/ib1 up in two netns" || ktap_finish
ip -n "$A" route add 224.0.0.0/4 dev ib0

mcg_file() {
	if [[ $IPOIB == ours ]]; then
		echo "$(ipoib_dbg_dir ib0)/mcg"
	else
		echo /sys/kernel/debug/ipoib/ib0_mcg
	fi
}

# groups: the send-only groups of 239.77.0.0/16 ib0 holds (MGID ...:0f4d:xxxx)
groups() {
	grep -ci 'ff12:401b:ffff:.*:0*f4d:' "$(mcg_file)"
}

# send_to PREFIX N: one datagram to each of PREFIX.1 .. PREFIX.N, from $A
send_to() {
	ip netns exec "$A" python3 - "$1" "$2" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
for i in range(1, int(sys.argv[2]) + 1):
    s.sendto(b"x", ("%s.%d" % (sys.argv[1], i), 9))
EOF
}

ours_stat() { ipoib_dbg_stat ib0 "$1" 2>/dev/null; }

if [[ ! -r $(mcg_file) ]]; then
	ktap_skip "send-only groups" "no $(mcg_file)"
	ktap_finish
fi

RET=0
base=$(groups)
send_to 239.77.0 $NGRP
check_err $? "sending failed"
slowwait 10 sh -c "[ \$(grep -ci 'ff12:401b:ffff:.*:0*f4d:' $(mcg_file)) -ge $((base + NGRP)) ]"
(($? == 0)) || check_err 1 "$(groups) groups after sending to $NGRP (baseline $base)"
log_test "one datagram to each of $NGRP groups: $NGRP send-only groups"

RET=0
t0=$SECONDS
slowwait 20 sh -c "[ \$(grep -ci 'ff12:401b:ffff:.*:0*f4d:' $(mcg_file)) -le $base ]"
(($? == 0)) || check_err 1 "$(groups) groups left 20 s after the last datagram (baseline $base)"
ktap_diag "back to $(groups) groups after $((SECONDS - t0)) s"
[[ $IPOIB == ours ]] && ktap_diag "ours: sendonly_expired $(ours_stat sendonly_expired)"
log_test "idle send-only groups are left (gc_interval 2 s)"

RET=0
if [[ $IPOIB == ours ]]; then
	old_max=$(cat /sys/module/ib_ipoib/parameters/max_sendonly)
	echo 10 >/sys/module/ib_ipoib/parameters/max_sendonly
	defer sh -c "echo $old_max >/sys/module/ib_ipoib/parameters/max_sendonly"
	send_to 239.77.1 $NGRP
	n=$(groups)
	so=$(ours_stat sendonly_groups)
	drops=$(ours_stat sendonly_drops)
	ev=$(ours_stat sendonly_evictions)
	ktap_diag "max_sendonly=10: $n groups of 239.77.1.x, sendonly_groups $so, drops $drops, evictions $ev"
	((n <= 10 && so <= 10))
	check_err $? "$n groups (sendonly_groups $so) above max_sendonly=10"
	((drops > 0 && ev > 0))
	check_err $? "drops $drops, evictions $ev: not counted"
	log_test "max_sendonly bounds send-only groups; drops and evictions counted"
else
	ktap_skip "max_sendonly bounds send-only groups" "in-tree has no bound"
fi

# in-tree read its debugfs above: its known iterator leak, while it is loaded
intree_debugfs_leaks

ktap_finish
