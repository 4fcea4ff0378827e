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

source "$(dirname "$0")/../lib.sh"

require_cmd ping smpquery ibnetdiscover iblinkinfo ibswitches ibhosts ibroute ibportstate

SYS=$SOFTIB_SYS

ktap_header 9
ktap_diag "IPOIB=$IPOIB"

modprobe ib_umad
ipoib_fabric_up ports=4 && ip netns exec "$A" ping -c 2 -W 2 192.0.2.2 >/dev/null
ktap_result $? "ib0/ib1 up and pinging, four ports" || ktap_finish

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

# Through the switch: directed route out of port 1, in and out of the
# switch, into port 2 (and back).
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

# Disabling switch port 2 takes the cable down: CA port 2 and ib1 lose
# their link and cannot train until the switch port is enabled again.
RET=0
ibportstate 256 2 disable >/dev/null 2>&1
check_err $? "ibportstate 256 2 disable"
slowwait 5 sh -c "grep -q DOWN $SYS/ports/2/state" >/dev/null
check_err $? "CA port 2 $(cat "$SYS/ports/2/state")"
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
check_err $? "CA port 2 $(cat "$SYS/ports/2/state")"
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
check_err $? "CA port 3 $(cat "$SYS/ports/3/state")"
out=$(smpquery portinfo 256 3 2>&1)
[[ $(smp_field "$out" LinkState) == Active && $(smp_field "$out" PhysLinkState) == LinkUp ]]
check_err $? "switch port 3: $out"
out=$(perfquery 3 3 2>&1)
(( $(smp_field "$out" LinkDownedCounter) == downed + 1 ))
check_err $? "LinkDownedCounter was $downed: $out"
log_test "switch port set Down: the link trains and is Active again"

ktap_finish
