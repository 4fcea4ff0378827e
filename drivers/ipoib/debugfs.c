// SPDX-License-Identifier: GPL-2.0
/*
 * ipoib-ng: debugfs view of each interface's multicast groups, paths and
 * connections, under ipoib/<N>/, N a number no other interface gets while
 * the module is loaded (in-tree uses <ifname>_mcg and <ifname>_path,
 * which collide between namespaces; an ifindex and a netns inode recur
 * too, after netns moves and deletions). The directory also holds
 * "name", "ifindex" and "netns" (its inode), read when they are read.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <net/net_namespace.h>

#include "ipoib.h"

static struct dentry *ipoib_debugfs_root;

static const char * const ipoib_mcast_states[] = {
	[IPOIB_MCAST_IDLE] = "idle",
	[IPOIB_MCAST_JOINING] = "joining",
	[IPOIB_MCAST_JOINED] = "joined",
	[IPOIB_MCAST_FAILED] = "failed",
};

static int ipoib_mcg_show(struct seq_file *m, void *unused)
{
	struct ipoib_dev_priv *priv = m->private;
	struct ipoib_mcast *mc;

	seq_puts(m, "# mgid mlid state status join queued\n");
	spin_lock_irq(&priv->lock);
	list_for_each_entry(mc, &priv->mcasts, list)
		seq_printf(m, "%pI6c 0x%04x %s %d %s %u\n", mc->mgid.raw,
			   mc->state == IPOIB_MCAST_JOINED ?
			   be16_to_cpu(mc->rec.mlid) : 0,
			   ipoib_mcast_states[mc->state], mc->status,
			   mc->sendonly ? "sendonly" : "full",
			   skb_queue_len(&mc->queue));
	spin_unlock_irq(&priv->lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ipoib_mcg);

static int ipoib_path_show(struct seq_file *m, void *unused)
{
	struct ipoib_dev_priv *priv = m->private;
	struct ipoib_path *path;
	unsigned int bkt;

	seq_puts(m, "# dgid dlid state queued\n");
	spin_lock_irq(&priv->lock);
	hash_for_each(priv->paths, bkt, path, node)
		seq_printf(m, "%pI6c 0x%04x %s %u\n", path->dgid.raw, path->dlid,
			   path->ah ? "resolved" :
			   path->query ? "resolving" : "failed",
			   skb_queue_len(&path->queue));
	spin_unlock_irq(&priv->lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ipoib_path);

static const char * const ipoib_cm_tx_states[] = {
	[IPOIB_CM_TX_IDLE] = "idle",
	[IPOIB_CM_TX_CONNECTING] = "connecting",
	[IPOIB_CM_TX_UP] = "up",
	[IPOIB_CM_TX_CLOSING] = "closing",
	[IPOIB_CM_TX_DYING] = "dying",
};

static const char * const ipoib_cm_rx_states[] = {
	[IPOIB_CM_RX_LIVE] = "live",
	[IPOIB_CM_RX_ERROR] = "error",
	[IPOIB_CM_RX_FLUSH] = "flush",
	[IPOIB_CM_RX_DRAIN] = "drain",
	[IPOIB_CM_RX_DEAD] = "dead",
};

static void ipoib_cm_rx_list_show(struct seq_file *m, struct list_head *list)
{
	struct ipoib_cm_rx *rx;

	list_for_each_entry(rx, list, node)
		seq_printf(m, "in 0x%06x %s\n", rx->remote_qpn,
			   ipoib_cm_rx_states[rx->state]);
}

/*
 * Connections, after the mode and three lines of limits and counters
 * (max_cm_passive, max_cm_active, SRQ slots whose repost failed, the
 * entries kept per GID): "out <dgid>
 * <peer UD QPN> <state> <peer MTU> <queued>
 * [datagram for <s>s]" for those we initiated, "in <peer RC QPN> <state>"
 * for those peers initiated.
 */
