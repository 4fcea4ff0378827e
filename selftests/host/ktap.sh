# SPDX-License-Identifier: GPL-2.0
#
# KTAP helpers for the host tests, sourced by them (not executable, so the
# runner does not take it for a test).

n=0 fails=0

ok() {
	n=$((n + 1))
	echo "ok $n $1"
}

# not_ok NAME [DIAGNOSTIC...]
not_ok() {
	n=$((n + 1)) fails=$((fails + 1))
	echo "not ok $n $1"
	shift
	printf '# %s\n' "$@"
}

# result STATUS NAME [DIAGNOSTIC...]: ok when STATUS is 0, else not_ok
result() {
	local rc=$1

	shift
	if ((rc == 0)); then
		ok "$1"
	else
		not_ok "$@"
	fi
}
