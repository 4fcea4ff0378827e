#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the ipoib-ng tests inside a test guest (see selftests/run.sh) and
# print KTAP.
#
# Tests are the executable selftests/tests/*.sh, in name order; env TESTS
# ("a b", names without .sh) selects a subset, env DRIVERS ("ours",
# "intree" or both, the default) the IPoIB drivers of "both" tests, and
# env REPEAT=N runs the whole list N times in a row (soak a flaky test in
# one boot), env PART=K/N only the Kth of N shares of the runs (below).
# Env LONG=1 is passed on to the tests (their long forms).
# Header lines in a test:
#   # ipoib: both|ours|intree|none   IPoIB drivers it runs with ("both"
#                                    runs it twice, IPOIB=ours and intree)
#   # timeout: SEC                   overrides timeout= from selftests/settings
#   # timeout-long: SEC              the timeout of its long form (LONG=1)
#   # kernel: SERIES                 when SERIES (6.1 or 6.12) is one of
#                                    this run's (env SERIES_RUN, from
#                                    run.sh), runs in its guest only,
#                                    unless TESTS names it: for tests of
#                                    the userland around the driver
#                                    (packages, network managers), which
#                                    the kernel does not change; the other
#                                    guest's log says where it ran
# Exit status of a test: 0 pass, 4 skip, anything else fail.
# Env TIMEOUT_SCALE=N multiplies every test's timeout (make check-debug).
#
# Env SUITE=pair runs selftests/pair/*.sh instead, in a guest of a pair
# (run.sh --pair, whose guest command pair-suite.sh starts this): before
# each run both nodes meet at a barrier (lib.sh's pair_barrier; it waits
# for the other node's previous run, up to that run's timeout and a
# minute, and for the first run up to 10 minutes, for the other guest's
# boot), the run gets PAIR_SCOPE=runN for its own barriers and values and
# leaves that scope when it ends. A run whose barrier fails (the other
# node is gone or late) fails without running.
#
# On a kernel with kmemleak (the debug kernel of make check-debug) the
# suite ends with one more result, "kmemleak": a scan after the last test
# whose report must not name ib_*, rdma_*, ipoib, softib or an address in
# module space that no longer resolves (a module unloaded since it
# allocated). What kmemleak suspects before the first test (boot-time
# false positives, nothing of ours is loaded yet) is cleared first, and
# the periodic scan is off: each costs minutes under KASAN and TCG.

set -uo pipefail

DIR=$(dirname "$(readlink -f "$0")")
list_only=0
[[ ${1:-} == --total-timeout ]] && list_only=1
if ((!list_only)) && [[ ${IPOIB_NG_GUEST:-} != 1 ]]; then
	echo "guest-suite.sh: runs only in a test guest (selftests/run.sh)" >&2
	exit 1
fi
TESTS=${TESTS:-}
DRIVERS=${DRIVERS:-ours intree}
REPEAT=${REPEAT:-1}
TIMEOUT_SCALE=${TIMEOUT_SCALE:-1}
export KO_DIR=${KO_DIR:-} LONG=${LONG:-0}
SUITE=${SUITE:-tests}
[[ $SUITE == tests || $SUITE == pair ]] ||
	{ echo "guest-suite.sh: SUITE='$SUITE': want tests or pair" >&2; exit 1; }
# the barriers of a pair: the first (the other guest's boot) and, after
# each run's timeout, the other node's cleanup
PAIR_FIRST_WAIT=600 PAIR_NEXT_WAIT=60
if ((!list_only)) && [[ $SUITE == pair ]]; then
	# shellcheck source=/dev/null
	source "$DIR/lib.sh"
fi
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || { echo "guest-suite.sh: REPEAT='$REPEAT' is not a count" >&2; exit 1; }
[[ $TIMEOUT_SCALE =~ ^[1-9][0-9]*$ ]] ||
	{ echo "guest-suite.sh: TIMEOUT_SCALE='$TIMEOUT_SCALE' is not a whole factor" >&2; exit 1; }
for d in $DRIVERS; do
	[[ $d == ours || $d == intree ]] ||
		{ echo "guest-suite.sh: DRIVERS='$DRIVERS': want ours, intree or both" >&2; exit 1; }
done

default_timeout=$(sed -n 's/^timeout=\([0-9]\+\)$/\1/p' "$DIR/settings" 2>/dev/null)
default_timeout=${default_timeout:-120}

