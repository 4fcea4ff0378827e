#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build ipoib-ng for Debian test kernels and run the suite in QEMU guests.
#
#   selftests/run.sh SERIES...          e.g. "6.1 6.12" (make check)
#   selftests/run.sh --shell SERIES     interactive guest shell (make shell)
#   selftests/run.sh --bench SERIES...  selftests/bench.sh instead of the suite
#   selftests/run.sh --demo SERIES      selftests/demo.sh (make demo)
#   selftests/run.sh --pair SERIES1 SERIES2
#                                       two guests on one fabric (make
#                                       check-pair): node 1 boots SERIES1,
#                                       node 2 SERIES2
#   selftests/run.sh --pair-bench SERIES1 SERIES2
#                                       the same two guests run
#                                       selftests/pair-bench.sh (make
#                                       bench's cross-guest part)
#
# Per kernel ABI: a shadow source tree in .build/<abi>/ (symlinks, so the
# work tree stays clean and both kernels build side by side), the modules
# collected in .build/<abi>/ko/, and the guest's output, dmesg and console
# log in .build/<abi>/results/ (results-K/ for guest K of GUESTS=N). Env
# TESTS="a b" runs a subset. With two series, make check then runs the
# pair of selftests/pair/ (--pair below) on them, unless TESTS is set
# and PAIR_TESTS is not.
# SERIES "debug" is the debug kernel of make check-debug (kernels.sh):
# the modules build against its build tree. Env TIMEOUT_SCALE=N multiplies
# every timeout (that kernel is several times slower under TCG), env
# GUEST_APPEND adds to the guest's kernel command line.
# The last line is "N passed, N failed, N skipped"; exit status 1 on any
# failure (a failed build or a guest that died counts as one).
# --pair: both guests at once (run-guest.sh --fabric: a QEMU datagram link
# between them and a shared sync directory, in a new /tmp/ipoib-ng-fab.*
# removed afterwards), each running selftests/pair-suite.sh on its
# kernel's modules; env PAIR_TESTS="a b" runs a subset of
# selftests/pair/, FABRIC_MTU the link's MTU (9000). Their output is
# shown live, each line after "nK: ", and kept in .build/pair/node-K.log;
# their results are in .build/pair/node-K/. When a guest's QEMU has
# exited, the sync directory says so (dead.K), and the other node's
# barriers fail at once instead of waiting out their timeouts.

set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
VM=$ROOT/selftests/vm
cd "$ROOT"
export TESTS=${TESTS:-} DRIVERS=${DRIVERS:-ours intree} REPEAT=${REPEAT:-1} LONG=${LONG:-0}
export TIMEOUT_SCALE=${TIMEOUT_SCALE:-1}
# GUESTS=N: N guests per kernel share its runs (guest-suite.sh PART=K/N),
# for the debug kernel, whose suite takes hours in one guest
GUESTS=${GUESTS:-1}
[[ $GUESTS =~ ^[1-9]$ ]] || { echo "run.sh: GUESTS='$GUESTS': want 1-9" >&2; exit 1; }
[[ $TIMEOUT_SCALE =~ ^[1-9][0-9]*$ ]] ||
	{ echo "run.sh: TIMEOUT_SCALE='$TIMEOUT_SCALE' is not a whole factor" >&2; exit 1; }

shell=0 pair=0
guest_opts=() pair_args=()
[[ -n ${GUEST_APPEND:-} ]] && guest_opts+=(--append "$GUEST_APPEND")
guest_cmd=$ROOT/selftests/guest-suite.sh
case ${1:-} in
--shell)
	shell=1
	shift
	;;
