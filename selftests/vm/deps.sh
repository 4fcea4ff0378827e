#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install the Debian packages that building and testing ipoib-ng need.
# Idempotent and quiet when everything is already there; "apt-get update"
# runs only when something is missing.

set -euo pipefail

PKGS=(
	qemu-system-x86 busybox-static cpio kmod iproute2 iperf3 iputils-ping
	ethtool infiniband-diags rdma-core sparse linux-source-6.1 make gcc
	xz-utils python3 procps coreutils util-linux git bc flex bison
	libelf-dev libssl-dev
)

# One dpkg-query for all packages; unknown ones print nothing.
installed=" $(dpkg-query -W -f='${db:Status-Status} ${Package}\n' "${PKGS[@]}" \
	2>/dev/null | awk '$1 == "installed" { printf "%s ", $2 }')"
missing=()
for p in "${PKGS[@]}"; do
	[[ $installed == *" $p "* ]] || missing+=("$p")
done

((${#missing[@]})) || exit 0

echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
