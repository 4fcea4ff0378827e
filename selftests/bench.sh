#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: none
#
# make bench: IPoIB on softib next to veth, all in one guest boot so that
# the numbers compare. Documentation/performance.rst explains the method.
#
# Variants (one after the other, never two at once):
#   veth               the ceiling of the netns + TCP/IP stack in this guest
#   DRV-dg-off         datagram mode, softib offloads=0 (software checksums)
#   DRV-dg             datagram mode, softib offloads=1 (UD csum + LSO)
#   DRV-dg-rps         DRV-dg with RPS over every CPU on both ends: the
#                      receive work (IP, TCP, the socket) spread over the
#                      guest's CPUs while one queue takes the completions
#                      (TCP and UDP rows only)
#   DRV-cm             connected mode, MTU 65520 (offloads=1 loaded)
#   DRV-en             datagram mode on softib's rdma_netdev (enhanced=1
#                      offloads=1): "enhanced IPoIB", as on ConnectX-4+
#   ours-en-cm         ours in connected mode on the rdma_netdev (in-tree
#                      has none there: its column is in-tree's DRV-en)
# with DRV the in-tree ib_ipoib ("intree") and ours; the dg and cm rows
# are both drivers' own datapath ("legacy"). Rows per variant:
#   tcp1, tcp2, tcp4   iperf3 TCP Mbit/s, 1, 2 and 4 streams
#   cpu_gb             guest CPU seconds (all CPUs, busy jiffies of
#                      /proc/stat) per GB received, during tcp1
#   cpus               CPUs busy during tcp1 (busy CPU seconds per
#                      second; the guest has 2): what is left for streams
#   udp64_pps          iperf3 UDP, 64-byte payloads, unlimited rate:
#                      datagrams/s that arrived, and udp64_loss (%)
#   rr_p50, rr_p99     sockperf UDP ping-pong, 64 bytes, round trip (us)
#   rr_ctxt, rr_netrx, the ping-pong's work per round trip, the guest's
#   rr_cpu_us          whole: context switches, NET_RX softirqs, busy
#                      CPU time (both vCPUs, microseconds)
# Control plane, per driver (datagram mode):
#   children_s         seconds per 1000 children created, brought up and
#                      deleted (BENCH_CHILDREN in all, shared by the rounds,
#                      in batches of BENCH_BATCH, P_Keys in the table)
#   child_kb           memory per child with a batch up (MemTotal -
#                      MemAvailable, before and after)
#   pkey_ms            a child's P_Key added by the SM -> carrier up
# Peers, per driver and per N of BENCH_PEERS ("100 1000"; LONG=1: "100
# 1000 5000 10000"), softib's virtual nodes swept by UDP echo
# (tests/67-scale-peers.py, 3 rounds), then three fabric-wide events:
#   reach_s            seconds until all N answered (the first round)
#   qpp                PathRecord queries per peer over the 3 rounds
#   slab_b             SUnreclaim growth per peer, bytes
#   p50_us, p99_us     round trips of the last round
#   cpu_pct            guest CPU busy during the sweep
#   evictions          paths evicted (ours; in-tree has no bound)
#   client_peak        the SA's busiest second after a client reregister,
#   sm_peak, pkey_peak an SM change, a P_Key table change (one partition
#                      added), each with the sweep going on
#   client_s, sm_s,    seconds from the event until a round had reached
#   pkey_s             all N
# then ib0 in connected mode (the nodes accept connections, softib
# vnode_cm; ours at its default max_cm_active, 4096) and the sweep again:
#   cm_reach_s         seconds until all N answered (the first round)
#   cm_conn_pp         connections opened per peer over the 3 rounds
#   cm_slab_b          SUnreclaim growth per peer, bytes
#   cm_p50_us, _p99_us round trips of the last round
#   cm_cpu_pct         guest CPU busy during the sweep
#   cm_close_s         seconds until every connection was closed (DREQ)
#                      after the switch back to datagram mode
#
# Latency, BENCH_LAT_ROUNDS rounds (10) of its own after those, the
# drivers' order alternating: per round and driver, the sockperf
# ping-pong's median round trip in datagram (DRV-lat-dg) and connected
# mode (DRV-lat-cm), own datapath, offloads=1; the table gives the
# median of those medians and their spread.
#
# BENCH_ROUNDS rounds (3); each runs every variant, the drivers' order
# alternating between rounds. The table gives the median and the spread
# ((max - min) / median) per row, and the ratios ours/in-tree and
# ours/veth; the JSON (BENCH_JSON, default /results/bench.json: the
# host's .build/<abi>/results/) has every sample. BENCH_PROFILE=1 (the
# default) adds a perf profile (software cpu-clock) of both drivers in
# datagram mode, on their own datapath and on the rdma_netdev, for TCP,
# UDP and ping-pong. Env BENCH_SECS (4) per measurement.
# BENCH_PARTS ("veth softib drivers enhanced peers latency") runs only
# the sections named; "profile" alone runs the profile without the rounds.