# header FILE KEY: the value of the "# KEY: value" line in FILE's header
# (its first comment block), read in bash: a test run costs no process
header() {
	local line re="^# $2: *([a-z0-9.]*)"

	while IFS= read -r line && [[ -z $line || $line == \#* ]]; do
		[[ $line =~ $re ]] && { echo "${BASH_REMATCH[1]}"; return; }
	done <"$1"
}

# run_timeout FILE: its timeout in seconds, scaled
run_timeout() {
	local t=""

	[[ $LONG == 1 ]] && t=$(header "$1" timeout-long)
	[[ -n $t ]] || t=$(header "$1" timeout)
	echo $((${t:-$default_timeout} * TIMEOUT_SCALE))
}

# Build the run list: "name ipoib file" per test run.
runs=()
if [[ -n $TESTS ]]; then
	read -ra names <<<"$TESTS"
else
	names=()
	for f in "$DIR/$SUITE"/*.sh; do
		f=${f##*/}
		[[ -x $DIR/$SUITE/$f ]] && names+=("${f%.sh}")
	done
fi
# this guest's kernel series (6.1.0-57-amd64: 6.1), for "# kernel:"
kseries=$(uname -r)
kseries=${kseries%%-*}
kseries=${kseries%.*}
elsewhere=()
for name in "${names[@]}"; do
	f=$DIR/$SUITE/$name.sh
	if [[ ! -x $f ]]; then
		runs+=("$name missing $f")
		continue
	fi
	k=$(header "$f" kernel)
	if ((!list_only)) && [[ -n $k && -z $TESTS && $k != "$kseries" &&
	      " ${SERIES_RUN:-} " == *" $k "* ]]; then
		elsewhere+=("$name ($k)")
		continue
	fi
	case $(header "$f" ipoib) in
	both)
		for d in ours intree; do
			[[ " $DRIVERS " == *" $d "* ]] && runs+=("$name $d $f")
		done
		;;
	ours) runs+=("$name ours $f") ;;
	intree) runs+=("$name intree $f") ;;
	*) runs+=("$name none $f") ;;
	esac
done
once=("${runs[@]}")
for ((i = 1; i < REPEAT; i++)); do
	runs+=("${once[@]}")
