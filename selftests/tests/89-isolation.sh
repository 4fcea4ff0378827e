#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 300
#
# Isolation, proven with counters and packet sockets rather than with
# failed pings alone (every frame that must not arrive is shown to have
# been sent, and a legitimate receiver is shown to get the same frames):
#
# - a child on P_Key 0x8001 never receives what a child on 0x8002 sends:
#   unicast (a static neighbour forcing the 0x8001 peer's address),
#   broadcast and IP multicast, and frames injected on the fabric naming
#   the other P_Key (softib's injector);
# - limited members (0x0003 on ports 2 and 3, full on port 1) never reach
#   each other, unicast or broadcast, while each reaches the full member;
# - a child in a container netns sees none of the parent's traffic nor
#   other children's (same P_Key unicast, other P_Key anything): its
#   packet socket and rx counters stay still.
#
# softib has 3 ports here: ib0 (netns A), ib1 (B), ib2 (C).

source "$(dirname "$0")/../lib.sh"

require_cmd ping python3

MARK=5a17c0de5a17c0de5a17c0de5a17c0de

# sniff NS DEV OUT: an ETH_P_ALL packet socket on DEV ("" = every
# interface of NS) in the background until sniffed OUT (at most 60 s).
# Returns once the socket is bound.
sniff() {
	rm -f "$3" "$3".*
	ip netns exec "$1" python3 -S - "$2" "$3" "$MARK" <<'PY' &
import os, select, socket, sys, time
dev, out, mark = sys.argv[1], sys.argv[2], bytes.fromhex(sys.argv[3])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
if dev:
    s.bind((dev, 0))
open(out + ".ready", "w").close()
end = time.time() + 60
n = m = 0
other = []
while time.time() < end and not os.path.exists(out + ".stop"):
    if select.select([s], [], [], 0.2)[0]:
        d, a = s.recvfrom(65536)
        n += 1
        if mark in d:
            m += 1
        elif len(other) < 3:
            other.append("%s len %d: %s" % (a[0], len(d), d[:48].hex()))
open(out + ".other", "w").write("\n".join(other))
open(out, "w").write("%d %d\n" % (n, m))
PY
	slowwait 10 test -e "$3.ready" >/dev/null
}

# sniffed OUT: stop the sniffer; prints "frames marked", or "-1 -1"
# (which fails every check) if it did not report; unmarked frames go to
# the diagnostics
sniffed() {
	sleep 0.5
	touch "$1.stop"
	if slowwait 10 test -s "$1" >/dev/null; then
		cat "$1"
		[[ ! -s $1.other ]] || ktap_diag "$(basename "$1") unmarked: $(cat "$1.other")" >&2
	else
		echo "-1 -1"
	fi
}

# rx NS DEV / tx NS DEV: packet counters; rx_ge NS DEV N: rx is N or more
rx() {
	ip netns exec "$1" cat /sys/class/net/"$2"/statistics/rx_packets
}

tx() {
	ip netns exec "$1" cat /sys/class/net/"$2"/statistics/tx_packets
}

rx_ge() {
	(($(rx "$1" "$2") >= $3))
}

# mcast_send NS DEV GROUP COUNT: UDP datagrams carrying MARK out of DEV
mcast_send() {
	ip netns exec "$1" python3 -S - "$2" "$3" "$4" "$MARK" <<'PY'
import socket, struct, sys, time
dev, grp, count, mark = sys.argv[1], sys.argv[2], int(sys.argv[3]), bytes.fromhex(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, dev.encode())
idx = socket.if_nametoindex(dev)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, struct.pack("4s4si", b"\0" * 4, b"\0" * 4, idx))
for _ in range(count):
    s.sendto(mark * 4, (grp, 5555))
    time.sleep(0.05)
PY
}

all_up() {
	local d

	for d in "$A ib0.8001" "$B ib1.8001" "$A ib0.8002" "$B ib1.8002" "$A ib0.8003" \
		"$B ib1.8003" "$C ib2.8003"; do
		# shellcheck disable=SC2086
		slowwait 20 ipoib_lower_up $d >/dev/null || return 1
	done
}

T=$(mktemp -d)
defer rm -rf "$T"

ktap_header 8
ktap_diag "IPOIB=$IPOIB"

ipoib_fabric_up ports=3 && slowwait 10 test -d /sys/class/net/ib2 >/dev/null &&
	setup_ns C && ip link set ib2 netns "$C" && ip -n "$C" link set ib2 up &&
	slowwait 20 ipoib_lower_up "$C" ib2
ktap_result $? "softib (3 ports) and ib_ipoib up; ib0, ib1, ib2 in netns A, B, C" ||
	ktap_finish