static int ipoib_cm_show(struct seq_file *m, void *unused)
{
	struct ipoib_dev_priv *priv = m->private;
	struct ipoib_path *path;
	struct ipoib_cm_tx *tx;
	unsigned int bkt;

	seq_printf(m, "# mode %s, %s\n", priv->cm_mode ? "connected" : "datagram",
		   priv->srq ? "SRQ" : "a receive ring per connection");
	spin_lock_irq(&priv->lock);
	seq_printf(m, "# passive %u/%u evicted %llu refused %llu, active %u/%u evicted %llu refused %llu\n",
		   priv->cm_rx_count, ipoib_max_cm_passive,
		   priv->cm_passive_evicted, priv->cm_passive_refused,
		   priv->cm_tx_qps, ipoib_max_cm_active,
		   priv->cm_active_evicted, priv->cm_active_refused);
	seq_printf(m, "# srq stranded %u reposted %llu\n",
		   READ_ONCE(priv->srq_stranded), READ_ONCE(priv->srq_reposted));
	seq_printf(m, "# per path %u, evicted %llu refused %llu\n",
		   IPOIB_CM_TX_PER_PATH, priv->cm_path_evicted,
		   priv->cm_path_refused);
	hash_for_each(priv->paths, bkt, path, node) {
		list_for_each_entry(tx, &path->cm_tx, node) {
			seq_printf(m, "out %pI6c 0x%06x %s %u %u", path->dgid.raw,
				   tx->qpn, ipoib_cm_tx_states[tx->state],
				   tx->state == IPOIB_CM_TX_UP ? tx->mtu : 0,
				   skb_queue_len(&tx->queue));
			if (tx->retry_later && time_before(jiffies, tx->retry_after))
				seq_printf(m, " datagram for %lus",
					   (tx->retry_after - jiffies) / HZ + 1);
			seq_putc(m, '\n');
		}
	}
	ipoib_cm_rx_list_show(m, &priv->cm_passive);
	ipoib_cm_rx_list_show(m, &priv->cm_flush);
	ipoib_cm_rx_list_show(m, &priv->cm_drain);
	ipoib_cm_rx_list_show(m, &priv->cm_dead);
	spin_unlock_irq(&priv->lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ipoib_cm);

/*
 * Counters of the bounded tables, "name value" per line: how many paths
 * the interface holds against max_paths, how many were evicted to make
 * room for a new one, and how many packets found no room at all.
 */
static int ipoib_stats_show(struct seq_file *m, void *unused)
{
	struct ipoib_dev_priv *priv = m->private;

	spin_lock_irq(&priv->lock);
	seq_printf(m, "paths %u\n", priv->npaths);
	seq_printf(m, "max_paths %u\n", READ_ONCE(ipoib_max_paths));
	seq_printf(m, "path_evictions %llu\n", priv->path_evictions);
	seq_printf(m, "path_drops %llu\n", priv->path_drops);
	seq_printf(m, "answer_paths %u\n", priv->nanswers);
	seq_printf(m, "path_answer_evictions %llu\n",
		   priv->path_answer_evictions);
	seq_printf(m, "path_revalidations %llu\n", priv->path_revalidations);
	seq_printf(m, "max_full_groups %u\n", READ_ONCE(ipoib_max_full_groups));
	seq_printf(m, "full_groups_over %u\n", priv->full_over);
	seq_printf(m, "full_groups_refused %llu\n", priv->full_refused);
	seq_printf(m, "sendonly_groups %u\n", priv->nsendonly);
	seq_printf(m, "max_sendonly %u\n", READ_ONCE(ipoib_max_sendonly));
	seq_printf(m, "sendonly_expired %llu\n", priv->sendonly_expired);
	seq_printf(m, "sendonly_evictions %llu\n", priv->sendonly_evictions);
	seq_printf(m, "sendonly_drops %llu\n", priv->sendonly_drops);
	seq_printf(m, "napi_max_polled %d\n", READ_ONCE(priv->napi_max_polled));
	seq_printf(m, "send_napi_max_polled %d\n",
		   READ_ONCE(priv->send_napi_max_polled));
	seq_printf(m, "napi_poll_cap %d\n", priv->napi.weight);
	seq_printf(m, "cm_passive_failed %llu\n", priv->cm_passive_failed);
	seq_printf(m, "cm_rnr_fallbacks %llu\n", READ_ONCE(priv->cm_rnr_fallbacks));
	seq_printf(m, "cm_tx_stalled_drops %llu\n",
		   READ_ONCE(priv->cm_tx_stalled_drops));
	seq_printf(m, "tx_timeouts %llu\n", READ_ONCE(priv->tx_timeouts));
	spin_unlock_irq(&priv->lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ipoib_stats);

static int ipoib_name_show(struct seq_file *m, void *unused)
{
	struct ipoib_dev_priv *priv = m->private;

	seq_printf(m, "%s\n", priv->dev->name);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ipoib_name);

static int ipoib_ifindex_show(struct seq_file *m, void *unused)
{
	struct ipoib_dev_priv *priv = m->private;

	seq_printf(m, "%d\n", READ_ONCE(priv->dev->ifindex));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ipoib_ifindex);

static int ipoib_netns_show(struct seq_file *m, void *unused)
{
	struct ipoib_dev_priv *priv = m->private;

	/* the netns cannot change under rtnl; a racing read is one or other */
	rcu_read_lock();
	seq_printf(m, "net:[%u]\n", dev_net_rcu(priv->dev)->ns.inum);
	rcu_read_unlock();
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ipoib_netns);

static atomic_t ipoib_debugfs_seq = ATOMIC_INIT(0);

void ipoib_debugfs_add(struct ipoib_dev_priv *priv)
{
	char name[16];

	snprintf(name, sizeof(name), "%u",
		 (unsigned int)atomic_inc_return(&ipoib_debugfs_seq));
	priv->debugfs = debugfs_create_dir(name, ipoib_debugfs_root);
	debugfs_create_file("name", 0444, priv->debugfs, priv, &ipoib_name_fops);
	debugfs_create_file("ifindex", 0444, priv->debugfs, priv,
			    &ipoib_ifindex_fops);
	debugfs_create_file("netns", 0444, priv->debugfs, priv,
			    &ipoib_netns_fops);
	debugfs_create_file("mcg", 0444, priv->debugfs, priv, &ipoib_mcg_fops);
	debugfs_create_file("path", 0444, priv->debugfs, priv, &ipoib_path_fops);
	debugfs_create_file("cm", 0444, priv->debugfs, priv, &ipoib_cm_fops);
	debugfs_create_file("stats", 0444, priv->debugfs, priv,
			    &ipoib_stats_fops);
}

/* Before the interface's state goes: waits for readers. */
void ipoib_debugfs_remove(struct ipoib_dev_priv *priv)
{
	debugfs_remove_recursive(priv->debugfs);
	priv->debugfs = NULL;
}

void ipoib_debugfs_init(void)
{
	ipoib_debugfs_root = debugfs_create_dir(IPOIB_LINK_KIND, NULL);
}

void ipoib_debugfs_cleanup(void)
{
	debugfs_remove_recursive(ipoib_debugfs_root);
}
