#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 300
#
# softib's switch as the fabric tools see it under the built-in SM: every
# port of softib0 cabled to the switch port of the same number, the
# switch at LID 256 with the SM on its port 0. Discovery by directed
# route (ibnetdiscover, iblinkinfo, ibswitches, ibhosts), SMPs through
# the switch to the other CA port, the switch's own attributes by LID
# (SwitchInfo, the LFT the built-in SM programmed), and a switch port
# disabled and enabled again, which takes the CA port at the other end
# of its cable with it. Four ports, so that the switch has more than
# the ports of one test pair.
#
# Then the data path through the switch's tables, written by SMPs as an
# SM writes them (13-softib-switch.py, a umad client): a LID's LFT entry
# sent elsewhere or nowhere stops the traffic, and the misrouted and
# unrouted packets are counted; the MFT entry the built-in SM made from
# the SA's joins, followed by broadcast and updated on a leave; and
# partition enforcement, inbound and outbound, at a switch port whose
# P_Key table lacks a P_Key that its CA port still has.
#
# The cases that read softib alone with the fabric tools run with our
# ib_ipoib; with in-tree they are skips (softib_case in lib.sh). The
# cases whose IPoIB traffic or carrier is checked run with both.

source "$(dirname "$0")/../lib.sh"

require_cmd ping python3 smpquery ibnetdiscover iblinkinfo ibswitches ibhosts ibroute ibportstate

SYS=$SOFTIB_SYS

ktap_header 12
ktap_diag "IPOIB=$IPOIB"

modprobe ib_umad
ipoib_fabric_up ports=4 && ip netns exec "$A" ping -c 2 -i 0.2 -w 4 -W 2 192.0.2.2 >/dev/null
ktap_result $? "ib0/ib1 up and pinging, four ports" || ktap_finish

if softib_case "ibnetdiscover: one switch, one CA, four links"; then
	RET=0
	out=$(ibnetdiscover 2>&1)
	check_err $? "ibnetdiscover failed"
	grep -qE '^Switch[[:space:]]+4 "S-02110bff00010000"[[:space:]]+# "softib switch" base port 0 lid 256 lmc 0$' <<<"$out"
	check_err $? "no switch line"
	grep -qE '^Ca[[:space:]]+4 "H-02110bff00000000"[[:space:]]+# "softib software HCA"$' <<<"$out"
	check_err $? "no CA line"
	for p in 1 2 3 4; do
		grep -qE "^\[$p\][[:space:]]+\"H-02110bff00000000\"\[$p\]\(2110bff0000000$p\) .*# \"softib software HCA\" lid $p 4xEDR$" <<<"$out"
		check_err $? "switch port $p does not lead to CA port $p"
		grep -qE "^\[$p\]\(2110bff0000000$p\) [[:space:]]+\"S-02110bff00010000\"\[$p\][[:space:]]+# lid $p lmc 0 \"softib switch\" lid 256 4xEDR$" <<<"$out"
		check_err $? "CA port $p does not lead to switch port $p"
	done
	[[ $RET -eq 0 ]] || ktap_diag "$out"
	log_test "ibnetdiscover: one switch, one CA, four links"
fi

if softib_case "ibswitches, ibhosts, iblinkinfo"; then
	RET=0
	out=$(ibswitches 2>&1)
	grep -qE '^Switch[[:space:]]+: 0x02110bff00010000 ports 4 "softib switch" base port 0 lid 256 lmc 0$' <<<"$out"
	check_err $? "ibswitches: $out"
	out=$(ibhosts 2>&1)
	grep -qE '^Ca[[:space:]]+: 0x02110bff00000000 ports 4 "softib software HCA"$' <<<"$out"
	check_err $? "ibhosts: $out"
	out=$(iblinkinfo 2>&1)
	check_err $? "iblinkinfo failed"
	# each link twice: from the switch's side and from the CA's
	(( $(grep -c "4X.*25.78125 Gbps.*Active/  LinkUp" <<<"$out") == 8 ))
	check_err $? "iblinkinfo: not four active 4X EDR links: $out"
	log_test "ibswitches, ibhosts, iblinkinfo"
fi

