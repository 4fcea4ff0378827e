#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 240
#
# A parent interface as an admin (and systemd-networkd, and ipoib-cni)
# drives it through rtnetlink and ethtool, with the in-tree driver as the
# reference: "ip link show type ipoib" lists parents; "ip link set ib0 type
# ipoib mode|umcast" works with in-tree's errnos; "ip link del ib0" keeps
# ib0 (in-tree reports success and deletes nothing); ethtool -i reports the
# HCA's bus device; -c/-C moderate completion events, and softib really
# defers them (a ping waits for rx-usecs); -S starts with in-tree's eight
# counters in its order. Where ours offers more (send-side moderation,
# -S's table counters, -g, -l), in-tree's refusal is expected and named.

source "$(dirname "$0")/../lib.sh"

require_cmd ethtool ping python3

# nl_mode DEV VALUE: RTM_NEWLINK on DEV with IFLA_IPOIB_MODE=VALUE, which
# iproute2 cannot send for values other than 0 and 1; prints the errno
# name the kernel answered, or OK
nl_mode() {
	python3 - "$1" "$2" <<'PY'
import errno, socket, struct, sys

def attr(kind, payload):
    n = 4 + len(payload)
    return struct.pack("=HH", n, kind) + payload + b"\0" * (-n % 4)

IFLA_LINKINFO, IFLA_INFO_KIND, IFLA_INFO_DATA, IFLA_IPOIB_MODE = 18, 1, 2, 2
data = attr(IFLA_IPOIB_MODE, struct.pack("=H", int(sys.argv[2])))
info = attr(IFLA_INFO_KIND, b"ipoib\0") + attr(IFLA_INFO_DATA | 0x8000, data)
body = struct.pack("=BxHiII", 0, 0, socket.if_nametoindex(sys.argv[1]), 0, 0)
body += attr(IFLA_LINKINFO | 0x8000, info)
msg = struct.pack("=IHHII", 16 + len(body), 16, 1 | 4, 1, 0) + body
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
s.send(msg)
rep = s.recv(4096)
err = struct.unpack_from("=i", rep, 16)[0]
print("OK" if err == 0 else errno.errorcode[-err])
PY
}

# stat_names DEV: ethtool -S's counter names, one per line
stat_names() {
	ethtool -S "$1" | sed -n 's/^ *\([a-z_0-9]*\): .*/\1/p'
}

# min_rtt NS ADDR: the smallest of 5 pings' round trips, in microseconds
min_rtt() {
	ip netns exec "$1" ping -c 5 -i 0.2 -W 2 "$2" |
		sed -n 's|^r[a-z-]* min/[^=]*= \([0-9.]*\)/.*|\1|p' |
		awk '{ printf "%d\n", $1 * 1000 }'
}

ktap_header 10
ktap_diag "IPOIB=$IPOIB"

ipoib_stack_up -- "Default=0x7fff, ipoib : ALL=full;"
ktap_result $? "softib and ib_ipoib up" || ktap_finish
S=/sys/class/net/ib0

RET=0
types=$(ip -o link show type ipoib | awk -F': ' '{ print $2 }' | xargs)
[[ " $types " == *" ib0 "* && " $types " == *" ib1 "* ]]
check_err $? "ip link show type ipoib lists: '$types'"
ip -d link show ib0 | grep -q "ipoib pkey 0xffff mode datagram umcast 0000"
(($? == 0)) || check_err 1 "ip -d link: $(ip -d link show ib0 | grep ipoib)"
log_test "ip link show type ipoib lists the parents"

# Both interfaces down, nothing else wants rtnl: in-tree's mode change
# drops rtnl and retakes it with a trylock (see ipoib_set_mode in lib.sh).
RET=0
ip link set ib0 type ipoib mode connected
check_err $? "ip link set ib0 type ipoib mode connected"
[[ $(cat $S/mode) == connected ]] && ip -d link show ib0 | grep -q "mode connected" &&
	ip link show ib0 | grep -q " mtu 65520 "
