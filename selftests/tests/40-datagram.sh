#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 180
#
# Datagram mode across the softib fabric: each port's IPoIB parent in its
# own netns, IPv4 and IPv6 ping both ways, a 5 s iperf3 TCP stream;
# ethtool -S / link settings as in-tree reports them, and debug_level
# switching the driver's tracing on and off.


source "$(dirname "$0")/../lib.sh"

require_cmd iperf3 ping ethtool dmesg

ktap_header 8
ktap_diag "IPOIB=$IPOIB"

ipoib_fabric_up
ktap_result $? "ib0/ib1 in two netns get carrier (broadcast group joined)" || ktap_finish

[[ $(ip -n "$A" -o link show ib0 | sed -n 's/.* mtu \([0-9]*\) .*/\1/p') == 2044 ]]
ktap_result $? "MTU 2044 from the 2K broadcast group"

RET=0
# the pings: all three echoes answered (sent 0.2 s apart, sent on until
# they are) within 4 s, the time the first of three sent 1 s apart had
ip netns exec "$A" ping -c 3 -i 0.2 -w 4 -W 2 192.0.2.2 >/dev/null
check_err $? "A -> B IPv4"
ip netns exec "$B" ping -c 3 -i 0.2 -w 4 -W 2 192.0.2.1 >/dev/null
check_err $? "B -> A IPv4"
log_test "IPv4 ping both ways"

RET=0
slowwait 10 test -n "$(ll_addr "$B" ib1)" >/dev/null
ip netns exec "$A" ping -6 -c 3 -i 0.2 -w 4 -W 2 "$(ll_addr "$B" ib1)%ib0" >/dev/null
check_err $? "A -> B IPv6"
ip netns exec "$B" ping -6 -c 3 -i 0.2 -w 4 -W 2 "$(ll_addr "$A" ib0)%ib1" >/dev/null
check_err $? "B -> A IPv6"
log_test "IPv6 link-local ping both ways"

mbps=$(iperf_mbps "$A" "$B" 192.0.2.2 5)
ktap_result $? "iperf3 TCP 5 s"
ktap_diag "iperf3 TCP datagram mode: ${mbps:-0} Mbit/s"

# what the HCA offers decides the offloads (41-offloads has them on and
# off): with softib offloads=0 TSO and checksum offload are off, fixed
RET=0
if [[ $(cat /sys/module/softib/parameters/offloads) == N ]]; then
	for f in tx-tcp-segmentation tx-checksum-ipv4 rx-checksumming; do
		got=$(ethtool_feature "$A" ib0 "$f")
		[[ $got == "off [fixed]" ]]
		check_err $? "softib offloads=0: ib0 $f: $got"
	done
	log_test "softib offloads=0: TSO and checksum offload off, fixed"
else
	ktap_skip "softib offloads=0: TSO and checksum offload off, fixed" "softib offloads=1 (41-offloads checks them on)"
fi

RET=0
# in-tree's eight counters come first, in its order (82-admin-link
# checks the rest of ours' table and that in-tree has just these)
names=$(ip netns exec "$A" ethtool -S ib0 | sed -n 's/^ *\([a-z_0-9]*\): [0-9]*$/\1/p' | head -n 8 | xargs)
[[ $names == "rx_packets tx_packets rx_bytes tx_bytes tx_errors rx_dropped tx_dropped multicast" ]]
check_err $? "ethtool -S's first eight names: '$names'"
# at least what iperf3 moved in its 5 s (with TSO a packet is a whole
# LSO send, however many datagrams the HCA cuts it into: 760 of them on
# the debug kernel, so a packet count alone says little)
tx=$(ip netns exec "$A" ethtool -S ib0 | sed -n 's/^ *tx_packets: //p')
txb=$(ip netns exec "$A" ethtool -S ib0 | sed -n 's/^ *tx_bytes: //p')
((tx > 100 && txb * 8 >= ${mbps:-0} * 5 * 1000000 * 9 / 10))
check_err $? "tx_packets $tx, tx_bytes $txb after iperf3 at ${mbps:-0} Mbit/s for 5 s"
mc=$(ip netns exec "$B" ethtool -S ib1 | sed -n 's/^ *multicast: //p')
((mc > 0))
check_err $? "multicast $mc after ARP and ND"
# softib ports are 4X EDR: 4 lanes of 25 Gbit/s
ip netns exec "$A" ethtool ib0 | grep -q "Speed: 100000Mb/s"
(($? == 0)) || check_err 1 "ethtool ib0: $(ip netns exec "$A" ethtool ib0 | grep -E 'Speed|Duplex' | xargs)"
log_test "ethtool -S counters and link speed"

# ipoib's debug tracing: nothing at debug level while debug_level=0,
# messages naming the interface once it is 1 (in-tree and ours alike)
debug_lines() { # MARKER: debug-level kernel lines about ib0 after MARKER
	dmesg -l debug | sed -n "/$1/,\$p" | grep -c "ib0: "
}
bounce() {
	ip -n "$A" link set ib0 down && ip -n "$A" link set ib0 up &&
		slowwait 20 ipoib_lower_up "$A" ib0
}
RET=0
P=/sys/module/ib_ipoib/parameters/debug_level
echo "<7>ipoib-selftest-$$-0" >/dev/kmsg
bounce
check_err $? "ib0 down/up with debug_level=0"
n0=$(debug_lines ipoib-selftest-$$-0)
echo 1 >$P
echo "<7>ipoib-selftest-$$-1" >/dev/kmsg
bounce
check_err $? "ib0 down/up with debug_level=1"
ip netns exec "$A" ping -c 1 -W 2 192.0.2.2 >/dev/null
n1=$(debug_lines ipoib-selftest-$$-1)
echo 0 >$P
((n1 > n0))
check_err $? "debug lines about ib0: $n0 with debug_level=0, $n1 with 1"
((n0 > 0)) && ktap_diag "with debug_level=0: $(dmesg -l debug | sed -n "/ipoib-selftest-$$-0/,/ipoib-selftest-$$-1/p" | grep "ib0: " | head -3)"
log_test "debug_level switches tracing on and off"

ktap_finish
