# SPDX-License-Identifier: GPL-2.0
#
# Sourced by the dkms.conf of ipoib-ng and of softib, after their
# BUILD_EXCLUSIVE_* lines, from the same source tree (scripts/).
#
# bookworm's dkms (3.0.10) ends "dkms autoinstall" with exit 11 when a
# BUILD_EXCLUSIVE_* line excludes the kernel, and its kernel hooks pass
# that on: installing a kernel outside the window, a kernel built
# without the options the module needs, or any kernel at all on another
# architecture, would fail (dkms 3.0.11 skips such a kernel instead).
# autoinstall reads dkms.conf for the kernels the module is built for,
# not for the one being installed, so that one is taken from dkms's own
# command line (and the architecture from the machine, as dkms does
# without -a; the options from the kernel's build tree, as dkms reads
# them). For such a kernel the module does not ask to be autoinstalled,
# and ipoib-ng's kernel hook (/etc/kernel/postinst.d/ipoib-ng) says so
# in one line. "dkms build/install -k" for it still fails with dkms's
# reason.

dkms_autoinstall_kernel() {
	local -a argv
	local i k="" auto=0

	mapfile -d '' -t argv </proc/$$/cmdline 2>/dev/null || return 1
	for ((i = 0; i < ${#argv[@]}; i++)); do
		case ${argv[i]} in
		autoinstall) auto=1 ;;
		-k | --kernelver) k=${argv[i + 1]:-} ;;
		--kernelver=*) k=${argv[i]#--kernelver=} ;;
		esac
	done
	((auto)) || return 1
	k=${k%%/*}
	echo "${k:-$(uname -r)}"
}

# dkms_config_excludes KVER: the kernel's build tree has a .config that
# lacks an option of BUILD_EXCLUSIVE_CONFIG, or has one it names with "!"
# (dkms's own reading of it)
dkms_config_excludes() {
	local conf=/lib/modules/$1/build/.config opt

	[[ -r $conf ]] || return 1
	for opt in $BUILD_EXCLUSIVE_CONFIG; do
		case $opt in
		!*) grep -q -E "^${opt#!}=[ym]" "$conf" && return 0 ;;
		*) grep -q -E "^${opt}=[ym]" "$conf" || return 0 ;;
		esac
	done
	return 1
}

if dkms_autoinstall_kver=$(dkms_autoinstall_kernel) &&
   { [[ ! $dkms_autoinstall_kver =~ $BUILD_EXCLUSIVE_KERNEL ]] ||
     [[ ! $(uname -m) =~ $BUILD_EXCLUSIVE_ARCH ]] ||
     dkms_config_excludes "$dkms_autoinstall_kver"; }; then
	AUTOINSTALL=""
fi
unset -f dkms_autoinstall_kernel dkms_config_excludes
unset dkms_autoinstall_kver
