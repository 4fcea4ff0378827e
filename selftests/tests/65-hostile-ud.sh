#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 480
#
# Hostile UD traffic into an IPoIB interface, put on the fabric
# with softib's injector (debugfs ports/2/inject, Documentation/softib.rst)
# at ib1's UD QPN: malformed IPoIB frames, truncated or bad IPv4/IPv6/ARP,
# wrong Q_Key and P_Key, with and without GRH, oversized, to the broadcast
# QPN and the broadcast group, then a seeded random run of 60,000 frames
# (200,000 with LONG=1).
# Each case must land in the counter this driver uses for it (netdev
# statistics, the IP stack's SNMP counters or softib's drop counters), with
# no kernel warning (the runner checks), no leak, and ib1 still working.
# Where in-tree differs it is named in a diagnostic and expected.

source "$(dirname "$0")/../lib.sh"

require_cmd python3 ping

INJ=$SOFTIB_DBG/ports/2/inject
N=20				# frames per fixed case
# the random run: 60,000 frames (200,000 with LONG=1); a debug kernel
# (TIMEOUT_SCALE=N) injects about a tenth as fast, and gets that / N in
# the same time bound
if [[ -z ${FRAMES:-} ]]; then
	FRAMES=60000
	[[ $LONG == 1 ]] && FRAMES=200000
	FRAMES=$((FRAMES / ${TIMEOUT_SCALE:-1}))
fi
SEED=${SEED:-10}

ktap_header 8
ktap_diag "IPOIB=$IPOIB"

# The leak check (result 8) compares what softib holds after ib_ipoib is
# unloaded with what it held before ib_ipoib was loaded: every object the
# driver made for the hostile traffic must be gone then, in both drivers.
# Compared while up instead, the kernel's own router solicitations and MLD
# reports (the random run provokes some) leave send-only groups with an
# address handle each, legitimately held until they idle out.
ipoib_fabric_up
ktap_result $? "ib0/ib1 in two netns get carrier" || ktap_finish
unload_ipoib
sleep 1
objs_base=$(softib_objs)
ipoib_fabric_reload || ktap_diag "ib0/ib1 did not get carrier again after the baseline"
ip netns exec "$A" ping -c 2 -i 0.2 -w 4 -W 2 192.0.2.2 >/dev/null
hw=$(ipoib_hwaddr "$B" ib1)
QPN=0x${hw:3:2}${hw:6:2}${hw:9:2}
ktap_diag "ib1 hardware address $hw: UD QPN $QPN"

# the fixed cases and the random run (65-hostile-ud.py)
BCAST=$(awk '$2 == "ff12:401b:ffff:0000:0000:0000:ffff:ffff" { print $1 }' "$SOFTIB_DBG/mcast")
ktap_diag "broadcast group MLID ${BCAST:-none}"
meminfo() {
	awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo
}
# Ours also releases every path, group and address handle on down
# (result 8 checks it); in-tree keeps them until the next up, as its
# address handle reaper stops on down.
both_down() {
	ip -n "$A" link set ib0 down && ip -n "$B" link set ib1 down
}
both_up() {
	ip -n "$A" link set ib0 up && ip -n "$B" link set ib1 up &&
		slowwait 20 ipoib_lower_up "$A" ib0 &&
		slowwait 20 ipoib_lower_up "$B" ib1
}
if [[ $IPOIB == ours ]]; then
	both_down
	sleep 1
	objs_down=$(softib_objs)
	both_up || ktap_diag "ib0/ib1 did not get carrier again after the baseline"
	ip netns exec "$A" ping -c 2 -i 0.2 -w 4 -W 2 192.0.2.2 >/dev/null
fi
sunr0=$(meminfo SUnreclaim)
t0=$SECONDS
out=$(python3 "$(dirname "$0")/65-hostile-ud.py" "$INJ" "$QPN" "$B" "$IPOIB" \
	"$N" "$FRAMES" "$SEED" "${BCAST:-0xc001}" 2>&1)
rc=$?
secs=$((SECONDS - t0))
while read -r l; do
	ktap_diag "${l#\# }"
done <<<"$(grep -v '^FAIL' <<<"$out")"
RET=0
grep -v '^FAIL random' <<<"$out" | grep -q '^FAIL'
(($? != 0)) || check_fail 0 "$(grep '^FAIL' <<<"$out" | grep -v '^FAIL random' | xargs)"
((rc == 0 || rc == 1))
check_err $? "65-hostile-ud.py: rc $rc"
log_test "fixed malformed cases land in the expected counters"
if [[ $IPOIB == intree ]]; then
	ktap_diag "in-tree (known): runts (< 4-byte payload, zero-length) count as rx_packets and go up the stack with a protocol read past the frame; ours counts them as rx_length_errors"
	ktap_diag "in-tree (known): an unknown ethertype counts as rx_packets before the stack drops it (rx_dropped); ours drops it before the stack"
