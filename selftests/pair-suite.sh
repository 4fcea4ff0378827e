#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The guest command of a pair (selftests/run.sh --pair, make check-pair):
# run in each of the two guests that run-guest.sh --fabric joins with a
# QEMU datagram link. It brings the fabric NIC up as 10.99.0.K/24 with the
# MTU the link offers (host_mtu, FABRIC_MTU on the host, 9000 by default)
# and runs the tests of selftests/pair/ with guest-suite.sh (SUITE=pair:
# same headers, timeouts, KTAP and cleanup between tests as the suite,
# and a barrier with the other node before each test). It loads nothing
# else: the tests load softib themselves (lib.sh).
#
# Env PAIR_TESTS ("a b", names without .sh) selects a subset; both nodes
# must be given the same. The last line is "N passed, N failed, N
# skipped"; the exit status is guest-suite.sh's.
#
#   pair-suite.sh --total-timeout   the guest's timeout (see guest-suite.sh)
#   pair-suite.sh --bench [--total-timeout]
#                                   selftests/pair-bench.sh instead of the
#                                   tests, on the same fabric NIC

set -uo pipefail

DIR=$(dirname "$(readlink -f "$0")")
export SUITE=pair TESTS=${PAIR_TESTS:-}
cmd=("$DIR/guest-suite.sh")
if [[ ${1:-} == --bench ]]; then
	cmd=("$DIR/pair-bench.sh")
	shift
fi

if [[ ${1:-} == --total-timeout ]]; then
	exec "${cmd[@]}" --total-timeout
fi
if [[ ${IPOIB_NG_GUEST:-} != 1 || ! ${IPOIB_NG_NODE:-} =~ ^[12]$ ]]; then
	echo "pair-suite.sh: runs only in a guest of a pair (selftests/run.sh --pair)" >&2
	exit 1
fi

node=$IPOIB_NG_NODE
dev=${IPOIB_NG_FABDEV:-fab0}
mtu=${IPOIB_NG_FABMTU:-9000}
if ! ip link set dev "$dev" mtu "$mtu" ||
   ! ip addr add "10.99.0.$node/24" dev "$dev" ||
   ! ip link set dev "$dev" up; then
	echo "pair-suite.sh: node $node: cannot bring $dev up as 10.99.0.$node/24, MTU $mtu" >&2
	ip -d link show 2>&1 | sed 's/^/# /'
	exit 1
fi
echo "# node $node: $(uname -r), $dev $(<"/sys/class/net/$dev/address") 10.99.0.$node/24 MTU $mtu"

out=$(mktemp)
"${cmd[@]}" | tee "$out"
rc=${PIPESTATUS[0]}
pass=$(grep -cE '^ok ' "$out")
skip=$(grep -cE '^ok .*# SKIP' "$out")
fail=$(grep -cE '^not ok ' "$out")
rm -f "$out"
echo "$((pass - skip)) passed, $fail failed, $skip skipped"
exit "$rc"
