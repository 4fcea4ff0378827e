// SPDX-License-Identifier: GPL-2.0
/*
 * ipoib-ng: module entry and the ib_client that follows HCAs coming and
 * going. The network interfaces hang off this in a later stage.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitmap.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "ipoib.h"

static int ipoib_add_one(struct ib_device *ca);
static void ipoib_remove_one(struct ib_device *ca, void *client_data);

static struct ib_client ipoib_client = {
	.name = "ipoib",
	.add = ipoib_add_one,
	.remove = ipoib_remove_one,
};

static int ipoib_add_one(struct ib_device *ca)
{
	struct ipoib_dev *idev;
	unsigned int found = 0;
	u32 p;

	idev = kzalloc(sizeof(*idev), GFP_KERNEL);
	if (!idev)
		return -ENOMEM;
	idev->ib_ports = bitmap_zalloc(rdma_end_port(ca), GFP_KERNEL);
	if (!idev->ib_ports) {
		kfree(idev);
		return -ENOMEM;
	}
	idev->ca = ca;
	idev->nports = rdma_end_port(ca);

	/* IPoIB runs only on InfiniBand-link-layer ports (not RoCE/iWARP) */
	rdma_for_each_port(ca, p) {
		if (!rdma_protocol_ib(ca, p))
			continue;
		set_bit(p - 1, idev->ib_ports);
		found++;
	}
	if (!found) {
		bitmap_free(idev->ib_ports);
		kfree(idev);
		return -EOPNOTSUPP;
	}

	dev_dbg(&ca->dev, "ipoib: %u InfiniBand port(s)\n", found);
	ib_set_client_data(ca, &ipoib_client, idev);
	return 0;
}

static void ipoib_remove_one(struct ib_device *ca, void *client_data)
{
	struct ipoib_dev *idev = client_data;

	bitmap_free(idev->ib_ports);
	kfree(idev);
}

static int __init ipoib_init_module(void)
{
	return ib_register_client(&ipoib_client);
}

static void __exit ipoib_cleanup_module(void)
{
	ib_unregister_client(&ipoib_client);
}

module_init(ipoib_init_module);
module_exit(ipoib_cleanup_module);

MODULE_AUTHOR("The ipoib-ng authors");
MODULE_DESCRIPTION("IP-over-InfiniBand net driver (ipoib-ng)");
MODULE_LICENSE("GPL");
MODULE_VERSION(IPOIB_NG_VERSION);
