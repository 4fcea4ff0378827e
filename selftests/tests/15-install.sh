#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: none
# timeout: 900
# timeout-long: 1500
# kernel: 6.1
#
# Installing as a site does: "make dkms-install" from a copy of the tree
# and the Debian packages ipoib-ng-dkms and softib-dkms (dpkg -i / dpkg
# -r), each replacing the kernel's ib_ipoib with ours under updates/dkms
# without --force (and adding softib beside it) and giving the in-tree
# module back on removal; and boot-time loading by udev, for which
# rdma-core alone loads nothing on softib.
#
# The DKMS build itself ran on the host at native speed
# (selftests/vm/dkms-prebuild.sh: a 10-17 min compile under TCG) and
# seeds /var/lib/dkms here for make dkms-install, and the package's
# postinst as a DKMS tarball, so the guest runs what decides the outcome:
# our Makefile, dpkg and the package's maintainer scripts, dkms's version
# check and install, depmod, modprobe, udevd. LONG=1 builds in the guest
# as well. Both drivers are exercised: in-tree before the install and
# after the removal, ours in between.

source "$(dirname "$0")/../lib.sh"

# depmod reads every module of the tree, and a TCG guest pays about 70 s
# for each of the half dozen depmods that dkms and dpkg run on Debian's
# 4,000-module tree. So (unless LONG=1) the test runs in a mount
# namespace of its own whose /lib/modules holds this kernel alone, with
# only the modules the test can load (the IB stack, what is loaded now,
# their dependencies), copied from the real tree; everything installed
# into it vanishes with the namespace. The module loader itself is untouched: modprobe, udevd and
# dkms all run inside the namespace.
if ((!LONG)) && [[ -z ${IPOIB_NG_TRIMMED:-} ]]; then
	exec env IPOIB_NG_TRIMMED=1 unshare -m --propagation private "$0" "$@"
fi

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ABI=$(uname -r)
ARCH=$(uname -m)
MODS=/lib/modules/$ABI
VER=$(sed -n 's/^PACKAGE_VERSION="\([^"]*\)"$/\1/p' "$ROOT/dkms.conf")
PRE=$(readlink -f "$KO_DIR/../dkms")
DEB=$ROOT/.build/deb/ipoib-ng-dkms_${VER}_all.deb
SOFTIB_DEB=$ROOT/.build/deb/softib-dkms_${VER}_all.deb
RULE=76-ipoib-ng.rules
# The guest's busybox init looks like a chroot to systemd's tools, which
# then ignore requests ("Running in chroot, ignoring request").
export SYSTEMD_IGNORE_CHROOT=1

ktap_header 13

require_cmd dkms dpkg make udevadm modinfo
ktap_diag "version $VER, kernel $ABI"

# ---- helpers ----------------------------------------------------------

# seed: the host's build of these sources, as if dkms had built it here
# (make dkms-install keeps a build of unchanged sources)
seed() {
	local m

	((LONG)) && return 0
	for m in ipoib-ng softib; do
		mkdir -p "/var/lib/dkms/$m" &&
			cp -a "$PRE/tree/$m/$VER" "/var/lib/dkms/$m/" &&
			ln -sfn "/usr/src/$m-$VER" "/var/lib/dkms/$m/$VER/source" || return 1
	done
}

# mod_path MOD: where modprobe finds MOD
mod_path() {
	modinfo -n "$1" 2>/dev/null
}

# ours_installed WHAT: modules, dkms status and modprobe say ours
ours_installed() {
	local st m p

	# (dkms status costs 5-15 s under TCG: asked once for both modules)
	st=$(dkms status -k "$ABI" 2>/dev/null)
	m=$(grep '^ipoib-ng/' <<<"$st")
	[[ $m == "ipoib-ng/$VER, $ABI, $ARCH: installed" ]]
	check_err $? "$1: dkms status: '$m'"
	m=$(grep '^softib/' <<<"$st")
	[[ $m == "softib/$VER, $ABI, $ARCH: installed" ]]
	check_err $? "$1: dkms status of softib: '$m'"
	p=$(mod_path ib_ipoib)
	[[ $p == "$MODS/updates/dkms/ib_ipoib.ko"* ]]
	check_err $? "$1: modinfo -n ib_ipoib: $p"
	[[ $(modinfo -F version ib_ipoib) == "$VER" ]]
	(($? == 0)) || check_err 1 "$1: modinfo version '$(modinfo -F version ib_ipoib)', not $VER"
	p=$(mod_path softib)
	[[ $p == "$MODS/updates/dkms/softib.ko"* ]]
	check_err $? "$1: modinfo -n softib: $p"
	modprobe ib_ipoib
	check_err $? "$1: modprobe ib_ipoib failed"
	[[ $(cat /sys/module/ib_ipoib/srcversion 2>/dev/null) == "$(modinfo -F srcversion ib_ipoib)" ]] &&
		grep -q O /sys/module/ib_ipoib/taint
	(($? == 0)) || check_err 1 "$1: the loaded ib_ipoib is not the installed one ($(ipoib_module_path))"
	[[ ! -d /sys/module/softib ]]
	check_err $? "$1: softib was loaded along with ib_ipoib"
	modprobe -r ib_ipoib
}