# no IPv6 chatter: a frame on an isolated interface is then a leak
for ns in "$A" "$B" "$C"; do
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
		net.ipv6.conf.default.disable_ipv6=1
done
softib_policy "Default=0x7fff, ipoib : ALL=full;" \
	"pA=0x0001, ipoib : ALL=full;" "pB=0x0002, ipoib : ALL=full;" \
	"pL=0x0003, ipoib : 0x02110bff00000001=full, 0x02110bff00000002=limited, 0x02110bff00000003=limited;"
ipoib_child "$A" ib0 8001 10.1.0.1/24 && ipoib_child "$B" ib1 8001 10.1.0.2/24 &&
	ipoib_child "$A" ib0 8002 10.2.0.1/24 && ipoib_child "$B" ib1 8002 10.2.0.2/24 &&
	ipoib_child "$A" ib0 8003 10.3.0.1/24 && ipoib_child "$B" ib1 8003 10.3.0.2/24 &&
	ipoib_child "$C" ib2 8003 10.3.0.3/24 && all_up
ktap_result $? "children on 0x8001, 0x8002 (A, B) and 0x8003 (A full, B and C limited) up" ||
	ktap_finish
ktap_diag "P_Key 3 entries: port1 $(cat $SOFTIB_SYS/ports/1/pkeys/3) port2 $(cat $SOFTIB_SYS/ports/2/pkeys/3) port3 $(cat $SOFTIB_SYS/ports/3/pkeys/3)"

# ---- P_Key A vs B --------------------------------------------------------
RET=0
ip netns exec "$A" ping -c 1 -W 2 10.2.0.2 >/dev/null
check_err $? "0x8002 pair does not ping"
# the 0x8002 child in A talks to an address that resolves to ib1.8001
ip -n "$A" addr add 10.255.1.1/24 dev ib0.8002
ip -n "$A" neigh replace 10.255.1.2 lladdr "$(ipoib_hwaddr "$B" ib1.8001)" dev ib0.8002 nud permanent
sniff "$B" ib1.8001 "$T/u1"
sniff "$B" ib1.8002 "$T/u2"
rx0=$(rx "$B" ib1.8001)
tx0=$(tx "$A" ib0.8002)
drop0=$(softib_counter 2 drop_pkey)
ip netns exec "$A" ping -c 5 -i 0.2 -W 1 -p $MARK 10.255.1.2 >/dev/null
check_fail $? "0x8002 pinged the 0x8001 child"
# broadcast on 0x8002: ib1.8002 must get it, ib1.8001 must not
ip netns exec "$A" ping -b -c 5 -i 0.2 -W 1 -p $MARK 10.2.0.255 >/dev/null 2>&1
read -r n1 m1 <<<"$(sniffed "$T/u1")"
read -r n2 m2 <<<"$(sniffed "$T/u2")"
tx1=$(tx "$A" ib0.8002)
drop1=$(softib_counter 2 drop_pkey)
ktap_diag "ib0.8002 tx +$((tx1 - tx0)); port 2 drop_pkey +$((drop1 - drop0)); ib1.8001 saw $n1 frames ($m1 marked), rx +$(($(rx "$B" ib1.8001) - rx0)); ib1.8002 saw $n2 ($m2 marked)"
((tx1 - tx0 >= 10))
(($? == 0)) || check_err 1 "ib0.8002 did not send (tx +$((tx1 - tx0)))"
((m1 == 0 && n1 == 0))
check_err $? "ib1.8001 received $n1 frames ($m1 marked) sent on 0x8002"
((m2 >= 5))
check_err $? "ib1.8002 got only $m2 of the 0x8002 broadcasts"
# a cached path sends and the fabric drops; in-tree may resolve no path
((drop1 > drop0)) || ktap_diag "no pkey drop counted: the unicast found no path"
log_test "0x8001 child receives no unicast or broadcast sent on 0x8002"

RET=0
mcast_member "$B" ib1.8001 239.1.2.3 30
mcast_member "$B" ib1.8002 239.1.2.3 30
sleep 3
sniff "$B" ib1.8001 "$T/m1"
sniff "$B" ib1.8002 "$T/m2"
mcast_send "$A" ib0.8002 239.1.2.3 20
read -r n1 m1 <<<"$(sniffed "$T/m1")"
read -r n2 m2 <<<"$(sniffed "$T/m2")"
ktap_diag "239.1.2.3 from ib0.8002: ib1.8001 saw $n1 frames ($m1 marked), ib1.8002 $n2 ($m2 marked)"
((m2 >= 10))
check_err $? "the 0x8002 member got only $m2 of 20 datagrams"
((m1 == 0))
check_err $? "the 0x8001 member got $m1 datagrams sent on 0x8002"
log_test "IP multicast on 0x8002 never reaches a 0x8001 member of the group"

