#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 120
#
# Module parameters with values they cannot take. A line in modprobe.d or
# on the kernel command line must never leave a node without IPoIB: at
# load time a value out of range is clamped and a value that is not a
# number keeps the default, with one warning line naming the parameter.
# Once the module runs, a write to /sys/module/ib_ipoib/parameters/ is
# refused with EINVAL and a log line, and the value stays.
#
# In-tree clamps its ring sizes and max_nonsrq_conn_qp silently, and a
# value that is not a number makes its load fail (EINVAL); it does not
# know ours' max_* bounds (ignored as unknown parameters).

source "$(dirname "$0")/../lib.sh"

P=/sys/module/ib_ipoib/parameters

ktap_header 4
ktap_diag "IPOIB=$IPOIB"

load_softib && slowwait 10 softib_ports_active >/dev/null
ktap_result $? "softib up"
defer unload_softib

# log_since N: the kernel log after its first N lines
log_since() {
	dmesg | tail -n +$(($1 + 1))
}

# param NAME: the parameter's value as sysfs shows it
param() {
	cat "$P/$1" 2>/dev/null
}

# Out of range at load: the same clamped values from both drivers (the
# ring sizes in-tree's way: 100 -> 128, 99999 -> 8192; 5000 -> 4096).
RET=0
mark=$(dmesg | wc -l)
common=(send_queue_size=100 recv_queue_size=99999 max_nonsrq_conn_qp=5000)
ours=(max_paths=5 max_sendonly=0 max_full_groups=70000 max_cm_active=0)
if [[ $IPOIB == ours ]]; then
	out=$(load_ipoib "${common[@]}" "${ours[@]}" 2>&1)
else
	out=$(load_ipoib "${common[@]}" 2>&1)
fi
check_err $? "ib_ipoib did not load: $out"
slowwait 10 test -d /sys/class/net/ib1 >/dev/null
check_err $? "no ib1 after the load"
[[ $(param send_queue_size) == 128 && $(param recv_queue_size) == 8192 &&
   $(param max_nonsrq_conn_qp) == 4096 ]]
(($? == 0)) || check_err 1 "ring sizes $(param send_queue_size)/$(param recv_queue_size), max_nonsrq_conn_qp $(param max_nonsrq_conn_qp)"
if [[ $IPOIB == ours ]]; then
	[[ $(param max_paths) == 16 && $(param max_sendonly) == 1 &&
	   $(param max_full_groups) == 65536 && $(param max_cm_active) == 1 ]]
	(($? == 0)) || check_err 1 "max_paths $(param max_paths) max_sendonly $(param max_sendonly) max_full_groups $(param max_full_groups) max_cm_active $(param max_cm_active)"
	log=$(log_since "$mark")
	for w in "send_queue_size=100 is outside 128..8192: using 128" \
		 "recv_queue_size=99999 is outside 2..8192: using 8192" \
		 "max_nonsrq_conn_qp=5000 is outside 0..4096: using 4096" \
		 "max_paths=5 is outside 16..1048576: using 16" \
		 "max_sendonly=0 is outside 1..65536: using 1" \
		 "max_full_groups=70000 is outside 1..65536: using 65536" \
		 "max_cm_active=0 is outside 1..1048576: using 1"; do
		[[ $(grep -c "ib_ipoib: $w\$" <<<"$log") == 1 ]]
		check_err $? "not one log line '$w'"
	done
else
	ktap_diag "in-tree (known): clamps without a word in the log"
fi
log_test "values out of range at load: the module loads, clamped, one warning each"
unload_ipoib

# Not a number at load: ours keeps the default and says so; in-tree's
# load fails, and the node has no IPoIB.
RET=0
mark=$(dmesg | wc -l)
if [[ $IPOIB == ours ]]; then
	out=$(load_ipoib send_queue_size=abc max_paths=4k 2>&1)
	check_err $? "ib_ipoib did not load: $out"
	slowwait 10 test -d /sys/class/net/ib1 >/dev/null
	check_err $? "no ib1 after the load"
	[[ $(param send_queue_size) == 128 && $(param max_paths) == 65536 ]]
	(($? == 0)) || check_err 1 "send_queue_size $(param send_queue_size), max_paths $(param max_paths): not the defaults"
	log=$(log_since "$mark")
	for w in "send_queue_size=abc is not a number: using the default 128 (range 128..8192)" \
		 "max_paths=4k is not a number: using the default 65536 (range 16..1048576)"; do
		[[ $(grep -c "ib_ipoib: $w\$" <<<"$log") == 1 ]]
		check_err $? "not one log line '$w'"
	done
	log_test "a value that is not a number at load: the default, one warning"
else
	out=$(load_ipoib send_queue_size=abc 2>&1)
	rc=$?
	[[ $rc != 0 && ! -d /sys/module/ib_ipoib ]]
	check_err $? "in-tree loaded with send_queue_size=abc"
	ktap_diag "in-tree (known): send_queue_size=abc fails its load: $out"
	log_test "a value that is not a number at load: in-tree fails to load (known)"
	load_ipoib && slowwait 10 test -d /sys/class/net/ib1 >/dev/null
fi

# At run time: refused, logged, unchanged.
if [[ $IPOIB == ours ]]; then
	RET=0
	mark=$(dmesg | wc -l)
	for w in "max_paths 5 16..1048576" "max_paths x 16..1048576" \
		 "max_sendonly 0 1..65536" "max_full_groups 65537 1..65536"; do
		read -r name bad range <<<"$w"
		old=$(param "$name")
		# bash's echo reports the write's errno (dash's says EIO)
		err=$(bash -c 'echo "$1" >"$2"' - "$bad" "$P/$name" 2>&1)
		check_fail $? "$name took '$bad' at run time"
		grep -q "Invalid argument" <<<"$err"
		check_err $? "$name=$bad: '$err' is not EINVAL"
		[[ $(param "$name") == "$old" ]]
		(($? == 0)) || check_err 1 "$name changed to $(param "$name") by a refused write"
		log_since "$mark" | grep -q "ib_ipoib: $name refused: give a number in $range"
		check_err $? "$name=$bad: no log line naming the range"
	done
	echo 64 >$P/max_paths && [[ $(param max_paths) == 64 ]]
	(($? == 0)) || check_err 1 "max_paths 64 at run time: reads $(param max_paths)"
	log_test "at run time a bad value is refused with EINVAL and logged, a good one taken"
else
	ktap_skip "at run time a bad value is refused" "in-tree's parameters are read-only"
fi

ktap_finish
