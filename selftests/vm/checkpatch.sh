#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# checkpatch.sh FILE...: run the kernel's checkpatch.pl (from Debian's
# linux-source-6.1) on whole files, strict mode. Exits non-zero on any
# ERROR, WARNING or CHECK.
#
# Ignored everywhere: FILE_PATH_CHANGES (patch mode only, meaningless for
# an out-of-tree tree). LINUX_VERSION_CODE is allowed only in
# include/compat.h, the one place for kernel-version differences (with
# CONSTANT_COMPARISON, which misreads "LINUX_VERSION_CODE >= KERNEL_VERSION()").

set -euo pipefail

CACHE=${CACHE:-/var/cache/ipoib-ng}
SRC_TAR=/usr/src/linux-source-6.1.tar.xz
CP_DIR=$CACHE/checkpatch
CHECKPATCH=$CP_DIR/scripts/checkpatch.pl

extract() {
	local tmp top f

	[[ -r $SRC_TAR ]] || "$(dirname "$0")/deps.sh"
	echo "checkpatch: extracting checkpatch.pl from $SRC_TAR" >&2
	mkdir -p "$CACHE"
	tmp=$(mktemp -d "$CACHE/.checkpatch.XXXXXX")
	top=linux-source-6.1
	tar -xJf "$SRC_TAR" -C "$tmp" \
		"$top/scripts/checkpatch.pl" \
		"$top/scripts/spelling.txt" \
		"$top/scripts/const_structs.checkpatch" \
		"$top/Documentation/dev-tools/checkpatch.rst"
	for f in scripts/checkpatch.pl scripts/spelling.txt \
		 scripts/const_structs.checkpatch; do
		[[ -s $tmp/$top/$f ]] || { echo "checkpatch: $f missing" >&2; exit 1; }
	done
	rm -rf "$CP_DIR"
	mv "$tmp/$top" "$CP_DIR"
	rmdir "$tmp"
}

[[ $# -gt 0 ]] || { echo "usage: checkpatch.sh FILE..." >&2; exit 1; }
[[ -x $CHECKPATCH ]] || extract

common=(--no-tree --strict --terse --show-types --no-summary --quiet
	--ignore FILE_PATH_CHANGES)
rc=0
for f in "$@"; do
	ignore=()
	[[ $f == include/compat.h || $f == */include/compat.h ]] &&
		ignore=(--ignore LINUX_VERSION_CODE --ignore CONSTANT_COMPARISON)
	out=$(perl "$CHECKPATCH" "${common[@]}" "${ignore[@]}" -f "$f" 2>&1) || true
	if [[ -n $out ]]; then
		echo "$out"
	fi
	if grep -qE ': (ERROR|WARNING|CHECK):' <<<"$out"; then
		rc=1
	fi
done
if ((rc)); then
	echo "checkpatch: problems found" >&2
else
	echo "checkpatch: $# files clean"
fi
exit $rc
