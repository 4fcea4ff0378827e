#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host-side test: the Debian package builds with a site's or a backport's
# version (0.2.0+site1, 0.2.0~bpo12+1, what "dch --local" and backports
# produce), the modules keep dkms.conf's version, and a changelog at
# another version is refused with the reason. Builds a copy of the
# committed tree with dpkg-buildpackage -b. KTAP on stdout; exit 1 on a
# failure (skipped, exit 0, without debhelper and dh-dkms).

set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)

echo "TAP version 13"
echo "1..3"
if ! command -v dpkg-buildpackage >/dev/null || ! command -v dh_dkms >/dev/null; then
	for i in 1 2 3; do echo "ok $i deb version # SKIP no dpkg-buildpackage or dh_dkms"; done
	exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
VER=$(sed -n 's/^PACKAGE_VERSION="\([^"]*\)"$/\1/p' "$ROOT/dkms.conf")

# shellcheck source=ktap.sh
source "$(dirname "$0")/ktap.sh"

# build V: the package from a copy of the tree whose changelog is at V;
# sets OUT and RC
build() {
	rm -rf "$work/src" "$work"/*.deb "$work"/*.buildinfo "$work"/*.changes
	mkdir -p "$work/src" &&
		git -C "$ROOT" archive HEAD | tar -x -C "$work/src" &&
		sed -i "1s/^ipoib-ng ([^)]*)/ipoib-ng ($1)/" "$work/src/debian/changelog" ||
		{ OUT="cannot copy the tree"; RC=1; return; }
	OUT=$(cd "$work/src" && timeout 300 dpkg-buildpackage -b -us -uc 2>&1)
	RC=$?
}

for v in "$VER+site1" "$VER~bpo12+1"; do
	build "$v"
	deb=$work/ipoib-ng-dkms_${v}_all.deb
	((RC == 0)) && [[ -e $deb ]] &&
		[[ $(dpkg-deb -f "$deb" Version) == "$v" ]] &&
		dpkg-deb -c "$deb" >"$work/list" &&
		grep -q "usr/src/ipoib-ng-$VER/dkms.conf" "$work/list"
	result $? "a site version builds: package $v, DKMS sources ipoib-ng-$VER" \
		"exit $RC" "$(tail -n 5 <<<"$OUT")"
done

build "9.9.9"
((RC != 0)) && grep -q "debian/changelog is at 9.9.9 but dkms.conf at $VER" <<<"$OUT"
result $? "a changelog at another version is refused, naming both" \
	"exit $RC" "$(tail -n 5 <<<"$OUT")"

((fails == 0))
