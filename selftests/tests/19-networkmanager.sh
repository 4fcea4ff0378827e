#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 240
# kernel: 6.12
#
# NetworkManager (bookworm's 1.42) configures IPoIB as an admin asks it
# with nmcli: an infiniband connection for the parent and one with
# infiniband.p-key and infiniband.parent for a partition. NM 1.42 makes
# the partition through sysfs (create_child with the P_Key, then it waits
# for the in-tree name PARENT.PKEY, four hex digits), always writes the
# transport mode to the interface's sysfs "mode" file (activation fails if
# that write fails), and removes the partition with delete_child when the
# connection goes down. Both drivers must pass the same checks.
#
# NM runs in the foreground of this guest with its own configuration:
# keyfile profiles only, InfiniBand devices managed and nothing else, no
# polkit (nmcli runs as root). It needs the system bus and udev (a link
# udev has not initialized stays unmanaged), so both are started first.
# The peer (ib1's child in netns B) is made by hand.

source "$(dirname "$0")/../lib.sh"

NM=/usr/sbin/NetworkManager
NMDIR=/run/ipoib-ng-nm

ktap_header 6
ktap_diag "IPOIB=$IPOIB"
for c in "$NM" /usr/bin/nmcli /usr/bin/dbus-daemon; do
	[[ -x $c ]] || { ktap_skip "NetworkManager" "$c is not installed (packages network-manager, dbus)"; ktap_finish; }
done

nm_stop() {
	# its PID, not pgrep -f: a "sh -c ... pgrep -f PATTERN" matches itself
	[[ -n $nm_pid ]] && kill "$nm_pid" 2>/dev/null && wait "$nm_pid" 2>/dev/null
	[[ -s /run/dbus/pid ]] && kill "$(</run/dbus/pid)" 2>/dev/null
	rm -f /run/dbus/pid
	guest_udevd_stop
	# a partition NM left behind (ours and in-tree take it back alike),
	# down and without RC QPs first: see ipoib_quiesce in lib.sh
	if [[ -e /sys/class/net/ib0.8001 ]]; then
		ipoib_quiesce
		echo 0x8001 >/sys/class/net/ib0/delete_child 2>/dev/null
	fi
	rm -rf "$NMDIR"
}

# nm_state CONN: the connection's activation state ("activated", ...)
nm_state() {
	nmcli -g GENERAL.STATE connection show "$1" 2>/dev/null
}

RET=0
ipoib_peer_up "Default=0x7fff, ipoib : ALL=full;" "p1=0x0001, ipoib : ALL=full;"
check_err $? "$FAILED_STEP"
[[ $RET == 0 ]] &&
	ipoib_child "$B" ib1 8001 192.0.2.12/24 &&
	ip -n "$B" link set ib1 up
check_err $? "the peer child in netns B"
up=$RET
log_test "softib, ib_ipoib, P_Key 0x8001, peer child on ib1"
((up == 0)) || ktap_finish

RET=0
nm_pid=
defer nm_stop
mkdir -p "$NMDIR/conf.d" "$NMDIR/state" /run/dbus
cat >"$NMDIR/NetworkManager.conf" <<EOF
[main]
plugins=keyfile
auth-polkit=false
no-auto-default=*

[keyfile]
path=$NMDIR/profiles
unmanaged-devices=except:type:infiniband

[logging]
level=INFO
EOF
[[ -s /etc/machine-id ]] || dbus-uuidgen --ensure=/etc/machine-id
dbus-daemon --system --fork >/dev/null 2>&1
check_err $? "dbus-daemon --system"
guest_udevd_start
check_err $? "systemd-udevd"
"$NM" --no-daemon --config="$NMDIR/NetworkManager.conf" \
	--config-dir="$NMDIR/conf.d" --state-file="$NMDIR/state/NetworkManager.state" \
	>"$NMDIR/nm.log" 2>&1 &
nm_pid=$!
slowwait 60 sh -c 'nmcli -g STATE general 2>/dev/null | grep -q .' >/dev/null
(($? == 0)) || check_err 1 "NetworkManager did not answer: $(tail -n 5 "$NMDIR/nm.log" | tr '\n' ';')"
slowwait 30 sh -c 'nmcli -g GENERAL.STATE device show ib0 2>/dev/null | grep -qv unmanaged' >/dev/null
(($? == 0)) || check_err 1 "ib0 is not managed: $(nmcli device 2>&1 | tr '\n' ';')"
log_test "NetworkManager runs and manages ib0"