fi
RET=0
grep -q '^FAIL random' <<<"$out"
(($? != 0)) || check_fail 0 "$(grep '^FAIL random' <<<"$out" | xargs)"
((rc == 0 || rc == 1))
check_err $? "65-hostile-ud.py: rc $rc"
((secs < 300 * ${TIMEOUT_SCALE:-1}))
check_err $? "took ${secs}s"
log_test "$FRAMES seeded random frames, each accounted for (${secs}s for both parts)"

# the injector itself: bad input gets a precise errno
RET=0
out=$(python3 - "$INJ" "$QPN" <<'EOF'
import errno, sys
inj, qpn = sys.argv[1], sys.argv[2]
cases = [
    (b'qkey=1\n', errno.EDESTADDRREQ),
    (b'qpn=%s bogus=1\n' % qpn.encode(), errno.EINVAL),
    (b'qpn=%s qkey\n' % qpn.encode(), errno.EINVAL),
    (b'qpn=0x1000000\n', errno.ERANGE),
    (b'qpn=%s sl=16\n' % qpn.encode(), errno.ERANGE),
    (b'qpn=%s pkey=1 pkey_index=0\n' % qpn.encode(), errno.EINVAL),
    (b'qpn=%s pkey_index=32\n' % qpn.encode(), errno.ERANGE),
    (b'qpn=%s hex=abc\n' % qpn.encode(), errno.EINVAL),
    (b'qpn=%s hex=zz\n' % qpn.encode(), errno.EINVAL),
    (b'qpn=%s hex=00\nX' % qpn.encode(), errno.EINVAL),
    (b'qpn=%s dgid=nonsense\n' % qpn.encode(), errno.EINVAL),
    (b'qpn=%s len=9-3\n' % qpn.encode(), errno.EINVAL),
    (b'qpn=%s count=0\n' % qpn.encode(), errno.ERANGE),
    (b'qpn=%s\n' % qpn.encode() + b'\0' * 9000, errno.EMSGSIZE),
]
bad = 0
for data, want in cases:
    try:
        with open(inj, 'wb', buffering=0) as f:
            f.write(data)
        got = 0
    except OSError as e:
        got = e.errno
    if got != want:
        bad += 1
        print('%r: errno %s, expected %s' % (data[:40], errno.errorcode.get(got, got),
                                             errno.errorcode[want]))
sys.exit(bad)
EOF
)
check_err $? "$out"
log_test "injector: bad input refused with a precise errno"

sunr1=$(meminfo SUnreclaim)	# up, as sunr0: what the peer left held

ip netns exec "$A" ping -c 3 -i 0.2 -w 5 -W 2 192.0.2.2 >/dev/null
ktap_result $? "ping A -> B after the hostile traffic"

RET=0
ip netns exec "$B" ping -c 3 -i 0.2 -w 5 -W 2 192.0.2.1 >/dev/null
check_err $? "B -> A"
log_test "ping B -> A after the hostile traffic"

# the multicast copy reached ib0 too, which still works
ip netns exec "$A" ping -c 1 -W 2 -b 192.0.2.255 >/dev/null 2>&1
ip netns exec "$A" ping -c 2 -i 0.2 -w 4 -W 2 192.0.2.2 >/dev/null
ktap_result $? "ib0 still works after the broadcast-group case"

RET=0
((sunr1 - sunr0 < 8192))
(($? == 0)) || check_err 1 "SUnreclaim grew by $((sunr1 - sunr0)) kB"
ktap_diag "SUnreclaim ${sunr0} kB -> ${sunr1} kB"
if [[ $IPOIB == ours ]]; then
	both_down
	slowwait 10 softib_objs_le "$objs_down" >/dev/null
	(($? == 0)) || check_err 1 "with ib0/ib1 down, softib objects before: $objs_down; after: $(softib_objs)"
fi
unload_ipoib
slowwait 10 softib_objs_le "$objs_base" >/dev/null
rc=$?
objs_end=$(softib_objs)
check_err $rc "without ib_ipoib, softib objects before: $objs_base; after: $objs_end"
ktap_diag "softib objects without ib_ipoib, before: $objs_base; after: $objs_end"
log_test "no leak: softib's objects back where they were once ib_ipoib is unloaded, SUnreclaim within 8 MB"
[[ $IPOIB == intree ]] &&
	ktap_diag "in-tree (known): address handles that down releases wait on its dead list until the next up (its reaper stops on down): compared only after unloading"

ktap_finish