# intree_back WHAT: modinfo and modprobe find the kernel's ib_ipoib again
intree_back() {
	local p st

	p=$(mod_path ib_ipoib)
	[[ $p == "$INTREE" ]]
	check_err $? "$1: modinfo -n ib_ipoib: $p, not $INTREE"
	[[ -z $(mod_path softib) ]]
	(($? == 0)) || check_err 1 "$1: softib still installed: $(mod_path softib)"
	st=$(dkms status 2>/dev/null | grep -E '^(ipoib-ng|softib)/')
	[[ -z $st ]]
	check_err $? "$1: dkms status: '$st'"
	[[ ! -e /usr/src/ipoib-ng-$VER && ! -e /usr/src/softib-$VER ]]
	(($? == 0)) || check_err 1 "$1: left behind: $(ls -d /usr/src/ipoib-ng-$VER /usr/src/softib-$VER 2>/dev/null)"
	modprobe ib_ipoib && ! grep -q O /sys/module/ib_ipoib/taint
	(($? == 0)) || check_err 1 "$1: modprobe ib_ipoib: $(ipoib_module_path)"
	modprobe -r ib_ipoib
}

# hooks_skip KVER WHY [CONFIG]: a kernel package's postinst runs the hooks
# of /etc/kernel/postinst.d with run-parts --exit-on-error for KVER, a
# kernel with headers (a build tree, with a .config of CONFIG if given)
# that dkms.conf excludes: they must exit 0, ipoib-ng's saying "KVER WHY"
# in one line (built_nothing checks the rest, /lib/modules/KVER is left
# for it)
hooks_skip() {
	local k=$1 out rc st

	mkdir -p "/lib/modules/$k/build/include"
	[[ -z ${3:-} ]] || echo "$3" >"/lib/modules/$k/build/.config"
	out=$(run-parts --report --exit-on-error --arg="$k" \
		--regex '^(dkms|ipoib-ng)$' /etc/kernel/postinst.d 2>&1)
	rc=$?
	check_err $rc "the kernel hooks for $k: exit $rc: $(tail -n 4 <<<"$out")"
	[[ $(grep -c "^ipoib-ng: kernel $k $2" <<<"$out") == 1 ]]
	check_err $? "not one line from ipoib-ng's hook for $k: $out"
	ktap_diag "the hooks for $k: $(grep '^ipoib-ng:' <<<"$out")"
}

# built_nothing KVER...: dkms status has neither module for any KVER, whose
# /lib/modules trees are then removed (dkms status costs 5-15 s under TCG:
# asked once for all of them, failing or not)
built_nothing() {
	local st k

	st=$(dkms status | grep -E '^(ipoib-ng|softib)/')
	for k in "$@"; do
		[[ $st != *"$k"* ]]
		check_err $? "dkms status after the refused build or hook for $k: $st"
		rm -rf "/lib/modules/$k"
	done
}

# lib.sh's guest_udevd_stop, and the rule this test installs goes too
udevd_stop() {
	guest_udevd_stop
	rm -f /etc/udev/rules.d/$RULE
}