RET=0
# ib0 starts in connected mode, so that datagram is NM's doing; profiles
# are brought up by the test alone (no autoconnect racing it)
echo connected >/sys/class/net/ib0/mode
check_err $? "ib0 into connected mode"
nmcli connection add type infiniband con-name ib0 ifname ib0 \
	connection.autoconnect no infiniband.transport-mode datagram \
	ipv4.method disabled ipv6.method disabled >/dev/null &&
	nmcli connection add type infiniband con-name ib0-p8001 ifname ib0.8001 \
		connection.autoconnect no \
		infiniband.parent ib0 infiniband.p-key 0x8001 \
		infiniband.transport-mode connected \
		ipv4.method manual ipv4.addresses 192.0.2.11/24 \
		ipv6.method disabled >/dev/null
check_err $? "nmcli connection add"
nmcli -w 60 connection up ib0 >/dev/null 2>&1
(($? == 0)) || check_err 1 "parent connection: $(nm_state ib0); $(tail -n 5 "$NMDIR/nm.log" | tr '\n' ';')"
nmcli -w 60 connection up ib0-p8001 >/dev/null 2>&1
(($? == 0)) || check_err 1 "partition connection: $(nm_state ib0-p8001); $(grep -i -E 'ib0.8001|infiniband' "$NMDIR/nm.log" | tail -n 5 | tr '\n' ';')"
d=$(ip -d link show ib0.8001 2>&1)
[[ $d == *"@ib0:"* && $d == *"ipoib pkey 0x8001 mode connected"* ]]
(($? == 0)) || check_err 1 "ib0.8001: $(grep -o 'ipoib.*' <<<"$d" || head -n 1 <<<"$d")"
[[ $(cat /sys/class/net/ib0.8001/mode 2>/dev/null) == connected ]]
(($? == 0)) || check_err 1 "ib0.8001 mode file: $(cat /sys/class/net/ib0.8001/mode 2>&1)"
[[ $(cat /sys/class/net/ib0/mode 2>/dev/null) == datagram ]]
(($? == 0)) || check_err 1 "ib0 mode file: $(cat /sys/class/net/ib0/mode 2>&1)"
[[ $(ip -o addr show dev ib0.8001 2>/dev/null) == *192.0.2.11/24* ]]
check_err $? "ib0.8001 has no 192.0.2.11/24"
log_test "nmcli p-key 0x8001: NM makes ib0.8001 in connected mode with its address, ib0 in datagram"

RET=0
out=$(ipoib_reached_from "$B" ib0.8001=192.0.2.11)
check_err $? "$out"
log_test "ping from the peer over the partition NM made"

RET=0
# In-tree loses a race of its own when a connected-mode child goes while
# its RC connection is open (see ipoib_quiesce in lib.sh): with in-tree,
# the peer closes that connection first, so that this step is about NM.
# Ours is removed with the connection open.
if [[ $IPOIB == intree ]]; then
	ip -n "$B" link set ib1.8001 down &&
		slowwait 10 sh -c '! rdma res show qp 2>/dev/null | grep -q "type RC"' >/dev/null &&
		ip -n "$B" link set ib1.8001 up
	check_err $? "in-tree: the peer could not close the RC connection first"
fi
nmcli -w 30 connection down ib0-p8001 >/dev/null 2>&1
check_err $? "nmcli connection down ib0-p8001"
slowwait 20 sh -c '! test -e /sys/class/net/ib0.8001' >/dev/null
check_err $? "ib0.8001 is still there after its connection went down"
[[ -e /sys/class/net/ib0 ]]
check_err $? "ib0 is gone"
log_test "connection down: NM removes ib0.8001, ib0 stays"

RET=0
nmcli -w 60 connection up ib0-p8001 >/dev/null 2>&1
(($? == 0)) || check_err 1 "partition connection up again: $(nm_state ib0-p8001)"
d=$(ip -d link show ib0.8001 2>&1)
[[ $d == *"ipoib pkey 0x8001 mode connected"* ]]
(($? == 0)) || check_err 1 "ib0.8001 again: $(grep -o 'ipoib.*' <<<"$d" || head -n 1 <<<"$d")"
# the new child has a new QPN, so a new hardware address: the peer's
# neighbour entry still names the old one until it ages out (as on any
# IPoIB fabric without arp_notify), so the peer forgets it first
ip -n "$B" neigh flush dev ib1.8001
out=$(ipoib_reached_from "$B" ib0.8001=192.0.2.11)
check_err $? "$out"
log_test "connection up again: NM makes ib0.8001 anew and the peer reaches it"

ktap_finish
