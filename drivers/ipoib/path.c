// SPDX-License-Identifier: GPL-2.0
/*
 * ipoib-ng: unicast paths. A destination GID is resolved into an address
 * handle by an SA PathRecord query (DGID, SGID, P_Key); up to three
 * packets wait per unresolved path. Paths are flushed whenever the port or
 * the partition changes; in-flight sends hold their own reference on the
 * address handle, so a flush never frees one under the hardware.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#include <linux/jhash.h>
#include <linux/slab.h>
#include <net/arp.h>

#include "ipoib.h"

static u32 ipoib_gid_hash(const union ib_gid *gid)
{
	return jhash(gid->raw, sizeof(gid->raw), 0);
}

static struct ipoib_path *ipoib_path_find(struct ipoib_dev_priv *priv,
					  const union ib_gid *gid)
{
	struct ipoib_path *path;

	lockdep_assert_held(&priv->lock);
	hash_for_each_possible(priv->paths, path, node, ipoib_gid_hash(gid))
		if (!memcmp(&path->dgid, gid, sizeof(*gid)))
			return path;
	return NULL;
}

static void ipoib_path_done(int status, struct sa_path_rec *rec,
			    COMPAT_NUM_PRS num_prs, void *context)
{
	struct ipoib_path *path = context;
	struct ipoib_dev_priv *priv = path->priv;
	struct ipoib_ah *ah = NULL, *old = NULL;
	struct rdma_ah_attr attr;
	struct sk_buff_head queue;
	unsigned long flags;

	if (!status && rec && num_prs &&
	    !ib_init_ah_attr_from_path(priv->ca, priv->port, rec, &attr, NULL)) {
		ah = ipoib_ah_create(priv, &attr);
		rdma_destroy_ah_attr(&attr);
	}
	if (ah)
		ipoib_dbg(priv, "path to %pI6c resolved: DLID 0x%04x\n",
			  path->dgid.raw, be32_to_cpu(sa_path_get_dlid(rec)));
	else
		ipoib_dbg(priv, "path to %pI6c not resolved: %d\n",
			  path->dgid.raw, status);

	__skb_queue_head_init(&queue);
	spin_lock_irqsave(&priv->lock, flags);
	if (ah) {
		old = path->ah;
		path->ah = ah;
		path->dlid = be32_to_cpu(sa_path_get_dlid(rec));
		path->rec = *rec;
	} else {
		path->retry_after = jiffies + HZ;
	}
	skb_queue_splice_init(&path->queue, &queue);
	path->query = NULL;
	/* from here on a flush may free the path: do not touch it again */
	complete(&path->done);
	spin_unlock_irqrestore(&priv->lock, flags);
	ipoib_ah_put(old);

	ipoib_release_queue(priv, &queue, ah);
}

static void ipoib_path_query(struct ipoib_dev_priv *priv,
			     struct ipoib_path *path)
{
	struct sa_path_rec rec = {
		.rec_type = SA_PATH_REC_TYPE_IB,
		.dgid = path->dgid,
		.sgid = priv->local_gid,
		.numb_path = 1,
		.pkey = cpu_to_be16(priv->pkey),
	};
	int id;

	lockdep_assert_held(&priv->lock);
	reinit_completion(&path->done);
	id = ib_sa_path_rec_get(&ipoib_sa_client, priv->ca, priv->port, &rec,
				IB_SA_PATH_REC_DGID | IB_SA_PATH_REC_SGID |
				IB_SA_PATH_REC_NUMB_PATH |
				IB_SA_PATH_REC_TRAFFIC_CLASS |
				IB_SA_PATH_REC_PKEY,
				1000, GFP_ATOMIC, ipoib_path_done, path,
				&path->query);
	if (id < 0) {
		path->query = NULL;
		path->retry_after = jiffies + HZ;
		complete(&path->done);
		return;
	}
	path->query_id = id;
}

netdev_tx_t ipoib_unicast_xmit(struct ipoib_dev_priv *priv,
			       struct sk_buff *skb, const u8 *daddr)
{
	u32 qpn = ((daddr[1] << 16) | (daddr[2] << 8) | daddr[3]) &
		  IPOIB_QPN_MASK;
	const union ib_gid *gid = (const union ib_gid *)(daddr + 4);
	struct ipoib_path *path;
	struct ipoib_ah *ah;
	unsigned long flags;
	unsigned int mtu;
	int ret;