# softib_event: load softib (CMD...), let udev handle its uevents, then
# print which ib_ipoib is loaded ("none", "intree" or "ours") and
# whether the device was marked InfiniBand for rdma-core
softib_event() {
	local which=none mark mon=/tmp/ipoib-ng-udev-monitor mpid

	# udevd sends out its own event for a device once its rules and their
	# RUN{builtin}s (the kmod load) are done: the monitor's "UDEV add" of
	# softib0 says that udev has decided, whichever way, so "none" is
	# judged after the decision instead of after a 10 s guess at it. The
	# monitor prints its "UDEV - " line once its socket is bound.
	rm -f "$mon"
	udevadm monitor --udev --subsystem-match=infiniband >"$mon" 2>&1 &
	mpid=$!
	slowwait 10 grep -q '^UDEV - ' "$mon" >/dev/null
	"$@" >/dev/null || { kill $mpid; wait $mpid; echo "softib-load-failed"; return; }
	slowwait 60 grep -qE '^UDEV +\[[0-9.]+\] +add +/devices/.*/infiniband/softib0 \(infiniband\)$' "$mon" >/dev/null ||
		which=udev-never-processed-softib0
	kill $mpid
	wait $mpid 2>/dev/null
	if [[ $which == udev-* ]]; then
		:
	elif [[ -d /sys/module/ib_ipoib ]]; then
		which=intree
		grep -q O /sys/module/ib_ipoib/taint && which=ours
	fi
	mark=$(udevadm info -q property -p /class/infiniband/softib0 | grep -c '^ID_RDMA_INFINIBAND=1$')
	echo "$which mark=$mark"
	unload_ipoib
	unload_softib
}

# initramfs_setup: ib_ipoib listed in /etc/initramfs-tools/modules and a
# stand-in update-initramfs first in PATH that writes its arguments to
# $UINIT_LOG; initramfs_restore undoes both.
UINIT_LOG=/tmp/ipoib-ng-update-initramfs
UINIT_MODS=/etc/initramfs-tools/modules
UINIT_SET=0
initramfs_setup() {
	UINIT_SET=1
	export PATH=/usr/local/sbin:$PATH
	mkdir -p "$(dirname "$UINIT_MODS")" /usr/local/sbin
	{ [[ ! -e $UINIT_MODS ]] || cp "$UINIT_MODS" "$UINIT_MODS.ipoib-ng-test"; } &&
		echo ib_ipoib >>"$UINIT_MODS" &&
		printf '#!/bin/sh\necho "$*" >>%s\n' "$UINIT_LOG" >/usr/local/sbin/update-initramfs &&
		chmod 755 /usr/local/sbin/update-initramfs && : >"$UINIT_LOG"
}
initramfs_restore() {
	((UINIT_SET)) || return 0
	UINIT_SET=0
	rm -f /usr/local/sbin/update-initramfs
	if [[ -e $UINIT_MODS.ipoib-ng-test ]]; then
		mv "$UINIT_MODS.ipoib-ng-test" "$UINIT_MODS"
	else
		sed -i '/^ib_ipoib$/d' "$UINIT_MODS"
	fi
}

cleanup() {
	local p

	initramfs_restore 2>/dev/null
	rm -f /usr/local/sbin/mokutil
	unload_ipoib
	unload_softib
	udevd_stop
	# each of dpkg and dkms takes seconds under TCG: only for what a
	# failed step left installed
	for p in ipoib-ng-dkms softib-dkms mlnx-ofed-kernel-dkms; do
		dpkg -s "$p" 2>/dev/null | grep -q "^Status: install" && dpkg -r "$p" >/dev/null 2>&1
	done
	for p in ipoib-ng softib; do
		[[ -d /var/lib/dkms/$p ]] && dkms remove -m "$p" -v "$VER" --all >/dev/null 2>&1
	done
	rm -rf "/usr/src/ipoib-ng-$VER" "/usr/src/softib-$VER" /var/lib/dkms/ipoib-ng \
		/var/lib/dkms/softib "$WORK" /usr/share/ipoib-ng-dkms /usr/share/softib-dkms \
		/tmp/ipoib-ng-deb /tmp/ipoib-ng-udev-monitor
	rm -rf "$MODS/updates/dkms"
	depmod -a "$ABI"
}

# In make check each install path runs on one kernel series, which keeps
# the suite within its time budget: make dkms-install/uninstall on 6.1,
# the Debian package (and dkms's BUILD_EXCLUSIVE refusal) on the others.
# Both drive the same dkms steps, and the DKMS build for every kernel is
# already the host's prebuild. LONG=1 runs both paths on every kernel.
run_dkms=1 run_deb=1
if ((!LONG)); then
	case $ABI in
	6.1.*) run_deb=0 ;;
	*) run_dkms=0 ;;
	esac
fi

# step: how long the test has run (a TCG guest pays for every depmod)
step() {
	ktap_diag "at ${SECONDS}s: $*"
}

# ---- setup ------------------------------------------------------------

