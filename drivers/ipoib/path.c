// SPDX-License-Identifier: GPL-2.0
/*
 * ipoib-ng: unicast paths. A destination GID is resolved into an address
 * handle by an SA PathRecord query (DGID, SGID, P_Key); up to three
 * packets wait per unresolved path. Paths are flushed whenever the port or
 * the partition changes. Transmit looks paths up without the lock (RCU);
 * an address handle outlives its path until its last send completed (see
 * struct ipoib_ah), so a flush never frees one under the hardware.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#include <linux/icmpv6.h>
#include <linux/if_arp.h>
#include <linux/ipv6.h>
#include <linux/moduleparam.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <net/arp.h>
#include <net/ndisc.h>

#include "ipoib.h"

/*
 * Two bounds, because a fixed count cannot tell a flood from a big
 * cluster. Any node in the partition can make us create paths: an ARP
 * request (or ND solicitation) from a forged hardware address is
 * answered, and the answer needs a path to the forged GID. Such "answer
 * paths" have their own budget, max_answer_paths, where the oldest gives
 * way (ipoib_path_evict_answer()); a path becomes an ordinary one when
 * we send it anything else. max_paths bounds all paths of an interface,
 * sized for the largest fabrics (a path with its address handle is well
 * under 1 KiB, see Documentation/ipoib.rst); see ipoib_path_evict() for
 * which path gives way there.
 */
#define IPOIB_MAX_PATHS_MIN	16
#define IPOIB_MAX_PATHS_MAX	1048576U

unsigned int ipoib_max_paths = 65536;

static const struct ipoib_param_range ipoib_max_paths_range =
	IPOIB_PARAM_RANGE(ipoib_max_paths, IPOIB_MAX_PATHS_MIN, IPOIB_MAX_PATHS_MAX);
module_param_cb(max_paths, &ipoib_param_range_ops, (void *)&ipoib_max_paths_range,
		0644);
__MODULE_PARM_TYPE(max_paths, "uint");
MODULE_PARM_DESC(max_paths,
		 "Most unicast paths per interface (16-1048576, default 65536); beyond it the least recently used idle path is forgotten");

static unsigned int ipoib_max_answer_paths = 4096;

static const struct ipoib_param_range ipoib_max_answer_paths_range =
	IPOIB_PARAM_RANGE(ipoib_max_answer_paths, IPOIB_MAX_PATHS_MIN,
			  IPOIB_MAX_PATHS_MAX);
module_param_cb(max_answer_paths, &ipoib_param_range_ops,
		(void *)&ipoib_max_answer_paths_range, 0644);
__MODULE_PARM_TYPE(max_answer_paths, "uint");
MODULE_PARM_DESC(max_answer_paths,
		 "Most paths per interface made only to answer ARP or ND requests (16-1048576, default 4096); beyond it the oldest is forgotten");

/*
 * After an SM change or a client reregistration every node of the fabric
 * would ask the SA again for every peer at once; we keep sending on the
 * paths we have and ask again for them at this rate, from a random
 * moment of the first second on.
 */
#define IPOIB_REVALIDATE_TICKS	10	/* batches a second */

static unsigned int ipoib_revalidate_rate = 100;

static const struct ipoib_param_range ipoib_revalidate_rate_range =
	IPOIB_PARAM_RANGE(ipoib_revalidate_rate, 1, 100000);
module_param_cb(revalidate_rate, &ipoib_param_range_ops,
		(void *)&ipoib_revalidate_rate_range, 0644);
__MODULE_PARM_TYPE(revalidate_rate, "uint");
MODULE_PARM_DESC(revalidate_rate,
		 "PathRecord queries a second per interface that refresh its paths after an SM change (1-100000, default 100)");

static unsigned int ipoib_path_limit(void)
{
	return READ_ONCE(ipoib_max_paths);
}

static unsigned int ipoib_answer_limit(void)
{
	return min(READ_ONCE(ipoib_max_answer_paths), ipoib_path_limit());
}

void ipoib_path_init(struct ipoib_dev_priv *priv)
{
	INIT_LIST_HEAD(&priv->path_lru);
	INIT_LIST_HEAD(&priv->path_evicted);
	INIT_LIST_HEAD(&priv->path_answers);
	INIT_LIST_HEAD(&priv->path_stale);
	INIT_WORK(&priv->path_evict_work, ipoib_path_evict_work);
	INIT_DELAYED_WORK(&priv->path_reval_work, ipoib_path_reval_work);
}

