#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Debian test kernels for the QEMU suite.
#
#   kernels.sh fetch SERIES   resolve, download and unpack the kernel of SERIES
#   kernels.sh abi SERIES     print the cached ABI of SERIES (e.g. 6.1.0-57-amd64)
#   kernels.sh kdir SERIES    print the build tree to build our modules against
#
# SERIES is 6.1 or 6.12, or "debug": the KASAN/lockdep/kmemleak kernel
# that debug-kernel.sh builds from Debian's linux-source-6.1 (make
# check-debug); its build tree is its KDIR. For 6.1 and 6.12 the image
# package is unpacked (not installed) into $CACHE/kernels/<abi>/ and
# depmod'ed there; the matching headers package is installed on the host.
# $CACHE/kernels/<series>.abi records the mapping, so later runs need no
# network and return at once.

set -euo pipefail

CACHE=${CACHE:-/var/cache/ipoib-ng}
KCACHE=$CACHE/kernels

die() { echo "kernels.sh: $*" >&2; exit 1; }

metapackage() {
	case $1 in
	6.1) echo linux-image-amd64 ;;
	6.12) echo linux-image-6.12-amd64 ;;
	*) die "unknown kernel series '$1' (want 6.1 or 6.12)" ;;
	esac
}

pkg_installed() {
	[[ $(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null) == installed ]]
}

resolve_abi() {
	local meta abi

	meta=$(metapackage "$1")
	abi=$(apt-cache depends "$meta" 2>/dev/null |
	      sed -n 's/^ *Depends: linux-image-\(.*\)$/\1/p' | head -n1)
	if [[ -z $abi ]]; then
		DEBIAN_FRONTEND=noninteractive apt-get update -qq
		abi=$(apt-cache depends "$meta" |
		      sed -n 's/^ *Depends: linux-image-\(.*\)$/\1/p' | head -n1)
	fi
	[[ -n $abi ]] || die "cannot resolve the ABI of $meta"
	echo "$abi"
}

fetch() {
	local series=$1 abi dir tmp

	metapackage "$series" >/dev/null
	# one fetch at a time: two "make" runs share the cache (and apt)
	mkdir -p "$KCACHE"
	exec 9>"$KCACHE/.lock"
	flock 9
	if [[ -s $KCACHE/$series.abi ]]; then
		abi=$(<"$KCACHE/$series.abi")
		dir=$KCACHE/$abi
		if [[ -e $dir/.done && -d /usr/src/linux-headers-$abi ]]; then
			return 0
		fi
	fi

	abi=$(resolve_abi "$series")
	dir=$KCACHE/$abi

	# deps.sh says what it installs and names apt's error on failure
	pkg_installed "linux-headers-$abi" ||
		"$(dirname "$0")/deps.sh" "linux-headers-$abi" ||
		die "cannot install linux-headers-$abi"

	if [[ ! -e $dir/.done ]]; then
		echo "kernels: fetching linux-image-$abi"
		rm -rf "$dir"
		tmp=$(mktemp -d "$KCACHE/.fetch.XXXXXX")
		chown _apt "$tmp" 2>/dev/null || true  # apt downloads as _apt
		(cd "$tmp" && apt-get download -qq "linux-image-$abi")
		mkdir -p "$dir"
		dpkg -x "$tmp"/linux-image-"$abi"_*.deb "$dir"
		rm -rf "$tmp"
		[[ -e $dir/boot/vmlinuz-$abi ]] || die "no vmlinuz in linux-image-$abi"
		depmod -b "$dir" "$abi"
		touch "$dir/.done"
	fi

	echo "$abi" >"$KCACHE/$series.abi.tmp"
	mv "$KCACHE/$series.abi.tmp" "$KCACHE/$series.abi"
	echo "kernels: $series -> $abi"
}

abi() {
	metapackage "$1" >/dev/null
	[[ -s $KCACHE/$1.abi ]] || die "series $1 not fetched; run: kernels.sh fetch $1"
	cat "$KCACHE/$1.abi"
}

kdir() {
	echo "/usr/src/linux-headers-$(abi "$1")"
}

[[ $# -eq 2 ]] || die "usage: kernels.sh fetch|abi|kdir SERIES"
if [[ $2 == debug ]]; then
	case $1 in
	fetch) "$(dirname "$0")/debug-kernel.sh" build >/dev/null ;;
	abi | kdir) "$(dirname "$0")/debug-kernel.sh" "$1" ;;
	*) die "usage: kernels.sh fetch|abi|kdir SERIES" ;;
	esac
	exit
fi
case $1 in
fetch) fetch "$2" ;;
abi) abi "$2" ;;
kdir) kdir "$2" ;;
*) die "usage: kernels.sh fetch|abi|kdir SERIES" ;;
esac
