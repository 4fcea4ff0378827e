#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make fresh: README's commands on a brand-new Debian 12, as a newcomer
# runs them.
#
#   fresh.sh [TARGET...]     default: demo ("make fresh FRESH=check")
#
# A debootstrap "minbase" bookworm with git and make (what a minimal
# install plus "apt-get install git make" has) is built once and cached in
# $CACHE/fresh/base. Every run copies it to $CACHE/fresh/root, gives it the
# host's apt sources (a real install has bookworm, -updates and -security),
# binds /proc, /sys and /dev, clones the committed tree (HEAD, not the work
# tree's uncommitted changes) to /root/ipoib-ng and runs "make TARGET" there
# as root, with an empty environment and an empty /var/cache/ipoib-ng: every
# package and test kernel is installed by the project's own Makefile.
# The copy stays until the next run, for a look after a failure.
# Developer tool: it is not part of "make check".

set -euo pipefail

CACHE=${CACHE:-/var/cache/ipoib-ng}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BASE=$CACHE/fresh/base
RUN=$CACHE/fresh/root
targets=("$@")
((${#targets[@]})) || targets=(demo)

die() { echo "fresh: $*" >&2; exit 1; }
[[ $(id -u) == 0 ]] || die "needs root (debootstrap, chroot, mounts)"

# The host's Debian archive: the first non-security URI of its apt sources
# (one-line or deb822 format), so the chroot uses the same mirror.
mirror() {
	local f uri

	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
		 /etc/apt/sources.list.d/*.sources; do
		[[ -r $f ]] || continue
		uri=$(sed -n -e 's/^URIs: *\([^ ]*\).*/\1/p' \
			     -e 's/^deb \(\[[^]]*\] \)\{0,1\}\([^ ]*\) .*/\2/p' "$f" |
		      grep -v security | head -n1)
		[[ -z $uri ]] || { echo "$uri"; return; }
	done
	die "no Debian archive in the host's apt sources"
}

"$ROOT/selftests/vm/deps.sh" debootstrap

# one run at a time: every run reuses $RUN
mkdir -p "$CACHE/fresh"
exec 9>"$CACHE/fresh/.lock"
flock -n 9 || die "another make fresh is running (lock: $CACHE/fresh/.lock)"

if [[ ! -e $BASE/.done ]]; then
	m=$(mirror)
	echo "fresh: debootstrap --variant=minbase bookworm (mirror from the host's apt sources) into $BASE"
	rm -rf "$BASE"
	mkdir -p "$BASE"
	debootstrap --variant=minbase --include=git,make,ca-certificates \
		bookworm "$BASE" "$m" >"$CACHE/fresh/debootstrap.log" 2>&1 ||
		{ tail -n 20 "$CACHE/fresh/debootstrap.log" >&2; die "debootstrap failed (log: $CACHE/fresh/debootstrap.log)"; }
	chroot "$BASE" apt-get clean
	touch "$BASE/.done"
fi

umount_run() { umount -R "$RUN/proc" "$RUN/sys" "$RUN/dev" 2>/dev/null || true; }
trap umount_run EXIT

umount_run
# never delete through a mount that is still there (it would be the host's)
if findmnt -rn -o TARGET | grep -q "^$RUN/"; then
	die "something is still mounted under $RUN: unmount it first"
fi
rm -rf --one-file-system "$RUN"
echo "fresh: copying the cached bookworm minbase to $RUN"
cp -a "$BASE" "$RUN"
rm -f "$RUN/.done"
rm -f "$RUN"/etc/apt/sources.list "$RUN"/etc/apt/sources.list.d/*
cp -a /etc/apt/sources.list* "$RUN/etc/apt/" 2>/dev/null || true
cp /etc/resolv.conf "$RUN/etc/resolv.conf" 2>/dev/null || true
mount --bind /proc "$RUN/proc"
mount --rbind /sys "$RUN/sys"
mount --rbind /dev "$RUN/dev"

rev=$(git -C "$ROOT" rev-parse --short HEAD)
[[ -z $(git -C "$ROOT" status --porcelain --untracked-files=no) ]] ||
	echo "fresh: note: uncommitted changes in $ROOT are not tested (HEAD is $rev)"
git clone -q --no-local "$ROOT" "$RUN/root/ipoib-ng"

for t in "${targets[@]}"; do
	echo "fresh: [$rev] make $t, in a new bookworm chroot, as root"
	start=$SECONDS
	rc=0
	chroot "$RUN" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		/bin/bash -c 'cd /root/ipoib-ng && make "$1"' bash "$t" </dev/null || rc=$?
	echo "fresh: make $t exited $rc after $((SECONDS - start)) s"
	((rc == 0)) || exit "$rc"
done