# Through the switch: directed route out of port 1, in and out of the
# switch, into port 2 (and back).
if softib_case "directed route through the switch to the other CA port"; then
	RET=0
	out=$(smpquery -D nodeinfo 0,1,2 2>&1)
	check_err $? "smpquery -D nodeinfo 0,1,2: $out"
	[[ $(smp_field "$out" PortGuid) == 0x02110bff00000002 && $(smp_field "$out" LocalPort) == 2 ]]
	check_err $? "DR 0,1,2 did not reach CA port 2: $out"
	out=$(smpquery -D nodeinfo 0,1 2>&1)
	[[ $(smp_field "$out" NodeType) == Switch && $(smp_field "$out" LocalPort) == 1 ]]
	check_err $? "DR 0,1 did not reach the switch's port 1: $out"
	out=$(smpquery -D portinfo 0,1 3 2>&1)
	[[ $(smp_field "$out" LinkState) == Active && $(smp_field "$out" LocalPort) == 1 ]]
	check_err $? "switch PortInfo of port 3: $out"
	# a DR path out of a switch port with nothing behind it (port 9)
	timeout 10 smpquery -t 200 -D nodeinfo 0,1,9 >/dev/null 2>&1
	check_fail $? "DR path through switch port 9 answered"
	log_test "directed route through the switch to the other CA port"
fi

if softib_case "SwitchInfo and NodeInfo of the switch by its LID"; then
	RET=0
	out=$(smpquery switchinfo 256 2>&1)
	check_err $? "smpquery switchinfo 256: $out"
	[[ $(smp_field "$out" LinearFdbCap) == 49152 && $(smp_field "$out" McastFdbCap) == 16384 ]]
	check_err $? "SwitchInfo caps: $out"
	[[ $(smp_field "$out" PartEnforceCap) == 32 ]]
	check_err $? "PartEnforceCap: $out"
	out=$(smpquery nodeinfo 256 2>&1)
	[[ $(smp_field "$out" NodeType) == Switch && $(smp_field "$out" Guid) == 0x02110bff00010000 ]]
	check_err $? "NodeInfo by the switch's LID: $out"
	log_test "SwitchInfo and NodeInfo of the switch by its LID"
fi

if softib_case "the built-in SM's linear forwarding table (ibroute)"; then
	RET=0
	out=$(ibroute 256 2>&1)
	check_err $? "ibroute 256: $out"
	for p in 1 2 3 4; do
		grep -qE "^0x000$p 00$p : \(Channel Adapter portguid 0x02110bff0000000$p: 'softib software HCA'\)$" <<<"$out"
		check_err $? "LFT: LID $p not to port $p"
	done
	grep -q "^4 valid lids dumped" <<<"$out"
	check_err $? "LFT: not four LIDs"
	[[ $RET -eq 0 ]] || ktap_diag "$out"
	log_test "the built-in SM's linear forwarding table (ibroute)"
fi

# Disabling switch port 2 takes the cable down: CA port 2 and ib1 lose
# their link and cannot train until the switch port is enabled again.
RET=0
ibportstate 256 2 disable >/dev/null 2>&1
check_err $? "ibportstate 256 2 disable"
slowwait 5 sh -c "grep -q DOWN $SYS/ports/2/state" >/dev/null
(($? == 0)) || check_err 1 "CA port 2 $(cat "$SYS/ports/2/state")"
slowwait 10 sh -c "! ip -n $B link show ib1 | grep -q LOWER_UP" >/dev/null
check_err $? "ib1 kept carrier"
echo up >"$SOFTIB_DBG/ports/2/link"
sleep 0.3
grep -q DOWN "$SYS/ports/2/state"
check_err $? "a cable to a disabled switch port trained"
out=$(smpquery portinfo 256 2 2>&1)
[[ $(smp_field "$out" PhysLinkState) == Disabled ]]
check_err $? "switch port 2 not Disabled: $out"
ibportstate 256 2 enable >/dev/null 2>&1
check_err $? "ibportstate 256 2 enable"
slowwait 10 softib_ports_active 2 >/dev/null
(($? == 0)) || check_err 1 "CA port 2 $(cat "$SYS/ports/2/state")"
slowwait 20 ipoib_lower_up "$B" ib1 >/dev/null &&
	slowwait 20 ip netns exec "$A" ping -c 1 -W 1 192.0.2.2 >/dev/null
check_err $? "no traffic after enable"
log_test "switch port disabled and enabled: the CA port follows"

