#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 300
#
# softib's subnet management agent and performance management agent, as
# infiniband-diags sees them under the built-in SM: directed-route SMPs to
# the local ports (ibaddr, smpquery -D), LID-routed SMPs between ports,
# the SM's SMInfo (sminfo), port counters that move with IPoIB traffic
# (perfquery, sysfs counters/, rdma statistic), PortInfo Sets from
# ibportstate (disable/enable, LID change, M_Key protection) and the
# status of what the SMA does not support. Each answer is checked against
# what sysfs says of the same port.
#
# The cases that read softib alone with the fabric tools run with our
# ib_ipoib; with in-tree they are skips (softib_case in lib.sh). The
# cases whose IPoIB traffic or carrier is checked run with both.

source "$(dirname "$0")/../lib.sh"

require_cmd ping python3 smpquery smpdump ibaddr sminfo perfquery ibportstate saquery

SYS=$SOFTIB_SYS

ktap_header 18
ktap_diag "IPOIB=$IPOIB"

modprobe ib_umad
ipoib_fabric_up && ip netns exec "$A" ping -c 2 -i 0.2 -w 4 -W 2 192.0.2.2 >/dev/null
ktap_result $? "ib0/ib1 up and pinging" || ktap_finish

if softib_case "ibaddr: directed route to each local port"; then
	RET=0
	out=$(ibaddr 2>&1)
	[[ $out == "GID fe80::211:bff:0:1 LID start 0x1 end 0x1" ]]
	check_err $? "ibaddr: $out"
	out=$(ibaddr -C softib0 -P 2 2>&1)
	[[ $out == "GID fe80::211:bff:0:2 LID start 0x2 end 0x2" ]]
	check_err $? "ibaddr -P 2: $out"
	log_test "ibaddr: directed route to each local port"
fi

if softib_case "NodeInfo by directed route and by LID: the receiving port's GUID"; then
	RET=0
	out=$(smpquery -D nodeinfo 0 2>&1)
	check_err $? "smpquery -D nodeinfo 0: $out"
	smp_expect "$out" NodeType "Channel Adapter"
	smp_expect "$out" NumPorts 2
	smp_expect "$out" Guid 0x02110bff00000000
	smp_expect "$out" SystemGuid 0x02110bff00000000
	smp_expect "$out" PortGuid 0x02110bff00000001
	smp_expect "$out" LocalPort 1
	smp_expect "$out" PartCap 32
	smp_expect "$out" VendorId 0xffffff
	out=$(smpquery nodeinfo 2 2>&1)
	check_err $? "smpquery nodeinfo 2: $out"
	smp_expect "$out" PortGuid 0x02110bff00000002
	smp_expect "$out" LocalPort 2
	log_test "NodeInfo by directed route and by LID: the receiving port's GUID"
fi

if softib_case "PortInfo agrees with sysfs (LID, SM LID, state, 4X EDR, MTU)"; then
	RET=0
	for p in 1 2; do
		out=$(smpquery portinfo "$p" 2>&1)
		check_err $? "smpquery portinfo $p: $out"
		smp_expect "$out" Lid "$(printf %d "$(<"$SYS/ports/$p/lid")")"
		smp_expect "$out" SMLid "$(printf %d "$(<"$SYS/ports/$p/sm_lid")")"
		smp_expect "$out" LocalPort "$p"
		smp_expect "$out" LinkState Active
		smp_expect "$out" PhysLinkState LinkUp
		smp_expect "$out" LinkWidthActive 4X
		smp_expect "$out" LinkSpeedExtActive "25.78125 Gbps"
		smp_expect "$out" MtuCap 4096
		smp_expect "$out" NeighborMTU 4096
		smp_expect "$out" GidPrefix 0xfe80000000000000
		cap=$(smp_field "$out" CapMask)
		(( cap == $(cat "$SYS/ports/$p/cap_mask") ))
		(($? == 0)) || check_err 1 "port $p CapMask $cap, sysfs $(cat "$SYS/ports/$p/cap_mask")"
		[[ $(cat "$SYS/ports/$p/rate") == "100 Gb/sec (4X EDR)" ]]
		(($? == 0)) || check_err 1 "port $p sysfs rate $(cat "$SYS/ports/$p/rate")"
	done
	log_test "PortInfo agrees with sysfs (LID, SM LID, state, 4X EDR, MTU)"
fi

