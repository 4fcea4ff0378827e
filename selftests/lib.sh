# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Helpers for ipoib-ng tests (selftests/tests/*.sh), in the style of the
# kernel's tools/testing/selftests/net/lib.sh. Source it:
#
#   source "$(dirname "$0")/../lib.sh"
#
# Environment (set by guest-suite.sh): KO_DIR (the built softib.ko and
# ib_ipoib.ko), IPOIB (ours, intree or none), LONG (1: the long forms of
# soak and churn loops, "make check LONG=1").

ksft_pass=0
ksft_fail=1
ksft_skip=4

KO_DIR=${KO_DIR:-}
IPOIB=${IPOIB:-ours}
LONG=${LONG:-0}

# ---- KTAP -------------------------------------------------------------

__ktap_n=0
__ktap_pass=0
__ktap_fail=0
__ktap_skip=0

ktap_header() {
	__ktap_plan=$1
	echo "TAP version 13"
	echo "1..$1"
}

ktap_diag() {
	local line

	while IFS= read -r line; do
		echo "# $line"
	done <<<"$*"
}

ktap_ok() {
	__ktap_n=$((__ktap_n + 1))
	__ktap_pass=$((__ktap_pass + 1))
	echo "ok $__ktap_n $*"
}

ktap_fail() {
	__ktap_n=$((__ktap_n + 1))
	__ktap_fail=$((__ktap_fail + 1))
	echo "not ok $__ktap_n $*"
}

# ktap_skip DESC REASON
ktap_skip() {
	__ktap_n=$((__ktap_n + 1))
	__ktap_skip=$((__ktap_skip + 1))
	echo "ok $__ktap_n $1 # SKIP ${2:-}"
}

# ktap_skip_rest REASON: the plan's cases not run yet, skipped
ktap_skip_rest() {
	while ((__ktap_n < ${__ktap_plan:-0})); do
		ktap_skip "case $((__ktap_n + 1))" "$1"
	done
}

# softib_case DESC: whether to run a case about softib alone (its SMA, SA
# or switch, read with the fabric tools), which no IPoIB driver changes.
# The test runs once with each driver; such a case runs in the run with
# ours and is a skip, saying where it ran, in the run with in-tree.
softib_case() {
	[[ $IPOIB != intree ]] && return 0
	ktap_skip "$1" "softib alone: checked in the run with our ib_ipoib"
	return 1
}

# ktap_result RC DESC: ok if RC is 0, else not ok; returns RC, so that
# "ktap_result $? setup || ktap_finish" stops a test whose setup failed.
ktap_result() {
	local rc=$1

	shift
	if [[ $rc -eq 0 ]]; then
		ktap_ok "$@"
	else
		ktap_fail "$@"
	fi
	return "$rc"
}

# Exit 1 if anything failed, 4 if everything was skipped, else 0.
ktap_finish() {
	ktap_diag "totals: pass:$__ktap_pass fail:$__ktap_fail skip:$__ktap_skip"
	if ((__ktap_fail)); then
		exit $ksft_fail
	elif ((__ktap_skip && !__ktap_pass)); then
		exit $ksft_skip
	fi
	exit $ksft_pass
}

# lockdep_silent DESC: one result. On a PROVE_LOCKING kernel lockdep must
# still be on (it turns itself off after its first report, hiding every
# later one) and have reported nothing; elsewhere a skip.
lockdep_silent() {
	local out

	if [[ ! -e /proc/lockdep ]]; then
		ktap_skip "$1" "no /proc/lockdep (kernel without PROVE_LOCKING)"
		return
	fi
	RET=0
	grep -q "debug_locks: *1" /proc/lockdep_stats
	(($? == 0)) || check_err 1 "lockdep is off: $(grep debug_locks /proc/lockdep_stats)"
	out=$(dmesg | grep -E "possible recursive locking|circular locking|lock inversion|inconsistent lock state")
	[[ -z $out ]]
	check_err $? "lockdep report: $out"
	log_test "$1"
}

# forwarding/lib.sh style: check_err RC MSG records the first failure in
# RET/RETMSG; log_test DESC reports it and resets. A message with a
# command substitution costs a TCG guest 0.1-0.5 s even when the check
# passes, so the tests build it only on a failure:
#	(($? == 0)) || check_err 1 "ports: $(cat ...)"
#	(($? != 0)) || check_fail 0 "still there: $(ls ...)"
RET=0
RETMSG=
check_err() {
	if [[ $RET -eq 0 && $1 -ne 0 ]]; then
		RET=$1
		RETMSG=${2:-}
	fi
}

check_fail() {
	if [[ $RET -eq 0 && $1 -eq 0 ]]; then
		RET=1
		RETMSG=${2:-}
	fi
}

log_test() {
	if [[ $RET -eq 0 ]]; then
		ktap_ok "$1"
	else
		[[ -z $RETMSG ]] || ktap_diag "$RETMSG"
		ktap_fail "$1"
	fi
	RET=0
	RETMSG=
}

# ---- cleanup ----------------------------------------------------------

__defer_cmds=()

# defer CMD [ARG...]: run CMD at exit; deferred commands run in reverse order.
defer() {
	local cmd

	printf -v cmd ' %q' "$@"
	__defer_cmds+=("$cmd")
}