# Set Down, a switch port's link trains again at once; the CA port's
# PMA counts the link going down.
RET=0
downed=$(smp_field "$(perfquery 3 3 2>&1)" LinkDownedCounter)
ibportstate 256 3 down >/dev/null 2>&1
check_err $? "ibportstate 256 3 down"
slowwait 10 softib_ports_active 3 >/dev/null
(($? == 0)) || check_err 1 "CA port 3 $(cat "$SYS/ports/3/state")"
out=$(smpquery portinfo 256 3 2>&1)
[[ $(smp_field "$out" LinkState) == Active && $(smp_field "$out" PhysLinkState) == LinkUp ]]
check_err $? "switch port 3: $out"
out=$(perfquery 3 3 2>&1)
(( $(smp_field "$out" LinkDownedCounter) == downed + 1 ))
check_err $? "LinkDownedCounter was $downed: $out"
log_test "switch port set Down: the link trains and is Active again"

# The switch programmed by SMPs from port 1's umad client to its LID.
umad=
for d in /sys/class/infiniband_mad/umad*; do
	[[ $(<"$d/ibdev") == softib0 && $(<"$d/port") == 1 ]] && umad=${d##*/}
done
swset() {
	timeout 30 python3 "$(dirname "$0")/13-softib-switch.py" \
		"/dev/infiniband/$umad" 256 "$@"
}

# sw_discards PORT NAME: a discard counter of a switch port (debugfs)
sw_discards() {
	awk -v p="$1" -v n="$2" '$1 == "port" && $2 == p {
		for (i = 3; i < NF; i++) if ($i == n) print $(i + 1) }' \
		"$SOFTIB_DBG/switch"
}

pings() {
	ip netns exec "$A" ping -c 1 -W 1 "${1:-192.0.2.2}" >/dev/null
}

# LID 2 out of switch port 3: CA port 3 does not own LID 2 and drops
# what reaches it; nowhere (0xff): the switch discards it; back to port 2.
RET=0
slowwait 20 pings
check_err $? "no traffic before the LFT changes"
old=$(swset lft 2 3)
check_err $? "LFT Set of LID 2: $old"
[[ $old == 2 ]]
check_err $? "LFT entry of LID 2 was '$old'"
grep -qE "^0x0002 003 : " <<<"$(ibroute 256 2>&1)"
check_err $? "ibroute does not show LID 2 out of port 3"
nd=$(softib_counter 3 drop_no_dest)
! ip netns exec "$A" ping -c 3 -W 1 192.0.2.2 >/dev/null
check_err $? "ping through a wrong LFT entry answered"
(( $(softib_counter 3 drop_no_dest) > nd ))
check_err $? "CA port 3 did not drop the packets for LID 2"
un=$(sw_discards 1 unrouted)
swset lft 2 0xff >/dev/null
check_err $? "LFT Set of LID 2 to nowhere"
! ip netns exec "$A" ping -c 3 -W 1 192.0.2.2 >/dev/null
check_err $? "ping through an empty LFT entry answered"
(( $(sw_discards 1 unrouted) > un ))
(($? == 0)) || check_err 1 "switch port 1 unrouted stayed at $un: $(cat "$SOFTIB_DBG/switch")"
swset lft 2 2 >/dev/null
check_err $? "LFT Set of LID 2 back to port 2"
slowwait 20 pings
check_err $? "no traffic after the LFT entry is back"
log_test "an LFT entry set by an SMP: traffic follows it, or is discarded"

# The broadcast group's MFT entry: the built-in SM set the bits of the
# ports with members (1 and 2); without port 2's bit, ARP from ib0 no
# longer reaches ib1.
RET=0
bcast=ff12:401b:ffff:0000:0000:0000:ffff:ffff
mlid=$(awk -v g=$bcast '$2 == g { print $1; exit }' "$SOFTIB_DBG/sa_members")
mask=$(swset get-mft "$mlid")
check_err $? "MFT Get of $mlid: $mask"
(( (mask & 0x7) == 0x6 ))
check_err $? "MFT entry of the broadcast group $mlid is $mask, not ports 1 and 2"
swset mft "$mlid" $((mask & ~4)) >/dev/null
check_err $? "MFT Set of $mlid"
ip -n "$A" neigh flush dev ib0
! ip netns exec "$A" ping -c 2 -W 1 192.0.2.2 >/dev/null
check_err $? "ARP reached ib1 without its port in the MFT entry"
swset mft "$mlid" "$mask" >/dev/null
check_err $? "MFT Set of $mlid back"
ip -n "$A" neigh flush dev ib0
slowwait 20 pings
check_err $? "no traffic after the MFT entry is back"
log_test "multicast goes out of the ports of the MFT entry only"

