#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench across the link: IPoIB between two guests joined by softib's
# link (selftests/run.sh --pair-bench; node 1 on the first kernel series,
# node 2 on the second), next to the underlay itself. Both nodes run this
# script and meet at the pair barriers of lib.sh; node 1 sends and
# measures, node 2 serves. Documentation/performance.rst explains the
# method.
#
# For each underlay MTU of BENCH_PAIR_MTUS ("9000 1500"; softib's link
# takes its IB MTU from it at load: 4096 and 1024), one after the other:
#   underlay-M        the same measurements directly over the guests'
#                     fabric NIC (virtio-net on a QEMU datagram link): the
#                     ceiling of what softib's link can carry
#   DRV-dg-M          datagram mode, the same driver on both nodes
#   DRV-cm-M          connected mode, MTU 65520 (RC across the link)
# with DRV in-tree ib_ipoib ("intree") or ours, softib offloads=1. Rows:
#   tcp1, tcp4        iperf3 TCP Mbit/s, 1 and 4 streams
#   udp64_pps         iperf3 UDP, 64-byte payloads, unlimited rate:
#                     datagrams/s that arrived, and udp64_loss (%)
#   rr_p50, rr_p99    sockperf UDP ping-pong, 64 bytes, round trip (us)
#
# BENCH_ROUNDS rounds (3), the drivers' order alternating between rounds;
# BENCH_SECS (4) per measurement. Node 1 prints the table (median and
# spread per row, ratios ours/in-tree and ours/underlay) and writes every
# sample to BENCH_JSON (default /results/bench.json: the host's
# .build/pair/node-1/, copied to .build/bench-pair.json).
#
#   pair-bench.sh --total-timeout   the guest's timeout, seconds

ROUNDS=${BENCH_ROUNDS:-3}
SECS=${BENCH_SECS:-4}
MTUS=${BENCH_PAIR_MTUS:-9000 1500}
if [[ ${1:-} == --total-timeout ]]; then
	# a round takes 2-3 minutes per MTU under TCG (5 variants); 12
	# minutes leaves room for a slow host, then the table
	echo $(((ROUNDS * $(wc -w <<<"$MTUS") * 720 + 300) * ${TIMEOUT_SCALE:-1}))
	exit 0
fi

source "$(dirname "$0")/lib.sh"

pair_require
require_cmd iperf3 sockperf python3

ME=$(pair_node)
DEV=$(pair_dev)
JSON=${BENCH_JSON:-/results/bench.json}
[[ -d $(dirname "$JSON") && -w $(dirname "$JSON") ]] || JSON=/tmp/bench.json
rm -f "$JSON"	# a run that fails leaves no older run's figures behind
SAMPLES=/tmp/pair-bench.$$.tsv
: >"$SAMPLES"
export PAIR_SCOPE=bench
round=0
pair_put kernel "$(uname -r)" || exit 1
# the other guest may boot minutes later beside a busy one
pair_barrier start 600 || { echo "# node $((3 - ME)) did not come"; exit 1; }

for m in $MTUS; do
	[[ $m =~ ^[0-9]+$ ]] && ((m >= 1280)) ||
		{ echo "pair-bench.sh: BENCH_PAIR_MTUS '$MTUS': MTUs of 1280 or more" >&2; exit 1; }
done

cleanup() {
	pkill -x iperf3 2>/dev/null
	pkill -x sockperf 2>/dev/null
	unload_ipoib
	unload_softib
	rm -f "$SAMPLES"
}
defer cleanup

# sample VARIANT ROW VALUE: one measurement of this round (node 1)
sample() {
	[[ -n $3 ]] || return 1
	printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$round" "$3" >>"$SAMPLES"
	ktap_diag "round $round: $1 $2 $3"
}

# servers ADDR: node 2's iperf3 (one daemon serves every run) and sockperf
# on ADDR
servers() {
	iperf3 -s -D -B "$1" >/dev/null 2>&1 &&
		sockperf sr -i "$1" --daemonize >/dev/null 2>&1 &&
		slowwait 10 sh -c 'ss -ltn | grep -q :5201' >/dev/null
}