__defer_run() {
	local i

	for ((i = ${#__defer_cmds[@]} - 1; i >= 0; i--)); do
		eval "${__defer_cmds[i]}" || true
	done
	__defer_cmds=()
}

__lib_exit() {
	local rc=$?

	__defer_run
	cleanup_ns
	exit $rc
}
trap __lib_exit EXIT
# A timeout (SIGTERM) or ^C still runs the deferred cleanup.
trap "exit 143" TERM
trap "exit 130" INT

# require_cmd CMD...: skip the whole test (exit 4) if a command is missing.
require_cmd() {
	local cmd

	for cmd in "$@"; do
		if ! command -v "$cmd" >/dev/null; then
			echo "# SKIP: $cmd not installed"
			exit $ksft_skip
		fi
	done
}

# ---- polling ----------------------------------------------------------

# loopy_wait SLEEP_CMD TIMEOUT_MS CMD...: retry CMD until it succeeds or
# TIMEOUT_MS (times TIMEOUT_SCALE: a debug kernel is slower) passed;
# prints CMD's last output; returns its status.
loopy_wait() {
	local sleep_cmd=$1 timeout_ms=$(($2 * ${TIMEOUT_SCALE:-1})) start now out rc

	shift 2
	# bash's clock, not date(1): every process costs in a TCG guest
	start=$((${EPOCHREALTIME/./} / 1000))
	while true; do
		out=$("$@") && rc=0 || rc=$?
		if [[ $rc -eq 0 ]]; then
			[[ -z $out ]] || echo "$out"
			return 0
		fi
		now=$((${EPOCHREALTIME/./} / 1000))
		if ((now - start > timeout_ms)); then
			[[ -z $out ]] || echo "$out"
			return "$rc"
		fi
		$sleep_cmd
	done
}

# busywait TIMEOUT_MS CMD...
busywait() {
	local timeout_ms=$1

	shift
	loopy_wait "sleep 0.1" "$timeout_ms" "$@"
}

# slowwait_eq TIMEOUT_SEC WANT CMD...: retry until CMD prints WANT. (Not
# "slowwait N test "$(CMD)" = WANT": that runs CMD once, before waiting.)
__prints() {
	local want=$1

	shift
	[[ $("$@") == "$want" ]]
}

slowwait_eq() {
	local timeout_sec=$1 want=$2

	shift 2
	slowwait "$timeout_sec" __prints "$want" "$@"
}

# __backoff: sleep 0.1 s, twice as long each call up to 0.5 s (reset by
# slowwait): most waits end within a few hundred milliseconds
__backoff_ms=100
__backoff() {
	sleep "0.$((__backoff_ms / 100))"
	((__backoff_ms = __backoff_ms * 2 > 500 ? 500 : __backoff_ms * 2))
}

# slowwait TIMEOUT_SEC CMD...
slowwait() {
	local timeout_sec=$1

	shift
	__backoff_ms=100
	loopy_wait __backoff $((timeout_sec * 1000)) "$@"
}

# intree_debugfs_leaks: in-tree's debugfs iterators leak. Its ipoib_fs.c
# seq_stop() frees nothing, so every read(2) of ib0_path or ib0_mcg that
# ends before the last entry leaks one iterator: each read of a file over
# one page (64 bytes a group, about 500 a path). On a kmemleak kernel,
# while in-tree is still loaded (its symbols resolve), this scans now and
# reports them as in-tree's known leak. When they are all the suspects,
# it clears them, so that the suite's final scan judges the rest (a leak
# of anything else stays reported there, and fails the run).
intree_debugfs_leaks() {
	local km=/sys/kernel/debug/kmemleak report all known

	[[ $IPOIB == intree && -w $km ]] || return 0
	# two scans: an object is reported once it is seen unreferenced twice
	echo scan >$km && echo scan >$km || return 0
	report=$(cat $km)
	all=$(grep -c '^unreferenced object' <<<"$report")
	known=$(awk -v RS= '/ipoib_(path|mcast)_iter_init|ipoib_(mcg|path)_seq_(start|next)/' <<<"$report" |
		grep -c '^unreferenced object')
	ktap_diag "in-tree's debugfs iterators leaked (its seq_stop frees nothing): $known; kmemleak suspects in all: $all"
	((all > 0 && all == known)) && echo clear >$km
	return 0
}

# kasan_kernel: the running kernel has KASAN (make check-debug): its
# quarantine keeps freed objects in slab and its checks slow every packet,
# so memory and loss figures are not those of a production kernel
kasan_kernel() {
	# asked once per test: a grep over /proc/kallsyms costs seconds there
	if [[ -z ${__kasan_kernel:-} ]]; then
		__kasan_kernel=0
		grep -qw kasan_report /proc/kallsyms 2>/dev/null && __kasan_kernel=1
	fi
	((__kasan_kernel))
}

# ---- network namespaces ----------------------------------------------

NS_LIST=()

# setup_ns VAR...: create a uniquely named netns per VAR and store its
# name in VAR; they are deleted by cleanup_ns (run at exit).
setup_ns() {
	local var name

	for var in "$@"; do
		name="${var}-$$-$RANDOM"
		ip netns add "$name" || return 1
		ip -n "$name" link set lo up
		NS_LIST+=("$name")
		printf -v "$var" '%s' "$name"
	done
}

cleanup_ns() {
	local ns

	for ns in "${NS_LIST[@]}"; do
		ip netns del "$ns" 2>/dev/null || true
	done
	NS_LIST=()
}

# ---- modules ----------------------------------------------------------

__ko() {
	[[ -n $KO_DIR && -e $KO_DIR/$1 ]] || {
		echo "lib.sh: $1 not found in KO_DIR='$KO_DIR'" >&2
		return 1
	}
	echo "$KO_DIR/$1"
}

# __insmod_deps KO [PARAM=VALUE...]: modprobe what KO depends on (from
# the test kernel's modules), then insmod KO.
__insmod_deps() {
	local ko=$1 deps d missing=()

	shift
	deps=$(modinfo -F depends "$ko") || return 1
	# modprobe only what is not loaded yet (a TCG guest pays for each
	# process)
	for d in ${deps//,/ }; do
		[[ -d /sys/module/$d ]] || missing+=("$d")
	done
	if ((${#missing[@]})); then
		modprobe -a "${missing[@]}" || return 1
	fi
	insmod "$ko" "$@"
}

# load_softib [PARAM=VALUE...]: our software HCA, on the kernel's ib_core.
# The suite always checks wr_ids (debug_wrid=1: a duplicate or unknown
# wr_id is a kernel WARNING, which fails the run); a PARAM given here
# comes later on the command line, so debug_wrid=0 still turns it off.
load_softib() {
	local ko

	ko=$(__ko softib.ko) || return 1
	if [[ ! -d /sys/module/ib_core || ! -d /sys/module/ib_uverbs ]]; then
		modprobe ib_core || return 1
		modprobe -q ib_uverbs || true
	fi
	# SOFTIB_PARAMS (make check SOFTIB_PARAMS=offloads=1): the whole
	# suite on a differently configured HCA; a test's own arguments last
	# shellcheck disable=SC2086
	__insmod_deps "$ko" debug_wrid=1 ${SOFTIB_PARAMS:-} "$@"
}

unload_softib() {
	[[ -d /sys/module/softib ]] || return 0
	rmmod softib
}

# load_ipoib [PARAM=VALUE...]: ib_ipoib chosen by $IPOIB: "ours" is
# KO_DIR/ib_ipoib.ko, "intree" the test kernel's own (KO_DIR is not in the
# module search path, so modprobe can only find the in-tree one).
load_ipoib() {
	local ko

	case $IPOIB in
	ours)
		ko=$(__ko ib_ipoib.ko) || return 1
		# ib_sa is part of ib_core; ib_cm is a module of its own.
		if [[ ! -d /sys/module/ib_core || ! -d /sys/module/ib_cm ]]; then
			modprobe -a ib_core ib_cm || return 1
		fi
		__insmod_deps "$ko" "$@"
		;;
	intree)
		modprobe ib_ipoib "$@"
		;;
	*)
		echo "lib.sh: load_ipoib with IPOIB='$IPOIB'" >&2
		return 1
		;;
	esac
}

unload_ipoib() {
	[[ -d /sys/module/ib_ipoib ]] || return 0
	ipoib_quiesce
	rmmod ib_ipoib
}

# ipoib_quiesce: every IPoIB interface down, in every netns, and wait for
# the RC QPs of connected mode to go. In-tree destroys a closed
# connection's QP from a work item (queued by ndo_stop, flushed only
# after ndo_uninit has freed the CQs) that can lose the race with the
# device's cleanup, on rmmod or when a child is removed while up ("Destroy
# of kernel CQ shouldn't fail"); the tests unload modules and remove
# children in their cleanup, they are not about that race.
ipoib_quiesce() {
	local ns dev

	# nothing to wait for without RC QPs (datagram mode throughout)
	rdma res show qp 2>/dev/null | grep -q "type RC" || return 0
	for ns in "" $(ip netns list | awk '{ print $1 }'); do
		for dev in $(ip ${ns:+-n "$ns"} -o link show 2>/dev/null |
			     awk -F': ' '/link\/infiniband/ { sub("@.*", "", $2); print $2 }'); do
			ip ${ns:+-n "$ns"} link set "$dev" down 2>/dev/null
		done
	done
	slowwait 10 sh -c '! rdma res show qp 2>/dev/null | grep -q "type RC"' >/dev/null
}

# ipoib_module_path: which ib_ipoib is loaded (for diagnostics).
ipoib_module_path() {
	local v

	if [[ ! -d /sys/module/ib_ipoib ]]; then
		echo "ib_ipoib not loaded"
		return 1
	fi
	v=$(cat /sys/module/ib_ipoib/version 2>/dev/null || true)
	if grep -q O /sys/module/ib_ipoib/taint 2>/dev/null; then
		echo "ib_ipoib: out-of-tree ($KO_DIR/ib_ipoib.ko) ${v:+version $v}"
	else
		echo "ib_ipoib: in-tree ($(modinfo -n ib_ipoib 2>/dev/null))"
	fi
}

# ---- softib fabric and IPoIB interfaces --------------------------------

SOFTIB_SYS=/sys/class/infiniband/softib0
SOFTIB_DBG=/sys/kernel/debug/softib/softib0

# rc_qpns PORT: the RC QPNs on softib0 port PORT (rdma res)
rc_qpns() {
	rdma res show qp link "softib0/$1" 2>/dev/null |
		awk '/type RC/ { for (i = 1; i < NF; i++) if ($i == "lqpn") print $(i + 1) }'
}

# softib_objs: softib's live verbs objects, "pd N ah N ..." on one line
softib_objs() {
	local -a w

	# every word of the file on one line, as xargs would, in bash
	read -d '' -ra w <"$SOFTIB_DBG/objects" || [[ ${#w[@]} -gt 0 ]] || return 1
	echo "${w[*]}"
}

# softib_objs_le SNAPSHOT: softib holds no more of any object than in
# SNAPSHOT (a softib_objs line)
softib_objs_le() {
	local -a a b
	local i

	read -ra a <<<"$1"
	read -ra b <<<"$(softib_objs)"
	for ((i = 1; i < ${#a[@]}; i += 2)); do
		((${b[i]:-0} <= ${a[i]})) || return 1
	done
}

# softib_ports_active [N...]: ports (default 1 and 2) are ACTIVE
softib_ports_active() {
	local p ports=("$@")

	((${#ports[@]})) || ports=(1 2)
	for p in "${ports[@]}"; do
		[[ $(<"$SOFTIB_SYS/ports/$p/state") == *ACTIVE* ]] || return 1
	done
}

# softib_counter PORT NAME: one of ports/PORT/counters
softib_counter() {
	stat_of "$SOFTIB_DBG/ports/$1/counters" "$2"
}

# stat_of FILE NAME: the value of NAME in FILE's "NAME VALUE" lines (the
# counters of softib's and ours' debugfs)
stat_of() {
	local lines line k v _

	# in bash: a process costs 90-200 ms in a TCG guest, and the tests
	# read counters by the hundred. The file is read in one pass
	# (mapfile): a "read" loop seeks back after each line, and a debugfs
	# file makes its text anew at each seek, so a value that shrank
	# meanwhile would cut the next line.
	[[ -r $1 ]] || { echo "stat_of: cannot read $1" >&2; return 2; }
	mapfile -t lines <"$1"
	for line in "${lines[@]}"; do
		read -r k v _ <<<"$line"
		[[ $k == "$2" ]] && echo "$v"
	done
	return 0
}

# stat_cmp FILE NAME OP N: that value compares OP (-ge, -gt, -le, ...) to
# N; false while FILE has no such line. For slowwait.
stat_cmp() {
	local v

	v=$(stat_of "$1" "$2")
	[[ -n $v ]] && [ "$v" "$3" "$4" ]
}

# smp_field OUTPUT NAME: the value of a "Name:....value" line, as
# smpquery and perfquery print their fields
smp_field() {
	local line

	while IFS= read -r line; do
		[[ $line == "$2:"* ]] || continue
		line=${line#"$2:"}
		while [[ $line == .* ]]; do
			line=${line#.}
		done
		echo "$line"
		return 0
	done <<<"$1"
	return 0
}

# smp_expect OUTPUT NAME VALUE: one field of a smpquery/perfquery
# answer is VALUE, or an error naming it
smp_expect() {
	local v

	v=$(smp_field "$1" "$2")
	[[ $v == "$3" ]]
	check_err $? "$2 is '$v', not '$3'"
}

# softib_stat NAME: one value of softib's device stats
softib_stat() {
	stat_of "$SOFTIB_DBG/stats" "$1"
}

# softib_sm_lid_is LID: every port of softib0 has SM LID LID
softib_sm_lid_is() {
	local f

	for f in "$SOFTIB_SYS"/ports/*/sm_lid; do
		(($(<"$f") == $1)) || return 1
	done
}

# nic_stat NS DEV NAME: one of DEV's ethtool -S counters, in netns NS
nic_stat() {
	local k v

	# a here-string: the guest has no /dev/fd for a process substitution
	while read -r k v; do
		[[ $k == "$3:" ]] && echo "$v"
	done <<<"$(ip netns exec "$1" ethtool -S "$2")"
	return 0
}

# ethtool_feature NS DEV NAME: one ethtool -k feature as ethtool prints
# it ("on", "off [fixed]", "off [requested on]", ...)
ethtool_feature() {
	ip netns exec "$1" ethtool -k "$2" 2>/dev/null |
		awk -v n="$3:" '$1 == n { $1 = ""; sub(/^ /, ""); print }'
}

# softib_policy LINE...: install a partitions.conf policy. It applies when
# the file is closed; cat reports close()'s error (a shell redirection of
# a builtin would not).
softib_policy() {
	printf '%s\n' "$@" | cat >"$SOFTIB_DBG/partitions"
}

# ---- Debian's OpenSM on softib (sm=none) --------------------------------

# where OpenSM keeps its files in a test: partitions.conf, its log, its
# cache (guid2lid) and what it prints
OSM_DIR=/tmp/opensm
OSM_PID=

# osm_port_guid N [NODE]: softib0 port N's GUID, as OpenSM's -g wants
# it; on node NODE of a fabric across kernels (softib's node=), default 0
osm_port_guid() {
	printf '0x%016x\n' $((0x02110bff00000000 | ${2:-0} << 24 | $1))
}

# osm_write_partitions LINE...: OpenSM's partitions.conf
osm_write_partitions() {
	mkdir -p "$OSM_DIR" && printf '%s\n' "$@" >"$OSM_DIR/partitions.conf"
}

# osm_start [PORT [NODE]]: Debian's OpenSM (unpacked by
# selftests/vm/opensm.sh, never installed) on softib0 port PORT (default
# 1; of node NODE of a fabric across kernels, default 0) with
# $OSM_DIR/partitions.conf, in the background. Returns once every port
# is Active and OpenSM's SA answers. Stop it with osm_stop.
osm_start() {
	local root port=${1:-1} node=${2:-0}

	root=$("$(dirname "${BASH_SOURCE[0]}")/vm/opensm.sh" root) || return 1
	mkdir -p "$OSM_DIR"
	[[ -e $OSM_DIR/partitions.conf ]] ||
		osm_write_partitions "Default=0x7fff, ipoib : ALL=full;"
	[[ -d /sys/module/ib_umad ]] || modprobe ib_umad || return 1
	OSM_CACHE_DIR=$OSM_DIR OSM_TMP_DIR=$OSM_DIR \
	LD_LIBRARY_PATH=$root/usr/lib/x86_64-linux-gnu \
		"$root/usr/sbin/opensm" -g "$(osm_port_guid "$port" "$node")" \
		-P "$OSM_DIR/partitions.conf" -f "$OSM_DIR/opensm.log" \
		>>"$OSM_DIR/opensm.out" 2>&1 </dev/null &
	OSM_PID=$!
	slowwait 60 softib_ports_active >/dev/null &&
		slowwait 30 sh -c 'saquery -s >/dev/null 2>&1'
}

# osm_stop: OpenSM ends (SIGTERM) and is gone; the ports stay as it left them
osm_stop() {
	[[ -n $OSM_PID ]] || return 0
	kill "$OSM_PID" 2>/dev/null
	wait "$OSM_PID" 2>/dev/null
	OSM_PID=
}

# osm_reread: OpenSM reads partitions.conf again (SIGHUP) and sweeps
osm_reread() {
	kill -HUP "$OSM_PID"
}

# softib_pkeys PORT: the entries in use of PORT's P_Key table, in index
# order, as INDEX:PKEY on one line
softib_pkeys() {
	local i v out=()

	for ((i = 0; i < 32; i++)); do
		read -r v <"$SOFTIB_SYS/ports/$1/pkeys/$i" || return 1
		[[ $v == 0x0000 ]] || out+=("$i:$v")
	done
	echo "${out[*]}"
}

# ---- ours' debugfs (ipoib/<N>/, see Documentation/ipoib.rst) ----------

# The root: 99-interop loads ours under another name and sets this.
IPOIB_DBG_ROOT=${IPOIB_DBG_ROOT:-/sys/kernel/debug/ipoib}

# ipoib_dbg_dir NAME [N]: ours' debugfs directory of interface NAME (the
# Nth of that name: names repeat across netns); fails if there is none
ipoib_dbg_dir() {
	local f n name

	for f in "$IPOIB_DBG_ROOT"/*/name; do
		read -r name 2>/dev/null <"$f" || continue
		[[ $name == "$1" ]] || continue
		((++n < ${2:-1})) && continue
		echo "${f%/name}"
		return 0
	done
	return 1
}

# ipoib_dbg_stat NAME STAT: one value of ours' debugfs stats of NAME
ipoib_dbg_stat() {
	local d

	d=$(ipoib_dbg_dir "$1") || return 1
	stat_of "$d/stats" "$2"
}

# mcast_member NS DEV GROUP [SECS]: a process in NS joins the IPv4 GROUP on
# DEV (bound to UDP port 5555) for SECS (60) in the background; its PID
# is in $! and its exit is deferred
mcast_member() {
	ip netns exec "$1" python3 -S - "$2" "$3" "${4:-60}" <<'PY' &
import socket, struct, sys, time
dev, grp, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("", 5555))
s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
             struct.pack("4s4si", socket.inet_aton(grp), b"\0" * 4, socket.if_nametoindex(dev)))
time.sleep(secs)
PY
	defer sh -c "kill $! 2>/dev/null"
}

# guest_udevd_start: systemd-udevd for a configuration tool that manages a
# link only once udev has initialized it (networkd, NetworkManager). No
# interface renames in this guest: later tests rely on the kernel's names.
# The guest's busybox init looks like a chroot to systemd's tools, which
# then ignore requests ("Running in chroot, ignoring request").
UDEVD=/lib/systemd/systemd-udevd
guest_udevd_start() {
	export SYSTEMD_IGNORE_CHROOT=1
	mkdir -p /run/udev /etc/udev/rules.d &&
		: >/etc/udev/rules.d/80-net-setup-link.rules &&
		"$UDEVD" --daemon --resolve-names=never >/dev/null 2>&1 &&
		udevadm trigger --subsystem-match=net --action=add &&
		udevadm settle -t $((30 * TIMEOUT_SCALE))
}

# guest_udevd_stop: later tests must not meet a udevd (it would rename
# their links or run rules on them)
guest_udevd_stop() {
	udevadm control --exit 2>/dev/null
	pkill -f "$UDEVD" 2>/dev/null
	rm -f /etc/udev/rules.d/80-net-setup-link.rules
}

# ipoib_lower_up NS DEV: the interface has carrier (NS "": this netns)
ipoib_lower_up() {
	[[ $(ip ${1:+-n "$1"} -o link show "$2" 2>/dev/null) == *LOWER_UP* ]]
}

# ipoib_reached_from NS DEV=ADDR...: each DEV of this netns gets carrier and
# NS pings its ADDR; on failure prints what is missing (for check_err)
ipoib_reached_from() {
	local ns=$1 d dev addr

	shift
	for d in "$@"; do
		dev=${d%%=*}
		if ! slowwait 30 ipoib_lower_up "" "$dev" >/dev/null; then
			echo "$dev: no carrier ($(cat "/sys/class/net/$dev/carrier_reason" 2>/dev/null))"
			return 1
		fi
	done
	for d in "$@"; do
		dev=${d%%=*}
		addr=${d#*=}
		if ! ip netns exec "$ns" ping -c 2 -i 0.2 -w "$((2 + 3 * TIMEOUT_SCALE))" \
			-W "$((3 * TIMEOUT_SCALE))" "$addr" >/dev/null; then
			echo "$ns: no ping to $addr ($dev)"
			return 1
		fi
	done
}

# ipoib_child NS PARENT PKEY ADDR: netlink child PARENT.PKEY, addressed, up
ipoib_child() {
	# one ip process: a batch stops at its first failing command
	printf 'link add link %s name %s type ipoib pkey 0x%s\naddr add %s dev %s\nlink set %s up\n' \
		"$2" "$2.$3" "$3" "$4" "$2.$3" "$2.$3" | ip -n "$1" -batch -
}

# ipoib_mode_child NS PARENT PKEY ADDR: ipoib_child for a child whose mode
# the test then changes with ipoib_set_mode. In-tree: made through sysfs
# create_child (named PARENT.PKEY as well), since in-tree gives netlink
# children no mode file and its netlink mode change is unsafe (below).
ipoib_mode_child() {
	if [[ $IPOIB == intree ]]; then
		ipoib_sysfs_child "$1" "$2" "$3" &&
			ip -n "$1" addr add "$4" dev "$2.$3" &&
			ip -n "$1" link set "$2.$3" up
	else
		ipoib_child "$@"
	fi
}

# ipoib_sysfs_child NS PARENT PKEY: PARENT.PKEY through sysfs create_child,
# in NS beside its parent. In-tree creates it in init_net whatever the
# parent's namespace (ours in the parent's): it is moved there.
ipoib_sysfs_child() {
	ipoib_sysfs_children "$1" "$2" "$3"
}

# ipoib_sysfs_children NS PARENT PKEY...: as ipoib_sysfs_child, several
# children with three processes in all (a TCG guest pays ~0.2 s each)
ipoib_sysfs_children() {
	local ns=$1 parent=$2 pk moves=""

	shift 2
	ip netns exec "$ns" sh -c 'p=$1; shift; for k; do
		echo "0x$k" >"/sys/class/net/$p/create_child" || exit 1; done' - "$parent" "$@" ||
		return 1
	for pk; do
		[[ -e /sys/class/net/$parent.$pk ]] && moves+="link set $parent.$pk netns $ns"$'\n'
	done
	[[ -z $moves ]] || ip -batch - <<<"$moves"
}

# ipoib_set_mode NS DEV connected|datagram. Ours: netlink (IFLA_IPOIB_MODE),
# which holds rtnl throughout. In-tree: the sysfs mode file. In-tree's
# set_mode drops rtnl to flush its paths and takes it back with
# rtnl_trylock(); when another task took rtnl meanwhile, changelink
# returns EBUSY *without* rtnl and rtnetlink then unlocks the other task's
# rtnl ("RTNL: assertion failed" in unlist_netdevice, 6.1, under churn).
# Its sysfs store knows this and does not unlock; netlink does not, so
# the suite drives in-tree's mode through netlink only where nothing else
# can want rtnl (80-child-abi).
ipoib_set_mode() {
	if [[ $IPOIB == intree ]]; then
		ip netns exec "$1" sh -c "echo $3 >/sys/class/net/$2/mode"
	else
		ip -n "$1" link set "$2" type ipoib mode "$3"
	fi
}

# intree_on_provider: the in-tree ib_ipoib on softib's rdma_netdev
# (enhanced=1; SOFTIB_PARAMS=enhanced=1 runs the suite so), where, as on
# mlx5, it has no connected mode
intree_on_provider() {
	[[ $IPOIB == intree && $(cat /sys/module/softib/parameters/enhanced 2>/dev/null) == Y ]]
}

# intree_cm_refused NS DEV: check_* that "connected" written to DEV's mode
# (in NS, "" for this one) fails with EINVAL and DEV stays in datagram
# mode, as in-tree on an rdma_netdev does
intree_cm_refused() {
	local run=() out

	[[ -n $1 ]] && run=(ip netns exec "$1")
	# bash: dash reports any failed write as "I/O error"
	out=$("${run[@]}" bash -c "echo connected > /sys/class/net/$2/mode" 2>&1)
	check_fail $? "in-tree took connected mode on the rdma_netdev"
	[[ $out == *"Invalid argument"* ]]
	check_err $? "in-tree refused connected mode, but not with EINVAL: $out"
	out=$("${run[@]}" cat "/sys/class/net/$2/mode")
	[[ $out == datagram ]]
	check_err $? "$2 mode $out after the refusal"
}

# intree_no_cm_finish NS DEV: for a test of connected mode where
# intree_on_provider: intree_cm_refused named as in-tree's known failure,
# the test's other cases skipped
intree_no_cm_finish() {
	RET=0
	intree_cm_refused "$1" "$2"
	log_test "in-tree, known failure: no connected mode on an rdma_netdev (EINVAL), as on mlx5"
	ktap_skip_rest "in-tree has no connected mode on an rdma_netdev"
	ktap_finish
}

# ll_addr NS DEV: the interface's IPv6 link-local address
ll_addr() {
	ip -n "$1" -6 addr show dev "$2" scope link | awk '/inet6/ { sub("/.*", "", $2); print $2 }'
}

# ipoib_hwaddr NS DEV: the 20-byte hardware address
ipoib_hwaddr() {
	local re='link/infiniband ([0-9a-f:]+) '

	[[ $(ip -n "$1" -o link show "$2") =~ $re ]] && echo "${BASH_REMATCH[1]}"
}

# ipoib_stack_up [SOFTIB_PARAM...] [-- POLICY...]: ib_cm, softib with the
# parameters and its ports ACTIVE, the partitions POLICY... when given,
# then ib_ipoib (with the parameters in IPOIB_LOAD_PARAMS) with ib1
# there; both unloads deferred. Not to be run in
# $(...): the deferred unloads are this shell's. On failure FAILED_STEP
# names the step (for check_err).
ipoib_stack_up() {
	local params=()

	while (($#)) && [[ $1 != -- ]]; do
		params+=("$1")
		shift
	done
	(($#)) && shift
	[[ -d /sys/module/ib_cm ]] || modprobe ib_cm || { FAILED_STEP="modprobe ib_cm"; return 1; }
	load_softib "${params[@]}" || { FAILED_STEP="softib"; return 1; }
	defer unload_softib
	slowwait 10 softib_ports_active >/dev/null || { FAILED_STEP="ports not ACTIVE"; return 1; }
	if (($#)); then
		softib_policy "$@" || { FAILED_STEP="partitions policy"; return 1; }
	fi
	# shellcheck disable=SC2086 # IPOIB_LOAD_PARAMS: words, unquoted
	load_ipoib ${IPOIB_LOAD_PARAMS-} || { FAILED_STEP="ib_ipoib"; return 1; }
	defer unload_ipoib
	slowwait 10 test -d /sys/class/net/ib1 >/dev/null || { FAILED_STEP="no ib1"; return 1; }
}

# ipoib_fabric_up [SOFTIB_PARAM...]: ipoib_stack_up, then ib0 moved into a
# new netns $A as 192.0.2.1/24 and ib1 into $B as 192.0.2.2/24, both with
# carrier.
ipoib_fabric_up() {
	ipoib_stack_up "$@" || return 1
	setup_ns A B || { FAILED_STEP="netns A and B"; return 1; }
	ipoib_fabric_place || { FAILED_STEP="ib0 and ib1 placed, with carrier"; return 1; }
}

# ipoib_fabric_reload: ib_ipoib loaded again after a test unloaded it, ib1
# there, then ib0/ib1 placed in $A and $B as ipoib_fabric_up left them (ib1
# has a new UD QPN). The deferred unload of ipoib_stack_up still applies.
ipoib_fabric_reload() {
	load_ipoib && slowwait 10 test -d /sys/class/net/ib1 >/dev/null &&
		ipoib_fabric_place
}

# ipoib_peer_up POLICY...: ipoib_stack_up with the partitions POLICY...,
# ib0 left here and ib1 moved into a new netns $B, down, for the test to
# configure as the peer.
ipoib_peer_up() {
	ipoib_stack_up -- "$@" || return 1
	setup_ns B && ip link set ib1 netns "$B" || { FAILED_STEP="ib1 into netns B"; return 1; }
}

# ipoib_fabric_place: ib0 into $A as 192.0.2.1/24 and ib1 into $B as
# 192.0.2.2/24, both up with carrier (after ipoib_fabric_reload, too)
ipoib_fabric_place() {
	# one ip process per namespace
	printf 'link set ib0 netns %s\nlink set ib1 netns %s\n' "$A" "$B" | ip -batch - &&
		printf 'addr add 192.0.2.1/24 dev ib0\nlink set ib0 up\n' | ip -n "$A" -batch - &&
		printf 'addr add 192.0.2.2/24 dev ib1\nlink set ib1 up\n' | ip -n "$B" -batch - &&
		slowwait 20 ipoib_lower_up "$A" ib0 &&
		slowwait 20 ipoib_lower_up "$B" ib1
}

# iperf_server NS ADDR: a one-shot iperf3 server, listening when it returns
iperf_server() {
	ip netns exec "$1" iperf3 -s -1 -D -B "$2" >/dev/null 2>&1 &&
		slowwait 5 ip netns exec "$1" sh -c 'ss -ltn | grep -q :5201' >/dev/null
}

# iperf3 -J output on stdin: "MBIT BYTES" received (both parts of make
# bench)
iperf_tcp_parse() {
	python3 -c '
import json, sys
e = json.load(sys.stdin)["end"]["sum_received"]
print(int(e["bits_per_second"] / 1e6), int(e["bytes"]))'
}

# iperf3 -J output on stdin: "PPS LOSS%" of a UDP run
iperf_udp_parse() {
	python3 -c '
import json, sys
s = json.load(sys.stdin)["end"]["sum"]
got = s["packets"] - s["lost_packets"]
print(int(got / s["seconds"]), round(s["lost_percent"], 1))'
}

# iperf_start CLIENT_NS SERVER_NS SERVER_ADDR SECONDS: a stream in the
# background (for disturbing it); its client's PID in IPERF_PID
iperf_start() {
	iperf_server "$2" "$3" || return 1
	ip netns exec "$1" timeout $(($4 + 30)) iperf3 -c "$3" -t "$4" >/dev/null 2>&1 &
	IPERF_PID=$!
}

# iperf_stop: end the client of iperf_start now. Its peer went away (a
# deleted child, an unloaded module), so it would hang until its timeout.
iperf_stop() {
	kill "$IPERF_PID" 2>/dev/null
	wait "$IPERF_PID" 2>/dev/null
	return 0
}

# iperf_intervals JSON: the bytes of each interval of one iperf3 -J run,
# on one line; fails if iperf3 reported an error or no interval
iperf_intervals() {
	python3 -c '
import json, sys
r = json.load(sys.stdin)
iv = [int(i["sum"]["bytes"]) for i in r.get("intervals", [])]
print(" ".join(map(str, iv)))
sys.exit(1 if r.get("error") or not iv else 0)' <<<"$1"
}

# iperf_mbps CLIENT_NS SERVER_NS SERVER_ADDR SECONDS [IPERF3 ARGS...]:
# one iperf3 run; prints the received Mbit/s, fails if the run failed
iperf_mbps() {
	local cns=$1 sns=$2 addr=$3 secs=$4 out bps

	shift 4
	iperf_server "$sns" "$addr" || return 1
	out=$(ip netns exec "$cns" timeout $((secs + 30)) iperf3 -c "$addr" -t "$secs" -J "$@") || return 1
	bps=$(python3 -c 'import json,sys; e=json.load(sys.stdin)["end"]; print(int((e.get("sum_received") or e["sum"])["bits_per_second"]))' <<<"$out") || return 1
	echo $((bps / 1000000))
	((bps > 0))
}

# iperf_both WHAT IN_TREE_ADDR OUR_ADDR: 2 s of TCP each way between the
# in-tree driver in $A and ours in $B (the interop tests), one case
iperf_both() {
	local m1 m2

	RET=0
	m1=$(iperf_mbps "$A" "$B" "$3" 2)
	check_err $? "in-tree -> ours iperf3"
	m2=$(iperf_mbps "$B" "$A" "$2" 2)
	check_err $? "ours -> in-tree iperf3"
	ktap_diag "iperf3 TCP $1 in-tree -> ours: ${m1:-0} Mbit/s, ours -> in-tree: ${m2:-0} Mbit/s"
	log_test "$1: iperf3 TCP both ways"
}

# ---- many peers: softib's virtual nodes (Documentation/softib.rst) ------

# peers_neigh_bounds N: the neighbour table holds N peers (a site with
# thousands of nodes raises these; the default 1024 would forget peers
# mid-sweep); the old values are restored by the deferred run
peers_neigh_bounds() {
	local t d=/proc/sys/net/ipv4/neigh/default

	for t in 1 2 3; do
		defer sh -c "echo $(cat $d/gc_thresh$t) >$d/gc_thresh$t"
	done
	echo $((4 * $1)) >$d/gc_thresh3
	echo $((2 * $1)) >$d/gc_thresh2
	echo $(($1 + 16)) >$d/gc_thresh1
}

# peers_sweep N ARGS...: UDP echo from $A to the first N virtual nodes
# (tests/67-scale-peers.py ARGS); one JSON line a round
peers_sweep() {
	local n=$1 first

	shift
	first=$(awk '$1 == "ipv4_first" { print $2 }' "$SOFTIB_DBG/vnodes")
	ip netns exec "$A" python3 "$(dirname "${BASH_SOURCE[0]}")/tests/67-scale-peers.py" \
		--first "$first" --count "$n" "$@"
}

# peers_field NAME LINE: one field of a round's JSON line
peers_field() {
	local re="\"$1\": (-?[0-9][0-9.eE+-]*)[,}]"

	# a number as python would print it, without starting one (a round
	# is read a dozen times); the lists through python
	if [[ $2 =~ $re ]]; then
		echo "${BASH_REMATCH[1]}"
	else
		python3 -c 'import json, sys; print(json.loads(sys.argv[2])[sys.argv[1]])' "$1" "$2"
	fi
}

peers_slab() { awk '/^SUnreclaim:/ { print $2 }' /proc/meminfo; }

# peers_vnode_stat NAME: a counter of softib's debugfs vnodes
peers_vnode_stat() { stat_of "$SOFTIB_DBG/vnodes" "$1"; }

# peers_cm_closed N: wait until the nodes counted at least N connections
# closed (up to 60 s plus 20 ms a connection)
peers_cm_closed() {
	slowwait $((60 + $1 / 50)) stat_cmp "$SOFTIB_DBG/vnodes" cm_closed -ge "$1"
}

# "BUSY IDLE" jiffies of all CPUs
peers_cpu() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $5 + $6 }' /proc/stat; }

# ours' path evictions on ib0 (0 for in-tree, which has no bound)
peers_evictions() {
	if [[ $IPOIB == ours ]]; then
		ipoib_dbg_stat ib0 path_evictions
	else
		echo 0
	fi
}

# peers_event EVENT: a fabric-wide event: client_reregister or sm_change
# on port 1 (the IB event), or pkey_change (the SM adds a partition to
# every port's P_Key table; ib0's P_Key keeps its index)
peers_event() {
	case $1 in
	client_reregister | sm_change)
		echo "$1" >"$SOFTIB_DBG/ports/1/event" ;;
	pkey_change)
		softib_policy "Default=0x7fff, ipoib : ALL=full;" "scale=0x0a5a : ALL=full;" ;;
	*)
		return 1 ;;
	esac
}

# ---- two guests on one fabric (run.sh --pair, selftests/pair/) ----------
#
# In a guest of run.sh --pair (run-guest.sh --fabric), IPOIB_NG_NODE is
# this node (1 or 2), IPOIB_NG_FABDEV its fabric NIC (a virtio-net on a
# QEMU datagram link to the other guest, addressed 10.99.0.K/24 by
# pair-suite.sh) and IPOIB_NG_FABSYNC a directory both guests share (9p,
# no cache). The helpers meet and exchange values there, through files:
#   b.SCOPE.NAME.N.K   node K reached the Nth barrier NAME of the scope
#   kv.SCOPE.KEY.K     node K's value of KEY
#   left.SCOPE.K       node K left the scope (its test ended)
#   dead.K             guest K is gone (written by run.sh when its QEMU
#                      has exited)
# SCOPE is PAIR_SCOPE, set by guest-suite.sh for each test run, so names
# and keys are a test's own. A wait fails at once when the other node is
# dead or has left the scope. Both nodes run the same test, so they call
# the same barriers in the same order; a test ends with a barrier after
# its last exchange with the other node (which may power off as soon as
# its own suite ends).

declare -gA __pair_seen=()

# pair_require: skip the test (exit 4) outside a guest of a pair
pair_require() {
	if [[ ! ${IPOIB_NG_NODE:-} =~ ^[12]$ || ! -d ${IPOIB_NG_FABSYNC:-} ]]; then
		echo "# SKIP: not a guest of a pair (run.sh --pair)"
		exit $ksft_skip
	fi
}

# pair_node / pair_peer: this node's number (1 or 2), the other's
pair_node() { echo "${IPOIB_NG_NODE:?not a guest of a pair}"; }
pair_peer() { echo $((3 - ${IPOIB_NG_NODE:?not a guest of a pair})); }

# pair_addr K: node K's address on the fabric NIC
pair_addr() { echo "10.99.0.$1"; }

# pair_dev: this node's fabric NIC
pair_dev() { echo "${IPOIB_NG_FABDEV:-fab0}"; }

# the pair tests' fabric key (a test value, not a secret)
PAIR_KEY=5eb1c0ffee0ddba11ab1e5cafe15deadbeef0123456789abcdef0123456789ab

# pair_link_load [KEY [PARAM...]]: softib on this node, linked to the
# other one under KEY (default PAIR_KEY)
pair_link_load() {
	local key=${1:-$PAIR_KEY}

	shift $(($# ? 1 : 0))
	load_softib link="$(pair_dev)" node="$(pair_node)" \
		link_peers="$(pair_addr "$(pair_peer)")" fabric_key="$key" "$@"
}

# pair_link_up: this node's link to the other is up
pair_link_up() { grep -q " state up " "$SOFTIB_DBG/fabric/peers"; }

# pair_fab NAME: a counter of the link (debugfs fabric/stats)
pair_fab() { stat_of "$SOFTIB_DBG/fabric/stats" "$1"; }

# __pair_check NAME: in a guest of a pair, and NAME is a barrier's or
# key's name
__pair_check() {
	if [[ ! ${IPOIB_NG_NODE:-} =~ ^[12]$ || ! -d ${IPOIB_NG_FABSYNC:-} ]]; then
		echo "lib.sh: $1: not a guest of a pair (run.sh --pair)" >&2
		return 1
	fi
	[[ $1 =~ ^[A-Za-z0-9_-]+$ ]] && return 0
	echo "lib.sh: pair name '$1': want letters, digits, _ and -" >&2
	return 1
}

# __pair_wait FILE SEC WHAT: wait until the other node wrote FILE (in the
# sync directory), for SEC seconds times TIMEOUT_SCALE
__pair_wait() {
	local f=$IPOIB_NG_FABSYNC/$1 peer=$((3 - IPOIB_NG_NODE)) why=""
	local deadline=$((${EPOCHREALTIME/./} / 1000 + $2 * ${TIMEOUT_SCALE:-1} * 1000))

	while [[ ! -e $f ]]; do
		if [[ -e $IPOIB_NG_FABSYNC/dead.$peer ]]; then
			why="node $peer is gone (its guest has exited)"
		elif [[ -n ${PAIR_SCOPE:-} && -e $IPOIB_NG_FABSYNC/left.$PAIR_SCOPE.$peer ]]; then
			why="node $peer has left $PAIR_SCOPE"
		elif ((${EPOCHREALTIME/./} / 1000 > deadline)); then
			why="node $peer did not come within $(($2 * ${TIMEOUT_SCALE:-1}))s"
		fi
		if [[ -n $why ]]; then
			# what it wrote before it went counts
			[[ -e $f ]] && return 0
			echo "lib.sh: $3: $why" >&2
			return 1
		fi
		sleep 0.2
	done
}

# pair_barrier NAME [SEC]: wait until the other node reaches the same
# barrier (the Nth call of NAME meets the other node's Nth); fails after
# SEC seconds (default 120, times TIMEOUT_SCALE) or as soon as the other
# node is gone
pair_barrier() {
	local name=$1 sec=${2:-120} f

	__pair_check "$name" || return 1
	__pair_seen[$name]=$((${__pair_seen[$name]:-0} + 1))
	f=b.${PAIR_SCOPE:-none}.$name.${__pair_seen[$name]}
	: >"$IPOIB_NG_FABSYNC/$f.$IPOIB_NG_NODE" || return 1
	__pair_wait "$f.$((3 - IPOIB_NG_NODE))" "$sec" "barrier $name"
}

# pair_tcp_stream TAG ADDR: a 3 s iperf3 TCP stream from node 1 to node
# 2's address ADDR (node 2 serves it); both nodes call it. Node 1 prints
# the Mbit/s received and fails if there were none (or no run); either
# fails when the other node does not come to its barriers.
pair_tcp_stream() {
	local tag=$1 addr=$2 mbps rc=0

	if ((IPOIB_NG_NODE == 2)); then
		iperf3 -s -1 -B "$addr" >/dev/null 2>&1 &
		slowwait 5 sh -c 'ss -ltn | grep -q :5201'
	fi
	pair_barrier "iperf-$tag" || return 1
	if ((IPOIB_NG_NODE == 1)); then
		mbps=$(timeout 40 iperf3 -c "$addr" -t 3 -J | python3 -c \
			'import json,sys; print(int(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e6))')
		echo "${mbps:-none}"
		[[ ${mbps:-0} -gt 0 ]] || rc=1
	fi
	pair_barrier "iperf-done-$tag" 60 || rc=1
	return $rc
}

# pair_udp_stream TAG ADDR SIZE COUNT PPS: COUNT UDP datagrams of SIZE
# bytes, numbered, at PPS a second from node 1 to node 2's address ADDR,
# port 5301; both nodes call it. Node 2 counts them with a 4 MiB socket
# buffer (a stalled TCG receiver drops none) until none has come for 3 s
# (0.5 s once all have), prints "GOT of COUNT, DUP duplicates, BAD
# malformed" and fails unless every one arrived once and whole: the link
# is lossless. (Not iperf3: its end-of-test message can overtake the last
# datagrams still queued, which it then counts as lost.)
pair_udp_stream() {
	local tag=$1 addr=$2 size=$3 count=$4 pps=$5 f pid="" got dup bad rc=0

	f=/tmp/udp-rx.${PAIR_SCOPE:-none}.$tag
	rm -f "$f" "$f.ready" "$f.tmp"
	if ((IPOIB_NG_NODE == 2)); then
		sysctl -qw net.core.rmem_max=4194304 || rc=1
		python3 - "$addr" "$size" "$count" "$f" >/dev/null 2>&1 <<'PY' &
import os, socket, struct, sys
addr, size, count, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
s.bind((addr, 5301))
open(out + ".ready", "w").close()
seen, dup, bad = set(), 0, 0
s.settimeout(60)
try:
    while True:
        d = s.recv(65536)
        n = struct.unpack("!I", d[:4])[0] if len(d) >= 4 else count
        if len(d) != size or n >= count or d[4:] != bytes([n & 0xff]) * (size - 4):
            bad += 1
        elif n in seen:
            dup += 1
        else:
            seen.add(n)
        # all there: half a second more for a duplicate
        s.settimeout(0.5 if len(seen) == count else 3)
except socket.timeout:
    pass
with open(out + ".tmp", "w") as o:
    o.write("%d %d %d\n" % (len(seen), dup, bad))
os.rename(out + ".tmp", out)
PY
		pid=$!
		slowwait 10 test -e "$f.ready" || { rc=1; echo "no receiver on $addr:5301"; }
	fi
	pair_barrier "udp-$tag" || rc=1
	if ((IPOIB_NG_NODE == 1)); then
		# at PPS, never in a burst: after a stall the schedule moves on
		# rather than catch up (a burst would test the receiver's ring,
		# not the link)
		((rc)) || timeout 60 python3 - "$addr" "$size" "$count" "$pps" <<'PY' || rc=1
import socket, struct, sys, time
addr, size, count, pps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
t0 = time.monotonic()
for n in range(count):
    s.sendto(struct.pack("!I", n) + bytes([n & 0xff]) * (size - 4), (addr, 5301))
    ahead = t0 + (n + 1) / pps - time.monotonic()
    if ahead > 0:
        time.sleep(ahead)
    elif ahead < -2.0 / pps:
        t0 -= ahead
PY
	elif ((!rc)); then
		slowwait $((count / pps + 70)) test -e "$f" || rc=1
		read -r got dup bad <"$f" 2>/dev/null || rc=1
		echo "${got:-none} of $count, ${dup:-?} duplicates, ${bad:-?} malformed"
		[[ ${got:-} == "$count" && ${dup:-} == 0 && ${bad:-} == 0 ]] || rc=1
		# where a missing one went: the port's drops, UDP's, the link's
		((rc)) && echo "port 1: $(grep -v ' 0$' "$SOFTIB_DBG/ports/1/counters" | tr '\n' ' ')" \
			"$(grep '^Udp:' /proc/net/snmp | tr '\n' ' ')" \
			"link: $(grep -E '^(rx_ib|tx_ib_dropped) ' "$SOFTIB_DBG/fabric/stats" | tr '\n' ' ')"
	fi
	[[ -n $pid ]] && kill "$pid" 2>/dev/null
	rm -f "$f" "$f.ready" "$f.tmp"
	pair_barrier "udp-done-$tag" $((count / pps + 90)) || rc=1
	return $rc
}

# pair_put KEY VALUE: publish VALUE under KEY for the other node (written
# whole, then renamed: the other node never reads half of it)
pair_put() {
	local f

	__pair_check "$1" || return 1
	f=kv.${PAIR_SCOPE:-none}.$1.$IPOIB_NG_NODE
	printf '%s\n' "$2" >"$IPOIB_NG_FABSYNC/.$f.tmp" &&
		mv -f "$IPOIB_NG_FABSYNC/.$f.tmp" "$IPOIB_NG_FABSYNC/$f"
}

# pair_get KEY [SEC]: print the other node's value of KEY, waiting up to
# SEC seconds (default 120, times TIMEOUT_SCALE) for it
pair_get() {
	local f

	__pair_check "$1" || return 1
	f=kv.${PAIR_SCOPE:-none}.$1.$((3 - IPOIB_NG_NODE))
	__pair_wait "$f" "${2:-120}" "value $1" || return 1
	printf '%s\n' "$(<"$IPOIB_NG_FABSYNC/$f")"
}

# pair_leave: this node has left PAIR_SCOPE (guest-suite.sh, after each
# test run): the other node's waits in it fail at once
pair_leave() {
	[[ -n ${PAIR_SCOPE:-} && -d ${IPOIB_NG_FABSYNC:-} ]] || return 0
	: >"$IPOIB_NG_FABSYNC/left.$PAIR_SCOPE.$IPOIB_NG_NODE"
}