	spin_lock_irqsave(&priv->lock, flags);
	path = ipoib_path_find(priv, gid);
	if (path)
		path->last_used = jiffies;
	if (path && path->ah) {
		if (ipoib_cm_wanted(priv, skb, daddr)) {
			ret = ipoib_cm_xmit(priv, path, skb, qpn, &mtu);
			if (ret <= 0) {
				spin_unlock_irqrestore(&priv->lock, flags);
				if (ret)
					ipoib_too_big(priv, skb, mtu);
				return NETDEV_TX_OK;
			}
		}
		ah = path->ah;
		kref_get(&ah->ref);
		spin_unlock_irqrestore(&priv->lock, flags);
		/* connected-mode MTU, but this peer is reached over UD */
		if (skb->len > priv->mcast_mtu + IPOIB_ENCAP_LEN)
			ipoib_too_big(priv, skb, priv->mcast_mtu);
		else
			ipoib_send(priv, skb, ah, qpn, priv->qkey);
		ipoib_ah_put(ah);
		return NETDEV_TX_OK;
	}

	if (!path) {
		path = kzalloc(sizeof(*path), GFP_ATOMIC);
		if (!path)
			goto drop;
		path->dgid = *gid;
		path->priv = priv;
		path->last_used = jiffies;
		INIT_LIST_HEAD(&path->cm_tx);
		skb_queue_head_init(&path->queue);
		init_completion(&path->done);
		complete(&path->done);	/* no query in flight */
		hash_add(priv->paths, &path->node, ipoib_gid_hash(gid));
	}
	if (ipoib_park(&path->queue, IPOIB_MAX_PATH_QUEUE, skb))
		skb = NULL;
	if (!path->query && time_after_eq(jiffies, path->retry_after))
		ipoib_path_query(priv, path);
drop:
	spin_unlock_irqrestore(&priv->lock, flags);
	if (skb)
		ipoib_drop(priv, skb);
	return NETDEV_TX_OK;
}

/*
 * Free a path already out of the table: wait for its query's callback,
 * close its connections, drop what waited, release the address handle
 * (sends in flight keep theirs). Process context.
 */
static void ipoib_path_free(struct ipoib_path *path)
{
	wait_for_completion(&path->done);
	ipoib_cm_path_release(path);
	skb_queue_purge(&path->queue);
	ipoib_ah_put(path->ah);
	kfree(path);
}

/* Forget every path, cancelling the queries in flight. */
void ipoib_flush_paths(struct ipoib_dev_priv *priv)
{
	struct ipoib_path *path, *tmp;
	struct hlist_node *n;
	LIST_HEAD(dead);
	unsigned int bkt;

	ASSERT_RTNL();
	spin_lock_irq(&priv->lock);
	hash_for_each_safe(priv->paths, bkt, n, path, node) {
		hash_del(&path->node);
		list_add_tail(&path->flush, &dead);
		if (path->query)
			ib_sa_cancel_query(path->query_id, path->query);
	}
	spin_unlock_irq(&priv->lock);

	list_for_each_entry_safe(path, tmp, &dead, flush)
		ipoib_path_free(path);
}

static unsigned long ipoib_gc_interval(void)
{
	return max_t(unsigned long, READ_ONCE(arp_tbl.gc_interval), HZ);
}

void ipoib_path_gc_start(struct ipoib_dev_priv *priv)
{
	queue_delayed_work(ipoib_wq, &priv->gc_work, ipoib_gc_interval());
}

/*
 * Forget resolved or failed paths nobody sent to for two intervals. A
 * path with a query in flight or packets waiting is busy by definition.
 */
void ipoib_path_gc_work(struct work_struct *work)
{
	struct ipoib_dev_priv *priv = container_of(work, struct ipoib_dev_priv,
						   gc_work.work);
	unsigned long interval = ipoib_gc_interval();
	struct ipoib_path *path, *tmp;
	unsigned int bkt, n = 0;
	struct hlist_node *next;
	LIST_HEAD(dead);

	spin_lock_irq(&priv->lock);
	hash_for_each_safe(priv->paths, bkt, next, path, node) {
		if (path->query || !skb_queue_empty(&path->queue) ||
		    time_before(jiffies, path->last_used + 2 * interval))
			continue;
		hash_del(&path->node);
		list_add_tail(&path->flush, &dead);
	}
	spin_unlock_irq(&priv->lock);

	list_for_each_entry_safe(path, tmp, &dead, flush) {
		ipoib_path_free(path);
		n++;
	}
	if (n)
		ipoib_dbg(priv, "forgot %u idle paths\n", n);
	queue_delayed_work(ipoib_wq, &priv->gc_work, interval);
}