/*
 * Does this packet only answer a neighbour request: an ARP reply or an
 * IPv6 neighbour advertisement? skb->data is at the IPoIB header.
 */
static bool ipoib_skb_answers(const struct sk_buff *skb)
{
	if (skb->protocol == htons(ETH_P_ARP)) {
		struct arphdr _arp;
		const struct arphdr *arp;

		arp = skb_header_pointer(skb, IPOIB_ENCAP_LEN, sizeof(_arp),
					 &_arp);
		return arp && arp->ar_op == htons(ARPOP_REPLY);
	}
	if (skb->protocol == htons(ETH_P_IPV6)) {
		struct {
			struct ipv6hdr ip6;
			struct icmp6hdr icmp6;
		} _h;
		const typeof(_h) *h;

		h = skb_header_pointer(skb, IPOIB_ENCAP_LEN, sizeof(_h), &_h);
		return h && h->ip6.nexthdr == IPPROTO_ICMPV6 &&
		       h->icmp6.icmp6_type == NDISC_NEIGHBOUR_ADVERTISEMENT;
	}
	return false;
}

/* We send it something else than answers: an ordinary path from now on. */
static void ipoib_path_promote(struct ipoib_dev_priv *priv,
			       struct ipoib_path *path)
{
	lockdep_assert_held(&priv->lock);
	list_del_init(&path->answers);
	priv->nanswers--;
	WRITE_ONCE(path->answer, false);
}

/* Take a path out of the table; the caller frees it in process context. */
static void ipoib_path_unlink(struct ipoib_dev_priv *priv,
			      struct ipoib_path *path)
{
	lockdep_assert_held(&priv->lock);
	hash_del_rcu(&path->node);
	list_del(&path->lru);
	priv->npaths--;
	if (path->answer)
		ipoib_path_promote(priv, path);
	list_del_init(&path->stale);
	if (path->query)
		ib_sa_cancel_query(path->query_id, path->query);
}

/*
 * The one lookup of the table, under priv->lock (which every change of
 * the table holds) or in an RCU read section (transmit's fast path: no
 * lock; the path is freed after a grace period).
 */
static struct ipoib_path *ipoib_path_lookup(struct ipoib_dev_priv *priv,
					    const union ib_gid *gid)
{
	struct ipoib_path *path;

	hash_for_each_possible_rcu(priv->paths, path, node, ipoib_gid_hash(gid),
				   lockdep_is_held(&priv->lock))
		if (!memcmp(&path->dgid, gid, sizeof(*gid)))
			return path;
	return NULL;
}

/* The lookup of the table's writers: the path stays until they unlock. */
static struct ipoib_path *ipoib_path_find(struct ipoib_dev_priv *priv,
					  const union ib_gid *gid)
{
	lockdep_assert_held(&priv->lock);
	return ipoib_path_lookup(priv, gid);
}

/* Sent to: for the collector (last_used) and for eviction (used). */
static void ipoib_path_touch(struct ipoib_path *path)
{
	unsigned long now = jiffies;

	/* one store per jiffy: the cache line stays shared between CPUs */
	if (READ_ONCE(path->last_used) != now)
		WRITE_ONCE(path->last_used, now);
	if (!READ_ONCE(path->used))
		WRITE_ONCE(path->used, true);
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
		/* transmit reads it without the lock: publish it whole */
		smp_store_release(&path->ah, ah);
		path->dlid = be32_to_cpu(sa_path_get_dlid(rec));
		path->rec = *rec;
	} else {
		path->retry_after = jiffies + HZ;
	}
	skb_queue_splice_init(&path->queue, &queue);
	path->query = NULL;
	spin_unlock_irqrestore(&priv->lock, flags);
	ipoib_ah_put(old);
	ipoib_release_queue(priv, &queue, ah);

	/*
	 * Last: from here on a flush may free the path and the interface may
	 * go (release_queue above still used priv). No new query starts
	 * before this, see ipoib_unicast_xmit().
	 */
	complete(&path->done);
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