--bench | --demo)
	# measurements / a show, not tests: one series after the other,
	# live, so that two guests do not compete for the cores
	guest_cmd=$ROOT/selftests/${1#--}.sh
	export SERIAL=1
	# the demo shows its own steps, not the guest kernel's console
	[[ $1 == --demo ]] && guest_opts+=(--quiet)
	# measured as a production kernel runs: without the suite's SLUB
	# debugging (red zones and poisoning cost kmalloc-heavy paths most)
	[[ $1 == --bench ]] && guest_opts+=(--append "slub_debug=- ${GUEST_APPEND:-}")
	shift
	;;
--pair | --pair-bench)
	pair=1
	guest_cmd=$ROOT/selftests/pair-suite.sh
	if [[ $1 == --pair-bench ]]; then
		pair_args=(--bench)
		guest_opts+=(--append "slub_debug=- ${GUEST_APPEND:-}")
	fi
	shift
	[[ $# -eq 2 ]] || { echo "usage: run.sh --pair|--pair-bench SERIES1 SERIES2" >&2; exit 1; }
	;;
esac
[[ $# -gt 0 ]] || { echo "usage: run.sh [--shell|--bench|--demo|--pair|--pair-bench] SERIES..." >&2; exit 1; }

resolve_abi() {
	"$VM/kernels.sh" abi "$1" 2>/dev/null && return
	"$VM/kernels.sh" fetch "$1" >&2
	"$VM/kernels.sh" abi "$1"
}

# shadow_build KDIR DIR "DRIVER..." [MAKE ARGS]: build the modules of
# drivers/DRIVER... against the kernel build tree KDIR in a tree of
# symlinks to the sources at DIR; the log is DIR/build.log.
shadow_build() {
	local kdir=$1 b=$2 drivers=$3 d f srcs=()

	shift 3
	for d in $drivers; do srcs+=("drivers/$d"); done
	mkdir -p "$b"
	# Refresh the shadow tree: sources only (the work tree may hold
	# objects of an in-tree build), stale links and other drivers dropped
	# (the top-level Kbuild builds each drivers/ directory it finds).
	find "$b" -xtype l -delete
	find "$b" -type l -name '*.mod.c' -delete
	for d in "$b"/drivers/*; do
		[[ -d $d && " $drivers " != *" ${d##*/} "* ]] && rm -rf "$d"
	done
	{
		echo Kbuild
		echo dkms.conf
		find include "${srcs[@]}" -type f ! -name '*.mod.c' \
			\( -name '*.[chS]' -o -name Kbuild -o -name Makefile \)
	} | while read -r f; do
		mkdir -p "$b/$(dirname "$f")"
		ln -sfn "$ROOT/$f" "$b/$f"
	done
	make -C "$kdir" M="$ROOT/$b" -j"$(nproc)" IPOIB_NG_WERROR=1 \
		"$@" modules >"$b/build.log" 2>&1
}

# build ABI KDIR: the modules, plus the test-only interop variant of
# ib_ipoib (IPOIB_NG_INTEROP=1, its own tree), into .build/ABI/ko/.
build() {
	local abi=$1 kdir=$2 b=.build/$1

	shadow_build "$kdir" "$b" "ipoib softib" || return 1
	if ! shadow_build "$kdir" "$b-interop" ipoib IPOIB_NG_INTEROP=1; then
		cat "$b-interop/build.log" >>"$b/build.log"
		return 1
	fi
	rm -rf "$b/ko"
	mkdir -p "$b/ko"
	# the interop tree's ib_ipoib variant, and not the DKMS build of
	# 15-install under $b/dkms
	find "$b" \( -path "$b/ko" -o -path "$b/dkms" \) -prune -o -name '*.ko' -exec cp -t "$b/ko" {} + &&
		cp -t "$b/ko" "$b-interop/drivers/ipoib/ib_ipoib_interop.ko"
}

# build_abi ABI KDIR: build, and say so; or print the first errors (else
# the end of the log) and a "not ok" line, and return 1
build_abi() {
	local start=$SECONDS b=.build/$1

	if ! build "$1" "$2"; then
		{ grep -E '(error|warning):' "$b/build.log" | head -n 30 ||
		  tail -n 30 "$b/build.log"; } | sed 's/^/# build: /'
		echo "not ok - build on $1 failed (log: $b/build.log)"
		return 1
	fi
	echo "# kernel $1: built $(cd "$b/ko" && echo *.ko) in $((SECONDS - start))s"
}

if ((shell)); then
	abi=$(resolve_abi "$1")
	build "$abi" "$("$VM/kernels.sh" kdir "$1")" || { tail -n 30 ".build/$abi/build.log"; echo "build failed" >&2; }
	echo "KO_DIR=$ROOT/.build/$abi/ko; guest poweroff: exit"
	exec "$VM/run-guest.sh" --abi "$abi" --shell -- \
		env KO_DIR="$ROOT/.build/$abi/ko" EXPECT_ABI="$abi" bash -l
fi

# make bench BENCH_ROUNDS=1 ...: the bench's settings reach the guest
mapfile -t bench_env < <(env | grep -E '^BENCH_[A-Z_]+=' || true)

# the suite's own sum (scaled by guest-suite.sh) plus the boot
if ((pair)); then
	timeout=$(( $(PAIR_TESTS=${PAIR_TESTS:-} "$guest_cmd" "${pair_args[@]}" --total-timeout) +
		180 * TIMEOUT_SCALE ))
else
	timeout=$(( $("$ROOT/selftests/guest-suite.sh" --total-timeout) + 180 * TIMEOUT_SCALE ))
fi
# a guest that has not started the suite by then is stuck in early boot
# and is booted again (run-guest.sh --boot-limit); 6-9 s is usual, the
# debug kernel beside another guest takes about 90 s
boot_limit=$((90 * TIMEOUT_SCALE))

# guest_verdict RC WHO RES FAILED: a guest's exit status RC (run-guest.sh)
# as a result: nothing for a suite that ran (FAILED, its failed tests, say
# why it failed), else a "not ok" line for WHO (results in RES) and
# status 1
guest_verdict() {
	case $1 in
	0) return 0 ;;
	1) (($4)) && return 0; echo "not ok - $2: suite failed without a failed test" ;;
	2) echo "not ok - $2: guest died without a status (see $3/console.log)" ;;
	3) echo "not ok - $2: kernel reported a problem (see $3/dmesg)" ;;
	124) echo "not ok - $2: guest timed out after ${timeout}s" ;;
	*) echo "not ok - $2: guest exit status $1" ;;
	esac
	return 1
}

