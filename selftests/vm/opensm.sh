#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Debian's OpenSM for the tests that run the real subnet manager on softib.
#
#   opensm.sh fetch   download and unpack opensm and its libraries
#   opensm.sh root    print the directory they are unpacked in
#
# The packages are unpacked into $CACHE/opensm/<version>/, never installed:
# installing opensm would enable its system service, which starts an SM on
# every IB port of the machine at boot. Guests see the host's root, so the
# tests run $root/usr/sbin/opensm with LD_LIBRARY_PATH pointing into it
# (selftests/lib.sh: osm_start). The version is the one bookworm ships.
# A second run finds the unpacked tree and returns without network.

set -euo pipefail

CACHE=${CACHE:-/var/cache/ipoib-ng}
OCACHE=$CACHE/opensm
PKGS=(opensm libopensm9 libosmcomp5 libosmvendor5 libwrap0)

die() { echo "opensm.sh: $*" >&2; exit 1; }

current() {
	[[ -s $OCACHE/current ]] || die "OpenSM is not unpacked: run 'make kernels' (or selftests/vm/opensm.sh fetch)"
	echo "$OCACHE/$(cat "$OCACHE/current")"
}

fetch() {
	local ver dir p

	mkdir -p "$OCACHE"
	exec 9>"$OCACHE/.lock"
	flock 9
	if [[ -s $OCACHE/current && -x $OCACHE/$(cat "$OCACHE/current")/usr/sbin/opensm ]]; then
		return 0
	fi
	ver=$(apt-cache policy opensm 2>/dev/null | sed -n 's/^ *Candidate: //p')
	if [[ -z $ver || $ver == "(none)" ]]; then
		DEBIAN_FRONTEND=noninteractive apt-get update -qq
		ver=$(apt-cache policy opensm | sed -n 's/^ *Candidate: //p')
	fi
	[[ -n $ver && $ver != "(none)" ]] ||
		die "no opensm package in the apt sources: check /etc/apt/sources.list"
	echo "opensm.sh: unpacking opensm $ver into $OCACHE"
	tmp=$(mktemp -d)
	trap 'rm -rf "${tmp:-}"' EXIT
	(cd "$tmp" && apt-get download -q "${PKGS[@]}" >/dev/null 2>"$tmp/err") ||
		{ cat "$tmp/err" >&2; die "cannot download ${PKGS[*]}"; }
	dir=$OCACHE/$ver
	rm -rf "$dir"
	mkdir -p "$dir"
	for p in "$tmp"/*.deb; do
		dpkg-deb -x "$p" "$dir"
	done
	[[ -x $dir/usr/sbin/opensm ]] || die "the opensm package has no /usr/sbin/opensm"
	echo "$ver" >"$OCACHE/current"
}

case ${1:-} in
fetch) fetch ;;
root) current ;;
*) die "usage: opensm.sh fetch|root" ;;
esac