WORK=/tmp/ipoib-ng-clone
defer cleanup
RET=0
INTREE=$(mod_path ib_ipoib)
[[ $INTREE == "$MODS/kernel/"* ]]
check_err $? "the kernel's own ib_ipoib is not what modprobe finds: '$INTREE'"
[[ -n $VER ]]
check_err $? "no PACKAGE_VERSION in dkms.conf"
((LONG)) || [[ -d $PRE/tree/ipoib-ng/$VER/$ABI/$ARCH/module && -d $PRE/tree/softib/$VER/$ABI/$ARCH/module ]]
(($? == 0)) || check_err 1 "no DKMS build from the host in $PRE (build: $(tail -n 3 "$PRE/build.log" 2>&1))"
[[ -e $DEB && -e $SOFTIB_DEB ]]
(($? == 0)) || check_err 1 "no packages $DEB and $SOFTIB_DEB (make deb: $(tail -n 5 "$ROOT/.build/deb.log" 2>&1))"
# dkms needs /dev/fd for its <(...) (udev or systemd make it on a real
# system; this guest's devtmpfs has none)
[[ -e /dev/fd ]] || ln -s /proc/self/fd /dev/fd
# trim_modules: /lib/modules as described at the top, with this kernel
# alone (dkms's postinst would otherwise build for every kernel it sees)
trim_modules() {
	local t=/tmp/ipoib-ng-modules m f b

	rm -rf "$t" && mkdir -p "$t/$ABI" || return 1
	for m in ib_ipoib ib_umad ib_uverbs rdma_ucm $(awk '{ print $1 }' /proc/modules); do
		modprobe --show-depends "$m" 2>/dev/null
	done | awk '$1 == "insmod" { print $2 }' | sort -u | while read -r f; do
		install -D -m 644 "$f" "$t/$ABI${f#"$MODS"}" || exit 1
	done || return 1
	# the headers as the kernel's own tree names them: Debian's package,
	# or the debug kernel's build tree (make check-debug)
	b=$(readlink -e "$MODS/build") || b=/usr/src/linux-headers-$ABI
	cp -a "$MODS"/modules.builtin* "$MODS"/modules.order "$t/$ABI/" &&
		ln -s "$b" "$t/$ABI/build" &&
		mount --bind "$t" /lib/modules && depmod -a "$ABI"
}

if [[ -n ${IPOIB_NG_TRIMMED:-} ]]; then
	trim_modules
	check_err $? "cannot set up the trimmed module tree"
	ktap_diag "module tree trimmed to $(find "$MODS/" -name '*.ko*' | wc -l) modules"
fi
# dkms builds against /lib/modules/ABI/build, which the headers provide
[[ -e $MODS/build ]] || ln -s "/usr/src/linux-headers-$ABI" "$MODS/build"
[[ -e $MODS/build/.config ]]
check_err $? "no kernel headers for $ABI at $MODS/build"
# a copy of the tree as a site has it: its files, no objects, no git
rm -rf "$WORK" && mkdir -p "$WORK" &&
	(cd "$ROOT" && git ls-files -z | xargs -0 cp --parents -t "$WORK")
check_err $? "cannot copy the tree to $WORK"
log_test "setup: in-tree ib_ipoib in kernel/, host DKMS build and package present"
((__ktap_fail == 0)) || ktap_finish

step "boot-time loading"
# ---- boot-time loading, before anything is installed -------------------

RET=0
guest_udevd_start
check_err $? "systemd-udevd does not run here"
out=$(softib_event load_softib)
[[ $out == "none mark=0" ]]
check_err $? "softib with rdma-core's rules alone: '$out' (want: no ib_ipoib, no ID_RDMA_INFINIBAND)"
log_test "udev: rdma-core's rules alone load no ib_ipoib for softib (the gap the rule fills)"

RET=0
cp "$ROOT/udev/$RULE" /etc/udev/rules.d/ && udevadm control --reload
out=$(softib_event load_softib)
[[ $out == "intree mark=1" ]]
check_err $? "softib with $RULE: '$out' (want: in-tree ib_ipoib, ID_RDMA_INFINIBAND=1)"
log_test "udev: $RULE loads the kernel's ib_ipoib when softib registers"

# The admin's opt-outs: ib_ipoib taken out of rdma-core's module list, or
# blacklisted in modprobe.d. The device is still marked InfiniBand.
RET=0
IBCONF=/etc/rdma/modules/infiniband.conf
if [[ -e $IBCONF ]]; then
	cp "$IBCONF" /tmp/ipoib-ng-ibconf && sed -i 's/^ib_ipoib/# ib_ipoib/' "$IBCONF"
	out=$(softib_event load_softib)
	cp /tmp/ipoib-ng-ibconf "$IBCONF"
	[[ $out == "none mark=1" ]]
	check_err $? "ib_ipoib commented out in $IBCONF: '$out' (want: nothing loaded, ID_RDMA_INFINIBAND=1)"