# ---- injected frames: what a peer could put on the wire -----------------
# softib's injector (Documentation/softib.rst, ports/<N>/inject) at the
# receiving port, from port 1's LID: marked IPv4 frames naming another
# partition's P_Key reach neither a child's QP nor its broadcast group,
# limited-to-limited frames are dropped at a limited member (the port
# counts all 20 in drop_pkey), and the same frames with the right P_Key
# arrive (the control: the interface counts them).
# inject PORT HEADER: one batch of 20 marked frames
inject() {
	echo "$2 qkey=0xb slid=1 count=20 hex=08000000$MARK$MARK" \
		>"$SOFTIB_DBG/ports/$1/inject"
}
# bcast_mlid PKEY: the MLID of the partition's broadcast group
bcast_mlid() {
	awk -v g="ff12:401b:$1:0000:0000:0000:ffff:ffff" '$2 == g { print $1 }' "$SOFTIB_DBG/mcast"
}
RET=0
if [[ ! -e $SOFTIB_DBG/ports/2/inject ]]; then
	ktap_skip "injected frames" "softib has no UD injection interface on this tree"
else
	hw1=$(ipoib_hwaddr "$B" ib1.8001)
	q1=0x${hw1:3:2}${hw1:6:2}${hw1:9:2}
	hw3=$(ipoib_hwaddr "$C" ib2.8003)
	q3=0x${hw3:3:2}${hw3:6:2}${hw3:9:2}
	m1=$(bcast_mlid 8001)
	[[ -n $m1 ]]
	check_err $? "no broadcast group for 0x8001 in $SOFTIB_DBG/mcast"
	bc="qpn=0xffffff dlid=$m1 dgid=ff12:401b:8001::ffff:ffff"
	# case: PORT HEADER SNIFF-NS SNIFF-DEV WANT (marked frames: 0 or 20)
	cases=("2|qpn=$q1 pkey=0x8002|$B|ib1.8001|0" "2|qpn=$q1 pkey=0x8001|$B|ib1.8001|20"
	       "2|$bc pkey=0x8002|$B|ib1.8001|0" "2|$bc pkey=0x8001|$B|ib1.8001|20"
	       "3|qpn=$q3 pkey=0x0003|$C|ib2.8003|0" "3|qpn=$q3 pkey=0x8003|$C|ib2.8003|20")
	# the port's drop_pkey counts each refused frame: +20 means none
	# reached a QP; the controls show the driver counting what arrives
	for c in "${cases[@]}"; do
		IFS='|' read -r port hdr ns dev want <<<"$c"
		d0=$(softib_counter "$port" drop_pkey)
		r0=$(rx "$ns" "$dev")
		inject "$port" "$hdr"
		check_err $? "inject on port $port: $hdr"
		d1=$(softib_counter "$port" drop_pkey)
		slowwait 5 rx_ge "$ns" "$dev" $((r0 + want))
		r1=$(rx "$ns" "$dev")
		ktap_diag "port $port [$hdr] x20: $dev rx +$((r1 - r0)), drop_pkey +$((d1 - d0))"
		if ((want == 0)); then
			((d1 - d0 == 20 && r1 - r0 < 20))
			(($? == 0)) || check_err 1 "[$hdr] reached $dev: drop_pkey +$((d1 - d0)) (expected +20), rx +$((r1 - r0))"
		else
			((d1 == d0 && r1 - r0 >= want))
			(($? == 0)) || check_err 1 "control [$hdr]: $dev rx +$((r1 - r0)) of 20, drop_pkey +$((d1 - d0))"
		fi
	done
	log_test "injected frames: other P_Key and limited-to-limited dropped (drop_pkey), right P_Key delivered"
fi