servers_stop() {
	pkill -x iperf3
	pkill -x sockperf
	slowwait 10 sh -c '! pgrep -x "iperf3|sockperf"' >/dev/null
}

# client_rows VARIANT ADDR: node 1's measurements against node 2's ADDR
client_rows() {
	local v=$1 a=$2 out n mbit pps loss

	slowwait 20 ping -c 1 -W 1 "$a" >/dev/null || return 1
	for n in 1 4; do
		out=$(timeout $((SECS + 30)) iperf3 -c "$a" -t "$SECS" -P $n -J) || return 1
		read -r mbit _ <<<"$(iperf_tcp_parse <<<"$out")"
		sample "$v" tcp$n "$mbit" || return 1
	done
	out=$(timeout $((SECS + 30)) iperf3 -c "$a" -u -b 0 -l 64 -t "$SECS" -J) || return 1
	read -r pps loss <<<"$(iperf_udp_parse <<<"$out")"
	sample "$v" udp64_pps "$pps" && sample "$v" udp64_loss "$loss" || return 1
	out=$(timeout $((SECS + 30)) sockperf pp -i "$a" -t "$SECS" -m 64 --full-rtt 2>&1)
	sample "$v" rr_p50 "$(awk '/percentile 50.000 =/ { print $NF }' <<<"$out")" &&
		sample "$v" rr_p99 "$(awk '/percentile 99.000 =/ { print $NF }' <<<"$out")"
}

# measure VARIANT ADDR: one variant's rows, node 2 serving on ADDR; both
# nodes call it, node 1's result decides. A failed barrier (the other
# node gone) ends the run.
measure() {
	local rc=0

	if ((ME == 2)); then
		servers "$2" || rc=1
	fi
	pair_put "srv-$1-$round" $rc || exit 1
	pair_barrier "serve" || exit 1
	if ((ME == 1)); then
		[[ $(pair_get "srv-$1-$round") == 0 ]] || { ktap_diag "$1: node 2 has no servers"; rc=1; }
		((rc)) || client_rows "$1" "$2" || rc=1
		pair_put "rc-$1-$round" $rc || exit 1
	fi
	pair_barrier "measured" 300 || exit 1
	if ((ME == 2)); then
		servers_stop
		rc=$(pair_get "rc-$1-$round") || exit 1
	fi
	ktap_result "$rc" "round $round: $1"
}

# fabric_nic MTU: the fabric NIC at MTU, on both nodes; false on both if
# either refused it
fabric_nic() {
	local rc=0

	ip link set dev "$DEV" mtu "$1" || rc=1
	pair_put "mtu-$1-$round" $rc || exit 1
	pair_barrier "mtu" || exit 1
	((rc == 0)) && [[ $(pair_get "mtu-$1-$round") == 0 ]]
}

# ipoib_up DRV MODE: softib linked to the other node (its IB MTU from the
# NIC's MTU now), DRV's ib0 in MODE (dg or cm) as 192.0.2.K
ipoib_up() {
	pair_link_load "" debug_wrid=0 offloads=1 && slowwait 15 pair_link_up &&
		softib_policy "Default=0x7fff, ipoib : ALL=full;" &&
		IPOIB=$1 load_ipoib && slowwait 10 test -d /sys/class/net/ib0 || return 1
	if [[ $2 == cm ]]; then
		echo connected >/sys/class/net/ib0/mode && ip link set ib0 mtu 65520 || return 1
	fi
	ip addr add "192.0.2.$ME/24" dev ib0 && ip link set ib0 up &&
		slowwait 30 ipoib_lower_up "" ib0
}

ipoib_down() {
	unload_ipoib
	unload_softib
}