static void ipoib_path_free(struct ipoib_path *path);

/* Free the paths eviction took out of the table. */
void ipoib_path_evict_work(struct work_struct *work)
{
	struct ipoib_dev_priv *priv = container_of(work, struct ipoib_dev_priv,
						   path_evict_work);
	struct ipoib_path *path, *tmp;
	LIST_HEAD(dead);

	spin_lock_irq(&priv->lock);
	list_splice_init(&priv->path_evicted, &dead);
	priv->nevicted = 0;
	spin_unlock_irq(&priv->lock);

	list_for_each_entry_safe(path, tmp, &dead, flush)
		ipoib_path_free(path);
}

/* How much evicting a path costs: the lower, the sooner it goes. */
static unsigned int ipoib_path_cost(const struct ipoib_path *path)
{
	if (!list_empty(&path->cm_tx))
		return 2;	/* connections would be torn down */
	if (path->query || !skb_queue_empty(&path->queue))
		return 1;	/* a resolution or packets would be lost */
	return 0;
}

/* Out of the table, freed by path_evict_work (its query must end first). */
static void ipoib_path_retire(struct ipoib_dev_priv *priv,
			      struct ipoib_path *path)
{
	ipoib_path_unlink(priv, path);
	list_add_tail(&path->flush, &priv->path_evicted);
	priv->nevicted++;
	queue_work(ipoib_reap_wq, &priv->path_evict_work);
}

#define IPOIB_EVICT_SCAN	64

/*
 * The table is full and a new destination needs a path: forget one. The
 * LRU list is kept exactly only by the locked slow path; transmit just
 * marks a path used, and the scan sends used paths to the back (a second
 * chance, CLOCK). Of the IPOIB_EVICT_SCAN paths at the front, the first
 * unused idle one goes (resolved or failed, nothing waiting, no
 * connection); failing that the first without connections (its query is
 * cancelled, its few waiting packets dropped); only when all of them
 * carry connections or were used the first of those. A flood of forged
 * sources thus recycles its own
 * paths while destinations in use keep theirs, and the scan is bounded
 * under the lock whatever max_paths is. The path is freed by
 * path_evict_work (its query's callback must be waited for); false if
 * too many already wait for that, then the caller makes no path.
 */
static bool ipoib_path_evict(struct ipoib_dev_priv *priv)
{
	struct ipoib_path *path, *tmp, *pick = NULL;
	unsigned int n = 0, cost, best = UINT_MAX;

	lockdep_assert_held(&priv->lock);
	if (priv->nevicted >= ipoib_path_limit())
		return false;
	list_for_each_entry_safe(path, tmp, &priv->path_lru, lru) {
		cost = ipoib_path_cost(path);
		if (READ_ONCE(path->used)) {
			/*
			 * Sent to since the scan last passed it: to the
			 * back, and it goes only if all the others are used
			 */
			WRITE_ONCE(path->used, false);
			list_move_tail(&path->lru, &priv->path_lru);
			cost += 3;
		}
		if (cost < best) {
			best = cost;
			pick = path;
			if (!cost)
				break;
		}
		if (++n == IPOIB_EVICT_SCAN)
			break;
	}
	if (!pick)
		return false;
	ipoib_path_retire(priv, pick);
	priv->path_evictions++;
	return true;
}

/*
 * The answer paths are at their bound and a new one is wanted: the oldest
 * goes (a flood of forged requests recycles its own paths, and an answer
 * that loses its path is asked for again by the requester's retry).
 */
static bool ipoib_path_evict_answer(struct ipoib_dev_priv *priv)
{
	struct ipoib_path *path;

	lockdep_assert_held(&priv->lock);
	if (priv->nevicted >= ipoib_path_limit() ||
	    list_empty(&priv->path_answers))
		return false;
	path = list_first_entry(&priv->path_answers, struct ipoib_path,
				answers);
	ipoib_path_retire(priv, path);
	priv->path_answer_evictions++;
	return true;
}

