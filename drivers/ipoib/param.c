// SPDX-License-Identifier: GPL-2.0
/*
 * ipoib-ng: bounded numeric module parameters.
 *
 * A value a parameter cannot take is handled in two ways, by when it comes:
 *
 *  - at load time (modprobe.d, the kernel command line), it is clamped
 *    into the range, or the default kept for something that is not a
 *    number, with one warning: a typo in a node's configuration must not
 *    leave the node without IPoIB. In-tree clamps its ring sizes the
 *    same way, silently.
 *  - once the module runs (a write to /sys/module/ib_ipoib/parameters/),
 *    it is refused with EINVAL and one log line: the writer is there to
 *    read the error.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/moduleparam.h>

#include "ipoib.h"

/* set at the end of module init: from then on, bad values are refused */
static bool ipoib_params_live;

void ipoib_params_set_live(void)
{
	WRITE_ONCE(ipoib_params_live, true);
}

static int ipoib_param_range_set(const char *val,
				 const struct kernel_param *kp)
{
	const struct ipoib_param_range *r = kp->arg;
	unsigned int v;
	int ret;

	ret = kstrtouint(val, 0, &v);
	if (!ret && v >= r->min && v <= r->max) {
		WRITE_ONCE(*r->val, v);
		return 0;
	}
	if (READ_ONCE(ipoib_params_live)) {
		pr_warn("%s refused: give a number in %u..%u\n", kp->name,
			r->min, r->max);
		return -EINVAL;
	}
	if (ret) {
		pr_warn("%s=%s is not a number: using the default %u (range %u..%u)\n",
			kp->name, val, *r->val, r->min, r->max);
		return 0;
	}
	v = clamp(v, r->min, r->max);
	pr_warn("%s=%s is outside %u..%u: using %u\n", kp->name, val, r->min,
		r->max, v);
	WRITE_ONCE(*r->val, v);
	return 0;
}

static int ipoib_param_range_get(char *buf, const struct kernel_param *kp)
{
	const struct ipoib_param_range *r = kp->arg;

	return scnprintf(buf, PAGE_SIZE, "%u\n", READ_ONCE(*r->val));
}

const struct kernel_param_ops ipoib_param_range_ops = {
	.set = ipoib_param_range_set,
	.get = ipoib_param_range_get,
};
