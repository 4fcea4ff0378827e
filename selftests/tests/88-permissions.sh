#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 300
#
# One permission rule for sysfs and netlink (Documentation/ABI/testing/
# sysfs-class-net-ipoib): changing an interface takes CAP_NET_ADMIN in the
# user namespace that owns the interface's network namespace.
#
# - an unprivileged process (setpriv nobody, no capabilities) tries every
#   change: sysfs directly, sysfs through a descriptor opened by root and
#   passed to it, and netlink. Expected EACCES (open), EPERM (write,
#   netlink); nothing changes (links, ip -d link, mode, umcast).
# - the root of a container (unshare -Urnm: a user namespace owning a
#   netns) configures a child moved into its netns and a parent moved
#   there (netlink and its own sysfs), but cannot touch ib0 in init_net
#   (host sysfs, a descriptor passed in, netlink with link-netnsid).
#
# In-tree deviations, expected here: its mode and umcast stores check no
# capability (a descriptor passed to an unprivileged process, or a
# container root reaching init_net's sysfs, changes them), and its
# create_child uses capable(), so a container root cannot create a child
# of a parent in its own netns through sysfs (it would land in init_net).

source "$(dirname "$0")/../lib.sh"

require_cmd setpriv unshare nsenter

S=/sys/class/net

# sysfs writers (bash, cheap in a TCG guest): W FILE VALUE, WFD VALUE
# writes fd 3; both print the shell's error, if any
W='printf "%s\n" "$2" >"$1"'
WFD='printf "%s\n" "$1" >&3'

as_nobody() {
	setpriv --reuid=nobody --regid=nogroup --clear-groups \
		--inh-caps=-all --bounding-set=-all "$@"
}

# err CMD...: OK, or the errno CMD (ip, or a W/WFD shell) reported
err() {
	local out

	out=$("$@" 2>&1) && { echo OK; return; }
	case $out in
	*"Operation not permitted"*) echo EPERM ;;
	*"Permission denied"*) echo EACCES ;;
	*"No such file or directory"*) echo ENOENT ;;
	*"Cannot find device"* | *"No such device"*) echo ENODEV ;;
	*"Invalid argument"*) echo EINVAL ;;
	*) echo "OTHER: $out" ;;
	esac
}

# mode_umcast CMD-PREFIX DEV: "connected 1" as netlink reports it
mode_umcast() {
	local dev=$1

	shift
	"$@" ip -d -o link show "$dev" | sed -n 's/.* mode  *\([a-z]*\) umcast  *\([0-9]*\).*/\1 \2/p' |
		sed 's/ 0*\([0-9]\)$/ \1/'
}

# state: every link with its IPoIB attributes, and the mode and umcast
# files of ib0 and the test children (three processes: a TCG guest pays
# for each)
state() {
	ip -d -o link show | sed -n 's/^[0-9]*: \([^:@]*\)[@:].*\(ipoib pkey.*umcast *[0-9]*\).*/\1 \2/p
		t
		s/^[0-9]*: \([^:@]*\)[@:].*/\1/p'
	grep -H . $S/{ib0,ib0.8001,nl1}/{mode,umcast} 2>/dev/null
}

# expect DESC GOT WANT_OURS [WANT_INTREE]
expect() {
	local want=$3

	[[ $IPOIB == intree && -n ${4:-} ]] && want=$4
	[[ $2 == "$want" ]]
	check_err $? "$1: got $2, expected $want"
	[[ $IPOIB != intree || $2 == "$3" ]] || ktap_diag "in-tree deviation: $1 gives $2 (rule: $3)"
}

ktap_header 10
ktap_diag "IPOIB=$IPOIB"

modprobe ib_cm
load_softib && slowwait 10 softib_ports_active >/dev/null && load_ipoib &&
	slowwait 10 test -d $S/ib1 >/dev/null
ktap_result $? "softib and ib_ipoib up" || ktap_finish
defer unload_softib
defer unload_ipoib
softib_policy "Default=0x7fff, ipoib : ALL=full;" "p1=0x0001, ipoib : ALL=full;" \
	"p2=0x0002, ipoib : ALL=full;"

# a sysfs child and a netlink child to be changed
echo 0x8001 >$S/ib0/create_child && slowwait 5 test -d $S/ib0.8001 >/dev/null &&
	ip link add link ib0 name nl1 type ipoib pkey 0x8002
ktap_result $? "ib0.8001 (sysfs) and nl1 (netlink) exist" || ktap_finish

base=$(state)
dmesg -C

