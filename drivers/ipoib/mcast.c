// SPDX-License-Identifier: GPL-2.0
/*
 * ipoib-ng: multicast. The broadcast group is joined first (full member;
 * the SM must have created it) and decides Q_Key, MTU and carrier. Groups
 * in the interface's multicast list are then joined as full members,
 * created with the broadcast group's parameters; a packet for any other
 * group triggers a send-only full member join and waits (up to 64 per
 * group) for it. Failed joins back off 1, 2, 4 ... 16 seconds.
 *
 * Send-only groups are created by whoever sends (any user can send a UDP
 * datagram to any group address), so they are bounded (max_sendonly) and
 * left once nobody sent to them for two path-collector periods.
 *
 * Full-member groups are created by whoever joins (any user can open
 * sockets and join groups on any interface), and each takes a group, an
 * MLID, of the subnet's: about 16K on an OpenSM fabric, shared by every
 * host. So they are bounded too (max_full_groups per interface): groups
 * already joined keep their membership, and a group joined beyond the
 * bound is not joined at the SA (its socket receives nothing from the
 * fabric), counted and logged, until groups are left.
 *
 * Every join and leave runs in mcast_work (process context): the SA
 * callbacks only record results, and ib_sa_free_multicast(), which waits
 * for a callback, is never called from one.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#include <linux/moduleparam.h>
#include <linux/slab.h>

#include "ipoib.h"

#define IPOIB_MAX_GROUPS_MAX	65536

unsigned int ipoib_max_sendonly = 1024;
unsigned int ipoib_max_full_groups = 512;

static const struct ipoib_param_range ipoib_max_sendonly_range =
	IPOIB_PARAM_RANGE(ipoib_max_sendonly, 1, IPOIB_MAX_GROUPS_MAX);
module_param_cb(max_sendonly, &ipoib_param_range_ops, (void *)&ipoib_max_sendonly_range,
		0644);
__MODULE_PARM_TYPE(max_sendonly, "uint");
MODULE_PARM_DESC(max_sendonly,
		 "Most send-only multicast groups per interface (1-65536, default 1024)");
static const struct ipoib_param_range ipoib_max_full_groups_range =
	IPOIB_PARAM_RANGE(ipoib_max_full_groups, 1, IPOIB_MAX_GROUPS_MAX);
module_param_cb(max_full_groups, &ipoib_param_range_ops, (void *)&ipoib_max_full_groups_range,
		0644);
__MODULE_PARM_TYPE(max_full_groups, "uint");
MODULE_PARM_DESC(max_full_groups,
		 "Most multicast groups joined as full member per interface, the broadcast group aside (1-65536, default 512)");

static unsigned int ipoib_sendonly_limit(void)
{
	return READ_ONCE(ipoib_max_sendonly);
}

#define IPOIB_JOIN_FULL			1
#define IPOIB_JOIN_SENDONLY_FULL	8

static struct ipoib_mcast *ipoib_mcast_find(struct ipoib_dev_priv *priv,
					    const union ib_gid *mgid)
{
	struct ipoib_mcast *m;

	lockdep_assert_held(&priv->lock);
	hash_for_each_possible(priv->mcast_hash, m, node, ipoib_gid_hash(mgid))
		if (!memcmp(&m->mgid, mgid, sizeof(*mgid)))
			return m;
	return NULL;
}

static struct ipoib_mcast *ipoib_mcast_new(struct ipoib_dev_priv *priv,
					   const union ib_gid *mgid,
					   bool sendonly, gfp_t gfp)
{
	struct ipoib_mcast *m;

	lockdep_assert_held(&priv->lock);
	m = kzalloc(sizeof(*m), gfp);
	if (!m)
		return NULL;
	m->mgid = *mgid;
	m->sendonly = sendonly;
	m->wanted = !sendonly;
	m->last_used = jiffies;
	if (sendonly)
		priv->nsendonly++;
	m->backoff = 1;
	m->priv = priv;
	skb_queue_head_init(&m->queue);
	list_add_tail(&m->list, &priv->mcasts);
	hash_add(priv->mcast_hash, &m->node, ipoib_gid_hash(mgid));
	return m;
}

static void ipoib_mcast_kick(struct ipoib_dev_priv *priv, unsigned long delay)
{
	lockdep_assert_held(&priv->lock);
	if (priv->mcast_running)
		mod_delayed_work(ipoib_wq, &priv->mcast_work, delay);
}

/* The SA accepted a join: make the group usable. Process context. */
static int ipoib_mcast_use(struct ipoib_dev_priv *priv, struct ipoib_mcast *m,
			   struct ib_sa_mcmember_rec *rec)
{
	struct rdma_ah_attr attr;
	struct ipoib_ah *ah;
	int ret;

