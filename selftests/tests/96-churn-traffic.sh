#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 1500
#
# Churn under traffic, then nothing leaked. For CHURN seconds (15; 600
# with LONG=1), with pings at 200/s both ways and a 20 Mbit/s iperf3
# stream running throughout:
#
#   sysfs     create_child/delete_child on ib0 (two P_Keys)
#   netlink   two processes adding, raising and deleting children
#   netns     children moved into new namespaces that are then deleted
#             with the children inside
#   mode      connected/datagram flips on parents and children
#   policy    a partition policy change every 300 ms (0x0002 comes and
#             goes, 0x0001 stays)
#   port      link flaps on port 2, client_reregister on port 1
#
# Then: the churned children are gone, the netdevs are the baseline's,
# softib's verbs objects and `rdma res` are the baseline's, unreclaimable
# slab is within SLAB_TOL_KB of the baseline, traffic works. Last, under
# traffic: rmmod ib_ipoib (objects back to what softib had without it,
# refcount 0), load it again (traffic works), and remove the HCA (every
# IPoIB interface goes, every module's refcount is 0).

source "$(dirname "$0")/../lib.sh"

require_cmd ping iperf3

CHURN=${CHURN:-15}
[[ $LONG == 1 ]] && CHURN=600
# Slab after `shrink` of every cache still moves by a few hundred kB
# with no leak at all (per-CPU partial slabs, netns teardown's RCU and
# workqueue tails, sysfs/kernfs nodes of the many namespaces): measured
# 0-600 kB here. A leaked child costs ~100 kB of slab (its netdev, priv,
# rings and 256 receive skb heads), and churn makes hundreds of them, so
# a per-child leak of even a few kB shows far above 2 MB.
SLAB_TOL_KB=2048

T=$(mktemp -d)
defer rm -rf "$T"