# ---- unprivileged, sysfs directly: the VFS refuses the open -----------
RET=0
for w in "ib0/create_child 0x8002" "ib0/delete_child 0x8001" "ib0/mode connected" \
	"ib0/umcast 1" "ib0.8001/mode connected" "ib0.8001/umcast 1"; do
	set -- $w
	got=$(err as_nobody bash -c "$W" - "$S/$1" "$2")
	expect "nobody opens $1" "$got" EACCES
done
[[ $(state) == "$base" ]]
(($? == 0)) || check_err 1 "something changed: $(state)"
log_test "unprivileged: sysfs files do not open (EACCES), nothing changes"

# ---- unprivileged, writing a descriptor root opened -------------------
RET=0
# in-tree: netlink children (nl1) have no mode/umcast files
files="ib0/create_child 0x8003 EPERM,ib0/delete_child 0x8001 EPERM,ib0/mode connected OK"
files+=",ib0/umcast 1 OK,ib0.8001/mode connected OK,ib0.8001/umcast 1 OK"
[[ $IPOIB == ours ]] && files+=",nl1/mode connected x,nl1/umcast 1 x"
IFS=, read -ra files <<<"$files"
for w in "${files[@]}"; do
	set -- $w
	got=$(err as_nobody bash -c "$WFD" - "$2" 3>"$S/$1")
	expect "nobody writes root's fd of $1" "$got" EPERM "$3"
done
if [[ $IPOIB == ours ]]; then
	[[ $(state) == "$base" ]]
	(($? == 0)) || check_err 1 "something changed: $(state)"
	dmesg | grep -q "ib0: mode: refused: needs CAP_NET_ADMIN in the user namespace owning the network namespace of ib0"
	check_err $? "no log line for the refusal"
else
	ip link | grep -q "ib0.8003"
	check_fail $? "in-tree created ib0.8003"
	for d in ib0 ib0.8001; do
		echo datagram >$S/$d/mode && echo 0 >$S/$d/umcast
	done
	slowwait 5 sh -c "[ \"\$(cat $S/ib0/mode)\" = datagram ]" >/dev/null
fi
log_test "unprivileged: writes through root's descriptor are EPERM, nothing changes"

# ---- unprivileged, netlink -----------------------------------------------
RET=0
base=$(state)
expect "nobody: ip link add" "$(err as_nobody ip link add link ib0 name x1 type ipoib pkey 0x8003)" EPERM
expect "nobody: ip link set ib0 mode" "$(err as_nobody ip link set ib0 type ipoib mode connected)" EPERM
expect "nobody: ip link set nl1 mode" "$(err as_nobody ip link set nl1 type ipoib mode connected)" EPERM
expect "nobody: ip link set nl1 umcast" "$(err as_nobody ip link set nl1 type ipoib umcast 1)" EPERM
expect "nobody: ip link del nl1" "$(err as_nobody ip link del nl1)" EPERM
expect "nobody: ip link del ib0.8001" "$(err as_nobody ip link del ib0.8001)" EPERM
[[ $(state) == "$base" ]]
(($? == 0)) || check_err 1 "something changed: $(state)"
log_test "unprivileged: netlink add/change/del are EPERM, nothing changes"

# ---- a container: its own user namespace owning its own netns -------------
# The suite runs chrooted and the kernel creates no user namespace for a
# chrooted process: start the container from PID 1's root (the guest's
# initramfs, busybox), and chroot back into the suite's root inside it.
if [[ -n ${IPOIB_NG_GUEST:-} ]]; then
	nsenter -t 1 -r -w /bin/busybox unshare -U -r -n -m \
		/bin/busybox chroot /newroot /bin/sleep 600 &
else
	unshare -Urnm sleep 600 &