	if (m == priv->broadcast) {
		ret = ipoib_ud_set_broadcast(priv, be32_to_cpu(rec->qkey),
					     IPOIB_UD_MTU(ib_mtu_enum_to_int(rec->mtu)));
		if (ret)
			return ret;
	}
	ret = ib_init_ah_from_mcmember(priv->ca, priv->port, rec, priv->dev,
				       IB_GID_TYPE_IB, &attr);
	if (ret)
		return ret;
	ah = ipoib_ah_create(priv, &attr);
	rdma_destroy_ah_attr(&attr);
	if (!ah)
		return -ENOMEM;
	/* what this join asked for; m->sendonly may have changed since */
	if (!m->join_sendonly) {
		ret = ipoib_ud_attach_mcast(priv, &m->mgid,
					    be16_to_cpu(rec->mlid),
					    m == priv->broadcast);
		if (ret) {
			ipoib_ah_put(ah);
			return ret;
		}
		m->attached = true;
	}
	m->rec = *rec;
	m->ah = ah;
	return 0;
}

static int ipoib_mcast_join_done(int status, struct ib_sa_multicast *mc)
{
	struct ipoib_mcast *m = mc->context;
	struct ipoib_dev_priv *priv = m->priv;
	struct sk_buff_head queue;
	unsigned long flags;
	bool joined;

	/* the SA lost our membership (e.g. client reregister): join again */
	if (status == -ENETRESET) {
		ipoib_dbg(priv, "SA lost group %pI6c: joining again\n",
			  m->mgid.raw);
		spin_lock_irqsave(&priv->lock, flags);
		m->state = IPOIB_MCAST_IDLE;
		ipoib_mcast_kick(priv, 0);
		spin_unlock_irqrestore(&priv->lock, flags);
		return 0;
	}
	if (!status)
		status = ipoib_mcast_use(priv, m, &mc->rec);

	__skb_queue_head_init(&queue);
	spin_lock_irqsave(&priv->lock, flags);
	joined = !status;
	if (joined && m->join_sendonly != m->sendonly) {
		/*
		 * The group became a full member's (rx_mode_work) while its
		 * send-only join was in flight: the SA has us as send-only,
		 * and a full member must be joined as one. mcast_work leaves
		 * and joins again; what waits for the group keeps waiting.
		 */
		m->state = IPOIB_MCAST_IDLE;
		ipoib_mcast_kick(priv, 0);
		spin_unlock_irqrestore(&priv->lock, flags);
		ipoib_dbg(priv, "%pI6c: send-only join done after it was wanted as full member: joining again\n",
			  m->mgid.raw);
		return 0;
	}
	if (joined) {
		m->state = IPOIB_MCAST_JOINED;
		m->backoff = 1;
	} else {
		m->state = IPOIB_MCAST_FAILED;
		m->status = status;
		m->retry_after = jiffies + m->backoff * HZ;
		m->backoff = min(m->backoff * 2, IPOIB_MAX_BACKOFF);
	}
	skb_queue_splice_init(&m->queue, &queue);
	ipoib_mcast_kick(priv, joined ? 0 : m->backoff * HZ / 2);
	spin_unlock_irqrestore(&priv->lock, flags);
	if (joined)
		ipoib_dbg(priv, "joined %pI6c (%s, MLID 0x%04x)\n", m->mgid.raw,
			  m->sendonly ? "send-only" : "full",
			  be16_to_cpu(mc->rec.mlid));
	else
		ipoib_dbg(priv, "join of %pI6c failed: %d, next try in %us\n",
			  m->mgid.raw, status, m->backoff / 2);

	if (m == priv->broadcast) {
		if (joined)
			ipoib_set_reason(priv, IPOIB_CARRIER_UP, 0);
		else
			ipoib_set_reason(priv, IPOIB_CARRIER_JOIN_FAILED, status);
		if (!joined && net_ratelimit())
			netdev_warn(priv->dev, "cannot join the broadcast group %pI6 (status %d): is P_Key 0x%04x an ipoib partition in the subnet manager's partitions.conf?\n",
				    m->mgid.raw, status, priv->pkey);
	}
	ipoib_release_queue(priv, &queue, joined);
	return 0;
}