/* Over UD to a resolved path; "ah" is kept alive by the caller. */
static void ipoib_path_send(struct ipoib_dev_priv *priv, struct sk_buff *skb,
			    struct ipoib_ah *ah, u32 qpn)
{
	/*
	 * Connected-mode MTU, but this peer is reached over UD (a TSO
	 * packet is cut to the MTU by the HCA)
	 */
	if (!skb_is_gso(skb) && skb->len > priv->mcast_mtu + IPOIB_ENCAP_LEN)
		ipoib_too_big(priv, skb, priv->mcast_mtu);
	else
		ipoib_send(priv, skb, ah, qpn, priv->qkey);
}

/*
 * The hot path, to a resolved path: an RCU lookup, no lock, no reference
 * taken (the grace period and last_send keep the address handle, see
 * struct ipoib_ah; a connection is kept by its teardown waiting for the
 * tx lock). Datagram, or connected mode over the connection in
 * path->cm_fast. False: the slow path decides.
 */
static bool ipoib_unicast_fast(struct ipoib_dev_priv *priv,
			       struct sk_buff *skb, const union ib_gid *gid,
			       u32 qpn, bool cm)
{
	struct ipoib_path *path;
	struct ipoib_ah *ah;
	bool sent = false;

	rcu_read_lock();
	path = ipoib_path_lookup(priv, gid);
	/*
	 * pairs with the release store in ipoib_path_done(); an answer
	 * path takes the slow path, which promotes it
	 */
	ah = path && !READ_ONCE(path->answer) ? smp_load_acquire(&path->ah) :
						NULL;
	if (ah && cm) {
		sent = ipoib_cm_xmit_fast(priv, path, skb, qpn);
	} else if (ah) {
		ipoib_path_send(priv, skb, ah, qpn);
		sent = true;
	}
	if (sent)
		ipoib_path_touch(path);
	rcu_read_unlock();
	return sent;
}

netdev_tx_t ipoib_unicast_xmit(struct ipoib_dev_priv *priv,
			       struct sk_buff *skb, const u8 *daddr)
{
	u32 qpn = ((daddr[1] << 16) | (daddr[2] << 8) | daddr[3]) &
		  IPOIB_QPN_MASK;
	const union ib_gid *gid = (const union ib_gid *)(daddr + 4);
	bool cm = ipoib_cm_wanted(priv, skb, daddr);
	struct ipoib_path *path;
	bool answer;
	struct ipoib_ah *ah;
	unsigned long flags;
	unsigned int mtu;
	int ret;

	if (ipoib_unicast_fast(priv, skb, gid, qpn, cm))
		return NETDEV_TX_OK;

	answer = ipoib_skb_answers(skb);
	spin_lock_irqsave(&priv->lock, flags);
	path = ipoib_path_find(priv, gid);
	if (path) {
		WRITE_ONCE(path->last_used, jiffies);
		list_move_tail(&path->lru, &priv->path_lru);
		if (path->answer && !answer)
			ipoib_path_promote(priv, path);
	}
	if (path && path->ah) {
		if (cm) {
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
		ipoib_path_send(priv, skb, ah, qpn);
		ipoib_ah_put(ah);
		return NETDEV_TX_OK;
	}

	if (!path) {
		if (answer && priv->nanswers >= ipoib_answer_limit() &&
		    !ipoib_path_evict_answer(priv)) {
			priv->path_drops++;
			goto drop;
		}
		if (priv->npaths >= ipoib_path_limit() &&
		    !ipoib_path_evict(priv)) {
			priv->path_drops++;
			goto drop;
		}
		path = kzalloc(sizeof(*path), GFP_ATOMIC);
		if (!path)
			goto drop;
		path->dgid = *gid;
		path->priv = priv;
		path->last_used = jiffies;
		INIT_LIST_HEAD(&path->cm_tx);
		INIT_LIST_HEAD(&path->answers);
		INIT_LIST_HEAD(&path->stale);
		if (answer) {
			path->answer = true;
			list_add_tail(&path->answers, &priv->path_answers);
			priv->nanswers++;
		}
		skb_queue_head_init(&path->queue);
		init_completion(&path->done);
		complete(&path->done);	/* no query in flight */
		hash_add_rcu(priv->paths, &path->node, ipoib_gid_hash(gid));
		list_add_tail(&path->lru, &priv->path_lru);
		priv->npaths++;
	}
	if (ipoib_park(&path->queue, IPOIB_MAX_PATH_QUEUE, skb))
		skb = NULL;
	/* not while the last query's callback still runs (path_done) */
	if (!path->query && completion_done(&path->done) &&
	    time_after_eq(jiffies, path->retry_after))
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
	/* transmit may still be reading it (ipoib_unicast_fast) */
	kfree_rcu(path, rcu);
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
		ipoib_path_unlink(priv, path);
		list_add_tail(&path->flush, &dead);
	}
	list_splice_init(&priv->path_evicted, &dead);
	priv->nevicted = 0;
	spin_unlock_irq(&priv->lock);

