#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: none
# timeout: 60
#
# The test guest itself: right kernel and modules, debugfs, netns, ib_core,
# and on a lockdep kernel, lockdep still on and silent.

source "$(dirname "$0")/../lib.sh"

ktap_header 8

[[ ${IPOIB_NG_GUEST:-} == 1 ]]
ktap_result $? "running in a test guest"

if [[ -n ${EXPECT_ABI:-} ]]; then
	[[ $(uname -r) == "$EXPECT_ABI" ]]
	ktap_result $? "kernel is $EXPECT_ABI (got $(uname -r))"
else
	ktap_skip "kernel ABI" "EXPECT_ABI not set"
fi

[[ -s /lib/modules/$(uname -r)/modules.dep ]]
ktap_result $? "modules.dep of the test kernel"

[[ -n $KO_DIR && -e $KO_DIR/softib.ko && -e $KO_DIR/ib_ipoib.ko ]]
ktap_result $? "KO_DIR has softib.ko and ib_ipoib.ko"

grep -q '^debugfs /sys/kernel/debug ' /proc/mounts
ktap_result $? "debugfs mounted"

setup_ns ns1 && ip -n "$ns1" link show lo >/dev/null
ktap_result $? "network namespace"

modprobe ib_core && [[ -d /sys/module/ib_core ]]
ktap_result $? "modprobe ib_core"

lockdep_silent "lockdep on and silent"

ktap_finish