variants=$(($(wc -w <<<"$MTUS") * 5))
ktap_header $((ROUNDS * variants + 1))
ktap_diag "node $ME: $(uname -r); $ROUNDS rounds, ${SECS}s per measurement, underlay MTUs $MTUS"
start=$SECONDS
for ((round = 1; round <= ROUNDS; round++)); do
	drivers="intree ours"
	((round % 2)) || drivers="ours intree"
	for m in $MTUS; do
		if ! fabric_nic "$m"; then
			for v in underlay intree-dg intree-cm ours-dg ours-cm; do
				ktap_fail "round $round: $v-$m ($DEV refused MTU $m)"
			done
			continue
		fi
		measure "underlay-$m" "$(pair_addr 2)"
		for drv in $drivers; do
			for mode in dg cm; do
				rc=0
				ipoib_up "$drv" "$mode" || rc=1
				pair_put "up-$drv-$mode-$m-$round" $rc || exit 1
				pair_barrier "up" || exit 1
				if ((rc)) || [[ $(pair_get "up-$drv-$mode-$m-$round") != 0 ]]; then
					ktap_diag "$drv-$mode-$m: ib0 is not up on both nodes"
					ktap_fail "round $round: $drv-$mode-$m"
				else
					measure "$drv-$mode-$m" 192.0.2.2
				fi
				ipoib_down
				pair_barrier "down" || exit 1
			done
		done
	done
	ktap_diag "round $round done after $((SECONDS - start))s"
done
ip link set dev "$DEV" mtu "${IPOIB_NG_FABMTU:-9000}"

if ((ME == 2)); then
	ktap_ok "node 1 makes the table"
	pair_barrier "end" 600
	ktap_finish
fi

# the table and the JSON
table=$(python3 - "$(dirname "$0")" "$SAMPLES" "$JSON" "$(uname -r)" \
	"$(pair_get kernel 10)" "$ROUNDS" "$SECS" "$MTUS" <<'PY'
import json, sys
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])
from bench_samples import load, num, ratio
import bench_samples
samples, out, kernel, peer, rounds, secs, mtus = sys.argv[2:]
data = load(samples)

def med(v, row):
    return bench_samples.med(data, v, row)

def spread(v, row):
    return bench_samples.spread(data, v, row)

rows = [("tcp1", "Mbit/s", True), ("tcp4", "Mbit/s", True),
        ("udp64_pps", "pkt/s", True), ("udp64_loss", "% lost", False),
        ("rr_p50", "us", False), ("rr_p99", "us", False)]
fmt = "{:<11} {:<8} {:>9} {:>6} {:>9} {:>6} {:>9} {:>8} {:>9}"
print("node 1 %s -> node 2 %s, %s rounds of %s s" % (kernel, peer, rounds, secs))
print(fmt.format("row", "mode", "in-tree", "+-%", "ours", "+-%", "underlay", "/intree", "/underlay"))
table = []
for row, unit, higher in rows:
    for mtu in mtus.split():
        for mode in ("dg", "cm"):
            key = "%s-%s" % (mode, mtu)
            i, o = med("intree-" + key, row), med("ours-" + key, row)
            u = med("underlay-" + mtu, row)
            if i is None and o is None:
                continue
            si, so = spread("intree-" + key, row), spread("ours-" + key, row)
            r_i, r_u = ratio(o, i), ratio(o, u)
            print(fmt.format(row, key, num(i), num(si and si * 100), num(o),
                             num(so and so * 100), num(u), num(r_i), num(r_u)))
            table.append(dict(row=row, unit=unit, mode=mode, underlay_mtu=int(mtu),
                              intree=i, ours=o, underlay=u, ours_intree=r_i,
                              ours_underlay=r_u, spread_intree=si, spread_ours=so,
                              higher_is_better=higher))
json.dump(dict(kernel=kernel, peer_kernel=peer, rounds=int(rounds), seconds=int(secs),
               table=table, samples=data), open(out, "w"), indent=1)
print("JSON: " + out)
PY
)
rc=$?
ktap_diag "$table"
(exit $rc)
ktap_result $? "table and JSON ($JSON)"
pair_barrier "end" 60
ktap_finish
