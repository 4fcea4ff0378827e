#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 180
#
# softib's node identity and the loading of its link to other kernels,
# in one guest: node=K moves every GUID and LID (and IPoIB still works
# across the fabric); each bad link parameter fails the load with its
# errno and one log line naming the fix, leaving nothing loaded; the key
# is never readable; a link that reaches itself refuses its own
# handshake (same node), says when its interface's MTU shrinks below
# what the IB MTU needs, and unloads cleanly; the link's interface
# deleted under it is logged, an unload is not. The link between two
# kernels is tested in selftests/pair/.

source "$(dirname "$0")/../lib.sh"

require_cmd python3 ping

KEY=5eb1c0ffee0ddba11ab1e5cafe15deadbeef0123456789abcdef0123456789ab

# refused ERRNO-TEXT LOG-RE PARAM...: loading softib with PARAM... fails
# with that error, logs LOG-RE, and leaves no softib behind
refused() {
	local want=$1 log=$2 out

	shift 2
	dmesg -C
	out=$(load_softib "$@" 2>&1)
	check_fail $? "loaded with $*"
	[[ $out == *"$want"* ]]
	check_err $? "$*: '$out', want '$want'"
	[[ ! -d /sys/module/softib ]]
	check_err $? "$* left softib loaded"
	unload_softib
	# (the log's last lines, three processes, only for a failure)
	dmesg | grep -qE "softib: $log" ||
		check_err $? "$*: no log line /$log/: $(dmesg | grep softib: | tail -n 2)"
}

# udp_bound: a socket is bound to 0.0.0.0:17391 (the link's port, 0x43EF
# in /proc/net/udp)
udp_bound() {
	local addr

	while read -r _ addr _; do
		[[ $addr == 00000000:43EF ]] && return 0
	done </proc/net/udp
	return 1
}

ktap_header 6

# node=3 alone: its own GUIDs and LIDs, and IPoIB across ports as ever
RET=0
ipoib_fabric_up node=3
check_err $? "fabric up with node=3: ${FAILED_STEP:-}"
[[ $(<$SOFTIB_SYS/node_guid) == 0211:0bff:0300:0000 ]]
(($? == 0)) || check_err 1 "node GUID $(<$SOFTIB_SYS/node_guid)"
for p in 1 2; do
	[[ $(($(<$SOFTIB_SYS/ports/$p/lid))) -eq $((96 + p)) &&
		$(($(<$SOFTIB_SYS/ports/$p/sm_lid))) -eq 96 ]]
	(($? == 0)) || check_err 1 "port $p LID $(<$SOFTIB_SYS/ports/$p/lid), SM LID $(<$SOFTIB_SYS/ports/$p/sm_lid)"
	[[ $(<$SOFTIB_SYS/ports/$p/gids/0) == fe80:0000:0000:0000:0211:0bff:0300:000$p ]]
	(($? == 0)) || check_err 1 "port $p GID $(<$SOFTIB_SYS/ports/$p/gids/0)"
done
ip netns exec "$A" ping -c 3 -i 0.2 -w 8 -W 2 192.0.2.2 >/dev/null
check_err $? "no ping between the ports"
log_test "node=3: GUIDs, LIDs 97/98, SM LID 96; IPoIB pings across the ports"
__defer_run
cleanup_ns

if softib_case "bad link parameters: errno, a log line, nothing loaded"; then
	RET=0
	refused "Invalid parameters" "link=lo needs this node's number" \
		link=lo link_peers=127.0.0.2 fabric_key=$KEY
	refused "Invalid parameters" "node=64 is out of range" node=64
	refused "Invalid parameters" "sm_priority=16 is out of range: load with sm_priority=0..15" \
		node=1 sm_priority=16
	refused "No such device" "link=nosuch0: no such network interface" \
		link=nosuch0 node=1 link_peers=127.0.0.2 fabric_key=$KEY
	refused "Invalid parameters" "link=lo needs fabric_key=<64 hex digits>, the same on every node" \
		link=lo node=1 link_peers=127.0.0.2 fabric_key=${KEY:1}
	refused "Invalid parameters" "link=lo needs fabric_key=<64 hex digits>, the same on every node" \
		link=lo node=1 link_peers=127.0.0.2 fabric_key=${KEY:1}x
	for peers in 127.0.0.300 127.0.0.2,127.0.0.2 224.0.0.1 "" \
		10.0.0.1,10.0.0.2,10.0.0.3,10.0.0.4,10.0.0.5,10.0.0.6,10.0.0.7,10.0.0.8,10.0.0.9; do
		refused "Invalid parameters" "link_peers=.*: want 1 to 8 distinct unicast IPv4" \
			link=lo node=1 "link_peers=$peers" fabric_key=$KEY
	done
	refused "Invalid parameters" "link=lo and vnodes=4" \
		link=lo node=1 link_peers=127.0.0.2 fabric_key=$KEY vnodes=4
	refused "Invalid parameters" "link sizes out of range" \
		link=lo node=1 link_peers=127.0.0.2 fabric_key=$KEY link_window=600 link_queue=512
	# (the guest does not autoload modules for ip link)
	modprobe dummy && ip link add sib-small type dummy &&
		ip link set sib-small mtu 300
	check_err $? "no dummy interface with MTU 300"
	refused "Invalid parameters" "link=sib-small: MTU 300 is too small for IB packets; give it at least 396" \
		link=sib-small node=1 link_peers=127.0.0.2 fabric_key=$KEY
	ip link del sib-small
	log_test "bad link parameters: errno, a log line, nothing loaded"
