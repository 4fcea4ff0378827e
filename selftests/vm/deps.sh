#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install the Debian packages that building and testing ipoib-ng need.
#
# Idempotent: quiet and without network when everything is installed.
# Otherwise it says which packages it installs, runs "apt-get update" once
# and "apt-get install" for exactly the missing ones. On failure it names
# the packages and prints apt's own error lines, and exits non-zero.
#
# Extra packages can be asked for on the command line (deps.sh debootstrap);
# "deps.sh --only PKG..." installs just those (make deb: the package's
# build dependencies, not the test tool chain).

set -euo pipefail

# build-essential: dpkg-buildpackage checks for it (build-essential:native)
# whatever Build-Depends says; gcc and make alone do not satisfy it.
PKGS=(
	qemu-system-x86 busybox-static cpio kmod iproute2 iperf3 iputils-ping
	ethtool infiniband-diags rdma-core sparse linux-source-6.1 make gcc
	build-essential
	xz-utils python3 procps coreutils util-linux git bc flex bison
	libelf-dev libssl-dev
	dkms debhelper dh-dkms lintian udev systemd ifupdown network-manager dbus
	dctrl-tools openssl
)
if [[ ${1:-} == --only ]]; then
	shift
	PKGS=()
fi
PKGS+=("$@")
((${#PKGS[@]})) || exit 0

die() { echo "deps: $*" >&2; exit 1; }

# One dpkg-query for all packages. It exits 1 when any of them is unknown
# to dpkg (never installed), which is the normal case on a new machine:
# its status is not an error here, only its output matters.
status=$(dpkg-query -W -f='${db:Status-Status} ${Package}\n' "${PKGS[@]}" \
	2>/dev/null || true)
installed=" $(awk '$1 == "installed" { printf "%s ", $2 }' <<<"$status")"
missing=()
for p in "${PKGS[@]}"; do
	[[ $installed == *" $p "* ]] || missing+=("$p")
done

((${#missing[@]})) || exit 0

echo "deps: installing ${#missing[@]} Debian package(s): ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# apt_run WHAT CMD...: run an apt command quietly; on failure name WHAT
# and show apt's error lines (or the end of its output).
apt_run() {
	local what=$1

	shift
	if ! "$@" >"$log" 2>&1; then
		echo "deps: '$*' failed ($what); apt said:" >&2
		{ grep -E '^(E|W|Err):' "$log" || tail -n 15 "$log"; } |
			sed 's/^/deps:   /' >&2
		return 1
	fi
}

apt_run "refreshing the package lists" apt-get update -qq ||
	die "cannot refresh the package lists: check /etc/apt/sources.list and the network"
apt_run "packages: ${missing[*]}" \
	apt-get install -y -qq --no-install-recommends "${missing[@]}" ||
	die "cannot install: ${missing[*]}"
echo "deps: installed ${missing[*]}"
