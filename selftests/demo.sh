#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make demo: softib + our ib_ipoib in one guest. Two partitions, children
# in two namespaces, pings inside a partition, a cross-partition attempt
# the fabric drops and counts, and what a missing P_Key looks like.
# Every step prints the commands it runs ("$ ...") and their output, then
# one "ok"/"not ok" line; the guest kernel's console is not shown
# (run-guest.sh --quiet), but a kernel warning still fails the demo.

source "$(dirname "$0")/lib.sh"

IPOIB=ours
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
# show 'CMD': print a command line as typed, then run it (pipes included)
show() { echo "\$ $*"; eval "$@"; }
run() { echo "\$ $*"; "$@"; }
results=()
result() { # OK|FAIL TEXT
	results+=("$(printf '%-5s %s' "$1" "$2")")
}

ktap_header 5

say "softib: a software InfiniBand HCA, 2 ports on one switch, SM/SA built in"
run modprobe ib_cm
echo "\$ insmod softib.ko"
load_softib && slowwait 10 softib_ports_active >/dev/null &&
	echo "\$ insmod ib_ipoib.ko   # ours: $(modinfo -F version "$KO_DIR/ib_ipoib.ko")" &&
	load_ipoib && slowwait 10 test -d /sys/class/net/ib1 >/dev/null
ktap_result $? "softib and ib_ipoib loaded" || ktap_finish
defer unload_softib
defer unload_ipoib
show "ibstat softib0 | grep -E \"CA '|Port [0-9]|State:|Base lid|SM lid|Port GUID|Link layer\""
run ip -br link show

say "subnet manager policy (OpenSM partitions.conf syntax)"
softib_policy "Default=0x7fff, ipoib : ALL=full;" \
	"storage=0x0001, ipoib : ALL=full;" \
	"compute=0x0002, ipoib : ALL=full;"
run cat "$SOFTIB_DBG/partitions"
echo "port 1 P_Key table: $(cat $SOFTIB_SYS/ports/1/pkeys/{0,1,2} | tr '\n' ' ')"

say "two hosts (netns host-a, host-b), one pkey child per partition each"
run ip netns add host-a && run ip netns add host-b
defer ip netns del host-b
defer ip netns del host-a
run ip link set ib0 netns host-a && run ip link set ib1 netns host-b
run ip -n host-a link set ib0 up && run ip -n host-b link set ib1 up
# netlink (ip link) and sysfs (create_child) make the same children
run ip -n host-a link add link ib0 name ib0.8001 type ipoib pkey 0x8001
show "ip netns exec host-b sh -c 'echo 0x0001 > /sys/class/net/ib1/create_child'"
run ip -n host-a link add link ib0 name ib0.8002 type ipoib pkey 0x8002
show "ip netns exec host-b sh -c 'echo 0x8002 > /sys/class/net/ib1/create_child'"
run ip -n host-a addr add 10.1.0.1/24 dev ib0.8001 && run ip -n host-a link set ib0.8001 up
run ip -n host-b addr add 10.1.0.2/24 dev ib1.8001 && run ip -n host-b link set ib1.8001 up
run ip -n host-a addr add 10.2.0.1/24 dev ib0.8002 && run ip -n host-a link set ib0.8002 up
run ip -n host-b addr add 10.2.0.2/24 dev ib1.8002 && run ip -n host-b link set ib1.8002 up
up=0
for d in "host-a ib0.8001" "host-a ib0.8002" "host-b ib1.8001" "host-b ib1.8002"; do
	slowwait 20 ipoib_lower_up $d >/dev/null && up=$((up + 1))
done
run ip -n host-a -d -br link show type ipoib
run ip -n host-b -d -br link show type ipoib
ktap_result $((up != 4)) "four children created over netlink and sysfs, all with carrier"
if ((up == 4)); then
	result OK "children ib0.8001/ib0.8002 (netlink) and ib1.8001/ib1.8002 (sysfs) up"
else
	result FAIL "only $up of 4 children have carrier"
fi

say "ping inside each partition"
if show 'ip netns exec host-a ping -c 3 -W 2 10.1.0.2 | tail -2' &&
	show 'ip netns exec host-a ping -c 3 -W 2 10.2.0.2 | tail -2' &&
	ip netns exec host-a ping -c 1 -W 2 10.1.0.2 >/dev/null &&
	ip netns exec host-a ping -c 1 -W 2 10.2.0.2 >/dev/null; then
	ktap_ok "ping within 0x8001 and within 0x8002"
	result OK "host-a <-> host-b inside partition 0x8001 and inside 0x8002"
else
	ktap_fail "ping within 0x8001 and within 0x8002"
	result FAIL "pings inside a partition"
fi

say "isolation: host-a's 0x8001 child forced onto host-b's 0x8002 child"
run ip -n host-a addr add 10.99.0.1/24 dev ib0.8001
run ip -n host-b addr add 10.99.0.2/24 dev ib1.8002
run ip -n host-a neigh replace 10.99.0.2 dev ib0.8001 nud permanent \
	lladdr "$(ipoib_hwaddr host-b ib1.8002)"
before=$(softib_counter 2 drop_pkey)
show 'ip netns exec host-a ping -c 3 -W 1 10.99.0.2 | tail -2'
after=$(softib_counter 2 drop_pkey)
echo "softib port 2 drop_pkey: $before -> $after (packets with P_Key 0x8001 for a 0x8002 QP)"
if ! ip netns exec host-a ping -c 1 -W 1 10.99.0.2 >/dev/null && ((after > before)); then
	ktap_ok "cross-partition traffic dropped and counted"
	result OK "0x8001 -> 0x8002 dropped by the fabric, drop_pkey $before -> $after"
else
	ktap_fail "cross-partition traffic dropped and counted"
	result FAIL "cross-partition isolation"
fi

say "a child on a P_Key the subnet manager does not have"
run ip -n host-a link add link ib0 name ib0.8009 type ipoib pkey 0x8009
run ip -n host-a link set ib0.8009 up
slowwait 10 sh -c '[ "$(ip netns exec host-a cat /sys/class/net/ib0.8009/carrier_reason)" = pkey-absent ]'
run ip -n host-a -br link show ib0.8009
run ip netns exec host-a cat /sys/class/net/ib0.8009/carrier_reason
show 'dmesg | grep "P_Key 0x8009 is not in" | tail -1'
if [[ $(ip netns exec host-a cat /sys/class/net/ib0.8009/carrier_reason) == pkey-absent ]]; then
	ktap_ok "missing P_Key explained"
	result OK "ib0.8009: admin up, no carrier, carrier_reason pkey-absent + the fix in the log"
else
	ktap_fail "missing P_Key explained"
	result FAIL "carrier_reason for a missing P_Key"
fi

say "summary"
printf '%s\n' "${results[@]}"
ktap_finish