/* Start one join; mcast_work only. */
static void ipoib_mcast_join(struct ipoib_dev_priv *priv, struct ipoib_mcast *m)
{
	struct ib_sa_mcmember_rec rec = {
		.mgid = m->mgid,
		.port_gid = priv->local_gid,
		.pkey = cpu_to_be16(priv->pkey),
	};
	ib_sa_comp_mask comp = IB_SA_MCMEMBER_REC_MGID |
			       IB_SA_MCMEMBER_REC_PORT_GID |
			       IB_SA_MCMEMBER_REC_PKEY |
			       IB_SA_MCMEMBER_REC_JOIN_STATE;
	struct ib_sa_multicast *mc;
	unsigned long flags;

	/* rx_mode_work may make it a full member's while this join runs */
	spin_lock_irqsave(&priv->lock, flags);
	m->join_sendonly = m->sendonly;
	spin_unlock_irqrestore(&priv->lock, flags);
	rec.join_state = m->join_sendonly ? IPOIB_JOIN_SENDONLY_FULL :
					    IPOIB_JOIN_FULL;

	if (m != priv->broadcast) {
		/* create the group like the broadcast group if it is new */
		const struct ib_sa_mcmember_rec *b = &priv->broadcast->rec;

		rec.qkey = b->qkey;
		rec.mtu_selector = IB_SA_EQ;
		rec.mtu = b->mtu;
		rec.traffic_class = b->traffic_class;
		rec.rate_selector = IB_SA_EQ;
		rec.rate = b->rate;
		rec.sl = b->sl;
		rec.flow_label = b->flow_label;
		rec.hop_limit = b->hop_limit;
		comp |= IB_SA_MCMEMBER_REC_QKEY | IB_SA_MCMEMBER_REC_MTU_SELECTOR |
			IB_SA_MCMEMBER_REC_MTU | IB_SA_MCMEMBER_REC_TRAFFIC_CLASS |
			IB_SA_MCMEMBER_REC_RATE_SELECTOR | IB_SA_MCMEMBER_REC_RATE |
			IB_SA_MCMEMBER_REC_SL | IB_SA_MCMEMBER_REC_FLOW_LABEL |
			IB_SA_MCMEMBER_REC_HOP_LIMIT;
	}

	mc = ib_sa_join_multicast(&ipoib_sa_client, priv->ca, priv->port, &rec,
				  comp, GFP_KERNEL, ipoib_mcast_join_done, m);
	spin_lock_irqsave(&priv->lock, flags);
	if (IS_ERR(mc)) {
		m->state = IPOIB_MCAST_FAILED;
		m->status = PTR_ERR(mc);
		m->retry_after = jiffies + m->backoff * HZ;
		m->backoff = min(m->backoff * 2, IPOIB_MAX_BACKOFF);
	} else {
		m->mc = mc;
	}
	spin_unlock_irqrestore(&priv->lock, flags);
}

/* Leave a group and forget it: detach, release the SA membership. */
static void ipoib_mcast_leave(struct ipoib_dev_priv *priv, struct ipoib_mcast *m)
{
	ipoib_dbg(priv, "leaving %pI6c\n", m->mgid.raw);
	if (m->mc)
		ib_sa_free_multicast(m->mc);	/* waits for the callback */
	m->mc = NULL;
	if (m->attached)
		ipoib_ud_detach_mcast(priv, &m->mgid, be16_to_cpu(m->rec.mlid));
	m->attached = false;
	ipoib_ah_put(m->ah);
	m->ah = NULL;
}

