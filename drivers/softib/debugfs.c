// SPDX-License-Identifier: GPL-2.0
/*
 * softib: the control and observation surface under debugfs
 * softib/<device>/. Documented in Documentation/softib.rst.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
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

/* The multicast groups QPs are attached to: MLID, MGID, attached QPs. */
static int softib_mcast_show(struct seq_file *m, void *unused)
{
	struct softib_dev *sdev = m->private;
	struct softib_mcast *mc;

	rcu_read_lock();
	list_for_each_entry_rcu(mc, &sdev->mcast, list)
		seq_printf(m, "0x%04x %pI6 %u\n", mc->mlid, mc->mgid.raw,
			   READ_ONCE(mc->n_attached));
	rcu_read_unlock();
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(softib_mcast);

static int softib_sa_mcg_show(struct seq_file *m, void *unused)
{
	return softib_sa_members_show(m, m->private);
}
DEFINE_SHOW_ATTRIBUTE(softib_sa_mcg);

static int softib_switch_dbg_show(struct seq_file *m, void *unused)
{
	return softib_switch_show(m, m->private);
}
DEFINE_SHOW_ATTRIBUTE(softib_switch_dbg);

static int softib_stats_show(struct seq_file *m, void *unused)
{
	struct softib_dev *sdev = m->private;

	seq_printf(m, "purged_cqes %lld\nwrid_errors %lld\n",
		   atomic64_read(&sdev->purged_cqes),
		   atomic64_read(&sdev->wrid_errors));
	seq_printf(m, "sa_groups %u\nsa_groups_max %u\nsa_groups_refused %lld\n",
		   READ_ONCE(sdev->sa_groups), sdev->sa_max_groups,
		   atomic64_read(&sdev->sa_groups_refused));
	seq_printf(m, "sa_requests %lld\nsa_replies_delayed %lld\nsa_replies_waiting %u\n",
		   atomic64_read(&sdev->sa_requests),
		   atomic64_read(&sdev->sa_replies_delayed),
		   READ_ONCE(sdev->n_sa_delayed));
	seq_printf(m, "sa_path_queries %lld\nsa_path_peak_per_sec %u\n",
		   atomic64_read(&sdev->sa_path_queries),
		   READ_ONCE(sdev->sa_path_peak));
	seq_printf(m, "sa_mc_joins %lld\nsa_mc_leaves %lld\n",
		   atomic64_read(&sdev->sa_mc_joins),
		   atomic64_read(&sdev->sa_mc_leaves));
	seq_printf(m, "sa_rmpp_started %lld\nsa_rmpp_done %lld\nsa_rmpp_segments %lld\nsa_rmpp_aborted %lld\nsa_rmpp_evicted %lld\nsa_rmpp_active %u\n",
		   atomic64_read(&sdev->sa_rmpp_started),
		   atomic64_read(&sdev->sa_rmpp_done),
		   atomic64_read(&sdev->sa_rmpp_segments),
		   atomic64_read(&sdev->sa_rmpp_aborted),
		   atomic64_read(&sdev->sa_rmpp_evicted),
		   READ_ONCE(sdev->n_sa_rmpp));
	seq_printf(m, "lso_sends %lld\nlso_segments %lld\ncsum_filled %lld\ncsum_verified %lld\ncsum_unverified %lld\n",
		   atomic64_read(&sdev->lso_sends),
		   atomic64_read(&sdev->lso_segments),
		   atomic64_read(&sdev->csum_filled),
		   atomic64_read(&sdev->csum_verified),
		   atomic64_read(&sdev->csum_unverified));
	seq_printf(m, "qp_fatal_events %lld\nqp_req_err_events %lld\nqp_access_err_events %lld\nqp_last_wqe_events %lld\n",
		   atomic64_read(&sdev->qp_events[SOFTIB_EV_FATAL]),
		   atomic64_read(&sdev->qp_events[SOFTIB_EV_REQ_ERR]),
		   atomic64_read(&sdev->qp_events[SOFTIB_EV_ACCESS_ERR]),
		   atomic64_read(&sdev->qp_events[SOFTIB_EV_LAST_WQE]));
	seq_printf(m, "sma_answered %lld\nsma_errors %lld\nsma_dropped %lld\n",
		   atomic64_read(&sdev->sma_answered),
		   atomic64_read(&sdev->sma_errors),
		   atomic64_read(&sdev->sma_dropped));
	seq_printf(m, "sm_master %u\nsm_master_changes %lld\nsm_mft_sets %lld\nsa_standby_drops %lld\n",
		   READ_ONCE(sdev->sm_master),
		   atomic64_read(&sdev->sm_master_changes),
		   atomic64_read(&sdev->sm_mft_sets),
		   atomic64_read(&sdev->sa_standby_drops));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(softib_stats);

static int softib_vnodes_show(struct seq_file *m, void *unused)
{
	return softib_vnode_show(m, m->private);
}
DEFINE_SHOW_ATTRIBUTE(softib_vnodes);

/* The SA's busiest second of PathRecord queries; a write starts anew. */
static int softib_sa_path_peak_show(struct seq_file *m, void *unused)
{
	struct softib_dev *sdev = m->private;

	seq_printf(m, "%u\n", READ_ONCE(sdev->sa_path_peak));
	return 0;
}

static int softib_sa_path_peak_open(struct inode *inode, struct file *file)
{
	return single_open(file, softib_sa_path_peak_show, inode->i_private);
}

static ssize_t softib_sa_path_peak_write(struct file *file,
					 const char __user *ubuf, size_t count,
					 loff_t *ppos)
{
	struct seq_file *m = file->private_data;

	softib_sa_reset_peak(m->private);
	return count;
}

static const struct file_operations softib_sa_path_peak_fops = {
	.owner = THIS_MODULE,
	.open = softib_sa_path_peak_open,
	.read = seq_read,
	.write = softib_sa_path_peak_write,
	.llseek = seq_lseek,
	.release = single_release,
};

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
	/* a cable plugged in or pulled out: the link trains or polls */
	if (sysfs_streq(buf, "up")) {
		WRITE_ONCE(port->cabled, true);
		softib_port_phys(port, IB_PORT_PHYS_STATE_LINK_UP);
	} else if (sysfs_streq(buf, "down")) {
		WRITE_ONCE(port->cabled, false);
		cancel_delayed_work(&port->link_work);
		softib_port_phys(port, IB_PORT_PHYS_STATE_POLLING);
	} else {
		pr_info("port %u link: write \"up\" or \"down\"\n",
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

/*
 * One open of the partitions file: the text written so far. The struct
 * file can be shared (dup, fork): f_pos_lock serialises write() against
 * write(), but ->flush runs at every close of any descriptor of it
 * without that lock, and io_uring writes bypass it, so "lock" guards
 * buf and len against a flush kfree()ing them during a write.
 */
struct softib_policy_open {
	struct softib_dev *sdev;
	struct mutex lock;	/* buf and len */
	char *buf;
	size_t len;
};

static int softib_partitions_show(struct seq_file *m, void *unused)
{
	struct softib_policy_open *po = m->private;
	struct softib_dev *sdev = po->sdev;

	mutex_lock(&sdev->sa_lock);
	seq_puts(m, sdev->policy_text ?: "");
	mutex_unlock(&sdev->sa_lock);
	return 0;
}

static int softib_partitions_open(struct inode *inode, struct file *file)
{
	struct softib_policy_open *po;
	int ret;

	/* with sm=none the partitions are the external SM's to configure */
	if ((file->f_mode & FMODE_WRITE) && !softib_builtin_sm) {
		pr_warn_ratelimited("partitions: the subnet has no built-in SM (sm=none): edit the partitions.conf of the SM that runs and signal it\n");
		return -EBUSY;
	}
	po = kzalloc(sizeof(*po), GFP_KERNEL);
	if (!po)
		return -ENOMEM;
	po->sdev = inode->i_private;
	mutex_init(&po->lock);
	ret = single_open(file, softib_partitions_show, po);
	if (ret) {
		mutex_destroy(&po->lock);
		kfree(po);
	}
	return ret;
}

/*
 * A policy may arrive in several writes (shells write line by line); it is
 * collected here and takes effect when the file is closed.
 */
static ssize_t softib_partitions_write(struct file *file,
				       const char __user *ubuf, size_t count,
				       loff_t *ppos)
{
	struct softib_policy_open *po = ((struct seq_file *)file->private_data)->private;
	ssize_t ret = count;
	char *buf;

	mutex_lock(&po->lock);
	if (po->len + count > SOFTIB_POLICY_MAX) {
		ret = -EFBIG;
		goto out_unlock;
	}
	buf = krealloc(po->buf, po->len + count, GFP_KERNEL);
	if (!buf) {
		ret = -ENOMEM;
		goto out_unlock;
	}
	po->buf = buf;
	if (copy_from_user(po->buf + po->len, ubuf, count)) {
		ret = -EFAULT;
		goto out_unlock;
	}
	po->len += count;
	*ppos += count;
out_unlock:
	mutex_unlock(&po->lock);
	return ret;
}

/*
 * close(): parse and apply what was written. flush's result is what
 * close() returns, so "cat policy > partitions" reports -EINVAL for a bad
 * policy; the active policy then stays in force.
 */
static int softib_partitions_flush(struct file *file, fl_owner_t id)
{
	struct softib_policy_open *po = ((struct seq_file *)file->private_data)->private;
	int ret = 0;

	if (!(file->f_mode & FMODE_WRITE))
		return 0;
	mutex_lock(&po->lock);
	if (po->buf)
		ret = softib_policy_set(po->sdev, po->buf, po->len);
	kfree(po->buf);
	po->buf = NULL;
	po->len = 0;
	mutex_unlock(&po->lock);
	return ret;
}

static int softib_partitions_release(struct inode *inode, struct file *file)
{
	struct softib_policy_open *po = ((struct seq_file *)file->private_data)->private;

	kfree(po->buf);
	mutex_destroy(&po->lock);
	kfree(po);
	return single_release(inode, file);
}

static const struct file_operations softib_partitions_fops = {
	.owner = THIS_MODULE,
	.open = softib_partitions_open,
	.read = seq_read,
	.write = softib_partitions_write,
	.flush = softib_partitions_flush,
	.llseek = seq_lseek,
	.release = softib_partitions_release,
};

static ssize_t softib_event_write(struct file *file, const char __user *ubuf,
				  size_t count, loff_t *ppos)
{
	static const struct {
		const char *name;
		enum ib_event_type type;
	} events[] = {
		{ "client_reregister", IB_EVENT_CLIENT_REREGISTER },
		{ "lid_change", IB_EVENT_LID_CHANGE },
		{ "sm_change", IB_EVENT_SM_CHANGE },
		{ "gid_change", IB_EVENT_GID_CHANGE },
		{ "pkey_change", IB_EVENT_PKEY_CHANGE },
	};
	struct softib_port *port = file->private_data;
	char buf[24] = {};
	unsigned int i;

	if (count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	for (i = 0; i < ARRAY_SIZE(events); i++) {
		if (sysfs_streq(buf, events[i].name)) {
			softib_port_event(port, events[i].type);
			return count;
		}
	}
	pr_info("port %u event: write client_reregister, lid_change, sm_change, gid_change or pkey_change\n",
		port->num);
	return -EINVAL;
}

/* Write a self test's name (selftest.c): the write fails if the test does. */
static ssize_t softib_selftest_write(struct file *file, const char __user *ubuf,
				     size_t count, loff_t *ppos)
{
	struct softib_dev *sdev = file->private_data;
	char buf[16] = {};
	int ret;

	if (count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	ret = softib_selftest(sdev, strim(buf));
	return ret ?: count;
}

static const struct file_operations softib_selftest_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = softib_selftest_write,
	.llseek = noop_llseek,
};

/* "ud|rc SIZE COUNT" runs the fabric's ceiling loop (bench.c) */
static ssize_t softib_bench_write(struct file *file, const char __user *ubuf,
				  size_t count, loff_t *ppos)
{
	struct softib_dev *sdev = file->private_data;
	char buf[32] = {};
	int ret;

	if (count >= sizeof(buf)) {
		pr_info("bench: write \"ud|rc SIZE COUNT\" (at most %zu bytes)\n",
			sizeof(buf) - 1);
		return -EINVAL;
	}
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	mutex_lock(&sdev->bench_lock);
	ret = softib_bench(sdev, strim(buf), sdev->bench_result,
			   sizeof(sdev->bench_result));
	mutex_unlock(&sdev->bench_lock);
	return ret ?: count;
}

static ssize_t softib_bench_read(struct file *file, char __user *ubuf,
				 size_t count, loff_t *ppos)
{
	struct softib_dev *sdev = file->private_data;
	char buf[sizeof(sdev->bench_result)];

	mutex_lock(&sdev->bench_lock);
	strscpy(buf, sdev->bench_result, sizeof(buf));
	mutex_unlock(&sdev->bench_lock);
	return simple_read_from_buffer(ubuf, count, ppos, buf, strlen(buf));
}

static const struct file_operations softib_bench_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = softib_bench_read,
	.write = softib_bench_write,
	.llseek = default_llseek,
};

static const struct file_operations softib_event_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = softib_event_write,
	.llseek = noop_llseek,
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
	debugfs_create_file("stats", 0444, sdev->debugfs, sdev,
			    &softib_stats_fops);
	debugfs_create_file("mcast", 0444, sdev->debugfs, sdev,
			    &softib_mcast_fops);
	debugfs_create_file("sa_members", 0444, sdev->debugfs, sdev,
			    &softib_sa_mcg_fops);
	debugfs_create_file("switch", 0444, sdev->debugfs, sdev,
			    &softib_switch_dbg_fops);
	debugfs_create_file("sa_path_peak", 0600, sdev->debugfs, sdev,
			    &softib_sa_path_peak_fops);
	debugfs_create_file("vnodes", 0444, sdev->debugfs, sdev,
			    &softib_vnodes_fops);
	debugfs_create_file("selftest", 0200, sdev->debugfs, sdev,
			    &softib_selftest_fops);
	debugfs_create_file("bench", 0600, sdev->debugfs, sdev,
			    &softib_bench_fops);
	/* "unsafe": flush must reach us; .owner pins the module while open */
	debugfs_create_file_unsafe("partitions", 0644, sdev->debugfs, sdev,
				   &softib_partitions_fops);
	softib_fault_init(sdev);
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
		debugfs_create_file("event", 0200, dir, port,
				    &softib_event_fops);
		/* test only: puts arbitrary datagrams on the fabric */
		debugfs_create_file("inject", 0200, dir, port,
				    &softib_inject_fops);
	}
}

void softib_debugfs_cleanup(struct softib_dev *sdev)
{
	debugfs_remove_recursive(sdev->debugfs_root);
}