source "$(dirname "$0")/lib.sh"

require_cmd iperf3 sockperf python3

ROUNDS=${BENCH_ROUNDS:-3}
SECS=${BENCH_SECS:-4}
CHILDREN=${BENCH_CHILDREN:-1000}
BATCH=${BENCH_BATCH:-25}
PROFILE=${BENCH_PROFILE:-1}
# BENCH_PARTS: the sections to run (all by default)
PARTS=" ${BENCH_PARTS:-veth softib drivers enhanced peers latency} "
LAT_ROUNDS=${BENCH_LAT_ROUNDS:-10}
PEERS=${BENCH_PEERS:-100 1000}
[[ $LONG == 1 ]] && PEERS=${BENCH_PEERS:-100 1000 5000 10000}
JSON=${BENCH_JSON:-/results/bench.json}
# the rounds share the CHILDREN between them, BATCH at a time
PER_ROUND=$(((CHILDREN + ROUNDS - 1) / ROUNDS))
PER_ROUND=$(((PER_ROUND + BATCH - 1) / BATCH * BATCH))
[[ -d $(dirname "$JSON") && -w $(dirname "$JSON") ]] || JSON=/tmp/bench.json
rm -f "$JSON"	# a run that fails leaves no older run's figures behind
SAMPLES=/tmp/bench.$$.tsv
: >"$SAMPLES"
HZ_USER=$(getconf CLK_TCK)
SRV=192.0.2.2
round=0

# sample VARIANT ROW VALUE: one measurement of this round
sample() {
	[[ -n $3 ]] || return 1
	printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$round" "$3" >>"$SAMPLES"
	ktap_diag "round $round: $1 $2 $3"
}

# busy jiffies of all CPUs: user nice system irq softirq steal
cpu_busy() {
	awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat
}

tcp_rows() { # VARIANT
	local out c0 c1 t0 t1 mbit bytes gb cpus

	for streams in 1 2 4; do
		iperf_server "$B" $SRV || return 1
		c0=$(cpu_busy) t0=$EPOCHREALTIME
		out=$(ip netns exec "$A" timeout $((SECS + 30)) \
			iperf3 -c $SRV -t "$SECS" -P $streams -J) || return 1
		c1=$(cpu_busy) t1=$EPOCHREALTIME
		read -r mbit bytes <<<"$(iperf_tcp_parse <<<"$out")" && [[ -n $mbit ]] || return 1
		sample "$1" tcp$streams "$mbit"
		if ((streams == 1 && bytes > 0)); then
			read -r gb cpus <<<"$(awk -v j=$((c1 - c0)) -v hz="$HZ_USER" -v b="$bytes" \
				-v t0="$t0" -v t1="$t1" \
				'BEGIN { printf "%.2f %.2f", j / hz / (b / 1e9), j / hz / (t1 - t0) }')"
			sample "$1" cpu_gb "$gb" && sample "$1" cpus "$cpus" || return 1
		fi
	done
}

udp_rows() { # VARIANT
	local out pps loss

	iperf_server "$B" $SRV || return 1
	out=$(ip netns exec "$A" timeout $((SECS + 30)) \
		iperf3 -c $SRV -u -b 0 -l 64 -t "$SECS" -J) || return 1
	read -r pps loss <<<"$(iperf_udp_parse <<<"$out")" && [[ -n $pps ]] || return 1
	sample "$1" udp64_pps "$pps"
	sample "$1" udp64_loss "$loss"
}

