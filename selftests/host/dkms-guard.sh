#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host-side test: the autoinstall guard of both dkms.conf files
# (scripts/dkms-autoinstall.sh) and the kernel hook
# (scripts/kernel-postinst) for kernels and machines outside what
# ipoib-ng is built for. bookworm's dkms ends "dkms autoinstall" with
# exit 11 when a BUILD_EXCLUSIVE_* line excludes the kernel, and that
# fails the kernel package's configure, so dkms.conf must drop
# AUTOINSTALL there. dkms.conf is sourced by a bash whose command line
# is dkms's, as dkms sources it; uname is a stand-in that reports the
# machine wanted. The real hook chain runs in 15-install (in a guest);
# the other architecture can only be tried here. KTAP on stdout.

set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=selftests/host/ktap.sh
source "$ROOT/selftests/host/ktap.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"

# fake_uname MACHINE: uname -m prints MACHINE, anything else the real one
fake_uname() {
	cat >"$work/bin/uname" <<EOF
#!/bin/sh
[ "\$1" = -m ] && { echo $1; exit 0; }
exec /bin/uname "\$@"
EOF
	chmod +x "$work/bin/uname"
}

# autoinstall MACHINE DKMS_ARGS...: the AUTOINSTALL dkms.conf leaves when
# sourced by "dkms DKMS_ARGS..." on a MACHINE (CONF: which dkms.conf)
CONF=$ROOT/dkms.conf
autoinstall() {
	local m=$1

	shift
	fake_uname "$m"
	PATH="$work/bin:$PATH" bash -c 'source "$1"; echo "AUTOINSTALL=$AUTOINSTALL"' \
		dkms "$CONF" "$@"
}

echo "TAP version 13"
echo "1..8"

# ipoib-ng's dkms.conf, and softib's (softib-dkms) in its DKMS tree: both
# source the same guard
"$ROOT/scripts/dkms-tree" softib "$work/softib"
for CONF in "$ROOT/dkms.conf" "$work/softib/dkms.conf"; do
	m=$(sed -n 's/^PACKAGE_NAME="\(.*\)"$/\1/p' "$CONF")
	out=$(autoinstall x86_64 autoinstall -k 6.12.118+deb12-amd64)
	[[ $out == "AUTOINSTALL=yes" ]]
	result $? "$m, x86_64, a kernel of the window: autoinstalled" "$out"

	out=$(autoinstall x86_64 autoinstall -k 6.16.3+deb13-amd64)
	[[ $out == "AUTOINSTALL=" ]]
	result $? "$m, x86_64, a kernel outside the window: not autoinstalled" "$out"
done
CONF=$ROOT/dkms.conf

out=$(autoinstall aarch64 autoinstall -k 6.1.0-57-arm64)
[[ $out == "AUTOINSTALL=" ]]
result $? "aarch64, a kernel of the window: not autoinstalled" "$out"

# only autoinstall is guarded: dkms build/install -k fail with dkms's reason
out=$(autoinstall aarch64 install -m ipoib-ng -v 0.2.0 -k 6.1.0-57-arm64)
[[ $out == "AUTOINSTALL=yes" ]]
result $? "aarch64, dkms install: dkms.conf left as it is (dkms refuses)" "$out"

# the kernel hook, with the package's dkms.conf where it looks for it
hook=$work/hook
sed "s|/usr/src/ipoib-ng-\*/dkms.conf|$ROOT/dkms.conf|" \
	"$ROOT/scripts/kernel-postinst" >"$hook"
fake_uname aarch64
out=$(PATH="$work/bin:$PATH" sh "$hook" 6.1.0-57-arm64)
rc=$?
[[ $rc -eq 0 && $out == "ipoib-ng: this machine is aarch64, ipoib-ng is built for x86_64 only: kernel 6.1.0-57-arm64 will run the in-tree ib_ipoib" ]]
result $? "kernel hook on aarch64: one line, exit 0" "exit $rc: $out"

fake_uname x86_64
out=$(PATH="$work/bin:$PATH" sh "$hook" 6.1.0-57-amd64)
rc=$?
[[ $rc -eq 0 && -z $out ]]
result $? "kernel hook on x86_64, a kernel of the window: silent, exit 0" "exit $rc: $out"

((fails == 0))
