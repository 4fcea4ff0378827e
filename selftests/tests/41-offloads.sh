#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 240
#
# softib's UD offloads (offloads=1) as IPoIB drives them:
#
# - softib's own check (selftest offload): LSO segments and checksums;
# - datagram mode: ethtool -k shows TSO, IPv4 transmit checksumming and
#   receive checksumming on; a TCP stream goes out as LSO sends (softib
#   stats lso_sends, lso_segments) with the checksums filled in by the HCA
#   (csum_filled), and arrives intact;
# - with transmit checksumming turned off on the sender (ethtool -K), the
#   datagrams carry the stack's checksums and softib verifies them
#   (csum_verified) instead, and TSO is off with it;
# - connected mode turns checksum offload and TSO off (RC carries none),
#   datagram mode turns them back on;
# - with softib offloads=0 the features are off and fixed, and TCP runs
#   on the stack's software segmentation and checksums (the suite runs
#   that way on 6.1 in make check, see Documentation/testing.rst).

source "$(dirname "$0")/../lib.sh"

require_cmd ethtool iperf3 ping

# stream SECS: TCP from A to B; prints Mbit/s
stream() { iperf_mbps "$A" "$B" 192.0.2.2 "$1"; }

ktap_header 6
ktap_diag "IPOIB=$IPOIB"

ipoib_fabric_up offloads=1
ktap_result $? "ib0/ib1 up in two netns, softib offloads=1" || ktap_finish

RET=0
echo offload >"$SOFTIB_DBG/selftest"
(($? == 0)) || check_err 1 "selftest offload failed: $(dmesg | grep 'selftest offload' | tail -3)"
log_test "softib: LSO segments and checksums (selftest offload)"

RET=0
for f in tx-tcp-segmentation tx-checksum-ipv4 rx-checksumming; do
	[[ $(ethtool_feature "$A" ib0 $f) == on* ]]
	(($? == 0)) || check_err 1 "ib0 $f: $(ethtool_feature "$A" ib0 $f)"
done
l0=$(softib_stat lso_sends) s0=$(softib_stat lso_segments) c0=$(softib_stat csum_filled)
mbps=$(stream 2)
check_err $? "iperf3 with offloads"
l1=$(softib_stat lso_sends) s1=$(softib_stat lso_segments) c1=$(softib_stat csum_filled)
ktap_diag "datagram, offloads on: ${mbps:-0} Mbit/s; $((l1 - l0)) LSO sends in $((s1 - s0)) datagrams, $((c1 - c0)) checksums filled in"
((l1 - l0 > 0 && s1 - s0 > l1 - l0 && c1 - c0 > 0))
(($? == 0)) || check_err 1 "no LSO sends or filled checksums: lso_sends +$((l1 - l0)), lso_segments +$((s1 - s0)), csum_filled +$((c1 - c0))"
log_test "datagram mode: TSO and checksum offload on, TCP goes out as LSO sends"

RET=0
ip netns exec "$A" ethtool -K ib0 tx off
check_err $? "ethtool -K ib0 tx off"
[[ $(ethtool_feature "$A" ib0 tx-tcp-segmentation) == off* ]]
(($? == 0)) || check_err 1 "TSO stays $(ethtool_feature "$A" ib0 tx-tcp-segmentation) without transmit checksumming"
l0=$(softib_stat lso_sends) v0=$(softib_stat csum_verified) u0=$(softib_stat csum_unverified)
mbps=$(stream 2)
check_err $? "iperf3 with transmit checksumming off"
l1=$(softib_stat lso_sends) v1=$(softib_stat csum_verified) u1=$(softib_stat csum_unverified)
ktap_diag "tx off: ${mbps:-0} Mbit/s; $((v1 - v0)) checksums verified, $((u1 - u0)) bad, LSO sends +$((l1 - l0))"
((l1 == l0 && v1 - v0 > 0 && u1 == u0))
(($? == 0)) || check_err 1 "lso_sends +$((l1 - l0)), csum_verified +$((v1 - v0)), csum_unverified +$((u1 - u0))"
ip netns exec "$A" ethtool -K ib0 tx on tso on
check_err $? "ethtool -K ib0 tx on tso on"
log_test "transmit checksumming off: the stack's checksums are verified, no LSO"

RET=0
ip netns exec "$A" sh -c "echo connected > /sys/class/net/ib0/mode"
check_err $? "ib0 connected"
for f in tx-tcp-segmentation tx-checksum-ipv4; do
	[[ $(ethtool_feature "$A" ib0 $f) == off* ]]
	(($? == 0)) || check_err 1 "connected mode: ib0 $f: $(ethtool_feature "$A" ib0 $f)"
done
l0=$(softib_stat lso_sends)
mbps=$(stream 2)
check_err $? "iperf3 in connected mode"
ktap_diag "connected: ${mbps:-0} Mbit/s"
(($(softib_stat lso_sends) == l0))
check_err $? "LSO sends in connected mode"
ip netns exec "$A" sh -c "echo datagram > /sys/class/net/ib0/mode"
check_err $? "ib0 datagram"
[[ $(ethtool_feature "$A" ib0 tx-tcp-segmentation) == on* ]]
(($? == 0)) || check_err 1 "datagram mode again: TSO $(ethtool_feature "$A" ib0 tx-tcp-segmentation)"
log_test "connected mode turns TSO and checksum offload off, datagram mode on again"

RET=0
unload_ipoib && unload_softib
check_err $? "unloading ib_ipoib and softib"
load_softib offloads=0 && slowwait 10 softib_ports_active >/dev/null &&
	ipoib_fabric_reload
check_err $? "softib offloads=0, ib_ipoib, ib0/ib1 placed again"
for f in tx-tcp-segmentation tx-checksum-ipv4 rx-checksumming; do
	got=$(ethtool_feature "$A" ib0 "$f")
	[[ $got == "off [fixed]" ]]
	check_err $? "offloads=0: ib0 $f: $got"
done
mbps=$(stream 2)
check_err $? "iperf3 with offloads=0"
ktap_diag "datagram, offloads=0: ${mbps:-0} Mbit/s"
(($(softib_stat lso_sends) == 0 && $(softib_stat csum_filled) == 0))
(($? == 0)) || check_err 1 "offloads=0 used anyway: lso_sends $(softib_stat lso_sends), csum_filled $(softib_stat csum_filled)"
log_test "softib offloads=0: TSO and checksum offload off and fixed, TCP in software"

ktap_finish