# work_snap: context switches, NET_RX softirqs (all CPUs) and busy CPU
# time in USER_HZ ticks, the guest's whole: both ends, softib's work
# items, the NAPI polls
work_snap() {
	echo "$(awk '/^ctxt / { c = $2 }
		/^cpu / { b = $2 + $3 + $4 + $7 + $8 }
		END { print c, b }' /proc/stat)" \
		"$(awk '/NET_RX:/ { for (i = 2; i <= NF; i++) s += $i; print s }' /proc/softirqs)"
}

rr_rows() { # VARIANT
	local out rtt c0 b0 n0 c1 b1 n1 ctxt netrx cpu

	ip netns exec "$B" sockperf sr -i $SRV --daemonize >/dev/null 2>&1 || return 1
	read -r c0 b0 n0 <<<"$(work_snap)"
	out=$(ip netns exec "$A" timeout $((SECS + 30)) \
		sockperf pp -i $SRV -t "$SECS" -m 64 --full-rtt 2>&1)
	read -r c1 b1 n1 <<<"$(work_snap)"
	pkill -f "sockperf sr -i $SRV"
	sample "$1" rr_p50 "$(awk '/percentile 50.000 =/ { print $NF }' <<<"$out")" &&
		sample "$1" rr_p99 "$(awk '/percentile 99.000 =/ { print $NF }' <<<"$out")" || return 1
	# the work per round trip: every exchange of the run, warm-up too
	rtt=$(sed -n 's/.*\[Total Run\].*ReceivedMessages=\([0-9]*\).*/\1/p' <<<"$out")
	[[ $rtt -gt 0 ]] || return 1
	read -r ctxt netrx cpu <<<"$(awk -v c=$((c1 - c0)) -v s=$((n1 - n0)) -v b=$((b1 - b0)) \
		-v n="$rtt" -v hz="$HZ_USER" 'BEGIN { printf "%.2f %.2f %.1f", c / n, s / n, b * 1e6 / hz / n }')"
	sample "$1" rr_ctxt "$ctxt" && sample "$1" rr_netrx "$netrx" &&
		sample "$1" rr_cpu_us "$cpu"
}

measure() { # VARIANT
	slowwait 20 ip netns exec "$A" ping -c 1 -W 1 $SRV >/dev/null || return 1
	tcp_rows "$1" && udp_rows "$1" && rr_rows "$1"
}

veth_up() {
	modprobe veth
	setup_ns A B
	ip link add vA netns "$A" type veth peer name vB netns "$B" &&
		ip -n "$A" addr add 192.0.2.1/24 dev vA && ip -n "$B" addr add $SRV/24 dev vB &&
		ip -n "$A" link set vA up && ip -n "$B" link set vB up
}

set_connected() {
	local pair

	for pair in "$A ib0" "$B ib1"; do
		# shellcheck disable=SC2086
		set -- $pair
		ip netns exec "$1" sh -c "echo connected > /sys/class/net/$2/mode" &&
			ip -n "$1" link set "$2" mtu 65520 || return 1
	done
}

# The partitions of the control-plane rows: the default one and BATCH more
# (P_Keys 0x8001...), the first BATCH children's; pkey_ms adds one more.
policy_batch() { # [EXTRA P_KEY]
	local i lines=("Default=0x7fff, ipoib : ALL=full;")

	for ((i = 1; i <= BATCH; i++)); do
		lines+=("$(printf 'b%d=0x%04x, ipoib : ALL=full;' $i $i)")
	done
	[[ -n ${1:-} ]] && lines+=("$(printf 'extra=0x%04x, ipoib : ALL=full;' "$1")")
	softib_policy "${lines[@]}"
}

children_up() { # NS: every b* child has carrier
	! ip -n "$1" -o link show | grep -E ': b[0-9]+@' | grep -qv LOWER_UP
}

mem_used_kb() {
	awk '/^MemTotal:/ { t = $2 } /^MemAvailable:/ { a = $2 } END { print t - a }' /proc/meminfo
}