# ---- limited members -----------------------------------------------------
RET=0
ip netns exec "$B" ping -c 2 -i 0.2 -w 4 -W 2 10.3.0.1 >/dev/null
check_err $? "limited B does not reach the full member"
ip netns exec "$C" ping -c 2 -i 0.2 -w 4 -W 2 10.3.0.1 >/dev/null
check_err $? "limited C does not reach the full member"
ip -n "$B" neigh replace 10.3.0.3 lladdr "$(ipoib_hwaddr "$C" ib2.8003)" dev ib1.8003 nud permanent
sniff "$C" ib2.8003 "$T/l3"
sniff "$A" ib0.8003 "$T/l1"
tx0=$(tx "$B" ib1.8003)
ip netns exec "$B" ping -c 5 -i 0.2 -W 1 -p $MARK 10.3.0.3 >/dev/null
check_fail $? "limited B pinged limited C"
ip netns exec "$B" ping -b -c 5 -i 0.2 -W 1 -p $MARK 10.3.0.255 >/dev/null 2>&1
read -r n3 m3 <<<"$(sniffed "$T/l3")"
read -r n1 m1 <<<"$(sniffed "$T/l1")"
tx1=$(tx "$B" ib1.8003)
ktap_diag "ib1.8003 (limited) tx +$((tx1 - tx0)); ib2.8003 (limited) saw $n3 frames ($m3 marked); ib0.8003 (full) $n1 ($m1 marked); port 3 drop_pkey $(softib_counter 3 drop_pkey)"
((tx1 - tx0 >= 5))
check_err $? "ib1.8003 did not send"
((m3 == 0))
check_err $? "limited C received $m3 marked frames from limited B"
((m1 >= 5))
check_err $? "the full member got only $m1 of B's broadcasts"
log_test "limited members never reach each other; both reach the full member"

# ---- a child in a container ---------------------------------------------
RET=0
setup_ns P
ip netns exec "$P" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
ip -n "$A" link add link ib0 name c1 type ipoib pkey 0x8001 && ip -n "$A" link set c1 netns "$P" &&
	ip -n "$P" addr add 10.1.0.9/24 dev c1 && ip -n "$P" link set c1 up &&
	slowwait 20 ipoib_lower_up "$P" c1 >/dev/null
check_err $? "child c1 in container netns"
# same-P_Key unicast with static neighbours (no ARP broadcast to see)
ip -n "$A" neigh replace 10.1.0.2 lladdr "$(ipoib_hwaddr "$B" ib1.8001)" dev ib0.8001 nud permanent
ip -n "$B" neigh replace 10.1.0.1 lladdr "$(ipoib_hwaddr "$A" ib0.8001)" dev ib1.8001 nud permanent
ip -n "$A" neigh replace 192.0.2.2 lladdr "$(ipoib_hwaddr "$B" ib1)" dev ib0 nud permanent
ip -n "$B" neigh replace 192.0.2.1 lladdr "$(ipoib_hwaddr "$A" ib0)" dev ib1 nud permanent
sniff "$P" "" "$T/p"
rx0=$(ip netns exec "$P" cat /sys/class/net/c1/statistics/rx_packets)
txa0=$(($(tx "$A" ib0) + $(tx "$A" ib0.8001) + $(tx "$A" ib0.8002)))
ip netns exec "$A" ping -c 5 -i 0.2 -W 1 -p $MARK 192.0.2.2 >/dev/null &&
	ip netns exec "$A" ping -c 5 -i 0.2 -W 1 -p $MARK 10.1.0.2 >/dev/null &&
	ip netns exec "$A" ping -c 5 -i 0.2 -W 1 -p $MARK 10.2.0.2 >/dev/null
check_err $? "parent / child unicast pings failed"
ip netns exec "$A" ping -b -c 3 -i 0.2 -W 1 -p $MARK 192.0.2.255 >/dev/null 2>&1
ip netns exec "$A" ping -b -c 3 -i 0.2 -W 1 -p $MARK 10.2.0.255 >/dev/null 2>&1
mcast_send "$A" ib0 239.1.2.4 5
read -r np mp <<<"$(sniffed "$T/p")"
rx1=$(ip netns exec "$P" cat /sys/class/net/c1/statistics/rx_packets)
txa1=$(($(tx "$A" ib0) + $(tx "$A" ib0.8001) + $(tx "$A" ib0.8002)))
ktap_diag "A sent $((txa1 - txa0)) frames on ib0, ib0.8001, ib0.8002; the container saw $np frames ($mp marked), c1 rx +$((rx1 - rx0))"
((txa1 - txa0 >= 20))
check_err $? "A did not send"
((np == 0 && mp == 0 && rx1 == rx0))
(($? == 0)) || check_err 1 "the container saw $np frames ($mp marked), c1 rx +$((rx1 - rx0))"
log_test "a child in a container netns sees nothing of the parent's or other children's traffic"

RET=0
# and its own partition's broadcast still reaches it: the sniffer works
sniff "$P" c1 "$T/p2"
ip netns exec "$B" ping -b -c 3 -i 0.2 -W 1 -p $MARK 10.1.0.255 >/dev/null 2>&1
read -r np mp <<<"$(sniffed "$T/p2")"
((mp >= 3))
check_err $? "c1 saw $np frames ($mp marked) of its own partition's broadcast"
log_test "the container's child does get its own partition's broadcast (control)"

ktap_finish