	list_for_each_entry_safe(path, tmp, &dead, flush)
		ipoib_path_free(path);
	/* a batch the work took before us: freed before the transport goes */
	flush_work(&priv->path_evict_work);
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
		ipoib_path_unlink(priv, path);
		list_add_tail(&path->flush, &dead);
	}
	spin_unlock_irq(&priv->lock);

	list_for_each_entry_safe(path, tmp, &dead, flush) {
		ipoib_path_free(path);
		n++;
	}
	if (n)
		ipoib_dbg(priv, "forgot %u idle paths\n", n);
	ipoib_mcast_expire(priv, 2 * interval);
	queue_delayed_work(ipoib_wq, &priv->gc_work, interval);
}

/*
 * An SM change or a client reregistration: the paths may have changed
 * (a new SM routes anew), the peers have not gone. Keep
 * sending on the address handles we have (the fabric's LIDs rarely change
 * with the SM) and ask the SA for every resolved path again, most recently
 * used first, at revalidate_rate, starting at a random moment of the first
 * second so that a fabric's nodes do not ask at once. A changed answer
 * replaces the address handle (ipoib_path_done()); a failed one keeps it.
 */
void ipoib_paths_revalidate(struct ipoib_dev_priv *priv)
{
	unsigned long delay = 1 + get_random_u32() % HZ;
	struct ipoib_path *path;
	unsigned int n = 0;

	ASSERT_RTNL();
	spin_lock_irq(&priv->lock);
	list_for_each_entry_reverse(path, &priv->path_lru, lru) {
		if (!path->ah || !list_empty(&path->stale))
			continue;
		list_add_tail(&path->stale, &priv->path_stale);
		n++;
	}
	/* the first run makes one batch */
	priv->path_reval_last = jiffies + delay - HZ / IPOIB_REVALIDATE_TICKS;
	priv->path_reval_credit = 0;
	spin_unlock_irq(&priv->lock);
	ipoib_dbg(priv, "asking again for %u paths at %u a second\n", n,
		  READ_ONCE(ipoib_revalidate_rate));
	if (n)
		mod_delayed_work(ipoib_wq, &priv->path_reval_work, delay);
}

void ipoib_path_reval_work(struct work_struct *work)
{
	struct ipoib_dev_priv *priv = container_of(work, struct ipoib_dev_priv,
						   path_reval_work.work);
	unsigned long now = jiffies, elapsed;
	struct ipoib_path *path;
	u64 batch;
	bool more;

	spin_lock_irq(&priv->lock);
	/*
	 * A token bucket: the work runs late as often as not, so what it
	 * makes follows the time that passed (at most a second's worth)
	 */
	elapsed = min_t(unsigned long, now - priv->path_reval_last, HZ);
	priv->path_reval_last = now;
	priv->path_reval_credit += (u64)READ_ONCE(ipoib_revalidate_rate) *
				   elapsed;
	batch = div_u64(priv->path_reval_credit, HZ);
	priv->path_reval_credit -= batch * HZ;
	while (batch && !list_empty(&priv->path_stale)) {
		path = list_first_entry(&priv->path_stale, struct ipoib_path,
					stale);
		list_del_init(&path->stale);
		/* a query in flight answers for this one */
		if (path->query || !completion_done(&path->done))
			continue;
		ipoib_path_query(priv, path);
		priv->path_revalidations++;
		batch--;
	}
	more = !list_empty(&priv->path_stale);
	if (!more)
		priv->path_reval_credit = 0;
	spin_unlock_irq(&priv->lock);
	if (more)
		queue_delayed_work(ipoib_wq, &priv->path_reval_work,
				   HZ / IPOIB_REVALIDATE_TICKS);
}