fi

if softib_case "the link's UDP port in use: EADDRINUSE and a log line"; then
	RET=0
	python3 -c 'import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 17391))
time.sleep(30)' &
	holder=$!
	slowwait 10 udp_bound
	refused "Address already in use" "link=lo: cannot bind UDP port 17391 \(-98\)" \
		link=lo node=1 link_peers=127.0.0.2 fabric_key=$KEY
	kill $holder
	wait $holder 2>/dev/null
	log_test "the link's UDP port in use: EADDRINUSE and a log line"
fi

if softib_case "a link to itself: the handshake refused (same node); MTU shrink logged"; then
	RET=0
	ip link set lo up
	dmesg -C
	load_softib link=lo node=1 link_peers=127.0.0.1 fabric_key=$KEY
	check_err $? "load with a link on lo"
	[[ ! -e /sys/module/softib/parameters/fabric_key ]]
	check_err $? "the key is readable in sysfs"
	grep -q "state down" "$SOFTIB_DBG/fabric/peers" 2>/dev/null
	(($? == 0)) || check_err 1 "no peer line: $(cat "$SOFTIB_DBG/fabric/peers" 2>&1)"
	slowwait 5 stat_cmp "$SOFTIB_DBG/fabric/stats" hs_refused -ge 1
	(($? == 0)) || check_err 1 "hs_refused $(stat_of "$SOFTIB_DBG/fabric/stats" hs_refused)"
	sleep 1
	grep -q "state down" "$SOFTIB_DBG/fabric/peers"
	(($? == 0)) || check_err 1 "a session with itself: $(tail -n 1 "$SOFTIB_DBG/fabric/peers")"
	dmesg | grep -q "softib: link: 127.0.0.1 is node 1 too: give every node its own node= number"
	check_err $? "no log line for the duplicate node"
	mtu=$(</sys/class/net/lo/mtu)
	ip link set lo mtu 4000
	dmesg | grep -q "softib: link: lo has MTU 4000 now, below the 4236 that IB MTU 4096 needs"
	check_err $? "no log line for the MTU below the IB MTU's"
	ip link set lo mtu "$mtu"
	unload_softib
	check_err $? "unload"
	log_test "a link to itself: the handshake refused (same node); MTU shrink logged"
fi

if softib_case "the link's interface deleted: logged; nothing logged when softib unloads"; then
	RET=0
	modprobe dummy && ip link add sib-gone type dummy &&
		ip link set sib-gone mtu 9000 up
	check_err $? "no dummy interface"
	load_softib link=sib-gone node=1 link_peers=10.98.0.2 fabric_key=$KEY
	check_err $? "load with a link on sib-gone"
	dmesg -C
	ip link del sib-gone
	dmesg | grep -q "softib: link: sib-gone went away: no link to the other nodes until softib is loaded again"
	check_err $? "no log line for the deleted interface: $(dmesg | grep softib: | tail -n 2)"
	unload_softib
	check_err $? "unload"
	# unloading replays an unregister for every interface: not news
	modprobe dummy && ip link add sib-stays type dummy && ip link set sib-stays up
	load_softib link=sib-stays node=1 link_peers=10.98.0.2 fabric_key=$KEY
	check_err $? "load with a link on sib-stays"
	dmesg -C
	unload_softib
	check_err $? "unload"
	out=$(dmesg | grep "went away")
	[[ -z $out ]]
	check_err $? "unloading softib logged: $out"
	ip link del sib-stays
	log_test "the link's interface deleted: logged; nothing logged when softib unloads"
fi

if softib_case "node= and the link's parameters in modinfo"; then
	RET=0
	parms=$(modinfo -F parm "$KO_DIR/softib.ko")
	for p in node link link_peers link_port fabric_key link_window \
		link_queue link_rxq link_dead_ms; do
		grep -q "^$p:" <<<"$parms"
		check_err $? "no parameter $p"
	done
	log_test "node= and the link's parameters in modinfo"
fi

ktap_finish