(($? == 0)) || check_err 1 "connected: sysfs $(cat $S/mode), $(ip -d link show ib0 | grep -E 'mtu|ipoib' | xargs)"
ip link set ib0 type ipoib mode datagram
check_err $? "ip link set ib0 type ipoib mode datagram"
mtu=$(cat $S/mtu)
[[ $(cat $S/mode) == datagram ]] && ((mtu <= 4092))
(($? == 0)) || check_err 1 "datagram: sysfs $(cat $S/mode), mtu $mtu"
ip link set ib0 type ipoib umcast 1 && [[ $(cat $S/umcast) == 1 ]] &&
	ip link set ib0 type ipoib umcast 0 && [[ $(cat $S/umcast) == 0 ]]
(($? == 0)) || check_err 1 "umcast through netlink: sysfs reads $(cat $S/umcast)"
log_test "ip link set <parent> type ipoib mode connected|datagram, umcast 1|0"

RET=0
e=$(nl_mode ib0 2)
[[ $e == EINVAL ]]
check_err $? "IFLA_IPOIB_MODE 2 on ib0: $e, not EINVAL"
[[ $(cat $S/mode) == datagram ]]
(($? == 0)) || check_err 1 "mode changed to $(cat $S/mode)"
[[ $(nl_mode ib0 1) == OK && $(cat $S/mode) == connected && $(nl_mode ib0 0) == OK ]]
(($? == 0)) || check_err 1 "raw IFLA_IPOIB_MODE 1 then 0: mode $(cat $S/mode)"
log_test "IFLA_IPOIB_MODE other than 0/1 on a parent: EINVAL, nothing changes"

RET=0
echo "<6>ipoib-selftest-$$-del" >/dev/kmsg
out=$(ip link del ib0 2>&1)
check_err $? "ip link del ib0 failed: $out (in-tree reports success)"
[[ -d $S ]] && ip link show ib0 >/dev/null 2>&1
check_err $? "ib0 is gone"
if [[ $IPOIB == ours ]]; then
	dmesg | sed -n "/ipoib-selftest-$$-del/,\$p" | grep -q "ib0: not deleted: ib0 is port 1 of"
	check_err $? "no log line says why ib0 stays"
fi
log_test "ip link del <parent>: success and nothing deleted, as in-tree"

RET=0
dev=$(ls /sys/class/infiniband | head -1)
want=$(basename "$(readlink -f /sys/class/infiniband/$dev/device)")
info=$(ethtool -i ib0)
[[ $(sed -n 's/^driver: //p' <<<"$info") == ib_ipoib ]]
(($? == 0)) || check_err 1 "driver: $(sed -n 's/^driver: //p' <<<"$info")"
[[ $(sed -n 's/^bus-info: //p' <<<"$info") == "$want" ]]
(($? == 0)) || check_err 1 "bus-info '$(sed -n 's/^bus-info: //p' <<<"$info")', the HCA's device is '$want'"
log_test "ethtool -i: driver ib_ipoib, bus-info the HCA's bus device"

RET=0
names=$(stat_names ib0)
intree8="rx_packets tx_packets rx_bytes tx_bytes tx_errors rx_dropped tx_dropped multicast"
[[ $(head -8 <<<"$names" | xargs) == "$intree8" ]]
(($? == 0)) || check_err 1 "first eight: $(head -8 <<<"$names" | xargs)"
if [[ $IPOIB == ours ]]; then
	for n in paths path_evictions full_groups sendonly_groups cm_passive cm_active \
		cm_rnr_fallbacks tx_timeouts; do
		grep -qx "$n" <<<"$names"
		check_err $? "ethtool -S has no $n"
	done
else
	[[ $(wc -l <<<"$names") -eq 8 ]]
	(($? == 0)) || check_err 1 "in-tree reports $(wc -l <<<"$names") counters, not its 8"
fi
log_test "ethtool -S: in-tree's eight counters first, in its order"

RET=0
ethtool -c ib0 >/dev/null
check_err $? "ethtool -c ib0"
ethtool -C ib0 rx-usecs 30 rx-frames 7 && c=$(ethtool -c ib0) &&
	grep -qE "^rx-usecs:[[:space:]]+30$" <<<"$c" && grep -qE "^rx-frames:[[:space:]]+7$" <<<"$c"