/*
 * The multicast state machine: leave unwanted groups, (re)start joins
 * whose time has come (the broadcast group before any other), and come
 * back for the next retry.
 */
void ipoib_mcast_work(struct work_struct *work)
{
	struct ipoib_dev_priv *priv = container_of(to_delayed_work(work),
						   struct ipoib_dev_priv,
						   mcast_work);
	unsigned long next = 0, flags;
	struct ipoib_mcast *m, *pick;
	struct sk_buff_head drop;
	bool rejoin;

	for (;;) {
		pick = NULL;
		rejoin = false;
		__skb_queue_head_init(&drop);
		spin_lock_irqsave(&priv->lock, flags);
		if (!priv->mcast_running) {
			spin_unlock_irqrestore(&priv->lock, flags);
			return;
		}
		list_for_each_entry(m, &priv->mcasts, list) {
			if (m != priv->broadcast &&
			    ((!m->sendonly && !m->wanted) || m->expired)) {
				list_del(&m->list);
				hash_del(&m->node);
				if (m->sendonly)
					priv->nsendonly--;
				pick = m;
				break;
			}
			if (m != priv->broadcast &&
			    priv->broadcast->state != IPOIB_MCAST_JOINED)
				continue;
			if (m->state == IPOIB_MCAST_IDLE ||
			    (m->state == IPOIB_MCAST_FAILED &&
			     time_after_eq(jiffies, m->retry_after))) {
				if (m->sendonly && m->state == IPOIB_MCAST_FAILED)
					skb_queue_splice_init(&m->queue, &drop);
				m->state = IPOIB_MCAST_JOINING;
				pick = m;
				rejoin = true;
				break;
			}
			if (m->state == IPOIB_MCAST_FAILED &&
			    (!next || time_before(m->retry_after, next)))
				next = m->retry_after;
		}
		spin_unlock_irqrestore(&priv->lock, flags);
		ipoib_release_queue(priv, &drop, false);
		if (!pick)
			break;

		/* a rejoin starts from scratch */
		ipoib_mcast_leave(priv, pick);
		if (rejoin) {
			ipoib_mcast_join(priv, pick);
		} else {
			skb_queue_purge(&pick->queue);
			kfree(pick);
		}
	}

	if (next) {
		spin_lock_irqsave(&priv->lock, flags);
		ipoib_mcast_kick(priv, time_after(next, jiffies) ?
				 next - jiffies : 0);
		spin_unlock_irqrestore(&priv->lock, flags);
	}
}

/*
 * Make our full-member groups the "n" MGIDs of the interface's multicast
 * list, within max_full_groups (priv->lock held): first the groups we
 * are a full member of keep their membership, then the others (new, or
 * send-only so far) get one while the bound allows, in the list's order.
 * "foreign" (umcast) marks groups another consumer of the port joined.
 */
static void ipoib_mcast_sync(struct ipoib_dev_priv *priv,
			     const union ib_gid *mgids, unsigned int n,
			     const unsigned long *foreign)
{
	unsigned int limit = READ_ONCE(ipoib_max_full_groups);
	unsigned int i, full = 0, over = 0;
	struct ipoib_mcast *m;

	lockdep_assert_held(&priv->lock);
	list_for_each_entry(m, &priv->mcasts, list)
		if (m != priv->broadcast)
			m->wanted = false;
	for (i = 0; i < n; i++) {
		m = ipoib_mcast_find(priv, &mgids[i]);
		if (m && !m->sendonly && !m->wanted) {
			m->wanted = true;
			if (m != priv->broadcast)
				full++;
		}
	}
	for (i = 0; i < n; i++) {
		m = ipoib_mcast_find(priv, &mgids[i]);
		if (m && !m->sendonly)
			continue;
		if (foreign && test_bit(i, foreign)) {
			ipoib_dbg(priv, "umcast: %pI6 was joined by another consumer: not joining it\n",
				  mgids[i].raw);
			continue;
		}
		if (full >= limit) {
			over++;
			continue;
		}
		full++;
		if (!m) {
			if (!ipoib_mcast_new(priv, &mgids[i], false, GFP_ATOMIC))
				full--;
			continue;
		}
		/* now we want to receive too: a full join */
		m->wanted = true;
		m->sendonly = false;
		m->expired = false;
		priv->nsendonly--;
		/* a send-only join in flight finds out when it is done */
		if (m->state != IPOIB_MCAST_JOINING)
			m->state = IPOIB_MCAST_IDLE;
	}
	/* more wanted than last time: those are refused now */
	if (over > priv->full_over) {
		priv->full_refused += over - priv->full_over;
		if (net_ratelimit())
			netdev_warn(priv->dev, "%u multicast groups beyond max_full_groups=%u are not joined and receive nothing: raise ib_ipoib's max_full_groups or leave groups\n",
				    over, limit);
	}
	priv->full_over = over;
	ipoib_mcast_kick(priv, 0);
}