control_rows() { # DRV
	local i n t0 m0 m1 cmds del

	policy_batch || return 1
	t0=$(date +%s%N)
	for ((n = 0; n < PER_ROUND; n += BATCH)); do
		cmds="" del=""
		for ((i = 1; i <= BATCH; i++)); do
			cmds+=$(printf 'link add link ib0 name b%d type ipoib pkey 0x%04x\nlink set b%d up\n' \
				$i $((0x8000 + i)) $i)$'\n'
			del+="link del b$i"$'\n'
		done
		((n == 0)) && m0=$(mem_used_kb)
		ip -n "$A" -batch - <<<"$cmds" || return 1
		if ((n == 0)); then
			# the first batch: with carrier (joined), then its memory
			slowwait 60 children_up "$A" || return 1
			sleep 1
			m1=$(mem_used_kb)
		fi
		ip -n "$A" -batch - <<<"$del" || return 1
	done
	# seconds per 1000 children (each round makes its share of them)
	sample "$1" children_s "$(awk -v ns=$(($(date +%s%N) - t0)) -v n="$n" \
		'BEGIN { printf "%.1f", ns / 1e9 * 1000 / n }')"
	sample "$1" child_kb $(((m1 - m0) / BATCH))

	# a child whose P_Key the SM does not have yet: carrier when it comes
	ip -n "$A" link add link ib0 name pk type ipoib pkey 0x8abc &&
		ip -n "$A" link set pk up || return 1
	sleep 1
	ipoib_lower_up "$A" pk && return 1
	t0=$(date +%s%N)
	policy_batch 0x0abc || return 1
	ip netns exec "$A" timeout 60 sh -c \
		'until grep -qx 1 /sys/class/net/pk/carrier 2>/dev/null; do sleep 0.01; done' || return 1
	sample "$1" pkey_ms $((($(date +%s%N) - t0) / 1000000))
	ip -n "$A" link del pk
}

# softib's own ceiling (drivers/softib/bench.c): verbs-level send loops
# from port 1 to port 2, no IPoIB driver loaded
softib_rows() {
	local f line t size n

	load_softib debug_wrid=0 || return 1
	f=$SOFTIB_DBG/bench
	slowwait 10 softib_ports_active >/dev/null || { unload_softib; return 1; }
	for line in "ud 64 20000" "rc 64 20000" "ud 4096 5000" "rc 65536 1000"; do
		read -r t size n <<<"$line"
		echo "$line" >"$f" || { unload_softib; return 1; }
		read -r -a r <"$f"
		# "T size S messages N ns NS msg/s M MB/s B lost L"
		if ((size == 64)); then
			sample softib-$t verbs64_mps "${r[8]}"
		else
			sample softib-$t verbs_mbps "${r[10]}"
		fi
	done
	unload_softib
}

# peers_sweep_rows DRV N PREFIX ROW COUNTER...: three rounds of the sweep
# to N peers, sampled as PREFIX + reach_s, slab_b, p50_us, p99_us and
# cpu_pct, and ROW: the growth of what COUNTER... prints, per peer
peers_sweep_rows() {
	local k=$1-p$2 n=$2 pre=$3 row=$4 c0 c1 s0 s1 b0 b1 i0 i1 out r0 last

	shift 4
	c0=$("$@") s0=$(peers_slab)
	read -r b0 i0 <<<"$(peers_cpu)"
	out=$(peers_sweep "$n" --rounds 3) || return 1
	read -r b1 i1 <<<"$(peers_cpu)"
	c1=$("$@") s1=$(peers_slab)
	r0=$(sed -n 1p <<<"$out") last=$(tail -n 1 <<<"$out")
	[[ $(peers_field answered "$last") == "$n" ]] ||
		{ ktap_diag "$k: $(peers_field answered "$last") of $n answered"; return 1; }
	sample "$k" "${pre}reach_s" "$(peers_field secs "$r0")"
	sample "$k" "$row" "$(awk -v c=$((c1 - c0)) -v n="$n" 'BEGIN { printf "%.2f", c / n }')"
	sample "$k" "${pre}slab_b" $(((s1 - s0) * 1024 / n))
	sample "$k" "${pre}p50_us" "$(peers_field p50_us "$last")"
	sample "$k" "${pre}p99_us" "$(peers_field p99_us "$last")"
	sample "$k" "${pre}cpu_pct" $(((b1 - b0) * 100 / (b1 - b0 + i1 - i0 + 1)))
}

