// SPDX-License-Identifier: GPL-2.0
/*
 * softib: the control and observation surface under debugfs
 * softib/<device>/. Documented in Documentation/softib.rst.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>

#include "softib.h"

static const char * const softib_drop_names[SOFTIB_DROP_MAX] = {
	[SOFTIB_DROP_NO_DEST] = "drop_no_dest",
	[SOFTIB_DROP_NO_QP] = "drop_no_qp",
	[SOFTIB_DROP_PKEY] = "drop_pkey",
	[SOFTIB_DROP_QKEY] = "drop_qkey",
	[SOFTIB_DROP_NO_RWQE] = "drop_no_rwqe",
	[SOFTIB_DROP_TOO_LONG] = "drop_too_long",
	[SOFTIB_DROP_PORT_DOWN] = "drop_port_down",
};

static int softib_objects_show(struct seq_file *m, void *unused)
{
	struct softib_dev *sdev = m->private;

	seq_printf(m, "pd %d\nah %d\ncq %d\nqp %d\nsrq %d\nmr %d\nmcast_groups %u\n",
		   atomic_read(&sdev->n_pd), atomic_read(&sdev->n_ah),
		   atomic_read(&sdev->n_cq), atomic_read(&sdev->n_qp),
		   atomic_read(&sdev->n_srq), atomic_read(&sdev->n_mr),
		   READ_ONCE(sdev->n_mcast));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(softib_objects);

static int softib_counters_show(struct seq_file *m, void *unused)
{
	struct softib_port *port = m->private;
	struct softib_counters *c = &port->cnt;
	int i;

	seq_printf(m, "xmit_packets %lld\nxmit_bytes %lld\n",
		   atomic64_read(&c->xmit_packets), atomic64_read(&c->xmit_bytes));
	seq_printf(m, "rcv_packets %lld\nrcv_bytes %lld\n",
		   atomic64_read(&c->rcv_packets), atomic64_read(&c->rcv_bytes));
	for (i = 0; i < SOFTIB_DROP_MAX; i++)
		seq_printf(m, "%s %lld\n", softib_drop_names[i],
			   atomic64_read(&c->drops[i]));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(softib_counters);

static ssize_t softib_link_read(struct file *file, char __user *buf,
				size_t count, loff_t *ppos)
{
	struct softib_port *port = file->private_data;
	const char *s = READ_ONCE(port->state) == IB_PORT_ACTIVE ? "up\n" :
								    "down\n";

	return simple_read_from_buffer(buf, count, ppos, s, strlen(s));
}

static ssize_t softib_link_write(struct file *file, const char __user *ubuf,
				 size_t count, loff_t *ppos)
{
	struct softib_port *port = file->private_data;
	char buf[8] = {};

	if (count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	if (sysfs_streq(buf, "up")) {
		softib_port_set_state(port, IB_PORT_ACTIVE);
	} else if (sysfs_streq(buf, "down")) {
		softib_port_set_state(port, IB_PORT_DOWN);
	} else {
		pr_info("softib: port %u link: write \"up\" or \"down\"\n",
			port->num);
		return -EINVAL;
	}
	return count;
}

static const struct file_operations softib_link_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = softib_link_read,
	.write = softib_link_write,
	.llseek = default_llseek,
};

void softib_debugfs_init(struct softib_dev *sdev)
{
	struct dentry *ports;
	u32 i;

	sdev->debugfs_root = debugfs_create_dir("softib", NULL);
	sdev->debugfs = debugfs_create_dir(dev_name(&sdev->ibdev.dev),
					   sdev->debugfs_root);
	debugfs_create_file("objects", 0444, sdev->debugfs, sdev,
			    &softib_objects_fops);
	ports = debugfs_create_dir("ports", sdev->debugfs);
	for (i = 0; i < sdev->nports; i++) {
		struct softib_port *port = &sdev->ports[i];
		struct dentry *dir;
		char name[8];

		snprintf(name, sizeof(name), "%u", port->num);
		dir = debugfs_create_dir(name, ports);
		debugfs_create_file("counters", 0444, dir, port,
				    &softib_counters_fops);
		debugfs_create_file("link", 0644, dir, port, &softib_link_fops);
	}
}

void softib_debugfs_cleanup(struct softib_dev *sdev)
{
	debugfs_remove_recursive(sdev->debugfs_root);
}
