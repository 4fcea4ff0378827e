#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: ours
# timeout: 180
#
# debugfs ipoib/<N>/{name,ifindex,netns,mcg,path,cm}: multicast joins and
# leaves and resolved paths are visible, idle paths are garbage-collected
# (every net.ipv4.neigh.default.gc_interval, like in-tree's neighbours),
# connections show up in "cm" on both ends, two interfaces with the same
# name in two namespaces get distinct directories, and so does every
# child when an (ifindex, netns inode) pair recurs: children made in a
# new netns, moved out, the netns deleted, a new one made (the kernel
# reuses the inode), five times. Before, directories were named
# <ifindex>@<netns inode> and a recurring pair left the new child none.

source "$(dirname "$0")/../lib.sh"

require_cmd ping

ktap_header 8

# the collector's period is read when the interface comes up: set it first
GC=/proc/sys/net/ipv4/neigh/default/gc_interval
old_gc=$(cat $GC)
echo 1 >$GC
defer sh -c "echo $old_gc >$GC"

ipoib_fabric_up
ktap_result $? "ib0/ib1 up in two netns" || ktap_finish

RET=0
a=$(ipoib_dbg_dir ib0)
[[ -n $a ]]
(($? == 0)) || check_err 1 "no debugfs directory for ib0: $(ls $IPOIB_DBG_ROOT)"
grep -q "^ff12:401b:ffff::ffff:ffff 0xc[0-9a-f]* joined 0 full 0$" "$a/mcg"
(($? == 0)) || check_err 1 "broadcast group not joined: $(cat "$a/mcg")"
log_test "mcg shows the joined broadcast group with its MLID"

RET=0
! grep -q "^ff12:601b:ffff::1:ff0a:bcde " "$a/mcg"
check_err $? "solicited-node group of 2001:db8::a:bcde joined before the address exists"
ip -n "$A" addr add 2001:db8::a:bcde/64 dev ib0 nodad
slowwait 10 grep -q "^ff12:601b:ffff::1:ff0a:bcde .* joined .* full" "$a/mcg"
(($? == 0)) || check_err 1 "solicited-node group not joined: $(cat "$a/mcg")"
ip -n "$A" addr del 2001:db8::a:bcde/64 dev ib0
slowwait 10 sh -c "! grep -q '^ff12:601b:ffff::1:ff0a:bcde ' $a/mcg"
(($? == 0)) || check_err 1 "solicited-node group not left: $(cat "$a/mcg")"
log_test "an IPv6 address joins its solicited-node group; removing it leaves"

# resolved_after_ping: a ping, then the path it used, resolved. The
# collector forgets a path 2 s after its last use: on a slow (debug)
# kernel that can come before the grep, so the pair is retried.
resolved_after_ping() {
	ip netns exec "$A" ping -c 1 -W 2 192.0.2.2 >/dev/null &&
		grep -q "^fe80::211:bff:0:2 0x0002 resolved 0$" "$a/path"
}

RET=0
slowwait 10 resolved_after_ping
(($? == 0)) || check_err 1 "no resolved path to port 2: $(cat "$a/path")"
log_test "path shows the resolved path to the peer (DLID 2)"

RET=0
slowwait 10 sh -c "! grep -q '^fe80::211:bff:0:2 ' $a/path"
(($? == 0)) || check_err 1 "path not collected 10 s after its last use: $(cat "$a/path")"
ip netns exec "$A" ping -c 2 -i 0.2 -w 4 -W 2 192.0.2.2 >/dev/null
check_err $? "ping after the path was collected"
slowwait 10 resolved_after_ping
(($? == 0)) || check_err 1 "path not resolved again: $(cat "$a/path")"
log_test "an idle path is collected and resolved again on the next packet"

RET=0
# paths (and their connections) must outlive the greps: default period
echo "$old_gc" >$GC
b=$(ipoib_dbg_dir ib1)
ip netns exec "$A" sh -c "echo connected > /sys/class/net/ib0/mode"
ip netns exec "$A" ping -c 2 -i 0.2 -w 4 -W 2 -s 9000 192.0.2.2 >/dev/null
check_err $? "connected-mode ping"
grep -q "^out fe80::211:bff:0:2 0x[0-9a-f]* up 65524 0$" "$a/cm"
(($? == 0)) || check_err 1 "ib0 cm: $(cat "$a/cm" | xargs)"
grep -q "^in 0x[0-9a-f]* live$" "$b/cm"
(($? == 0)) || check_err 1 "ib1 cm: $(cat "$b/cm" | xargs)"
ip netns exec "$A" sh -c "echo datagram > /sys/class/net/ib0/mode"
! grep -q "^out " "$a/cm"
(($? == 0)) || check_err 1 "datagram mode kept the connection: $(cat "$a/cm" | xargs)"
log_test "cm lists the connection on both ends; datagram mode closes ours"

RET=0
softib_policy "Default=0x7fff, ipoib : ALL=full;" "p1=0x0001, ipoib : ALL=full;"
ip -n "$A" link add link ib0 name net1 type ipoib pkey 0x8001 &&
	ip -n "$B" link add link ib1 name net1 type ipoib pkey 0x8001
check_err $? "two children named net1"
d1=$(ipoib_dbg_dir net1 1)
d2=$(ipoib_dbg_dir net1 2)
[[ -n $d1 && -n $d2 && $d1 != "$d2" ]]
check_err $? "net1 directories: '$d1' '$d2'"
log_test "same interface name in two namespaces: two directories"

RET=0
ip -n "$B" link del net1
seen=()
recur=0
for i in 1 2 3 4 5; do
	setup_ns Y
	ip -n "$B" link set ib1 netns "$Y" &&
		ip -n "$Y" link add link ib1 name rc$i type ipoib pkey 0x8001
	check_err $? "round $i: child rc$i in a new netns"
	pair="$(ip -n "$Y" -o link show rc$i | cut -d: -f1)@$(ip netns exec "$Y" readlink /proc/self/ns/net)"
	[[ " ${seen[*]} " == *" $pair "* ]] && recur=$((recur + 1))
	seen+=("$pair")
	d=$(ipoib_dbg_dir rc$i)
	[[ -n $d && $(cat "$d/ifindex") == "${pair%@*}" && $(cat "$d/netns") == "${pair#*@}" ]]
	(($? == 0)) || check_err 1 "round $i: rc$i ($pair) has no directory of its own: '$d' $(cat "$d/ifindex" "$d/netns" 2>/dev/null | xargs)"
	# the child leaves for B, ib1 follows, the netns goes
	ip -n "$Y" link set rc$i netns "$B" && ip -n "$Y" link set ib1 netns "$B" &&
		ip netns del "$Y"
	check_err $? "round $i: moving out"
done
ktap_diag "(ifindex, netns) pairs of the five children: ${seen[*]}; $recur recurred"
n=$(for i in 1 2 3 4 5; do ipoib_dbg_dir rc$i; done | sort -u | wc -l)
((n == 5))
check_err $? "$n distinct directories for five children"
log_test "children whose (ifindex, netns) pair recurs get directories of their own"

ktap_finish
