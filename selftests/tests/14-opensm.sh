#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 420
# timeout-long: 1200
#
# Debian's OpenSM manages softib (sm=none): the ports wait in Init with
# no LID until OpenSM, started on port 1, brings the subnet up through
# the SMAs and the switch. Then what the fabric tools show (LIDs, the
# switch, the SA's records), IPoIB over OpenSM's SA (the broadcast group,
# path records): parents in datagram and connected mode, P_Key children
# made through sysfs and netlink, a partition added and removed by
# editing partitions.conf and sending SIGHUP, OpenSM restarted (its
# client reregister: the groups are joined again at the new SA) and
# stopped (traffic goes on). Last, one partitions.conf given to the
# built-in SM and to OpenSM gives the same P_Key tables. LONG=1: the
# partition comes and goes 10 times, and OpenSM restarts 5 times under a
# TCP stream that must survive every restart.
#
# The cases that read softib alone with the fabric tools run with our
# ib_ipoib; with in-tree they are skips (softib_case in lib.sh). The
# cases whose IPoIB traffic or carrier is checked run with both.

source "$(dirname "$0")/../lib.sh"

require_cmd ping saquery sminfo ibnetdiscover ibswitches ibhosts iblinkinfo smpquery perfquery ibstat ibstatus ibaddr rdma

SYS=$SOFTIB_SYS
G1=$(osm_port_guid 1)
G2=$(osm_port_guid 2)
DEF="Default=0x7fff, ipoib : ALL=full;"
P1="p1=0x8001, ipoib : ALL=full;"
P2="p2=0x8002, ipoib : ALL=full;"
HUP_RUNS=1 RESTART_RUNS=1
[[ $LONG == 1 ]] && HUP_RUNS=10 RESTART_RUNS=5

ktap_header 11
ktap_diag "IPOIB=$IPOIB"

# carrier NS DEV REASON: DEV's carrier (1/0) is as REASON says and, for
# ours, carrier_reason is REASON ("up" or why not)
carrier() {
	local c

	c=$(ip netns exec "$1" cat "/sys/class/net/$2/carrier" 2>/dev/null)
	[[ $c == "$([[ $3 == up ]] && echo 1 || echo 0)" ]] || return 1
	[[ $IPOIB == intree ]] ||
		[[ $(ip netns exec "$1" cat "/sys/class/net/$2/carrier_reason") == "$3" ]]
}

RET=0
modprobe -a ib_umad ib_cm
load_softib sm=none
check_err $? "softib sm=none does not load"
defer unload_softib
defer osm_stop
for p in 1 2; do
	slowwait 10 grep -q "INIT" "$SYS/ports/$p/state"
	(($? == 0)) || check_err 1 "port $p: $(cat $SYS/ports/$p/state), not INIT"
	[[ $(cat $SYS/ports/$p/lid) == 0x0 && $(cat $SYS/ports/$p/sm_lid) == 0x0 ]]
	(($? == 0)) || check_err 1 "port $p has LID $(cat $SYS/ports/$p/lid), SM LID $(cat $SYS/ports/$p/sm_lid) without an SM"
done
out=$(echo "$DEF" | cat 2>&1 >"$SOFTIB_DBG/partitions")
check_fail $? "the built-in partitions file took a policy with sm=none"
[[ $out == *"Device or resource busy"* ]]
check_err $? "partitions write: '$out', not EBUSY"
load_ipoib && defer unload_ipoib && slowwait 10 test -d /sys/class/net/ib1 >/dev/null
check_err $? "ib_ipoib does not load"
setup_ns A B
printf 'link set ib0 netns %s\nlink set ib1 netns %s\n' "$A" "$B" | ip -batch - &&
	printf 'addr add 192.0.2.1/24 dev ib0\nlink set ib0 up\n' | ip -n "$A" -batch - &&
	printf 'addr add 192.0.2.2/24 dev ib1\nlink set ib1 up\n' | ip -n "$B" -batch -
check_err $? "ib0 and ib1 not placed"
sleep 1
carrier "$A" ib0 port-down
check_err $? "ib0 has carrier (or the wrong reason) on a port in Init"
log_test "sm=none: ports in Init without LIDs, no built-in policy, no carrier"