done
# env PART=K/N: every Nth run from the Kth only (run.sh GUESTS=N shares one
# kernel's runs among N guests; round robin over the name order)
if [[ -n ${PART:-} ]]; then
	if [[ ! $PART =~ ^([1-9][0-9]*)/([1-9][0-9]*)$ ]] ||
	   ((BASH_REMATCH[1] > BASH_REMATCH[2])); then
		echo "guest-suite.sh: PART='$PART': want K/N with 1 <= K <= N" >&2
		exit 1
	fi
	part=()
	for ((i = BASH_REMATCH[1] - 1; i < ${#runs[@]}; i += BASH_REMATCH[2])); do
		part+=("${runs[i]}")
	done
	runs=("${part[@]}")
fi

# --total-timeout: print the sum of all run timeouts (for the guest's timeout).
if ((list_only)); then
	total=0
	for run in "${runs[@]}"; do
		read -r name ipoib f <<<"$run"
		[[ $ipoib == missing ]] && continue
		total=$((total + $(run_timeout "$f")))
		[[ $SUITE == pair ]] && total=$((total + PAIR_NEXT_WAIT * TIMEOUT_SCALE))
	done
	[[ $SUITE == pair ]] && total=$((total + PAIR_FIRST_WAIT * TIMEOUT_SCALE))
	# the final kmemleak scan (two scans of a KASAN kernel under TCG)
	echo $((total + 300 * TIMEOUT_SCALE))
	exit 0
fi

# Best-effort reset between tests; fails if a module will not unload.
cleanup() {
	local m ok=0

	ip -all netns delete 2>/dev/null
	for m in ib_ipoib softib; do
		[[ -d /sys/module/$m ]] || continue
		slowwait_unload "$m" || {
			echo "# module $m is stuck (refcnt $(cat /sys/module/$m/refcnt 2>/dev/null))"
			lsmod | sed 's/^/# /'
			ok=1
		}
	done
	return $ok
}

slowwait_unload() {
	local _

	for _ in $(seq 20); do
		rmmod "$1" 2>/dev/null
		[[ -d /sys/module/$1 ]] || return 0
		sleep 0.5
	done
	return 1
}

# A marker in dmesg (KERN_INFO: not on the console at loglevel=5).
kmsg() { echo "<6>ipoib-ng: $*" >/dev/kmsg 2>/dev/null || true; }

KMEMLEAK=/sys/kernel/debug/kmemleak
kmemleak=0
[[ -e $KMEMLEAK ]] && kmemleak=1

# kmemleak_scan: two scans (an object is reported only once its contents
# stayed the same over a scan; the first scan of a new object records
# them), then the report.
kmemleak_scan() {
	echo scan >"$KMEMLEAK" && sleep 6 && echo scan >"$KMEMLEAK" &&
		cat "$KMEMLEAK"
}

# kmemleak_ours: the report's entries (blank-line separated, each one
# "unreferenced object ..." and its backtrace) that name our code or the
# RDMA stack (not fib_...), or an unresolved module-space address.
kmemleak_ours() {
	awk -v RS= -v ORS='\n\n' \
		'/[ [<](ib_|rdma_)|ipoib|softib|0xffffffff[c-f][0-9a-f]+/'
}

if ((kmemleak)); then
	# boot-time suspects (early allocations kmemleak cannot follow)
	# are marked as seen: only what the tests allocate is reported
	if echo scan=off >"$KMEMLEAK" && kmemleak_scan >/dev/null &&
	   echo clear >"$KMEMLEAK"; then
		kmsg "kmemleak: periodic scan off, boot suspects cleared"
	else
		echo "# kmemleak is present but refuses commands (disabled?)"
	fi
fi

echo "TAP version 13"
((${#elsewhere[@]} == 0)) ||
	echo "# in the other series' guest only (# kernel:): ${elsewhere[*]}"
echo "1..$((${#runs[@]} + kmemleak))"
n=0 pass=0 fail=0 skip=0
out=$(mktemp)
scope="" pwait=$PAIR_FIRST_WAIT
for run in "${runs[@]}"; do
	read -r name ipoib f <<<"$run"
	n=$((n + 1))
	desc="$name [ipoib=$ipoib]"
	if [[ $ipoib == missing ]]; then
		echo "not ok $n $name # no such test: $f"
		fail=$((fail + 1))
		continue
	fi
	t=$(run_timeout "$f")
	if [[ $SUITE == pair ]]; then
		scope=run$n
		# both nodes start the run together
		if ! PAIR_SCOPE=suite pair_barrier "$scope" "$pwait" 2>"$out"; then
			echo "not ok $n $desc # $(<"$out")"
			fail=$((fail + 1))
			PAIR_SCOPE=$scope pair_leave
			continue
		fi
		pwait=$((t / TIMEOUT_SCALE + PAIR_NEXT_WAIT))
	fi

	echo "# selftests: ipoib-ng: $desc"
	kmsg "start $desc"
	start=$SECONDS
	IPOIB=$ipoib PAIR_SCOPE=$scope timeout -k 5 "$t" "$f" </dev/null 2>&1 |
		tee "$out" | sed -u 's/^/# /'
	rc=${PIPESTATUS[0]}
	[[ $SUITE == pair ]] && PAIR_SCOPE=$scope pair_leave
	kmsg "end $desc rc=$rc"
	echo "# $desc: exit $rc after $((SECONDS - start))s"

	if ! cleanup; then
		echo "not ok $n $desc # modules left loaded"
		fail=$((fail + 1))
	elif [[ $rc -eq 0 ]]; then
		echo "ok $n $desc"
		pass=$((pass + 1))
	elif [[ $rc -eq 4 ]]; then
		reason=$(grep -o 'SKIP.*' "$out" | tail -n1 | sed 's/^SKIP:\? *//')
		echo "ok $n $desc # SKIP ${reason:-exit 4}"
		skip=$((skip + 1))
	elif [[ $rc -eq 124 || $rc -eq 137 ]]; then
		echo "not ok $n $desc # TIMEOUT ${t}s"
		fail=$((fail + 1))
	else
		echo "not ok $n $desc # exit=$rc"
		fail=$((fail + 1))
	fi
done
rm -f "$out"

if ((kmemleak)); then
	n=$((n + 1))
	kmsg "kmemleak: final scan"
	if ! report=$(kmemleak_scan); then
		echo "not ok $n kmemleak # the scan failed (kmemleak disabled itself?)"
		fail=$((fail + 1))
	else
		ours=$(kmemleak_ours <<<"$report")
		others=$(grep -c '^unreferenced object' <<<"$report")
		echo "# kmemleak: $others suspected leak(s) in all"
		if [[ -n $ours ]]; then
			sed 's/^/# /' <<<"$ours" | head -n 300
			echo "not ok $n kmemleak # $(grep -c '^unreferenced object' <<<"$ours") leak(s) in the RDMA stack or ours"
			fail=$((fail + 1))
		else
			# not ours: shown, not failed (see the header)
			sed 's/^/# unrelated: /' <<<"$report" | head -n 100
			echo "ok $n kmemleak"
			pass=$((pass + 1))
		fi
	fi
fi
echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:$skip error:0"
((fail == 0))
