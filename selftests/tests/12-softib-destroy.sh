#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: none
# timeout: 60
#
# softib around QP destruction, as mlx4/mlx5 behave: completions of a
# destroyed QP leave its CQs (the others stay, in order), counted in
# debugfs "stats"; and the suite runs with the wr_id check on
# (debug_wrid=1 from lib.sh's load_softib). The fabric's own checks run
# as in-kernel self tests (drivers/softib/selftest.c): an RC QP takes no
# UD datagram (issue 10 S2).

source "$(dirname "$0")/../lib.sh"

stat() {
	awk -v n="$1" '$1 == n { print $2 }' "$SOFTIB_DBG/stats"
}

ktap_header 6

modinfo -F parm "$KO_DIR/softib.ko" | grep -q "^debug_wrid:.*(bool)$"
ktap_result $? "softib.ko has the bool parameter debug_wrid"

load_softib && slowwait 10 softib_ports_active >/dev/null
ktap_result $? "softib loads" || ktap_finish
defer unload_softib

[[ $(cat /sys/module/softib/parameters/debug_wrid) == Y ]]
ktap_result $? "load_softib turns debug_wrid on"

RET=0
[[ $(stat purged_cqes) =~ ^[0-9]+$ && $(stat wrid_errors) == 0 ]]
check_err $? "stats: $(xargs <"$SOFTIB_DBG/stats")"
log_test "debugfs stats: purged_cqes, wrid_errors 0"

# two QPs flush into one CQ, one is destroyed: its 4 completions go,
# the other's 3 stay in order (the write fails otherwise)
RET=0
before=$(stat purged_cqes)
echo purge >"$SOFTIB_DBG/selftest"
check_err $? "selftest purge failed: $(dmesg | grep 'selftest purge' | tail -3)"
after=$(stat purged_cqes)
((after - before == 4))
check_err $? "purged_cqes went from $before to $after"
[[ $(stat wrid_errors) == 0 ]]
check_err $? "wrid_errors $(stat wrid_errors)"
log_test "destroy_qp purges its completions from a shared CQ, keeping the rest"

# a UD send with Q_Key 0 to an RC QP with a receive posted: dropped as
# drop_no_qp, no receive completion (the write fails otherwise)
RET=0
echo ud_to_rc >"$SOFTIB_DBG/selftest"
check_err $? "selftest ud_to_rc failed: $(dmesg | grep 'selftest ud_to_rc' | tail -3)"
log_test "a UD datagram addressed to an RC QP is dropped (drop_no_qp)"

ktap_finish