fi
# udevd's kmod builtin reads modprobe.d when it starts or is reloaded
echo "blacklist ib_ipoib" >/etc/modprobe.d/ipoib-ng-test.conf && udevadm control --reload
out=$(softib_event load_softib)
rm -f /etc/modprobe.d/ipoib-ng-test.conf && udevadm control --reload
[[ $out == "none mark=1" ]]
check_err $? "blacklist ib_ipoib in modprobe.d: '$out' (want: nothing loaded, ID_RDMA_INFINIBAND=1)"
rm -f "/etc/udev/rules.d/$RULE"
udevadm control --reload
log_test "udev: $RULE honours ib_ipoib taken out of $IBCONF, and a modprobe.d blacklist"

if ((run_dkms)); then
	step "make dkms-install"
	# ---- make dkms-install / dkms-uninstall ------------------------------

	RET=0
	seed
	check_err $? "cannot seed /var/lib/dkms"
	out=$(make -C "$WORK" --no-print-directory dkms-install 2>&1)
	(($? == 0)) || check_err 1 "make dkms-install failed: $(tail -n 5 <<<"$out")"
	! grep -qiE "will not replace|not newer|--force" <<<"$out"
	(($? == 0)) || check_err 1 "dkms refused: $(grep -iE 'replace|newer|force' <<<"$out")"
	diff -r -q "$PRE/src/ipoib-ng-$VER" "/usr/src/ipoib-ng-$VER" >/dev/null &&
		diff -r -q "$PRE/src/softib-$VER" "/usr/src/softib-$VER" >/dev/null
	check_err $? "the host's DKMS builds are of other sources than /usr/src/{ipoib-ng,softib}-$VER (uncommitted files?)"
	[[ -e /etc/udev/rules.d/$RULE ]]
	check_err $? "no /etc/udev/rules.d/$RULE"
	ours_installed "make dkms-install"
	log_test "make dkms-install: ours in updates/dkms, dkms says installed, modprobe loads it, softib not loaded"

	RET=0
	out=$(make -C "$WORK" --no-print-directory dkms-install 2>&1)
	(($? == 0)) || check_err 1 "second make dkms-install failed: $(tail -n 5 <<<"$out")"
	! grep -q "Building module" <<<"$out"
	check_err $? "the same sources were built again"
	ours_installed "make dkms-install, again"
	log_test "make dkms-install twice: the same sources keep their build"

	RET=0
	out=$(make -C "$WORK" --no-print-directory dkms-uninstall 2>&1)
	(($? == 0)) || check_err 1 "make dkms-uninstall failed: $(tail -n 5 <<<"$out")"
	[[ ! -e /etc/udev/rules.d/$RULE ]]
	check_err $? "/etc/udev/rules.d/$RULE left behind"
	intree_back "make dkms-uninstall"
	out=$(make -C "$WORK" --no-print-directory dkms-uninstall 2>&1)
	(($? == 0)) || check_err 1 "a second make dkms-uninstall failed: $(tail -n 3 <<<"$out")"
	log_test "make dkms-uninstall: the kernel's ib_ipoib is back, nothing left; twice is harmless"
else
	for t in "make dkms-install" "make dkms-install twice" "make dkms-uninstall"; do
		ktap_skip "$t" "in make check on 6.1 only (LONG=1: every kernel)"
	done
fi