RET=0
osm_write_partitions "$DEF" "$P1"
osm_start
(($? == 0)) || check_err 1 "OpenSM did not bring the ports up: $(tail -n 5 $OSM_DIR/opensm.log)"
l1=$(cat $SYS/ports/1/lid) l2=$(cat $SYS/ports/2/lid)
[[ $l1 != 0x0 && $l2 != 0x0 && $l1 != "$l2" ]]
check_err $? "LIDs $l1 and $l2"
[[ $(cat $SYS/ports/1/sm_lid) == "$l1" && $(cat $SYS/ports/2/sm_lid) == "$l1" ]]
check_err $? "SM LID is not port 1's LID $l1"
out=$(sminfo 2>&1)
[[ $out == "sminfo: sm lid $((l1)) sm guid 0x2110bff00000001, activity count "*" priority 0 state 3 SMINFO_MASTER" ]]
check_err $? "sminfo: $out"
out=$(ibstat softib0 2>&1)
(($(grep -c "State: Active" <<<"$out") == 2)) &&
	grep -q "Base lid: $((l1))$" <<<"$out" && grep -q "Base lid: $((l2))$" <<<"$out" &&
	(($(grep -c "SM lid: $((l1))$" <<<"$out") == 2))
check_err $? "ibstat: $out"
(($(ibstatus 2>&1 | grep -c "state:.*4: ACTIVE") == 2))
check_err $? "ibstatus: not two ACTIVE ports"
out=$(ibaddr 2>&1)
[[ $out == "GID fe80::211:bff:0:1 LID start $l1 end $l1" ]]
check_err $? "ibaddr: $out"
out=$(rdma statistic show link softib0/2 2>&1)
[[ $out == *" drop_pkey $(softib_counter 2 drop_pkey) "* ]]
check_err $? "rdma statistic: $out"
log_test "OpenSM on port 1 is master; ibstat, ibstatus, ibaddr, rdma statistic"