sunreclaim_kb() {
	local f

	sync
	echo 3 >/proc/sys/vm/drop_caches
	for f in /sys/kernel/slab/*/shrink; do
		echo 1 >"$f" 2>/dev/null
	done
	awk '/^SUnreclaim:/ { print $2 }' /proc/meminfo
}

objects() {
	tr '\n' ' ' <"$SOFTIB_DBG/objects"
}

# the verbs objects an interface owns; address handles and groups also
# follow the parents' own traffic and come back as it does
iface_objects() {
	grep -E '^(pd|cq|qp|srq|mr) ' "$SOFTIB_DBG/objects" | tr '\n' ' '
}

rdma_res() {
	rdma res show 2>/dev/null | grep -oE '(pd|cq|qp|srq|mr) [0-9]+' | tr '\n' ' '
}

# links in init_net, A and B (the netns the test owns)
netdevs() {
	local ns

	for ns in "" "$A" "$B"; do
		echo "[$ns] $(ip ${ns:+-n "$ns"} -o link show | awk -F': ' '{ sub("@.*", "", $2); print $2 }' | sort | tr '\n' ' ')"
	done
}

refcnt() {
	cat /sys/module/"$1"/refcnt 2>/dev/null || echo gone
}

now() {
	echo "$EPOCHSECONDS"
}

count() {
	echo >>"$T/$1"
}

rounds() {
	[[ -e $T/$1 ]] && wc -l <"$T/$1" || echo 0
}

# ---- the workers (each loops until END) ----------------------------------

w_sysfs() {
	while (($(now) < END)); do
		for p in 0x8002 0x8003; do
			ip netns exec "$A" sh -c "echo $p > /sys/class/net/ib0/create_child" 2>/dev/null ||
				echo $p >/sys/class/net/ib0/create_child 2>/dev/null
			ip netns exec "$A" sh -c "echo $p > /sys/class/net/ib0/delete_child" 2>/dev/null ||
				echo $p >/sys/class/net/ib0/delete_child 2>/dev/null
		done
		count sysfs
	done
}

w_netlink() {
	local n=$1 i=0

	while (($(now) < END)); do
		i=$((i + 1))
		ip -n "$A" link add link ib0 name nl$n.$i type ipoib pkey 0x800$((1 + i % 2)) 2>/dev/null &&
			ip -n "$A" link set nl$n.$i up 2>/dev/null &&
			ip -n "$A" addr add 10.20.$n.$((i % 250 + 1))/32 dev nl$n.$i 2>/dev/null
		sleep 0.$((RANDOM % 3))
		ip -n "$A" link del nl$n.$i 2>/dev/null
		count netlink
	done
}

# netns_flush: returns once the kernel has cleaned up every namespace
# deleted before the call (see the use below).
netns_flush() {
	ip netns add churn-flush || return 1
	if ! ip link add churn-flush type veth peer name flush0 netns churn-flush; then
		ip netns del churn-flush
		return 1
	fi
	ip netns del churn-flush
	slowwait 120 sh -c '! ip link show churn-flush' >/dev/null 2>&1
}

w_netns() {
	local i=0 ns

	while (($(now) < END)); do
		i=$((i + 1))
		ns=churn-$$-$i
		ip netns add $ns || continue
		ip -n "$A" link add link ib0 name ns$i type ipoib pkey 0x8001 2>/dev/null &&
			ip -n "$A" link set ns$i netns $ns 2>/dev/null &&
			ip -n $ns link set ns$i up 2>/dev/null &&
			ip netns exec $ns sh -c "echo connected > /sys/class/net/ns$i/mode" 2>/dev/null
		sleep 0.$((RANDOM % 5))
		ip netns del $ns
		# in-tree returns the child to init_net
		ip link del ns$i 2>/dev/null
		count netns
	done
}

w_mode() {
	local m

	while (($(now) < END)); do
		for m in connected datagram; do
			ip netns exec "$A" sh -c "echo $m > /sys/class/net/ib0/mode"
			ip netns exec "$B" sh -c "echo $m > /sys/class/net/ib1/mode"
			# ours: netlink under churn; in-tree: sysfs (its
			# netlink mode change releases rtnl it no longer holds)
			ipoib_set_mode "$A" ib0.8001 $m
			ipoib_set_mode "$B" ib1.8001 $m
			sleep 0.7
		done
		count mode
	done
}

w_policy() {
	local i=0

	while (($(now) < END)); do
		i=$((i + 1))
		if ((i % 2)); then
			softib_policy "Default=0x7fff, ipoib : ALL=full;" "p1=0x0001, ipoib : ALL=full;" \
				"p2=0x0002, ipoib : ALL=full;" 2>/dev/null
		else
			softib_policy "Default=0x7fff, ipoib : ALL=full;" "p1=0x0001, ipoib : ALL=full;" \
				"p3=0x0003, ipoib : ALL=limited;" 2>/dev/null
		fi
		sleep 0.3
		count policy
	done
}

w_port() {
	while (($(now) < END)); do
		sleep 4
		echo down >"$SOFTIB_DBG/ports/2/link"
		sleep 0.5
		echo up >"$SOFTIB_DBG/ports/2/link"
		sleep 1
		echo client_reregister >"$SOFTIB_DBG/ports/1/event"
		count port
	done
	echo up >"$SOFTIB_DBG/ports/2/link"
}

# traffic NS DST SECS: pings at 200/s in the background (PIDs in the
# list). A real flood (-f) or an unlimited iperf3 takes all of a TCG
# guest's CPU and the churn workers then do a round a minute.
TRAFFIC=()
traffic() {
	ip netns exec "$1" ping -i 0.005 -W 1 -w "$3" "$2" >/dev/null 2>&1 &
	TRAFFIC+=($!)
}

set_modes() {
	ip netns exec "$A" sh -c "echo $1 > /sys/class/net/ib0/mode" &&
		ip netns exec "$B" sh -c "echo $1 > /sys/class/net/ib1/mode" &&
		ipoib_set_mode "$A" ib0.8001 "$1" &&
		ipoib_set_mode "$B" ib1.8001 "$1"
}

# down/up: closes the passive connections mode flips leave behind
bounce() {
	local d

	for d in "$A ib0" "$A ib0.8001" "$B ib1" "$B ib1.8001"; do
		set -- $d
		ip -n "$1" link set "$2" down
	done
	slowwait 20 sh -c '! rdma res show qp 2>/dev/null | grep -q "type RC"' >/dev/null
	for d in "$A ib0" "$A ib0.8001" "$B ib1" "$B ib1.8001"; do
		set -- $d
		ip -n "$1" link set "$2" up
	done
	slowwait 20 ipoib_lower_up "$A" ib0.8001 >/dev/null &&
		slowwait 20 ipoib_lower_up "$B" ib1.8001 >/dev/null
}

stop_traffic() {
	kill "${TRAFFIC[@]}" 2>/dev/null
	wait "${TRAFFIC[@]}" 2>/dev/null
	TRAFFIC=()
}

# pings: parents and children answer both echoes (sent 0.2 s apart; within
# 3 s, the time one of two sent 1 s apart had)
pings() {
	ip netns exec "$A" ping -c 2 -i 0.2 -w 3 -W 2 192.0.2.2 >/dev/null &&
		ip netns exec "$A" ping -c 2 -i 0.2 -w 3 -W 2 10.9.0.2 >/dev/null
}

ktap_header 7
ktap_diag "IPOIB=$IPOIB CHURN=${CHURN}s"

modprobe ib_cm
# netns_flush's veth: loaded before softib's baseline slab (the guest does
# not autoload link types)
modprobe veth
load_softib && defer unload_softib && slowwait 10 softib_ports_active >/dev/null
ktap_result $? "softib up" || ktap_finish
# the namespaces hold slab of their own: in the baseline too
setup_ns A B
sleep 1
objs_softib=$(objects)
res_softib=$(rdma_res)
mem_softib=$(sunreclaim_kb)

ipoib_fabric_up_again() {
	ipoib_fabric_reload &&
		ipoib_mode_child "$A" ib0 8001 10.9.0.1/24 && ipoib_mode_child "$B" ib1 8001 10.9.0.2/24 &&
		slowwait 20 ipoib_lower_up "$A" ib0.8001 && slowwait 20 ipoib_lower_up "$B" ib1.8001 &&
		slowwait 20 pings >/dev/null
}

defer unload_ipoib
softib_policy "Default=0x7fff, ipoib : ALL=full;" "p1=0x0001, ipoib : ALL=full;" \
	"p2=0x0002, ipoib : ALL=full;" &&
	ipoib_fabric_up_again
ktap_result $? "ib_ipoib up: parents in A and B, a 0x8001 child pair, pings" || ktap_finish

# warm-up of every kind of churn, then the baseline
ip -n "$A" link add link ib0 name w0 type ipoib pkey 0x8002 && ip -n "$A" link del w0
ip netns exec "$A" sh -c 'echo 0x8002 > /sys/class/net/ib0/create_child; echo 0x8002 > /sys/class/net/ib0/delete_child'
ip link del ib0.8002 2>/dev/null
ip netns add churn-warm && ip netns del churn-warm
# connected mode once: ipoib-ng fills an interface's SRQ ring at its first
# connection and keeps it (in-tree fills it at creation): the baseline
# must hold it too
set_modes connected && slowwait 20 pings >/dev/null && set_modes datagram
bounce
slowwait 20 pings >/dev/null
sleep 2
base_devs=$(netdevs)
base_objs=$(iface_objects)
base_res=$(rdma_res)
mem0=$(sunreclaim_kb)

# ---- churn -------------------------------------------------------------
# the iperf3 server first: it takes seconds to listen, and its stream is
# to cover the churn, not to run on for those seconds after it
iperf_server "$A" 192.0.2.1
iperf_rc=$?
END=$(($(now) + CHURN))
traffic "$A" 192.0.2.2 $((CHURN + 10))
traffic "$B" 10.9.0.1 $((CHURN + 10))
IPERF_PID=""
if ((iperf_rc == 0)); then
	ip netns exec "$B" timeout $((CHURN + 30)) iperf3 -c 192.0.2.1 -t "$CHURN" -b 20M >/dev/null 2>&1 &
	IPERF_PID=$!
fi
WORKERS=()
w_sysfs & WORKERS+=($!)
w_netlink 1 & WORKERS+=($!)
w_netlink 2 & WORKERS+=($!)
w_netns & WORKERS+=($!)
w_mode & WORKERS+=($!)
w_policy & WORKERS+=($!)
w_port & WORKERS+=($!)
wait "${WORKERS[@]}"
stop_traffic
[[ -z $IPERF_PID ]] || wait "$IPERF_PID" 2>/dev/null
ktap_diag "rounds: sysfs $(rounds sysfs), netlink $(rounds netlink), netns $(rounds netns), mode $(rounds mode), policy $(rounds policy), port $(rounds port)"
ktap_ok "churn ran for ${CHURN}s"

# ---- back to the baseline ----------------------------------------------
RET=0
softib_policy "Default=0x7fff, ipoib : ALL=full;" "p1=0x0001, ipoib : ALL=full;" \
	"p2=0x0002, ipoib : ALL=full;"
set_modes datagram
# in-tree: a sysfs child created from A lands in init_net; delete is async
for p in 0x8002 0x8003; do
	ip netns exec "$A" sh -c "echo $p > /sys/class/net/ib0/delete_child" 2>/dev/null
done
slowwait 30 sh -c '! ip netns list | grep -q churn-' >/dev/null
# in-tree's children have netns_refund: they come back to init_net when
# the kernel's netns cleanup runs, which is queued work and can be many
# seconds behind 'ip netns del'. That work is ordered, so once a
# namespace deleted after all the others is gone, every earlier one has
# handed its children back: a veth with its peer in it shows when.
netns_flush
check_err $? "the kernel's cleanup of deleted namespaces did not finish"
if [[ $IPOIB == intree ]]; then
	# a child shows as "ns3@if2": its parent ib0 is in another netns
	for d in $(ip -o link show | awk -F': ' '{ sub("@.*", "", $2) } $2 ~ /^(ns|dev)[0-9]+$/ { print $2 }'); do
		ip link del "$d"
	done
fi
bounce
slowwait_eq 30 "$base_devs" netdevs
(($? == 0)) || check_err 1 "netdevs: $(netdevs) (before: $base_devs)"
slowwait 20 pings >/dev/null
check_err $? "no traffic after churn"
slowwait_eq 20 "$base_objs" iface_objects
(($? == 0)) || check_err 1 "verbs objects: $(iface_objects) (before: $base_objs)"
[[ $(rdma_res) == "$base_res" ]]
(($? == 0)) || check_err 1 "rdma res: $(rdma_res) (before: $base_res)"
log_test "after churn: netdevs, verbs objects and rdma res at baseline; traffic works"

RET=0
sleep 2
mem1=$(sunreclaim_kb)
ktap_diag "SUnreclaim: $mem0 kB before, $mem1 kB after churn (tolerance $SLAB_TOL_KB kB)"
((mem1 - mem0 < SLAB_TOL_KB))
(($? == 0)) || check_err 1 "unreclaimable slab grew by $((mem1 - mem0)) kB"
log_test "slab back near baseline"

# ---- module reload and HCA removal under traffic -------------------------
RET=0
traffic "$A" 192.0.2.2 30
traffic "$B" 10.9.0.1 30
sleep 1
[[ $(refcnt ib_ipoib) == 0 ]]
(($? == 0)) || check_err 1 "ib_ipoib refcnt $(refcnt ib_ipoib)"
# datagram mode, no RC QP left: rmmod without ipoib_quiesce's ifdowns
rmmod ib_ipoib
check_err $? "rmmod ib_ipoib under traffic"
stop_traffic
slowwait_eq 20 "$objs_softib" objects
(($? == 0)) || check_err 1 "softib objects without ib_ipoib: $(objects) (softib alone: $objs_softib)"
[[ $(rdma_res) == "$res_softib" ]]
(($? == 0)) || check_err 1 "rdma res without ib_ipoib: $(rdma_res) (softib alone: $res_softib)"
mem2=$(sunreclaim_kb)
ktap_diag "SUnreclaim: $mem_softib kB with softib alone, $mem2 kB after churn and rmmod ib_ipoib"
((mem2 - mem_softib < SLAB_TOL_KB))
(($? == 0)) || check_err 1 "unreclaimable slab grew by $((mem2 - mem_softib)) kB over softib alone"
ipoib_fabric_up_again
check_err $? "ib_ipoib loaded again: no traffic"
log_test "rmmod ib_ipoib under traffic: objects and slab back to softib's own; reload works"

RET=0
traffic "$A" 192.0.2.2 30
traffic "$B" 10.9.0.1 30
sleep 1
[[ $(refcnt softib) == 0 ]]
(($? == 0)) || check_err 1 "softib refcnt $(refcnt softib)"
unload_softib
check_err $? "rmmod softib under traffic"
stop_traffic
[[ ! -d $SOFTIB_SYS ]] && ! ip -n "$A" -o link show | grep -q infiniband &&
	! ip -n "$B" -o link show | grep -q infiniband
check_err $? "IPoIB interfaces outlived the HCA"
[[ $(refcnt ib_ipoib) == 0 ]]
(($? == 0)) || check_err 1 "ib_ipoib refcnt $(refcnt ib_ipoib) without an HCA"
unload_ipoib
check_err $? "rmmod ib_ipoib after the HCA"
for m in ib_cm ib_core; do
	r=$(refcnt $m)
	ktap_diag "$m refcnt $r ($(ls /sys/module/$m/holders 2>/dev/null | tr '\n' ' '))"
	[[ $r == gone || -z $(ls /sys/module/$m/holders 2>/dev/null | grep -E 'ib_ipoib|softib') ]]
	check_err $? "$m still held by ib_ipoib/softib"
done
log_test "HCA removal under traffic: interfaces go, refcounts zero"

ktap_finish