RET=0
echo "softib sma test node" >"$SYS/node_desc"
out=$(smpquery nodedesc 2 2>&1)
[[ $out == *"Node Description:"*"softib sma test node"* ]]
check_err $? "smpquery nodedesc: $out"
softib_policy "Default=0x7fff, ipoib : ALL=full;" "p1=0x0001, ipoib : ALL=limited;"
check_err $? "policy write failed"
out=$(smpquery pkeys 2 2>&1)
grep -q "^   0: 0xffff 0x0001 0x0000" <<<"$out"
check_err $? "smpquery pkeys 2: $out"
[[ $(cat "$SYS/ports/2/pkeys/1") == 0x0001 ]]
(($? == 0)) || check_err 1 "sysfs pkeys/1 $(cat "$SYS/ports/2/pkeys/1")"
log_test "NodeDescription and P_KeyTable follow node_desc and the policy"

if softib_case "SLtoVL and VLArbitration tables read (VL0 only, 32 entries)"; then
	RET=0
	out=$(smpquery sl2vl 1 2>&1)
	grep -q "ports: in  0, out  0: | 0| 0| 0|" <<<"$out"
	check_err $? "smpquery sl2vl: $out"
	out=$(smpquery vlarb 1 2>&1)
	check_err $? "smpquery vlarb: $out"
	grep -q "High priority VL Arbitration Table" <<<"$out"
	check_err $? "no high priority table: $out"
	log_test "SLtoVL and VLArbitration tables read (VL0 only, 32 entries)"
fi

# Attribute 0x99 is nobody's: "unsupported method/attribute" (0x000c),
# with the direction bit on the directed-route answer.
if softib_case "unknown attribute answers 0x000c; a DR path through no port fails fast"; then
	RET=0
	errors=$(softib_stat sma_errors)
	out=$(smpdump -D 0 0x99 2>&1)
	grep -q "SMP status: 0x800c" <<<"$out"
	check_err $? "smpdump -D 0 0x99: $out"
	out=$(smpdump 2 0x99 2>&1)
	grep -q "SMP status: 0xc$" <<<"$out"
	check_err $? "smpdump 2 0x99: $out"
	(( $(softib_stat sma_errors) == errors + 2 ))
	(($? == 0)) || check_err 1 "sma_errors $(softib_stat sma_errors), was $errors"
	# a directed route out of a port the CA does not have: refused by ib_mad
	timeout 10 smpquery -D nodeinfo 0,3 >/dev/null 2>&1
	rc=$?
	((rc != 0 && rc != 124))
	check_err $? "DR path through port 3: exit $rc"
	log_test "unknown attribute answers 0x000c; a DR path through no port fails fast"
fi

