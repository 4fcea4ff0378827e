/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ipoib-ng: IP over InfiniBand.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#ifndef IPOIB_H
#define IPOIB_H

#include <linux/list.h>
#include <rdma/ib_verbs.h>

/* One HCA we are attached to, and which of its ports speak InfiniBand. */
struct ipoib_dev {
	struct ib_device *ca;
	u32 nports;
	unsigned long *ib_ports;	/* bit p-1 set: port p is an IB port */
};

#endif /* IPOIB_H */
