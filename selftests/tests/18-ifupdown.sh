#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 180
# kernel: 6.12
#
# ifupdown (bookworm's 0.8.41) with /etc/network/interfaces stanzas for a
# parent and a P_Key child, as an admin writes them. For a dotted name on
# an InfiniBand link (type 32) ifup writes 0x<suffix> to the parent's
# create_child; ifdown writes delete_child when the parent has a
# device/infiniband directory, else runs "ip link del" (softib's
# interfaces have no PCI parent, so the latter). Modes are set the usual
# way, by pre-up/post-up lines writing the sysfs mode file. The hook
# directories (/etc/network/if-*.d) are the host's and are not ours to
# test: --no-scripts. The peer is made by hand in netns B.

source "$(dirname "$0")/../lib.sh"

IFACES=/tmp/ifupdown-interfaces
STATE=/tmp/ifupdown-state

ktap_header 5
ktap_diag "IPOIB=$IPOIB"
command -v ifup >/dev/null || { ktap_skip "ifupdown" "ifup is not installed (package ifupdown)"; ktap_finish; }

ifupdown() {	# ifupdown up|down IFACE...
	local cmd=if$1

	shift
	"$cmd" -i "$IFACES" --state-dir "$STATE" --no-scripts "$@" 2>&1
}

RET=0
ipoib_peer_up "Default=0x7fff, ipoib : ALL=full;" "p1=0x0001, ipoib : ALL=full;"
check_err $? "$FAILED_STEP"
[[ $RET == 0 ]] &&
	ip -n "$B" addr add 192.0.2.12/24 dev ib1 && ip -n "$B" link set ib1 up &&
	ipoib_child "$B" ib1 8001 198.51.100.12/24
check_err $? "the peer in netns B"
log_test "softib, ib_ipoib, P_Key 0x8001, the peer on ib1"

mkdir -p "$STATE"
cat >"$IFACES" <<'EOF'
auto ib0
iface ib0 inet static
	address 192.0.2.11/24
	pre-up echo connected > /sys/class/net/ib0/mode

auto ib0.8001
iface ib0.8001 inet static
	address 198.51.100.11/24
	pre-up echo datagram > /sys/class/net/ib0.8001/mode
EOF
defer rm -rf "$IFACES" "$STATE"
defer ip link del ib0.8001

RET=0
out=$(ifupdown up ib0 ib0.8001)
check_err $? "ifup: $out"
[[ -e /sys/class/net/ib0.8001 && $(cat /sys/class/net/ib0.8001/parent 2>/dev/null) == ib0 ]]
(($? == 0)) || check_err 1 "no sysfs child ib0.8001 of ib0: $(ip -br link | tr '\n' ';')"
d=$(ip -d link show ib0.8001)
[[ $d == *"ipoib pkey 0x8001 mode datagram"* && $(cat /sys/class/net/ib0/mode) == connected ]]
(($? == 0)) || check_err 1 "ib0.8001: $(grep -o 'ipoib.*' <<<"$d"); ib0 mode $(cat /sys/class/net/ib0/mode)"
ip -o addr show dev ib0 | grep -q 192.0.2.11/24 &&
	ip -o addr show dev ib0.8001 | grep -q 198.51.100.11/24
(($? == 0)) || check_err 1 "addresses: $(ip -br addr | tr '\n' ';')"
log_test "ifup: ib0 (connected) and the create_child child ib0.8001 (datagram), addressed"

RET=0
out=$(ipoib_reached_from "$B" ib0=192.0.2.11 ib0.8001=198.51.100.11)
check_err $? "$out"
log_test "ping from the peer to the parent and the child"

RET=0
out=$(ifupdown down ib0.8001)
check_err $? "ifdown ib0.8001: $out"
slowwait 10 sh -c '! test -e /sys/class/net/ib0.8001' >/dev/null
check_err $? "ib0.8001 still there after ifdown"
out=$(ifupdown down ib0)
check_err $? "ifdown ib0: $out"
[[ $(ip -o link show ib0) != *",UP"* ]] && ! ip -o addr show dev ib0 | grep -q 192.0.2.11
(($? == 0)) || check_err 1 "ib0 after ifdown: $(ip -o addr show dev ib0)"
log_test "ifdown removes the child and unconfigures the parent"

RET=0
out=$(ifupdown up ib0.8001)
check_err $? "ifup again: $out"
ip -o addr show dev ib0.8001 2>/dev/null | grep -q 198.51.100.11/24
(($? == 0)) || check_err 1 "no ib0.8001 after a second ifup: $(ip -br addr | tr '\n' ';')"
ifupdown down ib0.8001 >/dev/null
log_test "ifup/ifdown of the child again (nothing left from the first round)"

ktap_finish