# peers_rows DRV: the peers section for every N of PEERS
peers_rows() {
	local n out e0 e1 r0 ev t0 ret

	IPOIB=$1
	for n in $PEERS; do
		peers_neigh_bounds "$n"
		ipoib_fabric_up vnodes="$n" offloads=1 debug_wrid=0 || return 1
		ip -n "$A" addr add 10.224.255.254/16 dev ib0 || return 1
		e0=$(peers_evictions)
		peers_sweep_rows "$1" "$n" "" qpp softib_stat sa_path_queries || return 1
		e1=$(peers_evictions)
		[[ $1 == ours ]] && sample "$1-p$n" evictions $((e1 - e0))

		for ev in client_reregister sm_change pkey_change; do
			echo reset >"$SOFTIB_DBG/sa_path_peak"
			t0=$EPOCHREALTIME
			peers_event $ev || return 1
			out=$(peers_sweep "$n" --rounds 2 --min-secs $((n / 100 + 3))) || return 1
			# the first round that reached every peer (in-tree's first
			# after a reregister loses what waits for a path)
			r0=$(grep -m1 "\"answered\": $n," <<<"$out") ||
				{ ktap_diag "$1, $n peers: no full round after $ev"; return 1; }
			sample "$1-p$n" ${ev%%_*}_peak "$(<"$SOFTIB_DBG/sa_path_peak")"
			sample "$1-p$n" ${ev%%_*}_s "$(awk -v a="$t0" -v b="$(peers_field end "$r0")" \
				'BEGIN { printf "%.1f", b - a }')"
		done

		# connected mode: the same sweep, connections opened per peer
		ip netns exec "$A" sh -c 'echo connected >/sys/class/net/ib0/mode' || return 1
		peers_sweep_rows "$1" "$n" cm_ cm_conn_pp peers_vnode_stat cm_accepted
		ret=$?
		# every connection closed before the unload, whatever the sweep
		# gave (see 67-scale-peers)
		t0=$EPOCHREALTIME
		ip netns exec "$A" sh -c 'echo datagram >/sys/class/net/ib0/mode' &&
			peers_cm_closed "$(peers_vnode_stat cm_accepted)" ||
			{ ktap_diag "$1, $n peers: connections still open in datagram mode"; return 1; }
		sample "$1-p$n" cm_close_s "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')"
		((ret == 0)) || return 1
		__defer_run
		cleanup_ns
	done
}

# rps_on NS DEV MASK: RPS of DEV's receive queue
rps_on() {
	ip netns exec "$1" sh -c "echo $3 > /sys/class/net/$2/queues/rx-0/rps_cpus"
}

# rps_rows VARIANT: TCP and UDP with the receive work spread over every
# CPU by RPS at both ends, then RPS off again
rps_rows() {
	local all ret

	all=$(printf '%x' $(((1 << $(nproc)) - 1)))
	rps_on "$A" ib0 "$all" && rps_on "$B" ib1 "$all" &&
		tcp_rows "$1" && udp_rows "$1"
	ret=$?
	# off at both ends whatever failed: the connected rows come next
	rps_on "$A" ib0 0
	rps_on "$B" ib1 0 && return $ret
}

# driver_rows DRV OFFLOADS: one driver on one softib offload setting:
# datagram rows; with offloads also the connected rows and the control
# plane (children in datagram mode: the parent's mode is not theirs).
# Fails (with a diagnostic) if any of them did.
driver_rows() {
	local failed=""

	IPOIB=$1
	# debug_wrid=0: the suite's wr_id check is not part of the HCA
	if ipoib_fabric_up offloads="$2" debug_wrid=0; then
		if (($2)); then
			measure "$1-dg" || failed+=" datagram"
			rps_rows "$1-dg-rps" || failed+=" datagram-rps"
			if set_connected; then
				measure "$1-cm" || failed+=" connected"
			else
				failed+=" connected-mode-switch"
			fi
			control_rows "$1" || failed+=" control-plane"
		else
			measure "$1-dg-off" || failed+=" datagram"
		fi
	else
		failed=" fabric-up"
	fi
	__defer_run
	cleanup_ns
	[[ -z $failed ]] || ktap_diag "$1 offloads=$2, round $round: failed:$failed"
	[[ -z $failed ]]
}

# enhanced_rows DRV: on softib's rdma_netdev (enhanced=1 offloads=1): the
# datagram rows, and for ours the connected rows too.
enhanced_rows() {
	local failed=""

	IPOIB=$1
	if ipoib_fabric_up enhanced=1 offloads=1 debug_wrid=0; then
		measure "$1-en" || failed+=" datagram"
		if [[ $1 == ours ]]; then
			if set_connected; then
				measure "$1-en-cm" || failed+=" connected"
			else
				failed+=" connected-mode-switch"
			fi
		fi
	else
		failed=" fabric-up"
	fi
	__defer_run
	cleanup_ns
	[[ -z $failed ]] || ktap_diag "$1 enhanced, round $round: failed:$failed"
	[[ -z $failed ]]
}