# ib1 leaves the group: the built-in SM clears port 2's bit; it joins
# again: the bit is back.
RET=0
mft_bit() {
	(( ($(swset get-mft "$mlid") & 4) == $1 ))
}
ip -n "$B" link set ib1 down
slowwait 10 mft_bit 0
(($? == 0)) || check_err 1 "port 2 still in the MFT entry after ib1 left: $(swset get-mft "$mlid")"
ip -n "$B" link set ib1 up
slowwait 20 mft_bit 4
check_err $? "port 2 not in the MFT entry after ib1 joined again"
slowwait 20 ipoib_lower_up "$B" ib1 >/dev/null && slowwait 20 pings
check_err $? "no traffic after ib1 is up again"
log_test "the built-in SM's MFT follows the SA's joins and leaves"

# Partition enforcement: the built-in SM gave switch port 2 CA port 2's
# P_Key table, enforced both ways. Without 0x8001 there, the 0x8001
# children cannot talk (outbound discards at port 2); with outbound
# enforcement off, ib1.8001's answers are still stopped on the way in.
RET=0
softib_policy "Default=0x7fff, ipoib : ALL=full;" "p1=0x0001, ipoib : ALL=full;" &&
	ipoib_child "$A" ib0 8001 198.51.100.1/24 &&
	ipoib_child "$B" ib1 8001 198.51.100.2/24 &&
	slowwait 20 ipoib_lower_up "$A" ib0.8001 >/dev/null &&
	slowwait 20 ipoib_lower_up "$B" ib1.8001 >/dev/null &&
	slowwait 20 pings 198.51.100.2
check_err $? "0x8001 children up and pinging"
out=$(smpquery portinfo 256 2 2>&1)
[[ $(smp_field "$out" PartEnforceInb) == 1 && $(smp_field "$out" PartEnforceOutb) == 1 ]]
check_err $? "switch port 2 does not enforce partitions: $out"
tbl=$(swset get-pkeys 2)
[[ $tbl == "0xffff 0x8001 "* ]]
check_err $? "switch port 2's P_Key table: $tbl"
xc=$(sw_discards 2 xmit_constraint)
swset pkeys 2 0xffff >/dev/null
check_err $? "P_KeyTable Set of switch port 2"
[[ $(cat "$SYS/ports/2/pkeys/1") == 0x8001 ]]
check_err $? "CA port 2 lost 0x8001 too"
! ip netns exec "$A" ping -c 2 -W 1 198.51.100.2 >/dev/null
check_err $? "0x8001 traffic passed switch port 2 without the P_Key"
(( $(sw_discards 2 xmit_constraint) > xc ))
(($? == 0)) || check_err 1 "switch port 2 xmit_constraint stayed at $xc: $(cat "$SOFTIB_DBG/switch")"
pings
check_err $? "the parent (0xffff) stopped working"
rc=$(sw_discards 2 rcv_constraint)
swset enforce 2 8 >/dev/null
check_err $? "PortInfo Set of switch port 2's enforcement"
out=$(smpquery portinfo 256 2 2>&1)
[[ $(smp_field "$out" PartEnforceInb) == 1 && $(smp_field "$out" PartEnforceOutb) == 0 ]]
check_err $? "switch port 2 enforcement not inbound only: $out"
ip -n "$A" neigh flush dev ib0.8001
! ip netns exec "$A" ping -c 2 -W 1 198.51.100.2 >/dev/null
check_err $? "0x8001 answers passed switch port 2 inbound without the P_Key"
(( $(sw_discards 2 rcv_constraint) > rc ))
(($? == 0)) || check_err 1 "switch port 2 rcv_constraint stayed at $rc: $(cat "$SOFTIB_DBG/switch")"
swset pkeys 2 0xffff 0x8001 >/dev/null && swset enforce 2 12 >/dev/null
check_err $? "switch port 2 restored"
slowwait 20 pings 198.51.100.2
check_err $? "no 0x8001 traffic with the P_Key back at switch port 2"
log_test "partition enforcement at a switch port, inbound and outbound"

ktap_finish