# run_series SERIES: build and test one kernel series. Prints its KTAP and
# diagnostics; the last line is "# counts PASS FAIL SKIP".
run_series() {
	local series=$1 start=$SECONDS abi kdir b rc out p s f fail=0

	if ! abi=$(resolve_abi "$series"); then
		echo "not ok - kernel series $series: cannot resolve its ABI"
		echo "# counts 0 1 0"
		return
	fi
	echo "# kernel $abi"
	b=.build/$abi
	if ! kdir=$("$VM/kernels.sh" kdir "$series"); then
		echo "not ok - kernel series $series: no build tree for its modules"
		echo "# counts 0 1 0"
		return
	fi
	if ! build_abi "$abi" "$kdir"; then
		echo "# counts 0 1 0"
		return
	fi
	# 15-install's DKMS build, here at native speed (see dkms-prebuild.sh);
	# when it fails, that test fails and says why
	if wants_test 15-install; then
		"$VM/dkms-prebuild.sh" "$abi" "$kdir" "$b/dkms" 2>&1 | sed 's/^/# /' || true
	fi

	local k n=$GUESTS res pt=0 st=0 ft=0
	# softib offloads: the suite runs softib's default (on) except on
	# 6.1, where it runs offloads=0 so that the whole suite also covers
	# the drivers' software path (41-offloads takes both on each kernel);
	# SOFTIB_PARAMS, even empty, decides instead
	local softib_params=${SOFTIB_PARAMS-}
	if [[ -z ${SOFTIB_PARAMS+set} && $series == 6.1 &&
		$guest_cmd == */guest-suite.sh ]]; then
		softib_params=offloads=0
	fi
	echo "# kernel $abi: softib parameters: ${softib_params:-(defaults)}"
	for ((k = 1; k <= n; k++)); do
		res=$b/results
		((n == 1)) || res=$b/results-$k
		echo "# kernel $abi: booting a QEMU guest (TCG thread=${GUEST_TCG_THREAD:-single}, 2 vCPUs)${res#"$b/results"}"
		(
			rc=0
			"$VM/run-guest.sh" "${guest_opts[@]}" --abi "$abi" --timeout "$timeout" \
				--boot-limit "$boot_limit" --results "$res" \
				-- env KO_DIR="$ROOT/$b/ko" EXPECT_ABI="$abi" TESTS="$TESTS" \
				DRIVERS="$DRIVERS" REPEAT="$REPEAT" LONG="$LONG" \
				TIMEOUT_SCALE="$TIMEOUT_SCALE" PART="$k/$n" \
				SERIES_RUN="$series_run" \
				SOFTIB_PARAMS="$softib_params" "${bench_env[@]}" \
				"$guest_cmd" || rc=$?
			echo "$rc" >"$res.rc"
		) &
	done
	wait
	for ((k = 1; k <= n; k++)); do
		res=$b/results
		((n == 1)) || res=$b/results-$k
		rc=$(cat "$res.rc" 2>/dev/null || echo 2)
		out=$res/output
		[[ -e $out ]] || : >"$out"
		((n == 1)) || sed "s/^/# part $k\/$n: /" "$out"
		p=$(grep -cE '^ok ' "$out" || true)
		s=$(grep -cE '^ok .*# SKIP' "$out" || true)
		f=$(grep -cE '^not ok ' "$out" || true)
		guest_verdict "$rc" "$abi" "$res" "$f" || fail=$((fail + 1))
		pt=$((pt + p - s)) st=$((st + s)) ft=$((ft + f))
	done
	# make bench: its samples and table as .build/bench-<abi>.json
	if [[ $guest_cmd == */bench.sh && -e $b/results/bench.json ]]; then
		cp "$b/results/bench.json" ".build/bench-$abi.json"
		echo "# kernel $abi: bench JSON in .build/bench-$abi.json"
	fi
	echo "# kernel $abi: $pt passed, $ft failed, $st skipped"
	echo "# kernel $abi: $((SECONDS - start))s"
	echo "# counts $pt $((ft + fail)) $st"
}