# latency_rows DRV: the ping-pong alone, datagram then connected mode
latency_rows() {
	local failed=""

	IPOIB=$1
	if ipoib_fabric_up offloads=1 debug_wrid=0; then
		slowwait 20 ip netns exec "$A" ping -c 1 -W 1 $SRV >/dev/null &&
			rr_rows "$1-lat-dg" || failed+=" datagram"
		set_connected && slowwait 20 ip netns exec "$A" ping -c 1 -W 1 $SRV >/dev/null &&
			rr_rows "$1-lat-cm" || failed+=" connected"
	else
		failed=" fabric-up"
	fi
	__defer_run
	cleanup_ns
	[[ -z $failed ]] || ktap_diag "$1 latency, round $round: failed:$failed"
	[[ -z $failed ]]
}

# the idle loop's symbols, left out of the profile
IDLE_SYMS='safe_halt|default_idle|cpu_idle'

# module_shares: perf's "--sort sym" report on stdin, as percentages of
# the busy (not idle) samples per module of /proc/kallsyms: the kernel,
# each module, user space
module_shares() {
	awk -v idle="$IDLE_SYMS" 'NR == FNR { if ($4 ~ /^\[/) mod[$3] = $4; next }
	$1 ~ /%$/ {
		p = $1 + 0; s = $3
		if (s ~ idle) next
		m = $2 == "[.]" ? "user" : (s in mod ? mod[s] : "kernel")
		sum[m] += p; busy += p
	}
	END { for (m in sum) printf "%6.1f%% %s\n", sum[m] * 100 / busy, m }' \
		/proc/kallsyms - | sort -rn
}

# profile_runs DRV dg|en: perf (cpu-clock, all CPUs) over one TCP, one
# UDP and one ping-pong run in datagram mode with offloads, on the
# driver's own datapath (dg) or on softib's rdma_netdev (en); the top
# symbols of each
profile_runs() {
	local perf row report softib=(offloads=1 debug_wrid=0)

	perf=$(command -v perf)
	[[ -x $perf ]] || { ktap_diag "profile: no perf (Debian linux-perf)"; return 0; }
	IPOIB=$1
	[[ $2 == en ]] && softib+=(enhanced=1)
	ipoib_fabric_up "${softib[@]}" || return 1
	slowwait 20 ip netns exec "$A" ping -c 1 -W 1 $SRV >/dev/null || return 1
	for row in tcp udp rr; do
		local cmd=(iperf3 -c $SRV -t "$SECS")
		if [[ $row == rr ]]; then
			ip netns exec "$B" sockperf sr -i $SRV --daemonize >/dev/null 2>&1 || return 1
			cmd=(sockperf pp -i $SRV -t "$SECS" -m 64)
		else
			iperf_server "$B" $SRV || return 1
			[[ $row == udp ]] && cmd+=(-u -b 0 -l 64)
		fi
		"$perf" record -q -e cpu-clock -F 499 -a -o /tmp/perf.data -- \
			ip netns exec "$A" "${cmd[@]}" >/dev/null 2>&1
		[[ $row == rr ]] && pkill -f "sockperf sr -i $SRV"
		report=$("$perf" report -q -i /tmp/perf.data --kallsyms=/proc/kallsyms --stdio \
			--no-children --sort sym 2>/dev/null)
		ktap_diag "profile $1-$2 $row (cpu-clock, all CPUs, top 15 but idle):"
		ktap_diag "$(grep -Ev "^$|$IDLE_SYMS" <<<"$report" | head -n 15)"
		# the driver's and softib's shares of the busy time: what a
		# driver change can gain at most
		ktap_diag "profile $1-$2 $row, shares of the busy time by module:"
		ktap_diag "$(module_shares <<<"$report")"
	done
	rm -f /tmp/perf.data
}

# profile DRV dg|en: profile_runs, then the fabric down whatever failed,
# so that the next profile loads softib afresh
profile() {
	local rc

	profile_runs "$@"
	rc=$?
	__defer_run
	cleanup_ns
	return $rc
}

