#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 240
# kernel: 6.12
#
# systemd-networkd (bookworm's 252) configures P_Key children as an admin
# writes them: a .netdev of Kind=ipoib per child, named from the parent's
# .network with IPoIB=, addresses from the child's .network. networkd
# creates each child with one RTM_NEWLINK carrying IFLA_IPOIB_PKEY, _MODE
# and _UMCAST and a 20-byte IFLA_ADDRESS of its own making; the driver
# must keep the port's GID in the address regardless, or ARP would
# announce a GID nobody has. PartitionKey= is parsed with base 0: 0x8001
# is hex, 32770 decimal (0x8002).
#
# The peer (ib1's children in netns B) is made by hand. In-tree runs with
# Mode=datagram: a mode change in in-tree's newlink drops rtnl (see
# ipoib_set_mode in lib.sh), which is unsafe while other rtnl users run.
#
# Known in-tree failure (seen on 6.12): in-tree takes networkd's generated
# IFLA_ADDRESS as the child's hardware address, so the child announces a
# GID nobody has and never gets carrier. With in-tree the two working
# children carry MACAddress=none (the workaround admin-guide.rst gives),
# and a third, ib0.8101, has networkd's default to show the failure.

source "$(dirname "$0")/../lib.sh"

ND=/lib/systemd/systemd-networkd
# the guest's busybox init looks like a chroot to systemd's tools
export SYSTEMD_IGNORE_CHROOT=1
NET=/run/systemd/network
MODE=connected MACLINE=""
[[ $IPOIB == intree ]] && MODE=datagram MACLINE="MACAddress=none"

ktap_header 6
ktap_diag "IPOIB=$IPOIB, children in $MODE mode"
[[ -x $ND ]] || { ktap_skip "systemd-networkd" "$ND is not installed (package systemd)"; ktap_finish; }

networkd_stop() {
	# its PID, not pgrep -f: a "sh -c ... pgrep -f PATTERN" matches itself
	[[ -n $nd_pid ]] && kill "$nd_pid" 2>/dev/null && wait "$nd_pid" 2>/dev/null
	guest_udevd_stop
	# connected-mode children go down and lose their RC QPs first (see
	# ipoib_quiesce in lib.sh)
	ipoib_quiesce
	ip link del ib0.8001 2>/dev/null
	ip link del ib0.8002 2>/dev/null
	ip link del ib0.8101 2>/dev/null
	rm -rf "$NET"
}

RET=0
ipoib_peer_up "Default=0x7fff, ipoib : ALL=full;" \
	"p1=0x0001, ipoib : ALL=full;" "p2=0x0002, ipoib : ALL=full;"
check_err $? "$FAILED_STEP"
[[ $RET == 0 ]] &&
	ipoib_child "$B" ib1 8001 192.0.2.12/24 &&
	ipoib_child "$B" ib1 8002 198.51.100.12/24 &&
	ip -n "$B" link set ib1 up
check_err $? "the peer children in netns B"
log_test "softib, ib_ipoib, P_Keys 0x8001 and 0x8002, peer children on ib1"

mkdir -p "$NET"
cat >"$NET/10-ib0.network" <<EOF
[Match]
Name=ib0

[Network]
IPoIB=ib0.8001
IPoIB=ib0.8002
IPoIB=ib0.8101
LinkLocalAddressing=no
EOF
cat >"$NET/20-ib0.8001.netdev" <<EOF
[NetDev]
Name=ib0.8001
Kind=ipoib
$MACLINE

[IPoIB]
PartitionKey=0x8001
Mode=$MODE
IgnoreUserspaceMulticastGroups=yes
EOF
cat >"$NET/21-ib0.8002.netdev" <<EOF
[NetDev]
Name=ib0.8002
Kind=ipoib
$MACLINE

[IPoIB]
PartitionKey=32770
EOF
cat >"$NET/22-ib0.8101.netdev" <<EOF
[NetDev]
Name=ib0.8101
Kind=ipoib

[IPoIB]
PartitionKey=0x8001
EOF
for c in 8001:192.0.2.11 8002:198.51.100.11; do
	cat >"$NET/30-ib0.${c%%:*}.network" <<EOF
[Match]
Name=ib0.${c%%:*}

[Network]
Address=${c#*:}/24
LinkLocalAddressing=no
EOF
done

RET=0
nd_pid=
defer networkd_stop
# networkd manages a link only once udev has initialized it, and keeps
# its state where systemd-tmpfiles would have made it (it runs as
# systemd-network)
guest_udevd_start
check_err $? "systemd-udevd"
mkdir -p /run/systemd/netif/links /run/systemd/netif/leases /run/systemd/netif/lldp &&
	chown -R systemd-network:systemd-network /run/systemd/netif
"$ND" >/tmp/networkd.log 2>&1 &
nd_pid=$!
slowwait 60 sh -c 'ip -o addr show dev ib0.8001 | grep -q 192.0.2.11 &&
	ip -o addr show dev ib0.8002 | grep -q 198.51.100.11' >/dev/null
(($? == 0)) || check_err 1 "children or addresses missing: $(ip -br addr 2>&1 | tr '\n' ';') networkd: $(tail -n 5 /tmp/networkd.log | tr '\n' ';')"
log_test "networkd creates ib0.8001 and ib0.8002 on ib0 and addresses them"

RET=0
d=$(ip -d link show ib0.8001)
[[ $d == *"link/infiniband"*"ipoib pkey 0x8001 mode $MODE umcast 0001"* ]]
(($? == 0)) || check_err 1 "ib0.8001: $(grep -o 'ipoib.*' <<<"$d")"
[[ $d == *"@ib0:"* ]]
(($? == 0)) || check_err 1 "ib0.8001 is not on ib0: $(head -n 1 <<<"$d")"
d=$(ip -d link show ib0.8002)
[[ $d == *"ipoib pkey 0x8002 mode datagram umcast 0000"* ]]
(($? == 0)) || check_err 1 "ib0.8002 (PartitionKey=32770): $(grep -o 'ipoib.*' <<<"$d")"
log_test "P_Key (hex and decimal), Mode= and IgnoreUserspaceMulticastGroups= applied"

# gid DEV: the GID part (last 16 bytes) of DEV's hardware address
gid() {
	ip -o link show "$1" | sed -n 's|.*link/infiniband \([0-9a-f:]*\) .*|\1|p' | cut -d: -f5-
}

RET=0
g=$(gid ib0)
for c in ib0.8001 ib0.8002; do
	a=$(gid $c)
	[[ -n $g && $a == "$g" ]]
	check_err $? "$c: GID part $a of its address is not ib0's ($g)"
done
log_test "the children's addresses carry the port GID${MACLINE:+ (in-tree: with $MACLINE)}"

RET=0
slowwait 20 test -e /sys/class/net/ib0.8101 >/dev/null
a=$(gid ib0.8101)
if [[ $IPOIB == intree ]]; then
	[[ -n $a && $a != "$g" ]]
	check_err $? "in-tree kept the GID with networkd's address (fixed?): '$a'"
	log_test "in-tree, known failure: networkd's generated address replaces the GID of ib0.8101 ($a)"
else
	[[ $a == "$g" ]]
	check_err $? "ib0.8101: GID part '$a' is not ib0's ($g)"
	log_test "networkd's generated IFLA_ADDRESS does not replace the port GID (ib0.8101)"
fi

RET=0
out=$(ipoib_reached_from "$B" ib0.8001=192.0.2.11 ib0.8002=198.51.100.11)
check_err $? "$out"
log_test "ping from the peer over both partitions"

ktap_finish