/* Sync our full-member groups with the interface's multicast list. */
void ipoib_rx_mode_work(struct work_struct *work)
{
	struct ipoib_dev_priv *priv = container_of(work, struct ipoib_dev_priv,
						   rx_mode_work);
	struct net_device *dev = priv->dev;
	struct netdev_hw_addr *ha;
	struct ib_sa_mcmember_rec rec;
	unsigned long *foreign = NULL;
	union ib_gid *mgids;
	unsigned int n = 0, i;
	unsigned long flags;

	netif_addr_lock_bh(dev);
	mgids = kcalloc(netdev_mc_count(dev) + 1, sizeof(*mgids), GFP_ATOMIC);
	if (mgids)
		netdev_for_each_mc_addr(ha, dev)
			memcpy(&mgids[n++], ha->addr + 4, sizeof(*mgids));
	netif_addr_unlock_bh(dev);
	if (!mgids)
		return;

	/*
	 * umcast, as in-tree: a group already in ib_sa's table for this
	 * port (joined by another consumer, say userspace through rdma_cm)
	 * is left to it: we do not join it as a full member. The table is
	 * asked here, outside priv->lock. Below, groups we are full members
	 * of are kept; one we only joined send-only is in the table through
	 * our own join and is skipped too, as in-tree does, until that
	 * send-only entry expires.
	 */
	if (READ_ONCE(priv->umcast)) {
		foreign = bitmap_zalloc(n + 1, GFP_KERNEL);
		for (i = 0; foreign && i < n; i++)
			if (!ib_sa_get_mcmember_rec(priv->ca, priv->port,
						    &mgids[i], &rec))
				__set_bit(i, foreign);
	}

	spin_lock_irqsave(&priv->lock, flags);
	if (priv->mcast_running)
		ipoib_mcast_sync(priv, mgids, n, foreign);
	spin_unlock_irqrestore(&priv->lock, flags);
	bitmap_free(foreign);
	kfree(mgids);
}

/* Nothing waits on a send-only group and no join is in flight. */
static bool ipoib_sendonly_idle(const struct ipoib_mcast *m)
{
	return m->sendonly && !m->expired &&
	       m->state != IPOIB_MCAST_JOINING && skb_queue_empty(&m->queue);
}

/*
 * At max_sendonly a packet for a new group is dropped (the caller counts
 * it) and the least recently used idle send-only group is marked for
 * mcast_work to leave, which makes room for the next packet. A group
 * that is joining or has packets waiting is never chosen.
 */
static void ipoib_sendonly_evict(struct ipoib_dev_priv *priv)
{
	struct ipoib_mcast *m, *pick = NULL;

	lockdep_assert_held(&priv->lock);
	list_for_each_entry(m, &priv->mcasts, list)
		if (ipoib_sendonly_idle(m) &&
		    (!pick || time_before(m->last_used, pick->last_used)))
			pick = m;
	if (!pick)
		return;
	pick->expired = true;
	priv->sendonly_evictions++;
	ipoib_mcast_kick(priv, 0);
}

/*
 * From the path collector: mark send-only groups nobody sent to for
 * "idle" jiffies (in-tree's rule: two ARP gc_interval periods), for
 * mcast_work to leave.
 */