ktap_header $((ROUNDS * 10 + LAT_ROUNDS * 2 + 1))
ktap_diag "$ROUNDS rounds, ${SECS}s per measurement, $PER_ROUND children per round in batches of $BATCH"
start=$SECONDS
# part NAME: is section NAME in BENCH_PARTS?
part() { [[ $PARTS == *" $1 "* ]]; }

for ((round = 1; round <= ROUNDS; round++)); do
	if part veth; then
		veth_up && measure veth
		ktap_result $? "round $round: veth"
		cleanup_ns
	else
		ktap_skip "round $round: veth" "not in BENCH_PARTS"
	fi
	if part softib; then
		softib_rows
		ktap_result $? "round $round: softib verbs loops"
	else
		ktap_skip "round $round: softib verbs loops" "not in BENCH_PARTS"
	fi
	drivers="intree ours"
	((round % 2)) || drivers="ours intree"
	for drv in $drivers; do
		for off in 1 0; do
			if part drivers; then
				driver_rows "$drv" $off
				ktap_result $? "round $round: $drv, softib offloads=$off"
			else
				ktap_skip "round $round: $drv, softib offloads=$off" "not in BENCH_PARTS"
			fi
		done
	done
	for drv in $drivers; do
		if part enhanced; then
			enhanced_rows "$drv"
			ktap_result $? "round $round: $drv, softib enhanced=1"
		else
			ktap_skip "round $round: $drv, softib enhanced=1" "not in BENCH_PARTS"
		fi
	done
	for drv in $drivers; do
		if part peers; then
			peers_rows "$drv"
			ktap_result $? "round $round: $drv, peers $PEERS"
			__defer_run
			cleanup_ns
		else
			ktap_skip "round $round: $drv, peers" "not in BENCH_PARTS"
		fi
	done
	ktap_diag "round $round done after $((SECONDS - start))s"
done

for ((lat = 1; lat <= LAT_ROUNDS; lat++)); do
	round=$lat
	drivers="intree ours"
	((lat % 2)) || drivers="ours intree"
	for drv in $drivers; do
		if part latency; then
			latency_rows "$drv"
			ktap_result $? "latency round $lat: $drv"
		else
			ktap_skip "latency round $lat: $drv" "not in BENCH_PARTS"
		fi
	done
done

if ((PROFILE)) && { part drivers || part profile; }; then
	for mode in dg en; do
		for drv in intree ours; do
			profile "$drv" $mode || ktap_diag "profile of $drv-$mode failed"
		done
	done
fi

# the table and the JSON
table=$(python3 - "$(dirname "$0")" "$SAMPLES" "$JSON" "$(uname -r)" "$ROUNDS" "$SECS" <<'PY'
import json, sys
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])
from bench_samples import load, num
import bench_samples
samples, out, kernel, rounds, secs = sys.argv[2:]
data = load(samples)

def med(v, row):
    return bench_samples.med(data, v, row)

def spread(v, row):
    return bench_samples.spread(data, v, row)

rows = [("tcp1", "Mbit/s", 1), ("tcp2", "Mbit/s", 1), ("tcp4", "Mbit/s", 1),
        ("cpu_gb", "CPU s/GB", -1), ("cpus", "CPUs busy", -1),
        ("udp64_pps", "pkt/s", 1), ("udp64_loss", "% lost", -1),
        ("rr_p50", "us", -1), ("rr_p99", "us", -1),
        ("rr_ctxt", "switches/rtt", -1), ("rr_netrx", "softirqs/rtt", -1),
        ("rr_cpu_us", "CPU us/rtt", -1)]
modes = ["dg-off", "dg", "dg-rps", "cm", "en", "en-cm", "lat-dg", "lat-cm"]
# in-tree has no connected mode on an rdma_netdev: ours' en-cm row is
# set against in-tree's enhanced datagram mode
ref = {"en-cm": "en"}
fmt = "{:<12} {:<7} {:>10} {:>6} {:>10} {:>6} {:>10} {:>7} {:>7}"
print(fmt.format("row", "mode", "in-tree", "+-%", "ours", "+-%", "veth", "/intree", "/veth"))
table = []
def ratio(a, b, better):
    if a is None or not b:
        return None
    return a / b