if ((run_deb)); then
	step "the Debian package"
	# ---- the Debian package ---------------------------------------------

	RET=0
	# dkms's postinst starts from a clean slate for this version (it removes
	# what /var/lib/dkms holds), so a package hands it prebuilt modules as a
	# DKMS tarball in /usr/share/<package>: the host's builds, as such
	for m in ipoib-ng softib; do
		((LONG)) || { mkdir -p "/usr/share/$m-dkms" &&
			cp "$PRE/tree/$m/$VER/tarball/$m-$VER.dkms.tar.gz" "/usr/share/$m-dkms/"; }
		check_err $? "cannot place the DKMS tarball of $m"
	done
	# an OFED host (its kernel package, faked): ours refuses to install
	mkdir -p /tmp/ipoib-ng-ofed/DEBIAN && cat >/tmp/ipoib-ng-ofed/DEBIAN/control <<-EOF
		Package: mlnx-ofed-kernel-dkms
		Version: 24.10-1
		Architecture: all
		Maintainer: test <test@example.org>
		Description: stand-in for MLNX_OFED's kernel modules
	EOF
	dpkg-deb -b /tmp/ipoib-ng-ofed /tmp/ipoib-ng-ofed.deb >/dev/null && dpkg -i /tmp/ipoib-ng-ofed.deb >/dev/null
	check_err $? "cannot install the OFED stand-in"
	out=$(dpkg -i "$DEB" 2>&1)
	check_fail $? "dpkg -i on an OFED host succeeded"
	grep -q "conflicts with mlnx-ofed-kernel-dkms" <<<"$out"
	(($? == 0)) || check_err 1 "dpkg -i on an OFED host: $(tail -n 4 <<<"$out")"
	ktap_diag "OFED host: $(grep -m1 "conflicts with" <<<"$out")"
	dpkg -r ipoib-ng-dkms >/dev/null 2>&1
	dpkg -r mlnx-ofed-kernel-dkms >/dev/null && rm -rf /tmp/ipoib-ng-ofed /tmp/ipoib-ng-ofed.deb
	check_err $? "cannot remove the OFED stand-in"
	# a diskless node: ib_ipoib in its initramfs. update-initramfs is a
	# stand-in that records its arguments (a TCG guest has no initramfs
	# of the test kernel to rebuild).
	initramfs_setup
	# A second installed kernel of the window beside the running one (a
	# fallback kernel): the postinst must install for it too. LONG=1:
	# the other test kernel, with its real headers, built in the guest
	# (10-17 min under TCG) and then found by modinfo -k. Otherwise a
	# stand-in whose build tree is empty: the build fails at once, and
	# the postinst must have tried it and said so.
	OTHER=""
	if ((LONG)); then
		for h in /usr/src/linux-headers-6.1.*-amd64 /usr/src/linux-headers-6.12.*-amd64; do
			[[ -d $h/include && ${h#*/linux-headers-} != "$ABI" ]] &&
				{ OTHER=${h#*/linux-headers-}; break; }
		done
		[[ -z $OTHER ]] || { mkdir -p "/lib/modules/$OTHER" &&
			ln -sfn "/usr/src/linux-headers-$OTHER" "/lib/modules/$OTHER/build"; }
	else
		OTHER=6.1.999-ipoib-ng-test-amd64
		mkdir -p "/lib/modules/$OTHER/build/include"
	fi
	# Secure Boot on, DKMS's key not enrolled: a stand-in mokutil says so
	printf '#!/bin/sh\ncase $1 in --sb-state) echo "SecureBoot enabled" ;; --test-key) echo "$2 is not enrolled" ;; esac\n' \
		>/usr/local/sbin/mokutil && chmod 755 /usr/local/sbin/mokutil
	out=$(dpkg -i "$DEB" "$SOFTIB_DEB" 2>&1)
	(($? == 0)) || check_err 1 "dpkg -i failed: $(tail -n 8 <<<"$out")"
	rm -f /usr/local/sbin/mokutil
	grep -q "^ipoib-ng: Secure Boot is on and DKMS's signing key /var/lib/dkms/mok.pub is not enrolled" <<<"$out" &&
		grep -q "^ipoib-ng: enroll the key (mokutil --import /var/lib/dkms/mok.pub" <<<"$out"
	(($? == 0)) || check_err 1 "Secure Boot with DKMS's key not enrolled: no word from the postinst: $(grep ipoib-ng: <<<"$out")"
	ktap_diag "$(grep -m1 "^ipoib-ng: Secure Boot" <<<"$out")"
	[[ $(dpkg-query -W -f '${Status} ' ipoib-ng-dkms softib-dkms 2>/dev/null) == "install ok installed install ok installed " ]]
	(($? == 0)) || check_err 1 "dpkg: $(dpkg-query -W -f '${Package} ${Status}, ' ipoib-ng-dkms softib-dkms 2>&1)"
	! grep -qiE "will not replace|not newer" <<<"$out"
	(($? == 0)) || check_err 1 "dkms refused: $(grep -iE 'replace|newer' <<<"$out")"
	for m in ipoib-ng softib; do
		rm -rf /tmp/ipoib-ng-deb && dpkg-deb -x "$ROOT/.build/deb/$m-dkms_${VER}_all.deb" /tmp/ipoib-ng-deb &&
			diff -r -q "$PRE/src/$m-$VER" "/tmp/ipoib-ng-deb/usr/src/$m-$VER" >/dev/null
		(($? == 0)) || check_err 1 "$m-dkms's /usr/src/$m-$VER is not what DKMS built from: $(diff -r -q "$PRE/src/$m-$VER" "/tmp/ipoib-ng-deb/usr/src/$m-$VER" 2>&1 | head -n 3)"
	done
	[[ ! -e /tmp/ipoib-ng-deb/lib/udev/rules.d/$RULE ]] && ! ls /usr/src/ipoib-ng-"$VER"/drivers/softib >/dev/null 2>&1
	check_err $? "softib-dkms carries ipoib-ng's rule, or ipoib-ng-dkms softib's sources"
	grep -q "Building initial module" <<<"$out" && ((!LONG))
	check_fail $? "the postinst built in the guest although a prebuilt tarball was there"
	[[ -e /lib/udev/rules.d/$RULE ]]
	check_err $? "the package has no /lib/udev/rules.d/$RULE"
	ls /usr/share/doc/ipoib-ng-dkms/admin-guide.rst* >/dev/null 2>&1
	check_err $? "no admin guide in /usr/share/doc/ipoib-ng-dkms"
	ours_installed "dpkg -i"
	if [[ -n $OTHER ]]; then
		grep -q "^ipoib-ng: installing for kernel $OTHER as well" <<<"$out"
		(($? == 0)) || check_err 1 "dpkg -i: no install for the second kernel $OTHER: $(grep -E "ipoib-ng|Building" <<<"$out")"
		if ((LONG)); then
			p=$(modinfo -k "$OTHER" -n ib_ipoib 2>&1)
			[[ $p == "/lib/modules/$OTHER/updates/dkms/ib_ipoib.ko"* ]]
			check_err $? "modinfo -k $OTHER -n ib_ipoib: $p"
			ktap_diag "second kernel $OTHER: $p"
		else
			grep -q "^ipoib-ng: could not build for kernel $OTHER " <<<"$out"
			(($? == 0)) || check_err 1 "dpkg -i: the stand-in kernel's failed build not reported: $(grep ipoib-ng: <<<"$out")"
			ktap_diag "second kernel (stand-in): $(grep "^ipoib-ng: could not build" <<<"$out")"
		fi
	else
		ktap_diag "LONG=1 without the other test kernel's headers: every-kernel install not checked"
	fi
	[[ $(<"$UINIT_LOG") == "-u -k all" ]]
	(($? == 0)) || check_err 1 "ib_ipoib in the initramfs: update-initramfs ran as '$(<"$UINIT_LOG")', not '-u -k all'"
	log_test "dpkg -i: refused on an OFED host; ours installed for the running kernel and ${OTHER:-no} other kernel, with sources, udev rule, docs; initramfs updated; Secure Boot's key step printed"

	RET=0
	out=$(softib_event modprobe softib)
	[[ $out == "ours mark=1" ]]
	check_err $? "modprobe softib with the package installed: '$out' (want: ours loaded by udev)"
	log_test "udev: the package's rule loads ours when its softib registers"

	step "ours cannot load"
	# A module of ours that the kernel refuses (a signature rejected under
	# Secure Boot, other symbol versions, a wrong vermagic; here a
	# truncated file, ENOEXEC): modprobe ib_ipoib loads the in-tree
	# driver instead and one kernel log line says why.
	RET=0
	modprobe -r ib_ipoib 2>/dev/null
	f=$(mod_path ib_ipoib)
	cp "$f" /tmp/ipoib-ng-ours.ko && head -c 4096 /tmp/ipoib-ng-ours.ko >"$f"
	check_err $? "cannot spoil $f"
	mark=$(dmesg | wc -l)
	out=$(modprobe ib_ipoib 2>&1)
	check_err $? "modprobe ib_ipoib with ours spoilt: $out"
	[[ -d /sys/module/ib_ipoib && ! -e /sys/module/ib_ipoib/version ]]
	(($? == 0)) || check_err 1 "not the in-tree ib_ipoib that runs: $(ipoib_module_path)"
	log=$(dmesg | tail -n +$((mark + 1)) | grep "ipoib-ng: ib_ipoib from ipoib-ng did not load")
	[[ $(grep -c . <<<"$log") == 1 ]]
	check_err $? "not one log line saying why: '$log'"
	[[ -s /run/ipoib-ng/fallback ]] && grep -q "did not load" /run/ipoib-ng/fallback
	(($? == 0)) || check_err 1 "/run/ipoib-ng/fallback: $(cat /run/ipoib-ng/fallback 2>&1)"
	ktap_diag "${log#*] }"
	modprobe -r ib_ipoib && cp /tmp/ipoib-ng-ours.ko "$f" && rm -f /tmp/ipoib-ng-ours.ko
	check_err $? "cannot put ours back"
	modprobe ib_ipoib && [[ $(cat /sys/module/ib_ipoib/version 2>/dev/null) == "$VER" ]]
	(($? == 0)) || check_err 1 "ours back: $(ipoib_module_path)"
	[[ ! -e /run/ipoib-ng/fallback ]]
	check_err $? "/run/ipoib-ng/fallback still there after ours loaded"
	modprobe -r ib_ipoib
	log_test "ours cannot load: modprobe runs the in-tree ib_ipoib, one log line says why"

	step "unsupported kernel"
	RET=0
	mkdir -p /lib/modules/5.10.0-99-amd64
	out=$(dkms build -m ipoib-ng -v "$VER" -k 5.10.0-99-amd64 2>&1)
	rc=$?
	# 9 upstream; Debian's dkms exits 77 ("skipped")
	[[ $rc -eq 9 || $rc -eq 77 ]] && grep -q "BUILD_EXCLUSIVE" <<<"$out"
	check_err $? "dkms build for 5.10: exit $rc: $out"
	ktap_diag "$(grep -m1 BUILD_EXCLUSIVE <<<"$out")"
	# A kernel package's postinst runs the hooks of /etc/kernel/postinst.d
	# with run-parts --exit-on-error: a backports kernel with its headers
	# (a build tree is what dkms's hook looks for) must install.
	# bookworm's dkms exits 11 for it from autoinstall.
	hooks_skip 6.16.3-99-amd64 "is outside the 6.1 to 6.12 series"
	# a kernel of the window built without InfiniBand (a site's custom
	# kernel): dkms's BUILD_EXCLUSIVE_CONFIG excludes it, the same exit 11
	hooks_skip 6.5.0-99-amd64 "is built without CONFIG_INFINIBAND" CONFIG_MODULES=y
	built_nothing 5.10.0-99-amd64 6.16.3-99-amd64 6.5.0-99-amd64
	# a kernel in the window still gets the module from the same hook
	out=$(run-parts --report --exit-on-error --arg="$ABI" \
		--regex '^(dkms|ipoib-ng)$' /etc/kernel/postinst.d 2>&1)
	(($? == 0)) || check_err 1 "the kernel hooks for $ABI: $(tail -n 4 <<<"$out")"
	! grep -q "^ipoib-ng:" <<<"$out"
	check_err $? "ipoib-ng's hook spoke up for $ABI: $out"
	ours_installed "the kernel hooks for $ABI"
	log_test "a kernel outside 6.1-6.12 or without InfiniBand: dkms skips it, its kernel hooks exit 0, one line says so"

	step "dpkg -r"
	RET=0
	: >"$UINIT_LOG"
	out=$(dpkg -r ipoib-ng-dkms softib-dkms 2>&1)
	(($? == 0)) || check_err 1 "dpkg -r failed: $(tail -n 5 <<<"$out")"
	[[ $(<"$UINIT_LOG") == "-u -k all" ]]
	(($? == 0)) || check_err 1 "ib_ipoib in the initramfs: update-initramfs after removal ran as '$(<"$UINIT_LOG")'"
	initramfs_restore
	[[ ! -e /lib/udev/rules.d/$RULE && ! -e /var/lib/dkms/ipoib-ng && ! -e /var/lib/dkms/softib ]]
	(($? == 0)) || check_err 1 "left behind: $(ls -d /lib/udev/rules.d/$RULE /var/lib/dkms/ipoib-ng /var/lib/dkms/softib 2>/dev/null)"
	intree_back "dpkg -r"
	[[ -z $OTHER ]] || rm -rf "/lib/modules/$OTHER"
	log_test "dpkg -r: the kernel's ib_ipoib is back, DKMS state and rule gone"
else
	for t in "dpkg -i" "udev: the package's rule loads ours" "ours cannot load" \
		"a kernel outside 6.1-6.12 or without InfiniBand: its kernel hooks exit 0" "dpkg -r"; do
		ktap_skip "$t" "in make check on kernels other than 6.1 only (LONG=1: every kernel)"
	done
fi

RET=0
out=$(softib_event load_softib)
udevd_stop
[[ $out == "none mark=0" ]]
check_err $? "softib after dpkg -r: '$out' (want: nothing loaded)"
log_test "udev: after removal softib loads nothing again"

ktap_finish