fi
CPID=$!
defer kill $CPID
slowwait 5 sh -c "[ \"\$(readlink /proc/$CPID/ns/net)\" != \"\$(readlink /proc/self/ns/net)\" ] &&
	[ \"\$(readlink /proc/$CPID/ns/user)\" != \"\$(readlink /proc/self/ns/user)\" ]" >/dev/null
ktap_result $? "container (user namespace + netns + mount ns) started" || ktap_finish

# cx: as the container's root, in its netns and mount ns (its own sysfs)
cx() {
	nsenter -t $CPID -U -n -m -r -w "$@"
}

# cxh: the container's root, in its netns but with the host's /sys (init_net)
cxh() {
	nsenter -t $CPID -U -n "$@"
}

ip link add link ib0 name c1 type ipoib pkey 0x8001 && ip link set c1 netns $CPID &&
	ip link set ib1 netns $CPID && cx mount -t sysfs sysfs /sys
ktap_result $? "child c1 and parent ib1 moved into the container; it mounts its sysfs" ||
	ktap_finish

RET=0
expect "container root: ip link set c1 mode connected" \
	"$(err cx ip link set c1 type ipoib mode connected)" OK
expect "container root: ip link set c1 umcast 1" "$(err cx ip link set c1 type ipoib umcast 1)" OK
[[ $(mode_umcast c1 cx) == "connected 1" ]]
(($? == 0)) || check_err 1 "c1: $(mode_umcast c1 cx)"
if [[ $IPOIB == ours ]]; then
	# in-tree gives netlink children no mode/umcast files
	expect "container root: sysfs c1/mode" "$(err cx bash -c "$W" - $S/c1/mode datagram)" OK
	expect "container root: sysfs c1/umcast" "$(err cx bash -c "$W" - $S/c1/umcast 0)" OK
	[[ $(cx cat $S/c1/mode $S/c1/umcast | tr '\n' ' ') == "datagram 0 " ]]
	(($? == 0)) || check_err 1 "c1 reads $(cx cat $S/c1/mode $S/c1/umcast | tr '\n' ' ')"
fi
expect "container root: ip link add on its ib1" \
	"$(err cx ip link add link ib1 name k1 type ipoib pkey 0x8001)" OK
expect "container root: sysfs ib1/create_child" \
	"$(err cx bash -c "$W" - $S/ib1/create_child 0x8002)" OK EPERM
if [[ $IPOIB == ours ]]; then
	cx ip link show ib1.8002 >/dev/null
	check_err $? "no ib1.8002 in the container"
	expect "container root: sysfs ib1/delete_child" \
		"$(err cx bash -c "$W" - $S/ib1/delete_child 0x8002)" OK
fi
expect "container root: ip link del k1" "$(err cx ip link del k1)" OK
expect "container root: ip link del c1" "$(err cx ip link del c1)" OK
! cx ip -o link show | grep -qE ': (c1|k1|ib1\.8002)[@:]'
(($? == 0)) || check_err 1 "children left in the container: $(cx ip -o link show | awk -F': ' '{ print $2 }')"
log_test "container root configures the child and parent in its own netns"

RET=0
base=$(state)
dmesg -C
for w in "ib0/create_child 0x8003 EPERM" "ib0/delete_child 0x8001 EPERM" \
	"ib0/mode connected OK" "ib0/umcast 1 OK" "ib0.8001/mode connected OK"; do
	set -- $w
	# uid 0 inside maps to 0 outside: the host's /sys opens for it
	expect "container root opens host $1" "$(err cxh bash -c "$W" - "$S/$1" "$2")" EPERM "$3"
	expect "container root writes root's fd of host $1" \
		"$(err cxh bash -c "$WFD" - "$2" 3>"$S/$1")" EPERM "$3"
done
if [[ $IPOIB == ours ]]; then
	[[ $(state) == "$base" ]]
	(($? == 0)) || check_err 1 "something changed: $(state)"
	dmesg | grep -q "ib0: create_child: refused"
	check_err $? "no log line for the refusal"
else
	for d in ib0 ib0.8001; do
		echo datagram >$S/$d/mode && echo 0 >$S/$d/umcast
	done
fi
log_test "container root cannot touch ib0 in init_net through sysfs"

# netlink: the container's view of init_net through an nsid
RET=0
base=$(state)
ip netns attach perm-init-$$ 1 && ip netns attach perm-cont-$$ $CPID &&
	ip -n perm-cont-$$ netns set perm-init-$$ 7
check_err $? "cannot give init_net nsid 7 in the container"
defer ip netns del perm-init-$$
defer ip netns del perm-cont-$$
idx=$(cat $S/ib0/ifindex)
expect "container root: ip link add link ib0 (by name)" \
	"$(err cx ip link add link ib0 name x2 type ipoib pkey 0x8003)" ENODEV
expect "container root: ip link add link-netnsid 7 link if$idx" \
	"$(err cx ip link add link if"$idx" link-netnsid 7 name x3 type ipoib pkey 0x8003)" EPERM
expect "container root: ip link add link ib1 netns 1 (a child in init_net)" \
	"$(err cx ip link add link ib1 name x4 netns 1 type ipoib pkey 0x8003)" EPERM
[[ $(state) == "$base" ]] && ! cx ip link show x3 >/dev/null 2>&1 &&
	! cx ip link show x4 >/dev/null 2>&1
(($? == 0)) || check_err 1 "something changed: $(state)"
log_test "container root cannot reach init_net's ib0 through netlink (EPERM)"

ktap_finish