for row, unit, better in rows:
    for mode in modes:
        im = "intree-" + ref.get(mode, mode)
        i, o, ve = med(im, row), med("ours-" + mode, row), med("veth", row)
        if o is None and (i is None or mode in ref):
            continue
        r_i, r_v = ratio(o, i, better), ratio(o, ve, better)
        si, so = spread(im, row), spread("ours-" + mode, row)
        print(fmt.format(row, mode, num(i), num(si and si * 100), num(o), num(so and so * 100),
                         num(ve), num(r_i), num(r_v)))
        table.append(dict(row=row, unit=unit, mode=mode, intree=i, ours=o, veth=ve,
                          ours_intree=r_i, ours_veth=r_v, spread_intree=si, spread_ours=so,
                          higher_is_better=better > 0))
# scaling over the guest's CPUs: 2 and 4 streams against one
for mode in modes:
    for n in (2, 4):
        i1, o1 = med("intree-" + mode, "tcp1"), med("ours-" + mode, "tcp1")
        i2, o2 = med("intree-" + mode, "tcp%d" % n), med("ours-" + mode, "tcp%d" % n)
        if o1 is None and i1 is None:
            continue
        si, so = ratio(i2, i1, 1), ratio(o2, o1, 1)
        print(fmt.format("tcp%d/tcp1" % n, mode, num(si), "-", num(so), "-", "-", "-", "-"))
        table.append(dict(row="tcp%d/tcp1" % n, unit="ratio", mode=mode, intree=si, ours=so,
                          higher_is_better=True))
for row, unit in [("children_s", "s per 1000"), ("child_kb", "kB"), ("pkey_ms", "ms")]:
    i, o = med("intree", row), med("ours", row)
    if i is None and o is None:
        continue
    r_i = ratio(o, i, -1)
    si, so = spread("intree", row), spread("ours", row)
    print(fmt.format(row, "ctl", num(i), num(si and si * 100), num(o), num(so and so * 100),
                     "-", num(r_i), "-"))
    table.append(dict(row=row, unit=unit, mode="control", intree=i, ours=o, ours_intree=r_i,
                      spread_intree=si, spread_ours=so, higher_is_better=False))
peers = sorted({int(v.split("-p")[1]) for v in data if "-p" in v})
for n in peers:
    for row, unit in [("reach_s", "s"), ("qpp", "queries/peer"), ("slab_b", "B/peer"),
                      ("p50_us", "us"), ("p99_us", "us"), ("cpu_pct", "%"),
                      ("evictions", "paths"), ("client_peak", "queries/s"), ("client_s", "s"),
                      ("sm_peak", "queries/s"), ("sm_s", "s"), ("pkey_peak", "queries/s"),
                      ("pkey_s", "s"), ("cm_reach_s", "s"), ("cm_conn_pp", "connections/peer"),
                      ("cm_slab_b", "B/peer"), ("cm_p50_us", "us"), ("cm_p99_us", "us"),
                      ("cm_cpu_pct", "%"), ("cm_close_s", "s")]:
        i, o = med("intree-p%d" % n, row), med("ours-p%d" % n, row)
        if i is None and o is None:
            continue
        r_i = ratio(o, i, -1)
        si, so = spread("intree-p%d" % n, row), spread("ours-p%d" % n, row)
        print(fmt.format(row, "p%d" % n, num(i), num(si and si * 100), num(o),
                         num(so and so * 100), "-", num(r_i), "-"))
        table.append(dict(row=row, unit=unit, mode="peers", peers=n, intree=i, ours=o,
                          ours_intree=r_i, spread_intree=si, spread_ours=so,
                          higher_is_better=False))
for row, unit in [("verbs64_mps", "msg/s (64 B)"), ("verbs_mbps", "MB/s (UD 4 KiB, RC 64 KiB)")]:
    for t in ("ud", "rc"):
        m = med("softib-" + t, row)
        if m is None:
            continue
        sp = spread("softib-" + t, row)
        print("softib %s %s: %s %s (+-%s%%)" % (t, row, num(m), unit, num(sp and sp * 100)))
        table.append(dict(row=row, unit=unit, mode="softib-" + t, softib=m, spread=sp))
json.dump(dict(kernel=kernel, rounds=int(rounds), seconds=int(secs), table=table,
               samples=data), open(out, "w"), indent=1)
print("JSON: " + out)
PY
)
rc=$?
ktap_diag "$table"
(exit $rc)

ktap_result $? "table and JSON ($JSON)"
rm -f "$SAMPLES"
ktap_finish