# Malformed SMPs from a local umad client (11-softib-sma.py): bad
# versions, methods and attributes answered with their status, bad hop
# counts, hop pointers and paths dropped, 64 random SMPs; the SMA still
# answers afterwards, and the kernel reports nothing (the runner checks).
if softib_case "malformed SMPs from umad: the right status or dropped, no harm"; then
	RET=0
	umad=
	for d in /sys/class/infiniband_mad/umad*; do
		[[ $(<"$d/ibdev") == softib0 && $(<"$d/port") == 1 ]] && umad=${d##*/}
	done
	seed=${SEED:-$RANDOM}
	ktap_diag "umad client: /dev/infiniband/$umad, seed $seed"
	out=$(timeout 120 python3 "$(dirname "$0")/11-softib-sma.py" "/dev/infiniband/$umad" "$seed" 2>&1)
	check_err $? "11-softib-sma.py failed"
	[[ $RET -eq 0 ]] || ktap_diag "$out"
	log_test "malformed SMPs from umad: the right status or dropped, no harm"
fi

if softib_case "sminfo: the built-in SM is master at LID 256"; then
	RET=0
	out=$(sminfo 2>&1)
	[[ $out =~ ^sminfo:\ sm\ lid\ 256\ sm\ guid\ 0x2110bff00010000,\ activity\ count\ ([0-9]+)\ priority\ 15\ state\ 3\ SMINFO_MASTER$ ]]
	check_err $? "sminfo: $out"
	n1=${BASH_REMATCH[1]}
	out=$(sminfo 2>&1)
	[[ $out =~ activity\ count\ ([0-9]+) ]] && (( BASH_REMATCH[1] > n1 ))
	check_err $? "activity count did not move: $out"
	log_test "sminfo: the built-in SM is master at LID 256"
fi

# PortCounters: cleared by a Set, then 20 pings of 1,000 bytes (each way
# a request and a reply) count at least that many packets and words.
RET=0
pq() { perfquery "$@" 2>&1; }
before_dbg=$(softib_counter 1 xmit_packets)
pq -R 1 1 >/dev/null && pq -R 2 2 >/dev/null
check_err $? "perfquery -R"
out=$(pq 1 1)
(( $(smp_field "$out" PortXmitPkts) < before_dbg ))
check_err $? "counters not cleared: $out"
(( $(softib_counter 1 xmit_packets) >= before_dbg ))
check_err $? "debugfs counter went back with the PMA's"
ip netns exec "$A" ping -c 20 -i 0.05 -s 1000 -W 2 192.0.2.2 >/dev/null
check_err $? "ping"
out=$(pq 1 1)
(( $(smp_field "$out" PortXmitPkts) >= 20 && $(smp_field "$out" PortRcvPkts) >= 20 ))
check_err $? "port 1 packets: $out"
(( $(smp_field "$out" PortXmitData) >= 20 * 1000 / 4 ))
check_err $? "port 1 data (4-byte words): $out"
out=$(pq 2 2)
(( $(smp_field "$out" PortRcvData) >= 20 * 1000 / 4 ))
check_err $? "port 2 data: $out"
(( $(cat "$SYS/ports/2/counters/port_rcv_packets") >= 20 ))
(($? == 0)) || check_err 1 "sysfs port_rcv_packets $(cat "$SYS/ports/2/counters/port_rcv_packets")"
log_test "perfquery and sysfs counters: cleared, then count IPoIB traffic"

RET=0
mc=$(cat "$SYS/ports/1/counters/multicast_xmit_packets")
ip netns exec "$A" ping -b -c 3 -i 0.2 -W 1 192.0.2.255 >/dev/null 2>&1
out=$(pq -x 1 1)
(( $(smp_field "$out" PortMulticastXmitPkts) >= mc + 3 ))
check_err $? "multicast xmit not counted (was $mc): $out"
(( $(smp_field "$out" PortUnicastXmitPkts) + $(smp_field "$out" PortMulticastXmitPkts) == \
   $(smp_field "$out" PortXmitPkts) ))
check_err $? "unicast + multicast != all: $out"
log_test "PortCountersExtended: broadcasts count as multicast"

# An SMP to a LID nobody has is discarded at the sending port.
RET=0
nd=$(softib_counter 1 drop_no_dest)
timeout 10 smpquery -t 200 nodeinfo 77 >/dev/null 2>&1
check_fail $? "LID 77 answered"
out=$(rdma statistic show link softib0/1 2>&1)
check_err $? "rdma statistic: $out"
[[ $out =~ drop_no_dest\ ([0-9]+) ]] && (( BASH_REMATCH[1] > nd ))
check_err $? "drop_no_dest did not move from $nd: $out"
for c in drop_no_qp drop_pkey drop_qkey drop_no_rwqe drop_too_long drop_port_down; do
	[[ $out == *" $c $(softib_counter 1 $c) "* ]]
	check_err $? "$c differs from debugfs: $out"
done
out=$(pq 1 1)
(( $(smp_field "$out" PortXmitDiscards) >= 1 ))
check_err $? "PortXmitDiscards: $out"
log_test "rdma statistic shows the drop counters; discards reach the PMA"

# ibportstate on port 2 from port 2 itself (directed route, hop 0):
# disabled, it stays down and ib1 loses carrier; enabled, it trains and
# the built-in SM makes it active again.
RET=0
ibportstate -C softib0 -P 2 -D 0 2 disable >/dev/null 2>&1
check_err $? "ibportstate disable"
[[ $(cat "$SYS/ports/2/state") == "1: DOWN" && $(cat "$SYS/ports/2/phys_state") == "3: Disabled" ]]
(($? == 0)) || check_err 1 "port 2: $(cat "$SYS/ports/2/state"), $(cat "$SYS/ports/2/phys_state")"
slowwait 10 sh -c "! ip -n $B link show ib1 | grep -q LOWER_UP" >/dev/null
check_err $? "ib1 kept carrier"
sleep 0.5
[[ $(cat "$SYS/ports/2/phys_state") == "3: Disabled" ]]
(($? == 0)) || check_err 1 "a disabled port trained: $(cat "$SYS/ports/2/phys_state")"
ibportstate -C softib0 -P 2 -D 0 2 enable >/dev/null 2>&1
check_err $? "ibportstate enable"
slowwait 10 softib_ports_active 2 >/dev/null
(($? == 0)) || check_err 1 "port 2 not active again: $(cat "$SYS/ports/2/state")"
slowwait 20 ipoib_lower_up "$B" ib1 >/dev/null &&
	slowwait 20 ip netns exec "$A" ping -c 1 -W 1 192.0.2.2 >/dev/null
check_err $? "no traffic after enable"
log_test "ibportstate disable/enable: port down and disabled, then back"

# A new LID for port 2: ib_core sees LID_CHANGE, the SA's paths follow.
# Port 1's IPoIB keeps its path to the old LID until the SM tells it to
# look again (client reregister), as on a real fabric.
RET=0
reregister() {
	echo client_reregister >"$SOFTIB_DBG/ports/1/event"
	ip -n "$A" neigh flush dev ib0
}
ibportstate -C softib0 -P 2 -D 0 2 lid 0x21 >/dev/null 2>&1
check_err $? "ibportstate lid"
[[ $(cat "$SYS/ports/2/lid") == 0x21 ]]
(($? == 0)) || check_err 1 "sysfs lid $(cat "$SYS/ports/2/lid")"
out=$(smpquery nodeinfo 0x21 2>&1)
smp_expect "$out" LocalPort 2
reregister
slowwait 20 ip netns exec "$A" ping -c 1 -W 1 192.0.2.2 >/dev/null
check_err $? "no traffic to LID 0x21"
ibportstate -C softib0 -P 2 -D 0 2 lid 2 >/dev/null 2>&1 &&
	[[ $(cat "$SYS/ports/2/lid") == 0x2 ]]
(($? == 0)) || check_err 1 "LID 2 back: $(cat "$SYS/ports/2/lid")"
reregister
slowwait 20 ip netns exec "$A" ping -c 1 -W 1 192.0.2.2 >/dev/null
check_err $? "no traffic after LID 2 back"
log_test "PortInfo Set of the LID: routed by the new LID, and back"

# M_Key 0x1234 at protect level 2: a Get without the key is
# dropped and counted; with the key it works, and clearing the key ends it.
if softib_case "M_Key protect level 2: keyless SMPs dropped, keyed ones work"; then
	RET=0
	ibportstate -C softib0 -P 2 -D 0 2 mkey 0x1234 mkeyprot 2 >/dev/null 2>&1
	check_err $? "ibportstate mkey"
	dropped=$(softib_stat sma_dropped)
	timeout 10 smpquery -t 200 portinfo 2 >/dev/null 2>&1
	check_fail $? "a Get without the M_Key was answered"
	(( $(softib_stat sma_dropped) > dropped ))
	check_err $? "sma_dropped did not move"
	out=$(smpquery -y 0x1234 portinfo 2 2>&1)
	check_err $? "a Get with the M_Key failed: $out"
	smp_expect "$out" ProtectBits 2
	(( $(smp_field "$out" MkeyViolations) >= 1 ))
	check_err $? "MkeyViolations: $out"
	ibportstate -y 0x1234 -C softib0 -P 2 -D 0 2 mkey 0 mkeyprot 0 >/dev/null 2>&1
	check_err $? "clearing the M_Key"
	out=$(smpquery portinfo 2 2>&1)
	smp_expect "$out" ProtectBits 0
	log_test "M_Key protect level 2: keyless SMPs dropped, keyed ones work"
fi

# The built-in SA's tables (GetTable, sent by RMPP): a NodeRecord per CA
# port and one for the switch, a PortInfoRecord per port of each, a
# PathRecord between any two of them, the multicast groups.
if softib_case "saquery: NodeRecords and PortInfoRecords of the built-in SA"; then
	RET=0
	done0=$(softib_stat sa_rmpp_done)
	out=$(saquery 2>&1)
	check_err $? "saquery failed"
	(($(grep -c "NodeRecord dump" <<<"$out") == 3))
	check_err $? "not three NodeRecords: $out"
	for lid in 1 2; do
		grep -qE "^[[:space:]]+lid\.+$lid$" <<<"$out" &&
			grep -qE "^[[:space:]]+port_guid\.+0x02110bff0000000$lid$" <<<"$out"
		check_err $? "no NodeRecord of port $lid"
	done
	grep -qE "^[[:space:]]+node_type\.+Switch$" <<<"$out" &&
		grep -qE "^[[:space:]]+lid\.+256$" <<<"$out"
	check_err $? "no NodeRecord of the switch at LID 256"
	# (saquery prints the newline that "echo >node_desc" left as a space)
	out=$(saquery -O 2 2>&1)
	[[ ${out% } == "$(cat "$SYS/node_desc")" ]]
	check_err $? "saquery -O 2: $out"
	out=$(saquery PortInfoRecord 2>&1)
	(($(grep -c "PortInfoRecord dump" <<<"$out") == 5))
	check_err $? "not five PortInfoRecords (two CA ports, three switch ports)"
	out=$(saquery -s 2>&1)
	grep -qE "EndPortLid\.+256$" <<<"$out" && ! grep -qE "EndPortLid\.+[12]$" <<<"$out"
	check_err $? "saquery -s: the IsSM port is not the switch's: $out"
	(( $(softib_stat sa_rmpp_done) > done0 ))
	check_err $? "no RMPP transfer completed"
	log_test "saquery: NodeRecords and PortInfoRecords of the built-in SA"
fi

if softib_case "saquery: PathRecords and multicast groups of the built-in SA"; then
	RET=0
	out=$(saquery -p 2>&1)
	(($(grep -c "PathRecord dump" <<<"$out") == 9))
	check_err $? "not nine PathRecords between three ends: $out"
	out=$(saquery -p --src-to-dst 1:2 2>&1)
	grep -qE "dlid\.+2$" <<<"$out" && grep -qE "slid\.+1$" <<<"$out" &&
		grep -qE "pkey\.+0xFFFF$" <<<"$out"
	check_err $? "saquery -p --src-to-dst 1:2: $out"
	out=$(saquery -g 2>&1)
	(($(grep -c "MGID.*ff12:401b:ffff::ffff:ffff$" <<<"$out") == 1))
	check_err $? "saquery -g: not one IPv4 broadcast group: $out"
	# untrusted: no PortGID; trusted (an SM_Key): a record per member
	out=$(saquery -m 2>&1)
	! grep -q "PortGid.*fe80::211:bff:0:[12]$" <<<"$out"
	check_err $? "saquery -m shows port GIDs without an SM_Key"
	out=$(saquery --smkey 1 -m 2>&1)
	grep -q "PortGid.*fe80::211:bff:0:1$" <<<"$out" &&
		grep -q "PortGid.*fe80::211:bff:0:2$" <<<"$out"
	check_err $? "saquery --smkey 1 -m: not both ports as members: $out"
	log_test "saquery: PathRecords and multicast groups of the built-in SA"
fi

# A requester that never acks (11-softib-sa-tables.py): at most 16 tables
# wait for an ACK, the oldest goes first, and after the retries every one
# is given up; the SA still answers afterwards.
if softib_case "unacknowledged tables: bounded, evicted oldest first, given up"; then
	RET=0
	evicted=$(softib_stat sa_rmpp_evicted) aborted=$(softib_stat sa_rmpp_aborted)
	out=$(timeout 60 python3 "$(dirname "$0")/11-softib-sa-tables.py" "/dev/infiniband/$umad" 20 2>&1)
	check_err $? "11-softib-sa-tables.py: $out"
	ktap_diag "${out#\# }"
	(( $(softib_stat sa_rmpp_evicted) >= evicted + 4 ))
	(($? == 0)) || check_err 1 "sa_rmpp_evicted $(softib_stat sa_rmpp_evicted), was $evicted: no bound"
	(( $(softib_stat sa_rmpp_active) <= 16 ))
	(($? == 0)) || check_err 1 "sa_rmpp_active $(softib_stat sa_rmpp_active) above the bound"
	slowwait 20 sh -c "grep -qx 'sa_rmpp_active 0' $SOFTIB_DBG/stats"
	(($? == 0)) || check_err 1 "transfers never given up: $(softib_stat sa_rmpp_active) active"
	(( $(softib_stat sa_rmpp_aborted) >= aborted + 16 ))
	(($? == 0)) || check_err 1 "sa_rmpp_aborted $(softib_stat sa_rmpp_aborted), was $aborted"
	out=$(saquery 2>&1)
	(($(grep -c "NodeRecord dump" <<<"$out") == 3))
	check_err $? "saquery after the stuck requester: $out"
	log_test "unacknowledged tables: bounded, evicted oldest first, given up"
fi

ktap_finish
