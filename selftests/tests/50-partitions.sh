#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 240
#
# Partition enforcement on the softib fabric, driven by a partitions.conf
# policy: per-partition children talk, cross-partition traffic does not
# (and is counted), limited members talk only to full members, and a bad
# policy is refused with EINVAL while the old one stays in force.

source "$(dirname "$0")/../lib.sh"

require_cmd ping

D=$SOFTIB_DBG
SYS=$SOFTIB_SYS

ktap_header 9
ktap_diag "IPOIB=$IPOIB"

ipoib_fabric_up
ktap_result $? "softib and ib_ipoib up, parents in two netns" || ktap_finish

softib_policy "# two IPoIB partitions for both ports" \
	"Default=0x7fff, ipoib : ALL=full;" \
	"p1=0x0001, ipoib : ALL=full;" \
	"p2=0x0002, ipoib, mtu=4 : 0x02110bff00000001=full, 0x02110bff00000002=full;"
RET=0
check_err $? "policy write failed"
for p in 1 2; do
	t="$(cat $SYS/ports/$p/pkeys/0) $(cat $SYS/ports/$p/pkeys/1) $(cat $SYS/ports/$p/pkeys/2)"
	[[ $t == "0xffff 0x8001 0x8002" ]]
	check_err $? "port $p P_Key table: $t"
done
grep -q '^p1=0x0001, ipoib : ALL=full;$' $D/partitions
check_err $? "policy does not read back"
log_test "policy sets the P_Key tables (sysfs) and reads back"

ipoib_child "$A" ib0 8001 198.51.100.1/24 && ipoib_child "$B" ib1 8001 198.51.100.2/24 &&
	ipoib_child "$A" ib0 8002 203.0.113.1/24 && ipoib_child "$B" ib1 8002 203.0.113.2/24 &&
	slowwait 20 ipoib_lower_up "$A" ib0.8001 && slowwait 20 ipoib_lower_up "$B" ib1.8001 &&
	slowwait 20 ipoib_lower_up "$A" ib0.8002 && slowwait 20 ipoib_lower_up "$B" ib1.8002
ktap_result $? "children 0x8001 and 0x8002 on both ports get carrier"

RET=0
ip netns exec "$A" ping -c 2 -i 0.2 -w 4 -W 2 198.51.100.2 >/dev/null
check_err $? "0x8001 pair does not ping"
ip netns exec "$A" ping -c 2 -i 0.2 -w 4 -W 2 203.0.113.2 >/dev/null
check_err $? "0x8002 pair does not ping"
log_test "each partition's child pair pings"

# Force the 0x8001 child in A onto B's 0x8002 child: same subnet, and a
# static neighbour so the unicast really goes out with P_Key 0x8001.
ip -n "$A" addr add 10.255.0.1/24 dev ib0.8001
ip -n "$B" addr add 10.255.0.2/24 dev ib1.8002
lladdr=$(ipoib_hwaddr "$B" ib1.8002)
ip -n "$A" neigh replace 10.255.0.2 lladdr "$lladdr" dev ib0.8001 nud permanent
before=$(softib_counter 2 drop_pkey)
ip netns exec "$A" ping -c 3 -W 1 10.255.0.2 >/dev/null
check_fail $? "0x8001 reached the 0x8002 child"
after=$(softib_counter 2 drop_pkey)
ktap_diag "port 2 drop_pkey: $before -> $after"
((after > before))
check_err $? "no partition violation counted on port 2"
log_test "0x8001 cannot reach 0x8002 on one subnet; drop_pkey counts it"

# Limited membership: A full, B limited in 0x0003 -> they talk.
softib_policy "Default=0x7fff, ipoib : ALL=full;" \
	"p1=0x0001, ipoib : ALL=full;" "p2=0x0002, ipoib : ALL=full;" \
	"p3=0x0003, ipoib : 0x02110bff00000001=full, 0x02110bff00000002=limited;"
RET=0
[[ $(cat $SYS/ports/2/pkeys/3) == 0x0003 && $(cat $SYS/ports/1/pkeys/3) == 0x8003 ]]
(($? == 0)) || check_err 1 "P_Key 3: port1 $(cat $SYS/ports/1/pkeys/3) port2 $(cat $SYS/ports/2/pkeys/3)"
ipoib_child "$A" ib0 8003 100.64.3.1/24 && ipoib_child "$B" ib1 8003 100.64.3.2/24 &&
	slowwait 20 ipoib_lower_up "$A" ib0.8003 && slowwait 20 ipoib_lower_up "$B" ib1.8003
check_err $? "0x8003 children have no carrier"
ip netns exec "$A" ping -c 2 -i 0.2 -w 4 -W 2 100.64.3.2 >/dev/null
check_err $? "full <-> limited does not ping"
log_test "full member and limited member talk"

# Both limited -> they don't. Unicast with a static neighbour too.
ip -n "$A" neigh flush dev ib0.8003
softib_policy "Default=0x7fff, ipoib : ALL=full;" \
	"p1=0x0001, ipoib : ALL=full;" "p2=0x0002, ipoib : ALL=full;" \
	"p3=0x0003, ipoib, defmember=limited : ALL;"
RET=0
[[ $(cat $SYS/ports/1/pkeys/3) == 0x0003 ]]
(($? == 0)) || check_err 1 "port 1 P_Key 3 is $(cat $SYS/ports/1/pkeys/3)"
lladdr=$(ipoib_hwaddr "$B" ib1.8003)
ip -n "$A" neigh replace 100.64.3.2 lladdr "$lladdr" dev ib0.8003 nud permanent
before=$(softib_counter 2 drop_pkey)
ip netns exec "$A" ping -c 3 -W 1 100.64.3.2 >/dev/null
check_fail $? "limited <-> limited pinged"
# A driver with a cached path sends and the port drops (drop_pkey); one
# that asks the SA again gets no path and sends nothing: both are right.
ktap_diag "port 2 drop_pkey: $before -> $(softib_counter 2 drop_pkey)"
log_test "two limited members do not talk"

good=$(cat $D/partitions)
tables="$(cat $SYS/ports/1/pkeys/*)"
out=$(softib_policy "Default=0x7fff, ipoib : ALL=full;" "broken=0x0005 ipoib : ALL;" 2>&1)
rc=$?
RET=0
check_fail $rc "bad policy accepted"
grep -q "Invalid argument" <<<"$out"
check_err $? "bad policy: '$out' is not EINVAL"
dmesg | grep -q "partitions: line 2 column 15: expected ',' or ':' after the partition name; the previous policy stays in force"
check_err $? "no log line naming line 2 column 15"
[[ $(cat $D/partitions) == "$good" && $(cat $SYS/ports/1/pkeys/*) == "$tables" ]]
check_err $? "old policy not in force"
log_test "bad policy: EINVAL, line/column logged, old policy kept"

RET=0
for bad in "x=0x0000 : ALL;" "x=0x0001, bogus : ALL;" "x=0x0001 : ALL=half;" "x=0x0001 : ALL"; do
	softib_policy "$bad" 2>/dev/null
	check_fail $? "accepted: $bad"
done
[[ $(cat $D/partitions) == "$good" ]]
check_err $? "a rejected policy changed the active one"
log_test "zero P_Key, unknown flag, bad membership, missing ';' rejected"

ktap_finish