void ipoib_mcast_expire(struct ipoib_dev_priv *priv, unsigned long idle)
{
	struct ipoib_mcast *m;
	bool any = false;

	spin_lock_irq(&priv->lock);
	list_for_each_entry(m, &priv->mcasts, list) {
		if (!ipoib_sendonly_idle(m) ||
		    time_before(jiffies, m->last_used + idle))
			continue;
		m->expired = true;
		priv->sendonly_expired++;
		any = true;
	}
	if (any)
		ipoib_mcast_kick(priv, 0);
	spin_unlock_irq(&priv->lock);
}

netdev_tx_t ipoib_mcast_xmit(struct ipoib_dev_priv *priv,
			     struct sk_buff *skb, const u8 *daddr)
{
	const union ib_gid *mgid = (const union ib_gid *)(daddr + 4);
	struct ipoib_mcast *m;
	struct ipoib_ah *ah;
	unsigned long flags;

	/* multicast is always UD, whatever a connected-mode MTU allows */
	if (skb->len > priv->mcast_mtu + IPOIB_ENCAP_LEN) {
		ipoib_too_big(priv, skb, priv->mcast_mtu);
		return NETDEV_TX_OK;
	}
	spin_lock_irqsave(&priv->lock, flags);
	if (!priv->mcast_running)
		goto drop;
	m = ipoib_mcast_find(priv, mgid);
	if (!m) {
		if (priv->nsendonly >= ipoib_sendonly_limit()) {
			ipoib_sendonly_evict(priv);
			priv->sendonly_drops++;
			goto drop;
		}
		m = ipoib_mcast_new(priv, mgid, true, GFP_ATOMIC);
		if (!m)
			goto drop;
		ipoib_mcast_kick(priv, 0);
	}
	m->last_used = jiffies;
	m->expired = false;	/* in use again before mcast_work left it */
	if (m->state == IPOIB_MCAST_JOINED && m->ah) {
		ah = m->ah;
		kref_get(&ah->ref);
		spin_unlock_irqrestore(&priv->lock, flags);
		ipoib_send(priv, skb, ah, IPOIB_MCAST_QPN, priv->qkey);
		ipoib_ah_put(ah);
		return NETDEV_TX_OK;
	}
	if (ipoib_park(&m->queue, IPOIB_MAX_MCAST_QUEUE, skb))
		skb = NULL;
drop:
	spin_unlock_irqrestore(&priv->lock, flags);
	if (skb)
		ipoib_drop(priv, skb);
	return NETDEV_TX_OK;
}

/* Interface up: the broadcast group first, then the multicast list. */
void ipoib_mcast_start(struct ipoib_dev_priv *priv)
{
	unsigned long flags;

	ASSERT_RTNL();
	spin_lock_irqsave(&priv->lock, flags);
	priv->broadcast = ipoib_mcast_new(priv, (union ib_gid *)(priv->dev->broadcast + 4),
					  false, GFP_ATOMIC);
	if (priv->broadcast) {
		priv->mcast_running = true;
		ipoib_mcast_kick(priv, 0);
	}
	spin_unlock_irqrestore(&priv->lock, flags);
	if (!priv->broadcast) {
		ipoib_set_reason(priv, IPOIB_CARRIER_JOIN_FAILED, -ENOMEM);
		return;
	}
	queue_work(ipoib_wq, &priv->rx_mode_work);
}

/* Interface down: leave every group. Process context, no locks held. */
void ipoib_mcast_stop(struct ipoib_dev_priv *priv)
{
	struct ipoib_mcast *m, *tmp;
	LIST_HEAD(all);

	spin_lock_irq(&priv->lock);
	priv->mcast_running = false;
	spin_unlock_irq(&priv->lock);
	cancel_delayed_work_sync(&priv->mcast_work);
	cancel_work_sync(&priv->rx_mode_work);

	spin_lock_irq(&priv->lock);
	list_splice_init(&priv->mcasts, &all);
	hash_init(priv->mcast_hash);
	priv->broadcast = NULL;
	priv->nsendonly = 0;
	spin_unlock_irq(&priv->lock);

	list_for_each_entry_safe(m, tmp, &all, list) {
		ipoib_mcast_leave(priv, m);
		skb_queue_purge(&m->queue);
		kfree(m);
	}
}