if softib_case "ibnetdiscover, ibswitches, ibhosts, iblinkinfo, smpquery with OpenSM's LIDs"; then
	RET=0
	out=$(ibnetdiscover 2>&1)
	check_err $? "ibnetdiscover failed"
	sw=$(sed -n 's/^Switch[[:space:]]\+2 "S-02110bff00010000"[[:space:]]\+# "softib switch" base port 0 lid \([0-9]\+\) lmc 0$/\1/p' <<<"$out")
	[[ -n $sw && $sw != $((l1)) && $sw != $((l2)) ]]
	check_err $? "no switch line with its own LID"
	for p in 1 2; do
		lp=$((p == 1 ? l1 : l2))
		grep -qE "^\[$p\][[:space:]]+\"H-02110bff00000000\"\[$p\]\(2110bff0000000$p\) .*# \"softib software HCA\" lid $lp 4xEDR$" <<<"$out"
		check_err $? "switch port $p does not lead to CA port $p (LID $lp)"
	done
	[[ $RET -eq 0 ]] || ktap_diag "$out"
	out=$(ibswitches 2>&1)
	[[ $out =~ ^Switch[[:space:]]+:\ 0x02110bff00010000\ ports\ 2\ \"softib\ switch\"\ base\ port\ 0\ lid\ $sw\ lmc\ 0$ ]]
	check_err $? "ibswitches: $out"
	out=$(ibhosts 2>&1)
	[[ $out =~ ^Ca[[:space:]]+:\ 0x02110bff00000000\ ports\ 2\ \"softib\ software\ HCA\"$ ]]
	check_err $? "ibhosts: $out"
	(($(iblinkinfo 2>/dev/null | grep -c "4X.*Active/  LinkUp") == 4))
	check_err $? "iblinkinfo: not two active links seen from both ends"
	out=$(smpquery pkeys "$((l2))" 2>&1)
	grep -q "0xffff 0x8001" <<<"$out"
	(($? == 0)) || check_err 1 "smpquery pkeys $((l2)): $out"
	# OpenSM (part_enforce both) gives switch port 2 CA port 2's P_Keys and
	# enforces them both ways; the data path goes by them (13-softib-switch)
	out=$(smpquery pkeys "$sw" 2 2>&1)
	grep -q "0x8001" <<<"$out"
	check_err $? "smpquery pkeys $sw 2 (switch port): $out"
	out=$(smpquery portinfo "$sw" 2 2>&1)
	[[ $(smp_field "$out" PartEnforceInb) == 1 && $(smp_field "$out" PartEnforceOutb) == 1 ]]
	check_err $? "OpenSM left switch port 2 without partition enforcement: $out"
	log_test "ibnetdiscover, ibswitches, ibhosts, iblinkinfo, smpquery with OpenSM's LIDs"
fi

if softib_case "OpenSM's SA: node records, the partitions' broadcast groups, path records"; then
	RET=0
	out=$(saquery 2>&1)
	check_err $? "saquery failed"
	for g in 0x02110bff00000001 0x02110bff00000002 0x02110bff00010000; do
		grep -q "port_guid\.*$g" <<<"$out"
		check_err $? "saquery: no NodeRecord with port GUID $g"
	done
	out=$(saquery -g 2>&1)
	grep -q "MGID\.*ff12:401b:ffff::ffff:ffff" <<<"$out" &&
		grep -q "MGID\.*ff12:401b:8001::ffff:ffff" <<<"$out"
	check_err $? "saquery -g: no IPv4 broadcast groups of 0xffff and 0x8001: $out"
	out=$(saquery -p --src-to-dst "$((l1)):$((l2))" 2>&1)
	grep -q "dlid\.*$((l2))$" <<<"$out"
	(($? == 0)) || check_err 1 "saquery -p: no path from LID $((l1)) to $((l2)): $out"
	log_test "OpenSM's SA: node records, the partitions' broadcast groups, path records"
fi

RET=0
slowwait 30 ipoib_lower_up "$A" ib0 && slowwait 30 ipoib_lower_up "$B" ib1
check_err $? "no carrier on ib0/ib1 under OpenSM"
before=$(perfquery "$((l2))" 2 2>/dev/null | sed -n 's/^PortRcvPkts:\.*//p')
ip netns exec "$A" ping -c 3 -i 0.2 -w 5 -W 2 192.0.2.2 >/dev/null
check_err $? "ib0 -> ib1 does not ping"
after=$(perfquery "$((l2))" 2 2>/dev/null | sed -n 's/^PortRcvPkts:\.*//p')
((after >= before + 3))
(($? == 0)) || check_err 1 "perfquery LID $((l2)) PortRcvPkts $before -> $after over 3 pings"
# the IPv6 solicited-node groups exist at the SA only through joins:
# ff02::1:ff00:N for the link-local address of port N's interface
out=$(saquery -g 2>&1)
grep -q "MGID\.*ff12:601b:ffff::1:ff00:1$" <<<"$out" &&
	grep -q "MGID\.*ff12:601b:ffff::1:ff00:2$" <<<"$out"
check_err $? "no solicited-node group of ib0 and ib1 at OpenSM's SA: $out"
log_test "datagram mode: ping over OpenSM's broadcast group and paths"

RET=0
ipoib_sysfs_child "$A" ib0 8001 && ip -n "$A" addr add 198.51.100.1/24 dev ib0.8001 &&
	ip -n "$A" link set ib0.8001 up
check_err $? "ib0.8001 through sysfs"
ipoib_child "$B" ib1 8001 198.51.100.2/24
check_err $? "ib1.8001 through netlink"
slowwait 30 ipoib_lower_up "$A" ib0.8001 && slowwait 30 ipoib_lower_up "$B" ib1.8001 &&
	ip netns exec "$A" ping -c 2 -i 0.2 -w 4 -W 2 198.51.100.2 >/dev/null
check_err $? "0x8001 children do not ping"
log_test "P_Key children over sysfs and netlink"

RET=0
ipoib_set_mode "$A" ib0 connected && ipoib_set_mode "$B" ib1 connected
check_err $? "connected mode refused"
slowwait 20 ip netns exec "$A" ping -c 1 -W 2 -s 3000 192.0.2.2 >/dev/null &&
	ip netns exec "$A" ping -c 3 -i 0.2 -w 5 -W 2 -s 3000 192.0.2.2 >/dev/null
check_err $? "3000-byte pings fail in connected mode"
ipoib_set_mode "$A" ib0 datagram && ipoib_set_mode "$B" ib1 datagram
check_err $? "back to datagram refused"
slowwait 20 ip netns exec "$A" ping -c 1 -W 2 192.0.2.2 >/dev/null
check_err $? "no ping back in datagram mode"
log_test "connected mode over OpenSM's path records"

RET=0
ipoib_child "$A" ib0 8002 203.0.113.1/24 && ipoib_child "$B" ib1 8002 203.0.113.2/24
check_err $? "0x8002 children not created"
sleep 1
carrier "$A" ib0.8002 pkey-absent
check_err $? "ib0.8002 has carrier (or the wrong reason) before its partition exists"
for ((run = 1; run <= HUP_RUNS && RET == 0; run++)); do
	osm_write_partitions "$DEF" "$P1" "$P2" && osm_reread
	slowwait 30 carrier "$A" ib0.8002 up && slowwait 30 carrier "$B" ib1.8002 up
	check_err $? "run $run: 0x8002 children without carrier after SIGHUP"
	slowwait 20 ip netns exec "$A" ping -c 1 -W 2 203.0.113.2 >/dev/null
	check_err $? "run $run: 0x8002 children do not ping"
	osm_write_partitions "$DEF" "$P1" && osm_reread
	slowwait 30 carrier "$A" ib0.8002 pkey-absent &&
		slowwait 30 carrier "$B" ib1.8002 pkey-absent
	check_err $? "run $run: 0x8002 children kept carrier (or the wrong reason) with the partition gone"
	ip netns exec "$A" ping -c 2 -i 0.2 -w 4 -W 2 198.51.100.2 >/dev/null
	check_err $? "run $run: 0x8001 stopped working"
done
log_test "partitions.conf edited and SIGHUP: a partition comes and goes"

RET=0
# LONG=1: a TCP stream over the 0x8001 children across every restart
if ((RESTART_RUNS > 1)); then
	iperf_start "$A" "$B" 198.51.100.2 $((RESTART_RUNS * 12))
	check_err $? "no TCP stream"
fi
for ((run = 1; run <= RESTART_RUNS && RET == 0; run++)); do
	osm_stop
	: >"$OSM_DIR/opensm.log"
	osm_start
	check_err $? "run $run: OpenSM did not start again"
	# the new SA knows the groups that only joins create once the
	# clients reregistered and joined again
	slowwait 30 sh -c 'out=$(saquery -g 2>/dev/null) &&
		echo "$out" | grep -q "MGID\.*ff12:601b:ffff::1:ff00:1$" &&
		echo "$out" | grep -q "MGID\.*ff12:601b:ffff::1:ff00:2$"'
	(($? == 0)) || check_err 1 "run $run: the groups were not joined again at the new SA: $(saquery -g 2>&1 | grep MGID | xargs)"
	slowwait 20 ip netns exec "$A" ping -c 1 -W 2 192.0.2.2 >/dev/null &&
		ip netns exec "$A" ping -c 2 -i 0.2 -w 4 -W 2 198.51.100.2 >/dev/null
	check_err $? "run $run: no ping after OpenSM restarted"
done
if ((RESTART_RUNS > 1)); then
	wait "$IPERF_PID"
	check_err $? "the TCP stream failed across the restarts"
fi
ktap_diag "$RESTART_RUNS restart(s)"
log_test "OpenSM restarted: clients reregister and join again"

RET=0
osm_stop
ip netns exec "$A" ping -c 3 -W 2 192.0.2.2 >/dev/null &&
	ip netns exec "$A" ping -c 3 -W 2 198.51.100.2 >/dev/null
check_err $? "established traffic stopped with OpenSM"
softib_ports_active
check_err $? "ports left Active with OpenSM gone"
log_test "OpenSM stopped: established traffic goes on"

# The same partitions.conf under both SMs: full and limited members, a
# defmember, "both", a port list.
POLICY=(
	"$DEF"
	"lim=0x0005, ipoib, defmember=limited : ALL, $G1=full;"
	"two=0x0006, ipoib : ALL=both;"
	"one=0x0007 : $G2=full;"
	"$P1"
)
if softib_case "one partitions.conf, the same P_Key tables under both SMs"; then
	RET=0
	unload_ipoib && unload_softib
	check_err $? "cannot unload"
	load_softib && slowwait 10 softib_ports_active >/dev/null && softib_policy "${POLICY[@]}"
	check_err $? "built-in SM with the policy"
	builtin1=$(softib_pkeys 1) builtin2=$(softib_pkeys 2)
	unload_softib && load_softib sm=none && osm_write_partitions "${POLICY[@]}" &&
		osm_start
	check_err $? "OpenSM with the policy"
	osm1=$(softib_pkeys 1) osm2=$(softib_pkeys 2)
	[[ $builtin1 == "$osm1" && $builtin2 == "$osm2" ]]
	check_err $? "P_Key tables differ: built-in '$builtin1' / '$builtin2', OpenSM '$osm1' / '$osm2'"
	ktap_diag "port 1: $osm1"
	ktap_diag "port 2: $osm2"
	log_test "one partitions.conf, the same P_Key tables under both SMs"
fi

ktap_finish