(($? == 0)) || check_err 1 "rx-usecs/rx-frames not read back: $(grep -E '^rx-(usecs|frames):' <<<"$c" | xargs)"
out=$(ethtool -C ib0 rx-usecs 70000 2>&1)
check_fail $? "rx-usecs 70000 accepted (the CQ field is 16 bits)"
if [[ $IPOIB == ours ]]; then
	ethtool -C ib0 tx-usecs 40 tx-frames 16 && c=$(ethtool -c ib0) &&
		grep -qE "^tx-usecs:[[:space:]]+40$" <<<"$c" && grep -qE "^tx-frames:[[:space:]]+16$" <<<"$c"
	(($? == 0)) || check_err 1 "tx-usecs/tx-frames not read back: $(grep -E '^tx-(usecs|frames):' <<<"$c" | xargs)"
	r=$(ethtool -g ib0) && grep -A4 "^Current" <<<"$r" | grep -qE "^RX:[[:space:]]+256$" &&
		grep -A4 "^Current" <<<"$r" | grep -qE "^TX:[[:space:]]+128$"
	(($? == 0)) || check_err 1 "ethtool -g: $(xargs <<<"$r")"
	# one receive and one send channel, nothing to set
	r=$(ethtool -l ib0) && grep -A4 "^Current" <<<"$r" | grep -qE "^RX:[[:space:]]+1$" &&
		grep -A4 "^Current" <<<"$r" | grep -qE "^TX:[[:space:]]+1$"
	(($? == 0)) || check_err 1 "ethtool -l: $(xargs <<<"$r")"
	out=$(ethtool -L ib0 rx 2 2>&1)
	check_fail $? "ethtool -L rx 2 accepted: $out"
else
	out=$(ethtool -C ib0 tx-usecs 40 2>&1)
	check_fail $? "in-tree took tx-usecs (it moderates receives only)"
	out=$(ethtool -g ib0 2>&1)
	check_fail $? "in-tree answered ethtool -g (it has no ring parameters)"
	out=$(ethtool -l ib0 2>&1)
	check_fail $? "in-tree answered ethtool -l (it reports no channels)"
fi
ethtool -C ib0 rx-usecs 0 rx-frames 0 tx-usecs 0 tx-frames 0 2>/dev/null ||
	ethtool -C ib0 rx-usecs 0 rx-frames 0
check_err $? "moderation back to 0"
log_test "ethtool -c/-C (and -g, -l for ours; in-tree has no tx moderation, -g or -l)"

# With rx-usecs 20000, the echo request that ib0 receives is signalled
# 20 ms after it arrived (rx-frames 64 is never reached by one ping), so
# no round trip can be shorter; IPv6 is off so that no other packet
# starts the period earlier.
RET=0
setup_ns A B &&
	ip netns exec "$A" sysctl -qw net.ipv6.conf.default.disable_ipv6=1 &&
	ip netns exec "$B" sysctl -qw net.ipv6.conf.default.disable_ipv6=1 &&
	ipoib_fabric_place
check_err $? "ib0 in A and ib1 in B, up: ${FAILED_STEP:-}"
ip netns exec "$A" ethtool -C ib0 rx-usecs 20000 rx-frames 64
check_err $? "ethtool -C ib0 rx-usecs 20000 rx-frames 64 in netns A"
slow=$(min_rtt "$B" 192.0.2.1)
[[ -n $slow ]] && ((slow >= 19500))
check_err $? "moderated: shortest round trip ${slow:-none} us, not >= 20 ms"
ip netns exec "$A" ethtool -C ib0 rx-usecs 0 rx-frames 0
fast=$(min_rtt "$B" 192.0.2.1)
[[ -n $fast ]] && ((fast < 19500))
check_err $? "unmoderated: shortest round trip ${fast:-none} us"
ktap_diag "shortest round trip: ${slow:-none} us with rx-usecs 20000, ${fast:-none} us without"
log_test "rx-usecs defers receive completions (softib's CQ moderation), 0 undoes it"

RET=0
ip -n "$A" link add link ib0 name c1 type ipoib pkey 0x7fff &&
	ip netns exec "$A" ethtool -C c1 rx-usecs 10 rx-frames 2 &&
	ip netns exec "$A" ethtool -c c1 | grep -qE "^rx-frames:[[:space:]]+2$" &&
	[[ $(ip netns exec "$A" ethtool -i c1 | sed -n 's/^bus-info: //p') == "$want" ]]
check_err $? "child c1: ethtool -C/-c/-i"
ip -n "$A" link del c1
check_err $? "ip link del c1"
log_test "a child: ethtool -c/-C/-i as its parent"

ktap_finish