# host_tests: the tests of selftests/host/ (the runner's own parts, such
# as deps.sh), before any guest boots; sets pass/fail/skip.
host_tests() {
	local t out rc p s f

	for t in "$ROOT"/selftests/host/*.sh; do
		[[ -x $t ]] || continue
		echo "# host: $(basename "$t" .sh)"
		rc=0
		out=$(timeout 300 "$t" 2>&1) || rc=$?
		sed 's/^/# host: /' <<<"$out"
		p=$(grep -cE '^ok ' <<<"$out" || true)
		s=$(grep -cE '^ok .*# SKIP' <<<"$out" || true)
		f=$(grep -cE '^not ok ' <<<"$out" || true)
		if ((rc && !f)); then
			echo "not ok - host test $(basename "$t") exited $rc without a failed test"
			f=1
		fi
		pass=$((pass + p - s)) fail=$((fail + f)) skip=$((skip + s))
	done
	echo "# host tests: $pass passed, $fail failed, $skip skipped"
}

# wants_test NAME: the guest suite will run test NAME
wants_test() {
	[[ $guest_cmd == */guest-suite.sh ]] && { [[ -z $TESTS ]] || [[ " $TESTS " == *" $1 "* ]]; }
}

# run_pair SERIES1 SERIES2: both nodes of a pair (--pair above); adds
# their results to pass/fail/skip
fab=""
run_pair() {
	local k abi kdir res rc out p s f start=$SECONDS abis=()

	for k in 1 2; do
		if ! abi=$(resolve_abi "${!k}") || ! kdir=$("$VM/kernels.sh" kdir "${!k}"); then
			echo "not ok - kernel series ${!k}: no ABI or build tree"
			fail=$((fail + 1))
			return
		fi
		abis+=("$abi")
		# the same kernel on both nodes is built once
		((k == 1)) || [[ $abi != "${abis[0]}" ]] || continue
		build_abi "$abi" "$kdir" || { fail=$((fail + 1)); return; }
	done
	# a bench that does not get to write its samples leaves no older ones
	rm -f .build/pair/node-1/bench.json
	fab=$(mktemp -d /tmp/ipoib-ng-fab.XXXXXX)
	trap 'rm -rf "$fab"' EXIT
	mkdir -p "$fab/sync" .build/pair
	for k in 1 2; do
		abi=${abis[k - 1]}
		res=.build/pair/node-$k
		echo "# node $k: $abi, booting (QEMU TCG, 2 vCPUs; log $res.log, results $res/)"
		(
			rc=0
			"$VM/run-guest.sh" "${guest_opts[@]}" --abi "$abi" --timeout "$timeout" \
				--boot-limit "$boot_limit" --results "$res" --fabric "$fab" --node "$k" \
				-- env KO_DIR="$ROOT/.build/$abi/ko" EXPECT_ABI="$abi" \
				EXPECT_PEER_ABI="${abis[2 - k]}" PAIR_TESTS="${PAIR_TESTS:-}" \
				DRIVERS="$DRIVERS" LONG="$LONG" TIMEOUT_SCALE="$TIMEOUT_SCALE" \
				SOFTIB_PARAMS="${SOFTIB_PARAMS-}" "${bench_env[@]}" \
				"$guest_cmd" "${pair_args[@]}" 2>&1 |
				tee "$res.log" | sed -u "s/^/n$k: /" || rc=${PIPESTATUS[0]}
			echo "$rc" >"$res.rc"
			# the other node's waits fail at once from now on
			: >"$fab/sync/dead.$k"
		) &
	done
	wait
	for k in 1 2; do
		abi=${abis[k - 1]}
		res=.build/pair/node-$k
		rc=$(cat "$res.rc" 2>/dev/null || echo 2)
		out=$res/output
		[[ -e $out ]] || : >"$out"
		p=$(grep -cE '^ok ' "$out" || true)
		s=$(grep -cE '^ok .*# SKIP' "$out" || true)
		f=$(grep -cE '^not ok ' "$out" || true)
		guest_verdict "$rc" "node $k, $abi" "$res" "$f" || fail=$((fail + 1))
		echo "# node $k, $abi: $((p - s)) passed, $f failed, $s skipped"
		pass=$((pass + p - s)) fail=$((fail + f)) skip=$((skip + s))
	done
	rm -rf "$fab"
	# make bench: node 1's samples and table
	if ((${#pair_args[@]})) && [[ -e .build/pair/node-1/bench.json ]]; then
		cp .build/pair/node-1/bench.json .build/bench-pair.json
		echo "# pair: bench JSON in .build/bench-pair.json"
	fi
	echo "# pair: $((SECONDS - start))s"
	echo "# counts $pass $fail $skip"
}

pass=0 fail=0 skip=0
if ((pair)); then
	run_pair "$@"
	echo "$pass passed, $fail failed, $skip skipped"
	((fail == 0))
	exit
fi
[[ $guest_cmd != */guest-suite.sh ]] || host_tests
# the Debian packages 15-install and 16-autopkgtest install (one build
# for every kernel)
mkdir -p .build
if wants_test 15-install || { ((LONG)) && wants_test 16-autopkgtest; }; then
	echo "# building the Debian packages (make deb, log: .build/deb/build.log)"
	make --no-print-directory deb >.build/deb.log 2>&1 ||
		sed 's/^/# make deb: /' .build/deb.log | tail -n 20
fi

# The kernels run side by side (one guest each, TCG): on this 2-core
# machine that halves the wall time. SERIAL=1 runs them one after the
# other with live output.
logs=()
mkdir -p .build
# every series of this run: a "# kernel:" test runs in its own series'
# guest only when that series is one of them (guest-suite.sh)
series_run="$*"
for series in "$@"; do
	log=.build/series-$series.log
	logs+=("$log")
	if [[ ${SERIAL:-0} == 1 || $# -eq 1 ]]; then
		run_series "$series" 2>&1 | tee "$log" | grep -v '^# counts '
	else
		echo "# kernel series $series: running in the background (log: $log)"
		run_series "$series" >"$log" 2>&1 &
	fi
done
wait
for log in "${logs[@]}"; do
	[[ ${SERIAL:-0} == 1 || $# -eq 1 ]] || cat "$log"
	read -r _ _ p f s < <(grep "^# counts " "$log" | tail -n 1) || { p=0 f=1 s=0; }
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
done

# make check: then the pair (selftests/pair/), node 1 on the first
# series and node 2 on the second, once both series have given back the
# two guest slots. A subset of the suite (TESTS) leaves the pair out
# unless PAIR_TESTS names some of its tests.
if [[ $guest_cmd == */guest-suite.sh && $# -eq 2 ]] &&
	{ [[ -z $TESTS ]] || [[ -n ${PAIR_TESTS:-} ]]; }; then
	guest_cmd=$ROOT/selftests/pair-suite.sh
	timeout=$(($(PAIR_TESTS=${PAIR_TESTS:-} "$guest_cmd" --total-timeout) + 180 * TIMEOUT_SCALE))
	{ pass=0 fail=0 skip=0; run_pair "$1" "$2"; } 2>&1 | tee .build/pair.log |
		grep -v '^# counts '
	read -r _ _ p f s < <(grep "^# counts " .build/pair.log | tail -n 1) || { p=0 f=1 s=0; }
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
fi

# make bench with two series: then the cross-guest bench
# (selftests/pair-bench.sh), node 1 on the first series, unless
# BENCH_PARTS leaves "pair" out
if [[ $guest_cmd == */bench.sh && $# -eq 2 ]] &&
	{ [[ -z ${BENCH_PARTS:-} ]] || [[ " $BENCH_PARTS " == *" pair "* ]]; }; then
	guest_cmd=$ROOT/selftests/pair-suite.sh
	pair_args=(--bench)
	timeout=$(($("$guest_cmd" --bench --total-timeout) + 180 * TIMEOUT_SCALE))
	run_pair "$1" "$2"
fi

echo "$pass passed, $fail failed, $skip skipped"
((fail == 0))
