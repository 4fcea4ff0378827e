// SPDX-License-Identifier: GPL-2.0
/*
 * ipoib-ng: connected mode (RFC 4755), wire-compatible with in-tree.
 *
 * Every interface listens on service ID 0x1000000000000000 | its UD QPN,
 * in either mode, and advertises that with flag 0x80 in its hardware
 * address. In connected mode, unicast IP to a peer with the flag goes
 * over an RC connection we initiate (one per peer QPN, hanging off the
 * path); we never send on connections peers initiated to us. REQ and REP
 * carry { UD QPN, largest SEND the sender can receive } in big endian.
 *
 * Receive buffers are a 4 KiB head plus pages, on one SRQ per interface
 * (filled when the first peer connects) or, without an SRQ, a ring per
 * passive connection, at most max_nonsrq_conn_qp of them.
 *
 * Unlike in-tree, a refused or timed-out connection falls back to UD
 * (with ICMP "too big" for what UD cannot carry) and is retried with a
 * backoff, instead of black-holing the peer.
 *
 * Teardown order: passive QPs go to ERR; with an SRQ we wait for the
 * LAST_WQE_REACHED event and then post one drain WR whose flushed
 * completion proves every earlier completion of those QPs was polled;
 * without one we count the flushed receives. Only then is a QP
 * destroyed. Active QPs go to ERR and are destroyed once every send
 * came back.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#include <linux/delay.h>
#include <linux/icmpv6.h>
#include <linux/if_arp.h>
#include <linux/moduleparam.h>
#include <linux/random.h>
#include <net/icmp.h>

#define IPOIB_NG_PAGE_POOL
#include "compat.h"

#include "ipoib.h"

unsigned int ipoib_max_nonsrq_conn_qp = 128;
static const struct ipoib_param_range ipoib_max_nonsrq_conn_qp_range =
	IPOIB_PARAM_RANGE(ipoib_max_nonsrq_conn_qp, 0, 4096);
module_param_cb(max_nonsrq_conn_qp, &ipoib_param_range_ops, (void *)&ipoib_max_nonsrq_conn_qp_range,
		0444);
__MODULE_PARM_TYPE(max_nonsrq_conn_qp, "uint");
MODULE_PARM_DESC(max_nonsrq_conn_qp,
		 "Max number of connected-mode QPs per interface (applied only if shared receive queue is not available)");

/*
 * Peers decide how many connections they open to us, and which peers we
 * connect to is up to whoever sends us traffic: both tables are bounded,
 * and at the limit the connection used least recently is closed (its
 * peer reconnects when it next has traffic, as after the idle timeout).
 */
unsigned int ipoib_max_cm_passive = 4096;
static const struct ipoib_param_range ipoib_max_cm_passive_range =
	IPOIB_PARAM_RANGE(ipoib_max_cm_passive, 1, 1048576);
module_param_cb(max_cm_passive, &ipoib_param_range_ops, (void *)&ipoib_max_cm_passive_range,
		0444);
__MODULE_PARM_TYPE(max_cm_passive, "uint");
MODULE_PARM_DESC(max_cm_passive,
		 "Max connections peers may open to one interface; at the limit a new one is refused and the least recently active one closed (default 4096)");

unsigned int ipoib_max_cm_active = 4096;
static const struct ipoib_param_range ipoib_max_cm_active_range =
	IPOIB_PARAM_RANGE(ipoib_max_cm_active, 1, 1048576);
module_param_cb(max_cm_active, &ipoib_param_range_ops, (void *)&ipoib_max_cm_active_range,
		0444);
__MODULE_PARM_TYPE(max_cm_active, "uint");
MODULE_PARM_DESC(max_cm_active,
		 "Max connections one interface opens to peers; at the limit the new peer is reached over datagrams, and up to 10 times a second the least recently used connection is closed to make room (default 4096)");

/*
 * At max_cm_active, at most this many connections a second are closed to
 * make room. Closing one for every newcomer thrashes when a node sends to
 * more peers than the bound in turn (a login node, a file server): the
 * connection used least recently is the next one such a sweep needs, so
 * every peer would be disconnected and connected again each round, four
 * CM messages each. At this rate the peers beyond the bound stay on UD,
 * counted in cm_active_refused, and an idle connection still makes way
 * for a new peer within a fraction of a second.
 */
#define IPOIB_CM_EVICT_PER_SEC	10

#define IPOIB_CM_RX_TIMEOUT	(512 * HZ)	/* idle passive connections go */
#define IPOIB_CM_RX_SCAN	(64 * HZ)
#define IPOIB_CM_MAX_BACKOFF	64		/* seconds of UD after a refusal */
#define IPOIB_CM_SLOT_MASK	0xffffffffULL

/* REQ and REP private data (the CM pads it with zeroes) */
struct ipoib_cm_data {
	__be32 qpn;	/* the sender's UD QPN; the top byte is reserved */
	__be32 mtu;	/* the largest SEND it receives, IPoIB header included */
};

/* ---- receive buffers ---- */

/*
 * Receive pages come from two places. NAPI, which replaces the pages of
 * every message it delivers, takes them from cm_pool: the stack gives
 * them back once the data is copied out, and a recycled page is not
 * zeroed again (init_on_alloc zeroing every fresh page cost as much as
 * the copy to the socket). A pool has one consumer at a time, so the
 * fills in process context (a new SRQ or ring, a stranded slot) take
 * plain pages; buf->pooled says which is which. This unmaps a receive
 * page and gives it back where it came from.
 */
static void ipoib_cm_page_free(struct ipoib_dev_priv *priv, struct page *page,
			       u64 mapping, bool pooled)
{
	if (pooled) {
		ipoib_pool_page_free(priv, priv->cm_pool, page, mapping);
		return;
	}
	ib_dma_unmap_page(priv->ca, mapping, PAGE_SIZE, DMA_FROM_DEVICE);
	__free_page(page);
}

static void ipoib_cm_free_buf(struct ipoib_dev_priv *priv,
			      struct ipoib_cm_rx_buf *buf)
{
	unsigned int i;

	if (buf->skb) {
		ib_dma_unmap_single(priv->ca, buf->mapping[0], IPOIB_CM_HEAD,
				    DMA_FROM_DEVICE);
		dev_kfree_skb_any(buf->skb);
		buf->skb = NULL;
	}
	for (i = 0; i < IPOIB_CM_FRAGS; i++) {
		if (!buf->pages[i])
			continue;
		ipoib_cm_page_free(priv, buf->pages[i], buf->mapping[i + 1],
				   test_bit(i, &buf->pooled));
		buf->pages[i] = NULL;
	}
	buf->pooled = 0;
}

static void ipoib_cm_free_ring(struct ipoib_dev_priv *priv,
			       struct ipoib_cm_rx_buf *ring)
{
	unsigned int i;

	if (!ring)
		return;
	for (i = 0; i < priv->rx_size; i++)
		ipoib_cm_free_buf(priv, &ring[i]);
	kvfree(ring);
}

static struct sk_buff *ipoib_cm_alloc_head(struct ipoib_dev_priv *priv,
					   u64 *mapping, gfp_t gfp)
{
	/* 12 + the 4-byte header leave the IP header 16-byte aligned */
	return ipoib_alloc_rx_skb(priv, IPOIB_CM_HEAD, 12, mapping, gfp);
}

/* Give "buf" every piece it lacks; pieces it has stay mapped. */
static int ipoib_cm_fill_buf(struct ipoib_dev_priv *priv,
			     struct ipoib_cm_rx_buf *buf, gfp_t gfp)
{
	unsigned int i;

	if (!buf->skb) {
		buf->skb = ipoib_cm_alloc_head(priv, &buf->mapping[0], gfp);
		if (!buf->skb)
			return -ENOMEM;
	}
	for (i = 0; i < IPOIB_CM_FRAGS; i++) {
		if (buf->pages[i])
			continue;
		buf->pages[i] = ipoib_alloc_rx_page(priv, &buf->mapping[i + 1],
						    gfp);
		if (!buf->pages[i])
			return -ENOMEM;
		__clear_bit(i, &buf->pooled);
	}
	return 0;
}

/* Post slot "i" of the SRQ ring (rx == NULL) or of rx's own ring. */
static int ipoib_cm_post_rx(struct ipoib_dev_priv *priv,
			    struct ipoib_cm_rx *rx, unsigned int i)
{
	struct ipoib_cm_rx_buf *buf = rx ? &rx->ring[i] : &priv->srq_ring[i];
	struct ib_sge sge[IPOIB_CM_SGE];
	struct ib_recv_wr wr = {
		.wr_id = IPOIB_OP_RECV | IPOIB_OP_CM | i,
		.sg_list = sge,
		.num_sge = IPOIB_CM_SGE,
	};
	unsigned int j;

	for (j = 0; j < IPOIB_CM_SGE; j++) {
		sge[j].addr = buf->mapping[j];
		sge[j].length = j ? PAGE_SIZE : IPOIB_CM_HEAD;
		sge[j].lkey = priv->pd->local_dma_lkey;
	}
	if (!rx)
		return ib_post_srq_recv(priv->srq, &wr, NULL);
	return ib_post_recv(rx->qp, &wr, NULL);
}

/*
 * Fill and post a whole ring (process context). The SRQ ring may be
 * filled in several attempts (one per REQ, under cm_mutex): each resumes
 * at the first slot the last one did not post, as the slots before it
 * are on the SRQ and posting them again would hand one buffer to the HCA
 * twice.
 */
static int ipoib_cm_fill_ring(struct ipoib_dev_priv *priv,
			      struct ipoib_cm_rx *rx)
{
	struct ipoib_cm_rx_buf *ring = rx ? rx->ring : priv->srq_ring;
	unsigned int i = 0;
	int ret = 0;

	if (!rx) {
		lockdep_assert_held(&priv->cm_mutex);
		i = priv->srq_fill_next;
	}
	for (; i < priv->rx_size; i++) {
		ret = ipoib_cm_fill_buf(priv, &ring[i], GFP_KERNEL);
		if (!ret)
			ret = ipoib_cm_post_rx(priv, rx, i);
		if (ret)
			break;
		/*
		 * Counted after the post: a flush NAPI counts in between
		 * takes it below zero and back, and a NEW connection is
		 * never made dead by it (ipoib_cm_rx_put())
		 */
		if (rx) {
			spin_lock_irq(&priv->lock);
			rx->posted++;
			spin_unlock_irq(&priv->lock);
		}
	}
	if (!rx)
		priv->srq_fill_next = i;
	return ret;
}

/* ---- SRQ, CQ budget, listener ---- */

/* Pages NAPI gives receive buffers (SRQ or not), for the interface's life. */
void ipoib_cm_pool_create(struct ipoib_dev_priv *priv)
{
	struct page_pool_params pp = {
		/* returned pages kept: a few messages in flight to sockets */
		.pool_size = 64 * IPOIB_CM_FRAGS,
		.nid = NUMA_NO_NODE,
		.dma_dir = DMA_FROM_DEVICE,
	};
	struct page_pool *pool;

	/* without a pool NAPI takes plain pages (the HCA's mapping is ours) */
	pool = page_pool_create(&pp);
	priv->cm_pool = IS_ERR(pool) ? NULL : pool;
}

void ipoib_cm_pool_destroy(struct ipoib_dev_priv *priv)
{
	/* every ring gave its pages back; the stack's come back later */
	if (priv->cm_pool) {
		page_pool_destroy(priv->cm_pool);
		priv->cm_pool = NULL;
	}
}

/*
 * The SRQ, of rx_size receives, is created with the rings (cheap) but
 * only gets its 16 MB of buffers when a peer first connects: interfaces
 * that never see a connection never pay for them. Without one (the HCA
 * has none, or refuses it) each passive connection gets a ring.
 */
void ipoib_cm_srq_create(struct ipoib_dev_priv *priv)
{
	struct ib_srq_init_attr attr = {
		.srq_type = IB_SRQT_BASIC,
		.attr = {
			.max_wr = priv->rx_size,
			.max_sge = IPOIB_CM_SGE,
		},
	};
	struct ib_srq *srq;

	priv->srq = NULL;
	priv->srq_ring = NULL;
	priv->srq_filled = false;
	priv->srq_fill_next = 0;
	priv->srq_stranded = 0;
	if (!priv->ca->attrs.max_srq ||
	    priv->ca->attrs.max_srq_sge < IPOIB_CM_SGE)
		return;
	srq = ib_create_srq(priv->pd, &attr);
	if (IS_ERR(srq)) {
		netdev_dbg(priv->dev, "no SRQ (%ld): a receive ring per connection\n",
			   PTR_ERR(srq));
		return;
	}
	priv->srq_ring = kvcalloc(priv->rx_size, sizeof(*priv->srq_ring),
				  GFP_KERNEL);
	if (!priv->srq_ring) {
		ib_destroy_srq(srq);
		return;
	}
	priv->srq = srq;
}

void ipoib_cm_srq_destroy(struct ipoib_dev_priv *priv)
{
	/* the reapers ran (ipoib_cm_reap()): their QPs would pin the CQs */
	WARN_ON_ONCE(!list_empty(&priv->cm_tx_dead));
	WARN_ON_ONCE(!list_empty(&priv->cm_tx_free));
	WARN_ON_ONCE(!list_empty(&priv->cm_dead));
	if (priv->srq) {
		ib_destroy_srq(priv->srq);
		priv->srq = NULL;
		ipoib_cm_free_ring(priv, priv->srq_ring);
		priv->srq_ring = NULL;
		priv->srq_filled = false;
		priv->srq_fill_next = 0;
		priv->srq_stranded = 0;
	}
}

/*
 * The QPs ipoib_cm_stop() left to the reapers are destroyed: after it,
 * before the CQs they hold go (release, or new rings).
 */
void ipoib_cm_reap(struct ipoib_dev_priv *priv)
{
	cancel_delayed_work_sync(&priv->cm_stale_work);
	/* the tx reap queues the tx free work */
	flush_work(&priv->cm_reap_work);
	flush_work(&priv->cm_tx_reap_work);
	flush_work(&priv->cm_tx_free_work);
	/* an async event of a QP the reaper was destroying may have armed it */
	cancel_delayed_work_sync(&priv->cm_stale_work);
}

/*
 * Completions connected mode may add to the receive CQ beyond the UD ones:
 * the SRQ ring and one drain WR, or a ring per passive connection (whose
 * number is then limited to what the CQ can take). Its sends complete on
 * the send CQ, within the global tx_size bound.
 */
unsigned int ipoib_cm_cqe(struct ipoib_dev_priv *priv)
{
	unsigned int room;

	if (priv->srq)
		return priv->rx_size + 1;
	/* an HCA whose CQ cannot even hold the UD ring gets no passive QPs */
	room = 0;
	if (priv->ca->attrs.max_cqe > priv->rx_size + 1)
		room = priv->ca->attrs.max_cqe - priv->rx_size - 1;
	priv->cm_nonsrq_max = min(ipoib_max_nonsrq_conn_qp,
				  room / priv->rx_size);
	return priv->rx_size * priv->cm_nonsrq_max + 1;
}

/* ---- passive side ---- */

static void ipoib_cm_schedule_reap(struct ipoib_dev_priv *priv)
{
	queue_work(ipoib_reap_wq, &priv->cm_reap_work);
}

/*
 * Post the drain WR on the first QP that reached its last WQE; it covers
 * every QP on the flush list (they all reached theirs before). Lock held.
 */
static void ipoib_cm_start_drain(struct ipoib_dev_priv *priv)
{
	const struct ib_send_wr wr = {
		.wr_id = IPOIB_CM_DRAIN,
		.opcode = IB_WR_SEND,
	};
	struct ipoib_cm_rx *rx, *tmp;
	enum ipoib_cm_rx_state next = IPOIB_CM_RX_DRAIN;

	lockdep_assert_held(&priv->lock);
	if (priv->cm_draining || list_empty(&priv->cm_flush))
		return;
	rx = list_first_entry(&priv->cm_flush, struct ipoib_cm_rx, node);
	if (ib_post_send(rx->qp, &wr, NULL)) {
		/* cannot happen in ERR; destroying is safer than waiting forever */
		netdev_warn(priv->dev, "cannot post the drain WR\n");
		next = IPOIB_CM_RX_DEAD;
	} else {
		priv->cm_draining = true;
	}
	list_for_each_entry_safe(rx, tmp, &priv->cm_flush, node) {
		rx->state = next;
		list_move_tail(&rx->node, next == IPOIB_CM_RX_DEAD ?
			       &priv->cm_dead : &priv->cm_drain);
	}
	if (next == IPOIB_CM_RX_DEAD)
		ipoib_cm_schedule_reap(priv);
}

/* Lock held: a passive connection has no work left in flight. */
static void ipoib_cm_rx_dead(struct ipoib_dev_priv *priv,
			     struct ipoib_cm_rx *rx)
{
	lockdep_assert_held(&priv->lock);
	rx->state = IPOIB_CM_RX_DEAD;
	list_move_tail(&rx->node, &priv->cm_dead);
	ipoib_cm_schedule_reap(priv);
}

/* Stop receiving on a passive connection (process context). */
static void ipoib_cm_rx_error(struct ipoib_cm_rx *rx)
{
	struct ipoib_dev_priv *priv = rx->priv;
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };

	spin_lock_irq(&priv->lock);
	if (rx->state != IPOIB_CM_RX_LIVE) {
		spin_unlock_irq(&priv->lock);
		return;
	}
	rx->state = IPOIB_CM_RX_ERROR;
	spin_unlock_irq(&priv->lock);

	if (ib_modify_qp(rx->qp, &attr, IB_QP_STATE))
		netdev_warn(priv->dev, "cannot move a connection's QP to ERR\n");

	/* without an SRQ the flushed receives are counted in NAPI */
	spin_lock_irq(&priv->lock);
	if (!priv->srq && !rx->posted && rx->state == IPOIB_CM_RX_ERROR)
		ipoib_cm_rx_dead(priv, rx);
	spin_unlock_irq(&priv->lock);
}

/*
 * The HCA failed a passive QP on its own (an asynchronous QP error, or
 * its receives flushed while we still had it LIVE): the stale scan
 * closes it now, not when it has been idle for IPOIB_CM_RX_TIMEOUT,
 * which without an SRQ would keep its ring and one of the
 * max_nonsrq_conn_qp slots for that long. Any context.
 */
static void ipoib_cm_rx_failed(struct ipoib_cm_rx *rx)
{
	WRITE_ONCE(rx->failed, true);
	mod_delayed_work(ipoib_wq, &rx->priv->cm_stale_work, 0);
}

static void ipoib_cm_rx_event(struct ib_event *ev, void *ctx)
{
	struct ipoib_cm_rx *rx = ctx;
	struct ipoib_dev_priv *priv = rx->priv;
	unsigned long flags;

	switch (ev->event) {
	case IB_EVENT_COMM_EST:
		/* data before the RTU: the connection is established */
		ib_cm_notify(rx->id, IB_EVENT_COMM_EST);
		break;
	case IB_EVENT_QP_LAST_WQE_REACHED:
		/*
		 * Not only after our own move to ERR: the HCA may fail a QP
		 * on its own (a local or transport error), and then this
		 * event, once, is all we hear of it (no receive of ours was
		 * on the QP to flush with an error).
		 */
		spin_lock_irqsave(&priv->lock, flags);
		switch (rx->state) {
		case IPOIB_CM_RX_NEW:
			rx->last_wqe = true;	/* ipoib_cm_req() refuses it */
			break;
		case IPOIB_CM_RX_LIVE:
			priv->cm_passive_failed++;	/* not our move to ERR */
			fallthrough;
		case IPOIB_CM_RX_ERROR:
			rx->state = IPOIB_CM_RX_FLUSH;
			list_move_tail(&rx->node, &priv->cm_flush);
			ipoib_cm_start_drain(priv);
			break;
		default:
			break;	/* already on its way out */
		}
		spin_unlock_irqrestore(&priv->lock, flags);
		break;
	case IB_EVENT_QP_FATAL:
	case IB_EVENT_QP_REQ_ERR:
	case IB_EVENT_QP_ACCESS_ERR:
		/* without an SRQ no LAST_WQE comes: let the stale scan close it */
		ipoib_cm_rx_failed(rx);
		break;
	default:
		break;
	}
}

/* Destroy passive connections whose last completion was seen. */
static void ipoib_cm_reap_work(struct work_struct *work)
{
	struct ipoib_dev_priv *priv = container_of(work, struct ipoib_dev_priv,
						   cm_reap_work);
	struct ipoib_cm_rx *rx, *tmp;
	LIST_HEAD(dead);

	spin_lock_irq(&priv->lock);
	list_splice_init(&priv->cm_dead, &dead);
	spin_unlock_irq(&priv->lock);
	/*
	 * Stop, the stale scan and admission hold the mutex while they use
	 * an rx they found on cm_passive: once we have held it, none uses
	 * ours (they left cm_passive before). Not held while destroying,
	 * which may take a grace period per QP: a REQ needs the mutex.
	 */
	mutex_lock(&priv->cm_mutex);
	mutex_unlock(&priv->cm_mutex);

	list_for_each_entry_safe(rx, tmp, &dead, node) {
		/* sends DREQ (or REJ) to the peer if it still thinks we are up */
		ib_destroy_cm_id(rx->id);
		ib_destroy_qp(rx->qp);
		ipoib_cm_free_ring(priv, rx->ring);
		spin_lock_irq(&priv->lock);
		if (!priv->srq)
			priv->cm_nonsrq--;
		priv->cm_rx_count--;
		spin_unlock_irq(&priv->lock);
		kfree(rx);
	}
}

/* Connections idle for long (or broken) are closed; peers reconnect. */
static void ipoib_cm_stale_work(struct work_struct *work)
{
	struct ipoib_dev_priv *priv = container_of(work, struct ipoib_dev_priv,
						   cm_stale_work.work);
	struct ipoib_cm_rx *rx, *stale = NULL;
	bool more;

	mutex_lock(&priv->cm_mutex);
	do {
		stale = NULL;
		spin_lock_irq(&priv->lock);
		list_for_each_entry(rx, &priv->cm_passive, node) {
			if (rx->state == IPOIB_CM_RX_LIVE &&
			    (rx->failed ||
			     time_after(jiffies, READ_ONCE(rx->last_active) +
					IPOIB_CM_RX_TIMEOUT))) {
				stale = rx;
				if (rx->failed)
					priv->cm_passive_failed++;
				break;
			}
		}
		more = !list_empty(&priv->cm_passive);
		spin_unlock_irq(&priv->lock);
		if (stale)
			ipoib_cm_rx_error(stale);
	} while (stale);
	mutex_unlock(&priv->cm_mutex);
	/* stranded SRQ slots wait for a poll: make one if all is quiet */
	if (READ_ONCE(priv->srq_stranded)) {
		local_bh_disable();
		napi_schedule(&priv->napi);
		local_bh_enable();
	}
	if (more)
		queue_delayed_work(ipoib_wq, &priv->cm_stale_work,
				   IPOIB_CM_RX_SCAN);
}

static int ipoib_cm_modify(struct ib_cm_id *id, struct ib_qp *qp,
			   enum ib_qp_state state, u32 rq_psn)
{
	struct ib_qp_attr attr = { .qp_state = state };
	int mask, ret;

	ret = ib_cm_init_qp_attr(id, &attr, &mask);
	if (ret)
		return ret;
	if (state == IB_QPS_RTR && rq_psn != U32_MAX) {
		attr.rq_psn = rq_psn;
		/*
		 * The CM asks for 655 ms (encoding 0) between RNR retries; as we
		 * let senders retry RNR, a briefly empty queue must cost them
		 * about a millisecond, not most of a second.
		 */
		attr.min_rnr_timer = IB_RNR_TIMER_001_28;
		mask |= IB_QP_MIN_RNR_TIMER;
	}
	/*
	 * Our own REP asks for 7 (for ever): never let a receiver that
	 * posts nothing keep our sends, and the shared ring, for good
	 */
	if (state == IB_QPS_RTS && (mask & IB_QP_RNR_RETRY) &&
	    attr.rnr_retry > IPOIB_CM_RNR_RETRY)
		attr.rnr_retry = IPOIB_CM_RNR_RETRY;
	return ib_modify_qp(qp, &attr, mask);
}

/*
 * Take a slot for one more passive connection (CM thread). At the limit
 * the REQ is refused (the peer retries: ours after a second of UD) and
 * the connection least recently active is closed to make room, so that
 * a peer with traffic gets in while idle peers only reconnect later.
 * Refusing instead of waiting for the close keeps the bound strict.
 */
static int ipoib_cm_rx_admit(struct ipoib_dev_priv *priv)
{
	struct ipoib_cm_rx *rx, *victim = NULL;

	mutex_lock(&priv->cm_mutex);	/* keeps the victim from the reaper */
	spin_lock_irq(&priv->lock);
	if (priv->cm_rx_count < READ_ONCE(ipoib_max_cm_passive)) {
		priv->cm_rx_count++;
		spin_unlock_irq(&priv->lock);
		mutex_unlock(&priv->cm_mutex);
		return 0;
	}
	list_for_each_entry(rx, &priv->cm_passive, node)
		if (rx->state == IPOIB_CM_RX_LIVE &&
		    (!victim || time_before(READ_ONCE(rx->last_active),
					    READ_ONCE(victim->last_active))))
			victim = rx;
	priv->cm_passive_refused++;
	if (victim)
		priv->cm_passive_evicted++;
	spin_unlock_irq(&priv->lock);
	ipoib_dbg(priv, "refusing a connection: %u already (max_cm_passive)%s\n",
		  priv->cm_rx_count, victim ? ", closing the least active" : "");
	if (victim)
		ipoib_cm_rx_error(victim);
	mutex_unlock(&priv->cm_mutex);
	return -EBUSY;
}

/* A peer asks to connect (CM thread; may sleep). Non-zero: REJ. */
static int ipoib_cm_req(struct ib_cm_id *id, const struct ib_cm_event *ev)
{
	struct ipoib_dev_priv *priv = id->context;
	struct ib_qp_init_attr init = {
		.event_handler = ipoib_cm_rx_event,
		.send_cq = priv->cq,
		.recv_cq = priv->cq,
		.srq = priv->srq,
		.cap = {
			.max_send_wr = 1,	/* the drain WR */
			.max_send_sge = 1,
		},
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.qp_type = IB_QPT_RC,
	};
	struct ipoib_cm_data data = {
		.qpn = cpu_to_be32(ipoib_ud_qpn(priv)),
		.mtu = cpu_to_be32(IPOIB_CM_BUF),
	};
	struct ib_cm_rep_param rep = {
		.private_data = &data,
		.private_data_len = sizeof(data),
		/*
		 * an empty SRQ is no reason to die: the peer's limit decides
		 * (ours, IPOIB_CM_RNR_RETRY, applies what we ask to it)
		 */
		.rnr_retry_count = 7,
		.srq = !!priv->srq,
	};
	struct ipoib_cm_rx *rx;
	u32 psn;
	int ret;

	if (ipoib_cm_rx_admit(priv)) {
		ib_send_cm_rej(id, IB_CM_REJ_NO_QP, NULL, 0, NULL, 0);
		return -EINVAL;
	}
	if (!priv->srq) {
		spin_lock_irq(&priv->lock);
		if (priv->cm_nonsrq >= priv->cm_nonsrq_max) {
			priv->cm_rx_count--;
			spin_unlock_irq(&priv->lock);
			ipoib_dbg(priv, "refusing a connection: %u without SRQ already (max_nonsrq_conn_qp)\n",
				  priv->cm_nonsrq);
			ib_send_cm_rej(id, IB_CM_REJ_NO_QP, NULL, 0, NULL, 0);
			return -EINVAL;
		}
		priv->cm_nonsrq++;
		spin_unlock_irq(&priv->lock);
	} else {
		mutex_lock(&priv->cm_mutex);
		ret = priv->srq_filled ? 0 : ipoib_cm_fill_ring(priv, NULL);
		if (!ret)
			priv->srq_filled = true;
		mutex_unlock(&priv->cm_mutex);
		if (ret)
			goto err_count;
	}

	rx = kzalloc(sizeof(*rx), GFP_KERNEL);
	if (!rx) {
		ret = -ENOMEM;
		goto err_count;
	}
	rx->priv = priv;
	rx->id = id;
	rx->remote_qpn = ev->param.req_rcvd.remote_qpn;
	/* NEW until published: the QP's events may come before that */
	INIT_LIST_HEAD(&rx->node);
	rx->state = IPOIB_CM_RX_NEW;
	rx->last_active = jiffies;
	if (!priv->srq) {
		init.cap.max_recv_wr = priv->rx_size;
		init.cap.max_recv_sge = IPOIB_CM_SGE;
		rx->ring = kvcalloc(priv->rx_size, sizeof(*rx->ring),
				    GFP_KERNEL);
		if (!rx->ring) {
			ret = -ENOMEM;
			goto err_free_rx;
		}
	}
	init.qp_context = rx;
	rx->qp = ib_create_qp(priv->pd, &init);
	if (IS_ERR(rx->qp)) {
		ret = PTR_ERR(rx->qp);
		goto err_free_ring;
	}

	/* RTR before the REP: an in-tree peer sends data before its RTU */
	psn = get_random_u32() & 0xffffff;
	ret = ipoib_cm_modify(id, rx->qp, IB_QPS_INIT, U32_MAX);
	if (!ret)
		ret = ipoib_cm_modify(id, rx->qp, IB_QPS_RTR, psn);
	if (ret)
		goto err_destroy_qp;
	/* only the drain WR is ever sent; RTS is a courtesy to the HCA */
	ipoib_cm_modify(id, rx->qp, IB_QPS_RTS, U32_MAX);
	if (!priv->srq) {
		ret = ipoib_cm_fill_ring(priv, rx);
		if (ret)
			goto err_destroy_qp;
	}

	spin_lock_irq(&priv->lock);
	if (rx->last_wqe) {
		/* the HCA failed the QP already; nothing was received on it */
		spin_unlock_irq(&priv->lock);
		ret = -EIO;
		goto err_destroy_qp;
	}
	rx->state = IPOIB_CM_RX_LIVE;
	list_add_tail(&rx->node, &priv->cm_passive);
	spin_unlock_irq(&priv->lock);
	id->context = rx;
	queue_delayed_work(ipoib_wq, &priv->cm_stale_work, IPOIB_CM_RX_SCAN);

	rep.qp_num = rx->qp->qp_num;
	rep.starting_psn = psn;
	ret = ib_send_cm_rep(id, &rep);
	if (ret) {
		/* a peer's REQs make these: keep the log from flooding */
		if (net_ratelimit())
			netdev_warn(priv->dev, "cannot accept a connection: REP failed: %d\n",
				    ret);
		ipoib_cm_rx_error(rx);
	}
	ipoib_dbg(priv, "accepted a connection from QPN 0x%06x\n",
		  ev->param.req_rcvd.remote_qpn);
	return 0;

err_destroy_qp:
	ib_destroy_qp(rx->qp);
err_free_ring:
	ipoib_cm_free_ring(priv, rx->ring);
err_free_rx:
	kfree(rx);
err_count:
	spin_lock_irq(&priv->lock);
	if (!priv->srq)
		priv->cm_nonsrq--;
	priv->cm_rx_count--;
	spin_unlock_irq(&priv->lock);
	return ret;
}

static int ipoib_cm_rx_handler(struct ib_cm_id *id,
			       const struct ib_cm_event *ev)
{
	struct ipoib_cm_rx *rx;

	if (ev->event == IB_CM_REQ_RECEIVED)
		return ipoib_cm_req(id, ev);

	rx = id->context;
	switch (ev->event) {
	case IB_CM_DREQ_RECEIVED:
		ib_send_cm_drep(id, NULL, 0);
		ipoib_cm_rx_error(rx);
		break;
	case IB_CM_REJ_RECEIVED:	/* the peer refused our REP */
		ipoib_cm_rx_error(rx);
		break;
	default:
		break;
	}
	return 0;
}

int ipoib_cm_start(struct ipoib_dev_priv *priv)
{
	struct ib_cm_id *id;
	int ret;

	ASSERT_RTNL();
	id = ib_create_cm_id(priv->ca, ipoib_cm_rx_handler, priv);
	if (IS_ERR(id))
		return PTR_ERR(id);
	ret = ib_cm_listen(id, cpu_to_be64(IPOIB_CM_SERVICE_ID |
					    ipoib_ud_qpn(priv)));
	if (ret) {
		ib_destroy_cm_id(id);
		return ret;
	}
	priv->cm_listen = id;
	return 0;
}

/*
 * Interface down (rtnl held): no new connections, and every connection
 * stopped, but not destroyed, before ipoib_transport_down() turns NAPI
 * off. What needs NAPI happens here, for all connections at once and
 * with one deadline: the active ones' sends are flushed
 * (ipoib_cm_tx_reap_work()), the passive ones go to ERR together and
 * drain (their receives flushed, or with an SRQ LAST_WQE_REACHED and
 * the drain WR) until every one is DEAD. Destroying the QPs and CM IDs,
 * which costs a grace period per QP on some HCAs, is left to the reap
 * work items, without rtnl (200 connections held it for 4 s on softib,
 * destroyed one by one). A DEAD or quiesced connection has no
 * completion left to come, so NAPI may be off or running again (a
 * following up) while it is destroyed; its QP and CM ID hold the CQs
 * and the device until then, and ipoib_release() flushes those works
 * before the transport goes (a mode change only queues them, module
 * unload releases every interface first).
 */
void ipoib_cm_stop(struct ipoib_dev_priv *priv)
{
	unsigned long deadline = jiffies + 5 * HZ;
	struct ipoib_cm_rx *rx;
	bool busy;

	ASSERT_RTNL();
	/* no REQ after this: the passive lists only shrink */
	if (priv->cm_listen) {
		ib_destroy_cm_id(priv->cm_listen);
		priv->cm_listen = NULL;
	}
	cancel_delayed_work_sync(&priv->cm_stale_work);

	/* the mutex keeps the reaper from freeing rx under our feet */
	mutex_lock(&priv->cm_mutex);
	for (;;) {
		struct ipoib_cm_rx *live = NULL;

		spin_lock_irq(&priv->lock);
		list_for_each_entry(rx, &priv->cm_passive, node) {
			if (rx->state == IPOIB_CM_RX_LIVE) {
				live = rx;
				break;
			}
		}
		spin_unlock_irq(&priv->lock);
		if (!live)
			break;
		ipoib_cm_rx_error(live);
	}
	mutex_unlock(&priv->cm_mutex);

	/*
	 * The connections of the paths ipoib_halt() just flushed: to ERR
	 * and flushed while the passive ones drain
	 */
	flush_work(&priv->cm_tx_reap_work);

	for (;;) {
		spin_lock_irq(&priv->lock);
		busy = !list_empty(&priv->cm_passive) ||
		       !list_empty(&priv->cm_flush) ||
		       !list_empty(&priv->cm_drain);
		if (busy && time_after(jiffies, deadline)) {
			netdev_warn(priv->dev, "connections not drained after 5s: destroying them\n");
			/* DEAD: a late LAST_WQE must not move them off cm_dead */
			list_for_each_entry(rx, &priv->cm_passive, node)
				rx->state = IPOIB_CM_RX_DEAD;
			list_for_each_entry(rx, &priv->cm_flush, node)
				rx->state = IPOIB_CM_RX_DEAD;
			list_for_each_entry(rx, &priv->cm_drain, node)
				rx->state = IPOIB_CM_RX_DEAD;
			list_splice_init(&priv->cm_passive, &priv->cm_dead);
			list_splice_init(&priv->cm_flush, &priv->cm_dead);
			list_splice_init(&priv->cm_drain, &priv->cm_dead);
			priv->cm_draining = false;
			spin_unlock_irq(&priv->lock);
			/*
			 * Destroying the QPs purges their completions from
			 * the CQ, but a NAPI poll may hold one it took
			 * before, and reads wc->qp->qp_context: NAPI is off
			 * while they go, then polls whatever came meanwhile.
			 */
			if (priv->transport_up)
				napi_disable(&priv->napi);
			ipoib_cm_reap_work(&priv->cm_reap_work);
			if (priv->transport_up) {
				local_bh_disable();
				napi_enable(&priv->napi);
				napi_schedule(&priv->napi);
				local_bh_enable();
			}
			break;
		}
		spin_unlock_irq(&priv->lock);
		if (!busy)
			break;
		usleep_range(1000, 2000);
	}
}

/* ---- completions (NAPI) ---- */

/*
 * NAPI gives slot i back. On the SRQ a post that fails (an SRQ in error,
 * softib's fail_post_srq) would lose the slot for good and shrink the
 * ring by one each time: the slot is marked stranded and tried again by
 * every NAPI poll (ipoib_cm_poll()), oldest first; the stale scan
 * schedules a poll if nothing else does. A connection's own ring fails
 * only with its QP, which is going away with the ring.
 */
/*
 * Without an SRQ, a receive of rx's own ring is gone for good (flushed,
 * or its repost failed). rx->posted counts the receives the HCA holds
 * plus the one NAPI is handling, and only drops under priv->lock: so
 * ipoib_cm_rx_error() cannot find it 0, and the connection dead, while
 * NAPI still uses rx. The last one of a connection in ERROR makes it
 * dead; NAPI does not touch rx after that.
 */
static void ipoib_cm_rx_put(struct ipoib_dev_priv *priv,
			    struct ipoib_cm_rx *rx)
{
	unsigned long flags;

	spin_lock_irqsave(&priv->lock, flags);
	if (!--rx->posted && rx->state == IPOIB_CM_RX_ERROR)
		ipoib_cm_rx_dead(priv, rx);
	spin_unlock_irqrestore(&priv->lock, flags);
}

static void ipoib_cm_repost(struct ipoib_dev_priv *priv,
			    struct ipoib_cm_rx *rx, unsigned int i)
{
	int ret;

	if (!priv->srq) {
		if (ipoib_cm_post_rx(priv, rx, i))
			ipoib_cm_rx_put(priv, rx);
		return;
	}
	ret = ipoib_cm_post_rx(priv, NULL, i);
	if (ret) {
		if (net_ratelimit())
			netdev_warn(priv->dev, "SRQ repost of buffer %u failed (%d): tried again at the next poll\n",
				    i, ret);
		priv->srq_ring[i].stranded = true;
		WRITE_ONCE(priv->srq_stranded, priv->srq_stranded + 1);
	}
}

static void ipoib_cm_repost_stranded(struct ipoib_dev_priv *priv)
{
	unsigned int i;

	for (i = 0; i < priv->rx_size && priv->srq_stranded; i++) {
		if (!priv->srq_ring[i].stranded)
			continue;
		if (ipoib_cm_post_rx(priv, NULL, i))
			return;
		priv->srq_ring[i].stranded = false;
		WRITE_ONCE(priv->srq_stranded, priv->srq_stranded - 1);
		WRITE_ONCE(priv->srq_reposted, priv->srq_reposted + 1);
	}
}

static void ipoib_cm_handle_rx(struct ipoib_dev_priv *priv, struct ib_wc *wc)
{
	struct ipoib_cm_rx *rx = wc->qp->qp_context;
	unsigned int i = wc->wr_id & IPOIB_CM_SLOT_MASK;
	struct page *pages[IPOIB_CM_FRAGS];
	u64 maps[IPOIB_CM_SGE];
	struct ipoib_cm_rx_buf *buf;
	struct sk_buff *skb, *fresh;
	unsigned int len, used, j;
	unsigned long pooled = 0;

	if (i >= priv->rx_size) {
		netdev_warn_once(priv->dev, "CM receive with wr_id 0x%llx\n",
				 wc->wr_id);
		return;
	}
	buf = priv->srq ? &priv->srq_ring[i] : &rx->ring[i];

	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR) {
			priv->dev->stats.rx_errors++;
			ipoib_cm_rx_failed(rx);
		} else if (!priv->srq && !READ_ONCE(rx->failed) &&
			   READ_ONCE(rx->state) == IPOIB_CM_RX_LIVE) {
			/*
			 * Flushed while LIVE: the QP is in ERR and we did not
			 * put it there (ipoib_cm_rx_error() leaves LIVE first).
			 * With an SRQ nothing is flushed; LAST_WQE_REACHED
			 * says it instead.
			 */
			ipoib_cm_rx_failed(rx);
		}
		if (priv->srq) {
			/* the SRQ lives on: give the buffer back */
			ipoib_cm_repost(priv, NULL, i);
		} else {
			ipoib_cm_rx_put(priv, rx);
		}
		return;
	}

	if (time_after(jiffies, rx->last_active + HZ))
		WRITE_ONCE(rx->last_active, jiffies);
	len = wc->byte_len;
	/* more than was posted would index past pages[] and maps[] below */
	if (len < IPOIB_ENCAP_LEN || len > IPOIB_CM_BUF) {
		priv->dev->stats.rx_length_errors++;
		goto repost;
	}

	if (len < IPOIB_CM_COPYBREAK) {
		skb = napi_alloc_skb(&priv->napi, len);
		if (!skb)
			goto drop;
		ib_dma_sync_single_for_cpu(priv->ca, buf->mapping[0], len,
					   DMA_FROM_DEVICE);
		skb_put_data(skb, buf->skb->data, len);
		ib_dma_sync_single_for_device(priv->ca, buf->mapping[0], len,
					      DMA_FROM_DEVICE);
		goto deliver;
	}

	/* replacements first: on failure the old buffer goes back whole */
	used = len > IPOIB_CM_HEAD ?
	       DIV_ROUND_UP(len - IPOIB_CM_HEAD, PAGE_SIZE) : 0;
	fresh = ipoib_cm_alloc_head(priv, &maps[0], GFP_ATOMIC);
	if (!fresh)
		goto drop;
	for (j = 0; j < used; j++) {
		pages[j] = NULL;
		if (priv->cm_pool) {
			pages[j] = ipoib_pool_page(priv, priv->cm_pool,
						   &maps[j + 1]);
			if (pages[j])
				__set_bit(j, &pooled);
		}
		if (!pages[j])
			pages[j] = ipoib_alloc_rx_page(priv, &maps[j + 1],
						       GFP_ATOMIC);
		if (!pages[j])
			goto drop_fresh;
	}

	skb = buf->skb;
	ib_dma_unmap_single(priv->ca, buf->mapping[0], IPOIB_CM_HEAD,
			    DMA_FROM_DEVICE);
	skb_put(skb, min_t(unsigned int, len, IPOIB_CM_HEAD));
	len -= skb->len;
	for (j = 0; j < used; j++) {
		ib_dma_unmap_page(priv->ca, buf->mapping[j + 1], PAGE_SIZE,
				  DMA_FROM_DEVICE);
		skb_add_rx_frag(skb, j, buf->pages[j], 0,
				min_t(unsigned int, len, PAGE_SIZE), PAGE_SIZE);
		len -= min_t(unsigned int, len, PAGE_SIZE);
		/* freeing the skb returns the pool's pages to the pool */
		if (test_bit(j, &buf->pooled))
			skb_mark_for_recycle(skb);
		buf->pages[j] = pages[j];
		buf->mapping[j + 1] = maps[j + 1];
		assign_bit(j, &buf->pooled, test_bit(j, &pooled));
	}
	buf->skb = fresh;
	buf->mapping[0] = maps[0];

deliver:
	ipoib_cm_repost(priv, rx, i);
	skb->pkt_type = PACKET_HOST;
	ipoib_rx_deliver(priv, skb);
	return;

drop_fresh:
	while (j--)
		ipoib_cm_page_free(priv, pages[j], maps[j + 1],
				   test_bit(j, &pooled));
	ib_dma_unmap_single(priv->ca, maps[0], IPOIB_CM_HEAD, DMA_FROM_DEVICE);
	dev_kfree_skb_any(fresh);
drop:
	priv->dev->stats.rx_dropped++;
repost:
	ipoib_cm_repost(priv, rx, i);
}

/* End of a NAPI poll: SRQ slots whose repost failed go back. */
void ipoib_cm_poll(struct ipoib_dev_priv *priv)
{
	if (priv->srq && unlikely(priv->srq_stranded))
		ipoib_cm_repost_stranded(priv);
}

static void ipoib_cm_tx_close(struct ipoib_cm_tx *tx, bool later);

void ipoib_cm_handle_wc(struct ipoib_dev_priv *priv, struct ib_wc *wc)
{
	struct ipoib_cm_tx *tx;
	unsigned int i;

	if (wc->wr_id & IPOIB_OP_RECV) {
		ipoib_cm_handle_rx(priv, wc);
		return;
	}
	if (wc->wr_id == IPOIB_CM_DRAIN) {
		struct ipoib_cm_rx *rx, *tmp;
		unsigned long flags;

		/* QP events may come from hard IRQ on real HCAs */
		spin_lock_irqsave(&priv->lock, flags);
		list_for_each_entry_safe(rx, tmp, &priv->cm_drain, node)
			ipoib_cm_rx_dead(priv, rx);
		priv->cm_draining = false;
		ipoib_cm_start_drain(priv);
		spin_unlock_irqrestore(&priv->lock, flags);
		return;
	}

	tx = wc->qp->qp_context;
	i = wc->wr_id & IPOIB_CM_SLOT_MASK;
	if (i >= priv->tx_size) {
		netdev_warn_once(priv->dev, "CM send with wr_id 0x%llx\n",
				 wc->wr_id);
		return;
	}
	ipoib_tx_done(priv, &tx->ring[i], wc->status);
	if (wc->status != IB_WC_SUCCESS && wc->status != IB_WC_WR_FLUSH_ERR) {
		ipoib_dbg(priv, "connection to QPN 0x%06x failed: %s\n",
			  tx->qpn, ib_wc_status_msg(wc->status));
		/*
		 * A receiver out of buffers (we ask for no RNR retries, as
		 * in-tree does, and make at most IPOIB_CM_RNR_RETRY): UD
		 * carries the traffic for the backoff instead of a reconnect
		 * that would meet the same queue.
		 */
		if (wc->status == IB_WC_RNR_RETRY_EXC_ERR)
			WRITE_ONCE(priv->cm_rnr_fallbacks,
				   priv->cm_rnr_fallbacks + 1);
		ipoib_cm_tx_close(tx, wc->status == IB_WC_RNR_RETRY_EXC_ERR);
	}
	WRITE_ONCE(tx->last_done, jiffies);
	/* its share stopped the queue: the send NAPI may wake it now */
	priv->cm_tx_napi_last = tx;
	/*
	 * Last access to tx: once tail reaches head, ipoib_cm_tx_teardown()
	 * may free it. Pairs with the acquire there.
	 */
	smp_store_release(&tx->tail, tx->tail + 1);
}

/* ---- active side ---- */

/* Connected mode only carries unicast IP to peers that accept RC. */
bool ipoib_cm_wanted(struct ipoib_dev_priv *priv, struct sk_buff *skb,
		     const u8 *daddr)
{
	__be16 proto = ((struct ipoib_header *)skb->data)->proto;

	/*
	 * Only from TX queue 0, which serializes our RC sends: a packet
	 * the stack put on another queue of an enhanced interface before
	 * the mode changed goes over UD, which it was sized for.
	 */
	return READ_ONCE(priv->cm_mode) && (daddr[0] & IPOIB_FLAGS_RC) &&
	       !skb_get_queue_mapping(skb) &&
	       (proto == htons(ETH_P_IP) || proto == htons(ETH_P_IPV6));
}

/*
 * The connection leaves UP (priv->lock held): the lockless transmit no
 * longer finds it. One that already has it holds the tx lock, which
 * ipoib_cm_tx_teardown() waits for before the QP goes.
 */
static void ipoib_cm_tx_unpublish(struct ipoib_cm_tx *tx)
{
	struct ipoib_path *path = tx->path;

	lockdep_assert_held(&tx->priv->lock);
	if (rcu_access_pointer(path->cm_fast) == tx)
		RCU_INIT_POINTER(path->cm_fast, NULL);
}

/*
 * Close a connection from any context. "later": the peer refused or did
 * not answer, so UD carries the traffic for a while (backoff).
 */
static void ipoib_cm_tx_close(struct ipoib_cm_tx *tx, bool later)
{
	struct ipoib_dev_priv *priv = tx->priv;
	unsigned long flags;

	spin_lock_irqsave(&priv->lock, flags);
	if (tx->state == IPOIB_CM_TX_CONNECTING ||
	    tx->state == IPOIB_CM_TX_UP) {
		ipoib_cm_tx_unpublish(tx);
		tx->state = IPOIB_CM_TX_CLOSING;
		tx->retry_later = later;
		if (later) {
			tx->retry_after = jiffies + tx->backoff * HZ;
			tx->backoff = min(tx->backoff * 2, IPOIB_CM_MAX_BACKOFF);
		}
		queue_work(ipoib_wq, &tx->work);
	}
	spin_unlock_irqrestore(&priv->lock, flags);
}

static void ipoib_cm_tx_event(struct ib_event *ev, void *ctx)
{
}

static int ipoib_cm_tx_handler(struct ib_cm_id *id,
			       const struct ib_cm_event *ev);

/*
 * A teardown in two steps. The first, with NAPI running, brings the QP
 * to ERR and waits until send NAPI has taken back every send, which the
 * shared ring and global_tail account for (ipoib_transport_up() resets
 * them): ipoib_cm_tx_to_err(), ipoib_cm_tx_flushed(). After it no
 * completion will name the QP (its receive queue is empty), so the
 * second, ipoib_cm_tx_release(), needs neither NAPI nor rtnl: it
 * destroys the CM ID (no more CM events; DREQ or REJ goes to the peer),
 * then the QP. ipoib_cm_tx_reap_work() does the first for all the
 * connections that go together, with one deadline, and leaves the
 * second to cm_tx_free_work.
 */
static void ipoib_cm_tx_to_err(struct ipoib_cm_tx *tx)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };

	if (tx->qp)
		ib_modify_qp(tx->qp, &attr, IB_QP_STATE);
}

static bool ipoib_cm_tx_flushed(struct ipoib_cm_tx *tx)
{
	/* pairs with the release in ipoib_cm_handle_wc() */
	return !tx->qp || smp_load_acquire(&tx->tail) == READ_ONCE(tx->head);
}

static void ipoib_cm_tx_release(struct ipoib_cm_tx *tx)
{
	if (tx->id) {
		ib_destroy_cm_id(tx->id);
		tx->id = NULL;
	}
	if (tx->qp) {
		ib_destroy_qp(tx->qp);
		tx->qp = NULL;
	}
	kvfree(tx->ring);
	tx->ring = NULL;
	tx->head = 0;
	tx->tail = 0;
}

/*
 * The sends of tx did not come back within the deadline (a QP that
 * completes nothing, not even flushed WRs). NAPI goes off before the QP
 * goes: a poll in progress may hold a completion of this QP that it
 * took before the destroy purged the rest, and it reads
 * wc->qp->qp_context. Teardowns run before ipoib_transport_down()
 * (ipoib_halt() flushes the paths and ipoib_cm_stop() waits for them),
 * so NAPI is enabled here.
 */
static void ipoib_cm_tx_abandon(struct ipoib_cm_tx *tx)
{
	struct ipoib_dev_priv *priv = tx->priv;
	unsigned int i;

	netdev_warn(priv->dev, "%u sends to QPN 0x%06x not flushed after 5s\n",
		    tx->head - tx->tail, tx->qpn);
	napi_disable(&priv->send_napi);
	if (tx->id) {
		ib_destroy_cm_id(tx->id);
		tx->id = NULL;
	}
	ib_destroy_qp(tx->qp);
	tx->qp = NULL;
	/*
	 * Sends the timeout left: the QP is gone and so are their
	 * completions (the HCA purges them), so free them here, in softirq
	 * context as NAPI does (napi_consume_skb), with send_napi still
	 * off: ipoib_tx_done() counts global_tail and the stats, which only
	 * send_napi writes.
	 */
	local_bh_disable();
	priv->send_napi_budget = 1;
	for (i = 0; i < priv->tx_size; i++)
		if (tx->ring[i].skb)
			ipoib_tx_done(priv, &tx->ring[i], IB_WC_WR_FLUSH_ERR);
	napi_enable(&priv->send_napi);
	/* an event that came while it was off scheduled nothing */
	napi_schedule(&priv->send_napi);
	local_bh_enable();
	tx->head = 0;
	tx->tail = 0;
}

/*
 * A transmit that found a connection up before it was unpublished
 * (ipoib_cm_xmit_fast()) posts under the tx lock: once we have held it,
 * none is left, and none can start.
 */
static void ipoib_cm_tx_sync_xmit(struct ipoib_dev_priv *priv)
{
	netif_tx_lock_bh(priv->dev);
	netif_tx_unlock_bh(priv->dev);
}

/* Release what one connection attempt created (tx work, process context). */
static void ipoib_cm_tx_teardown(struct ipoib_cm_tx *tx)
{
	unsigned long deadline = jiffies + 5 * HZ;

	ipoib_cm_tx_sync_xmit(tx->priv);
	/* no more CM events first: the REP handler moves the QP */
	if (tx->id) {
		ib_destroy_cm_id(tx->id);
		tx->id = NULL;
	}
	ipoib_cm_tx_to_err(tx);
	while (!ipoib_cm_tx_flushed(tx)) {
		if (time_after(jiffies, deadline)) {
			ipoib_cm_tx_abandon(tx);
			break;
		}
		usleep_range(1000, 2000);
	}
	ipoib_cm_tx_release(tx);
}

/* Create the QP and send the REQ (tx work; may sleep). */
static int ipoib_cm_tx_connect(struct ipoib_cm_tx *tx)
{
	struct ipoib_dev_priv *priv = tx->priv;
	struct ib_qp_init_attr init = {
		.event_handler = ipoib_cm_tx_event,
		.qp_context = tx,
		.send_cq = priv->send_cq,
		.recv_cq = priv->cq,
		/*
		 * Not on the SRQ: nothing may arrive on a QP we send on (its
		 * context is not a receiving connection), so it gets an empty
		 * receive queue of its own.
		 */
		.cap = {
			.max_send_wr = priv->tx_size,
			.max_send_sge = priv->max_send_sge,
			.max_recv_wr = 1,
			.max_recv_sge = 1,
		},
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.qp_type = IB_QPT_RC,
	};
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_INIT,
		.pkey_index = priv->pkey_index,
		.port_num = priv->port,
	};
	struct ipoib_cm_data data = {
		.qpn = cpu_to_be32(ipoib_ud_qpn(priv)),
		.mtu = cpu_to_be32(IPOIB_CM_BUF),
	};
	struct ib_cm_req_param req = {
		.service_id = cpu_to_be64(IPOIB_CM_SERVICE_ID | tx->qpn),
		.qp_type = IB_QPT_RC,
		.private_data = &data,
		.private_data_len = sizeof(data),
		.responder_resources = 4,
		.remote_cm_response_timeout = 20,
		.local_cm_response_timeout = 20,
		/*
		 * As in-tree: an in-tree receiver echoes this in its REP (our
		 * QP then uses it) with a 655 ms RNR timer; 7 would stall each
		 * send that meets its empty queue for that long, forever.
		 * With 0 the send fails and ipoib_cm_handle_wc() falls back
		 * to UD. Our receivers answer 7 with a 1.28 ms timer.
		 */
		.rnr_retry_count = 0,
		.max_cm_retries = 15,
	};
	struct sa_path_rec rec;
	int ret;

	tx->ring = kvcalloc(priv->tx_size, sizeof(*tx->ring), GFP_KERNEL);
	if (!tx->ring)
		return -ENOMEM;
	tx->qp = ib_create_qp(priv->pd, &init);
	if (IS_ERR(tx->qp)) {
		ret = PTR_ERR(tx->qp);
		tx->qp = NULL;
		return ret;
	}
	tx->id = ib_create_cm_id(priv->ca, ipoib_cm_tx_handler, tx);
	if (IS_ERR(tx->id)) {
		ret = PTR_ERR(tx->id);
		tx->id = NULL;
		return ret;
	}
	ret = ib_modify_qp(tx->qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (ret)
		return ret;

	spin_lock_irq(&priv->lock);
	if (tx->state == IPOIB_CM_TX_DYING) {
		/* the path may be freed (ipoib_cm_path_release) */
		spin_unlock_irq(&priv->lock);
		return -ENODEV;
	}
	rec = tx->path->rec;
	spin_unlock_irq(&priv->lock);
	req.primary_path = &rec;
	req.qp_num = tx->qp->qp_num;
	return ib_send_cm_req(tx->id, &req);
}

static void ipoib_cm_tx_work(struct work_struct *work)
{
	struct ipoib_cm_tx *tx = container_of(work, struct ipoib_cm_tx, work);
	struct ipoib_dev_priv *priv = tx->priv;
	struct sk_buff_head queue;
	enum ipoib_cm_tx_state state;
	int ret;

	__skb_queue_head_init(&queue);
	spin_lock_irq(&priv->lock);
	state = tx->state;
	spin_unlock_irq(&priv->lock);

	if (state == IPOIB_CM_TX_CLOSING) {
		ipoib_cm_tx_teardown(tx);
		spin_lock_irq(&priv->lock);
		if (tx->state == IPOIB_CM_TX_CLOSING) {
			tx->state = IPOIB_CM_TX_IDLE;
			/* packets waited for this connection: connect again or UD */
			if (!skb_queue_empty(&tx->queue)) {
				if (tx->retry_later)
					skb_queue_splice_init(&tx->queue, &queue);
				else
					tx->state = IPOIB_CM_TX_CONNECTING;
			}
			if (tx->state == IPOIB_CM_TX_IDLE)
				priv->cm_tx_qps--;
		}
		state = tx->state;
		spin_unlock_irq(&priv->lock);
		ipoib_release_queue(priv, &queue, true);
	}

	if (state != IPOIB_CM_TX_CONNECTING || tx->qp)
		return;
	ret = ipoib_cm_tx_connect(tx);
	if (ret) {
		ipoib_dbg(priv, "cannot connect to QPN 0x%06x: %d\n", tx->qpn,
			  ret);
		ipoib_cm_tx_close(tx, true);
	}
}

/* The peer accepted: bring our QP up, confirm, send what waited. */
static void ipoib_cm_rep(struct ipoib_cm_tx *tx, const struct ib_cm_event *ev)
{
	struct ipoib_dev_priv *priv = tx->priv;
	const struct ipoib_cm_data *data = ev->private_data;
	struct sk_buff_head queue;
	unsigned int mtu = be32_to_cpu(data->mtu);
	enum ipoib_cm_tx_state state;
	int ret = -EINVAL;

	/* closing or dying: its QP may be in ERR already (reap work) */
	spin_lock_irq(&priv->lock);
	state = tx->state;
	spin_unlock_irq(&priv->lock);
	if (state != IPOIB_CM_TX_CONNECTING) {
		ib_send_cm_rej(tx->id, IB_CM_REJ_CONSUMER_DEFINED, NULL, 0,
			       NULL, 0);
		return;
	}
	if (mtu > IPOIB_ENCAP_LEN) {
		ret = ipoib_cm_modify(tx->id, tx->qp, IB_QPS_RTR, U32_MAX);
		if (!ret)
			ret = ipoib_cm_modify(tx->id, tx->qp, IB_QPS_RTS,
					      U32_MAX);
	}
	if (ret) {
		/* the REP is the peer's to make bad: rate-limited */
		if (net_ratelimit())
			netdev_warn(priv->dev, "connection to QPN 0x%06x: bad REP (MTU %u) or QP error %d\n",
				    tx->qpn, mtu, ret);
		ib_send_cm_rej(tx->id, IB_CM_REJ_CONSUMER_DEFINED, NULL, 0,
			       NULL, 0);
		ipoib_cm_tx_close(tx, true);
		return;
	}
	ib_send_cm_rtu(tx->id, NULL, 0);

	__skb_queue_head_init(&queue);
	spin_lock_irq(&priv->lock);
	if (tx->state == IPOIB_CM_TX_CONNECTING) {
		tx->mtu = min_t(unsigned int, mtu, IPOIB_CM_BUF);
		tx->state = IPOIB_CM_TX_UP;
		/* after mtu and state: what the lockless transmit reads */
		rcu_assign_pointer(tx->path->cm_fast, tx);
		tx->backoff = 1;
		tx->retry_later = false;
		skb_queue_splice_init(&tx->queue, &queue);
	}
	spin_unlock_irq(&priv->lock);
	ipoib_dbg(priv, "connected to QPN 0x%06x, MTU %u\n", tx->qpn, mtu);
	ipoib_release_queue(priv, &queue, true);
}

static int ipoib_cm_tx_handler(struct ib_cm_id *id,
			       const struct ib_cm_event *ev)
{
	struct ipoib_cm_tx *tx = id->context;

	switch (ev->event) {
	case IB_CM_REP_RECEIVED:
		ipoib_cm_rep(tx, ev);
		break;
	case IB_CM_REQ_ERROR:
	case IB_CM_REJ_RECEIVED:
		ipoib_dbg(tx->priv, "QPN 0x%06x refused or did not answer (%s): datagram for %us\n",
			  tx->qpn, ev->event == IB_CM_REJ_RECEIVED ?
			  ibcm_reject_msg(ev->param.rej_rcvd.reason) :
			  "timeout", tx->backoff);
		ipoib_cm_tx_close(tx, true);
		break;
	case IB_CM_DREQ_RECEIVED:
		ib_send_cm_drep(id, NULL, 0);
		ipoib_cm_tx_close(tx, false);
		break;
	default:
		break;
	}
	return 0;
}

/*
 * A connection reached its share of the send ring (tx lock held): stop
 * the queue, as for a full ring, so that a busy healthy connection keeps
 * its backpressure and loses nothing. Its next completion wakes the
 * queue (send NAPI); if none comes within IPOIB_CM_TX_STALL the timer
 * does, and ipoib_cm_send() then drops what is for this connection
 * while everything else goes. A send after a wake that found the
 * connection still at its share (the ring's own wake, at half) is sent
 * and stops the queue again: its share is a bound within the ring's,
 * exceeded by one send per wake for at most IPOIB_CM_TX_STALL.
 */
static void ipoib_cm_tx_at_share(struct ipoib_dev_priv *priv,
				 struct ipoib_cm_tx *tx, unsigned int share)
{
	WRITE_ONCE(priv->cm_tx_capped, tx);
	mod_timer(&priv->cm_tx_stall_timer, jiffies + IPOIB_CM_TX_STALL + 1);
	netif_stop_queue(priv->dev);
	/*
	 * NAPI may have completed one of ours between our read of the tail
	 * and the stop without seeing the connection capped. Pairs with the
	 * barrier before NAPI's stopped test.
	 */
	smp_mb();
	if (tx->head - READ_ONCE(tx->tail) < share) {
		WRITE_ONCE(priv->cm_tx_capped, NULL);
		if (priv->global_head - READ_ONCE(priv->global_tail) <
		    priv->tx_size)
			netif_start_queue(priv->dev);
	}
}

/*
 * Post one packet on an established connection, with the tx lock held
 * and the connection kept by priv->lock or found through path->cm_fast.
 */
static void ipoib_cm_send(struct ipoib_dev_priv *priv, struct ipoib_cm_tx *tx,
			  struct sk_buff *skb)
{
	unsigned int share = priv->tx_size / IPOIB_CM_TX_SHARE;
	unsigned int i = tx->head & (priv->tx_size - 1);
	unsigned int in_flight = tx->head - READ_ONCE(tx->tail);
	struct ipoib_tx_buf *buf = &tx->ring[i];
	struct ib_sge sge[IPOIB_MAX_TX_SGE];
	struct ib_send_wr wr = {
		.wr_id = IPOIB_OP_CM | i,
		.sg_list = sge,
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
	};
	int ret;

	/*
	 * The ring is full, yet the queue ran: on an enhanced interface the
	 * provider may wake queue 0, which it shares with our sends. Never
	 * post past the ring (the send CQ has room for it alone).
	 */
	if (unlikely(priv->global_head - READ_ONCE(priv->global_tail) >=
		     priv->tx_size)) {
		DEV_STATS_INC(priv->dev, tx_dropped);
		dev_kfree_skb_any(skb);
		return;
	}
	if (!in_flight) {
		/* the stall clock starts with the first send it must complete */
		WRITE_ONCE(tx->last_done, jiffies);
	} else if (unlikely(in_flight >= share) &&
		   time_after(jiffies, READ_ONCE(tx->last_done) +
			      IPOIB_CM_TX_STALL)) {
		/*
		 * Stuck at its share: dropped, so that the queue runs for the
		 * other destinations until the peer takes something again or
		 * the connection fails (RNR retries, IPOIB_CM_RNR_RETRY).
		 */
		WRITE_ONCE(priv->cm_tx_stalled_drops,
			   priv->cm_tx_stalled_drops + 1);
		DEV_STATS_INC(priv->dev, tx_dropped);
		dev_kfree_skb_any(skb);
		return;
	}

	skb_orphan(skb);
	skb_dst_drop(skb);
	buf->skb = skb;
	ret = ipoib_map_tx(priv, buf, sge);
	if (ret < 0)
		goto err_drop;
	wr.num_sge = ret;
	ret = ib_post_send(tx->qp, &wr, NULL);
	if (ret) {
		ipoib_unmap_tx(priv, buf);
		goto err_drop;
	}
	tx->head++;
	WRITE_ONCE(tx->last_used, jiffies);
	ipoib_tx_sent(priv);
	if (unlikely(tx->head - READ_ONCE(tx->tail) >= share))
		ipoib_cm_tx_at_share(priv, tx, share);
	return;

err_drop:
	buf->skb = NULL;
	DEV_STATS_INC(priv->dev, tx_errors);
	dev_kfree_skb_any(skb);
}

/*
 * At max_cm_active (priv->lock held): close the connection that sent
 * least recently, so that a new peer gets one soon; false if none is up.
 */
static bool ipoib_cm_tx_evict(struct ipoib_dev_priv *priv)
{
	struct ipoib_cm_tx *tx, *victim = NULL;
	struct ipoib_path *path;
	unsigned int bkt;

	lockdep_assert_held(&priv->lock);
	hash_for_each(priv->paths, bkt, path, node)
		list_for_each_entry(tx, &path->cm_tx, node)
			if (tx->state == IPOIB_CM_TX_UP &&
			    (!victim ||
			     time_before(READ_ONCE(tx->last_used),
					 READ_ONCE(victim->last_used))))
				victim = tx;
	if (!victim)
		return false;
	ipoib_cm_tx_unpublish(victim);
	victim->state = IPOIB_CM_TX_CLOSING;
	victim->retry_later = false;
	queue_work(ipoib_wq, &victim->work);
	priv->cm_active_evicted++;
	return true;
}

/*
 * An idle entry (no QP, no CM ID, nothing queued) goes to the dead list;
 * the reap work frees it. Nothing queues its work from IDLE, but the
 * work that set IDLE may still be returning: the reaper's
 * cancel_work_sync() waits for it. priv->lock held.
 */
static void ipoib_cm_tx_retire(struct ipoib_dev_priv *priv,
			       struct ipoib_cm_tx *tx)
{
	lockdep_assert_held(&priv->lock);
	tx->state = IPOIB_CM_TX_DYING;
	list_move_tail(&tx->node, &priv->cm_tx_dead);
	queue_work(ipoib_reap_wq, &priv->cm_tx_reap_work);
}

/*
 * The hot path of connected mode, from an RCU read section over "path":
 * the connection to "qpn" transmit used last, if it is up and the packet
 * fits, without priv->lock. False: ipoib_cm_xmit() decides, locked.
 */
bool ipoib_cm_xmit_fast(struct ipoib_dev_priv *priv, struct ipoib_path *path,
			struct sk_buff *skb, u32 qpn)
{
	struct ipoib_cm_tx *tx = rcu_dereference(path->cm_fast);

	/* published after its mtu, unpublished before it leaves UP */
	if (!tx || tx->qpn != qpn || skb->len > tx->mtu)
		return false;
	ipoib_cm_send(priv, tx, skb);
	return true;
}

/*
 * Unicast IP to a CM-capable peer on a resolved path, priv->lock held.
 * Returns 0 when the packet was taken (sent, queued or dropped), 1 when
 * it should go over UD, -EMSGSIZE (with *mtu) when it is too big for the
 * connection.
 */
int ipoib_cm_xmit(struct ipoib_dev_priv *priv, struct ipoib_path *path,
		  struct sk_buff *skb, u32 qpn, unsigned int *mtu)
{
	struct ipoib_cm_tx *tx, *idle = NULL;
	unsigned int n = 0;

	lockdep_assert_held(&priv->lock);
	list_for_each_entry(tx, &path->cm_tx, node) {
		if (tx->qpn == qpn)
			goto found;
		n++;
		/* one backing off keeps its backoff: a refusing peer is not
		 * asked again at once under a fresh entry
		 */
		if (tx->state == IPOIB_CM_TX_IDLE &&
		    (!tx->retry_later ||
		     !time_before(jiffies, tx->retry_after)) &&
		    (!idle || time_before(tx->last_used, idle->last_used)))
			idle = tx;
	}
	/*
	 * One entry per QPN the neighbours of this GID named: a peer (or a
	 * forger) rotating QPNs would grow the list without limit, so it
	 * keeps IPOIB_CM_TX_PER_PATH. An idle one (no QP, not backing off)
	 * makes room; otherwise UD carries this packet.
	 */
	if (n >= IPOIB_CM_TX_PER_PATH) {
		if (!idle) {
			priv->cm_path_refused++;
			return 1;
		}
		ipoib_cm_tx_retire(priv, idle);
		priv->cm_path_evicted++;
	}
	tx = kzalloc(sizeof(*tx), GFP_ATOMIC);
	if (!tx)
		return 1;
	tx->priv = priv;
	tx->path = path;
	tx->qpn = qpn;
	tx->backoff = 1;
	tx->state = IPOIB_CM_TX_IDLE;
	skb_queue_head_init(&tx->queue);
	INIT_WORK(&tx->work, ipoib_cm_tx_work);
	list_add_tail(&tx->node, &path->cm_tx);

found:
	if (tx->state != IPOIB_CM_TX_UP)
		tx->last_used = jiffies;
	switch (tx->state) {
	case IPOIB_CM_TX_UP:
		if (skb->len > tx->mtu) {
			*mtu = tx->mtu - IPOIB_ENCAP_LEN;
			return -EMSGSIZE;
		}
		/* the next packet to this QPN takes the lockless way */
		rcu_assign_pointer(path->cm_fast, tx);
		ipoib_cm_send(priv, tx, skb);
		return 0;
	case IPOIB_CM_TX_IDLE:
		if (tx->retry_later && time_before(jiffies, tx->retry_after))
			return 1;
		if (priv->cm_tx_qps >= READ_ONCE(ipoib_max_cm_active)) {
			/* UD for a second: by then a victim's QP is gone */
			priv->cm_active_refused++;
			if (time_after_eq(jiffies, priv->cm_evict_next) &&
			    ipoib_cm_tx_evict(priv)) {
				priv->cm_evict_next = jiffies +
					HZ / IPOIB_CM_EVICT_PER_SEC;
				ipoib_dbg(priv, "%u connections (max_cm_active): closed the least used\n",
					  priv->cm_tx_qps);
			}
			tx->retry_later = true;
			tx->retry_after = jiffies + HZ;
			return 1;
		}
		priv->cm_tx_qps++;
		tx->state = IPOIB_CM_TX_CONNECTING;
		queue_work(ipoib_wq, &tx->work);
		fallthrough;
	default:
		/* connecting, or closing before reconnecting: wait a little */
		if (!ipoib_park(&tx->queue, IPOIB_MAX_PATH_QUEUE, skb))
			ipoib_drop(priv, skb);
		return 0;
	}
}

/*
 * The connections of paths that went, and idle entries (ipoib_reap_wq):
 * all of them to ERR at once and their sends flushed, with one deadline
 * for the lot, so that ipoib_cm_stop() (under rtnl) waits about one
 * flush for any number of connections. Destroying the QPs, a grace
 * period each on some HCAs, is left to cm_tx_free_work, which needs
 * neither rtnl nor NAPI.
 */
static void ipoib_cm_tx_reap_work(struct work_struct *work)
{
	struct ipoib_dev_priv *priv = container_of(work, struct ipoib_dev_priv,
						   cm_tx_reap_work);
	unsigned long deadline = jiffies + 5 * HZ;
	struct ipoib_cm_tx *tx;
	LIST_HEAD(dead);
	bool busy;

	spin_lock_irq(&priv->lock);
	list_splice_init(&priv->cm_tx_dead, &dead);
	spin_unlock_irq(&priv->lock);
	if (list_empty(&dead))
		return;

	/* a work that was connecting or closing finishes first (DYING: idle) */
	list_for_each_entry(tx, &dead, node)
		cancel_work_sync(&tx->work);
	ipoib_cm_tx_sync_xmit(priv);
	list_for_each_entry(tx, &dead, node)
		ipoib_cm_tx_to_err(tx);
	do {
		busy = false;
		list_for_each_entry(tx, &dead, node) {
			if (ipoib_cm_tx_flushed(tx))
				continue;
			if (time_after(jiffies, deadline))
				ipoib_cm_tx_abandon(tx);
			else
				busy = true;
		}
		if (busy)
			usleep_range(1000, 2000);
	} while (busy);
	list_for_each_entry(tx, &dead, node)
		ipoib_release_queue(priv, &tx->queue, false);

	spin_lock_irq(&priv->lock);
	list_splice_tail_init(&dead, &priv->cm_tx_free);
	spin_unlock_irq(&priv->lock);
	queue_work(ipoib_reap_wq, &priv->cm_tx_free_work);
}

/* Destroy what ipoib_cm_tx_reap_work() quiesced (ipoib_reap_wq). */
static void ipoib_cm_tx_free_work(struct work_struct *work)
{
	struct ipoib_dev_priv *priv = container_of(work, struct ipoib_dev_priv,
						   cm_tx_free_work);
	struct ipoib_cm_tx *tx, *tmp;
	LIST_HEAD(dead);

	spin_lock_irq(&priv->lock);
	list_splice_init(&priv->cm_tx_free, &dead);
	spin_unlock_irq(&priv->lock);
	list_for_each_entry_safe(tx, tmp, &dead, node) {
		ipoib_cm_tx_release(tx);
		list_del(&tx->node);
		kfree(tx);
	}
}

/*
 * The path goes (flush or collection; it is no longer in the table, so
 * xmit cannot find it): its connections are closed and freed by a work
 * item. Callers hold rtnl (mode switch, SM change), and a teardown may
 * wait seconds for flushed sends, per connection. A DYING tx no longer
 * touches its path; ipoib_cm_stop() waits for the work, as teardown needs
 * NAPI. Process context.
 */
void ipoib_cm_path_release(struct ipoib_path *path)
{
	struct ipoib_dev_priv *priv = path->priv;
	struct ipoib_cm_tx *tx, *tmp;

	if (list_empty(&path->cm_tx))
		return;
	spin_lock_irq(&priv->lock);
	list_for_each_entry_safe(tx, tmp, &path->cm_tx, node) {
		if (tx->state != IPOIB_CM_TX_IDLE &&
		    tx->state != IPOIB_CM_TX_DYING)
			priv->cm_tx_qps--;
		ipoib_cm_tx_unpublish(tx);
		tx->state = IPOIB_CM_TX_DYING;	/* nobody queues work now */
		list_move_tail(&tx->node, &priv->cm_tx_dead);
	}
	spin_unlock_irq(&priv->lock);
	queue_work(ipoib_reap_wq, &priv->cm_tx_reap_work);
}

/*
 * A packet bigger than the way it has to take (UD, or the connection's
 * limit): drop it and tell the sender the MTU, as in-tree does, so that
 * TCP shrinks its segments for this destination. skb at the IPoIB header.
 */
void ipoib_too_big(struct ipoib_dev_priv *priv, struct sk_buff *skb,
		   unsigned int mtu)
{
	__be16 proto = ((struct ipoib_header *)skb->data)->proto;

	if (proto == htons(ETH_P_IP))
		icmp_ndo_send(skb, ICMP_DEST_UNREACH, ICMP_FRAG_NEEDED,
			      htonl(mtu));
	else if (proto == htons(ETH_P_IPV6))
		icmpv6_ndo_send(skb, ICMPV6_PKT_TOOBIG, 0, mtu);
	DEV_STATS_INC(priv->dev, tx_errors);
	ipoib_drop(priv, skb);
}

/* Datagram <-> connected (rtnl): MTU follows, paths (and connections) go. */
void ipoib_set_mode(struct ipoib_dev_priv *priv, bool connected)
{
	struct net_device *dev = priv->dev;

	ASSERT_RTNL();
	if (priv->cm_mode == connected)
		return;
	WRITE_ONCE(priv->cm_mode, connected);
	/* checksum offload and TSO are for datagram mode only */
	netdev_update_features(dev);
	if (connected)
		dev_set_mtu(dev, IPOIB_CM_MTU);
	else
		dev_set_mtu(dev, min_t(unsigned int, dev->mtu,
				       priv->mcast_mtu));
	ipoib_flush_paths(priv);
	ipoib_dbg(priv, "%s mode, MTU %u\n",
		  connected ? "connected" : "datagram", dev->mtu);
}

void ipoib_cm_init(struct ipoib_dev_priv *priv)
{
	mutex_init(&priv->cm_mutex);
	INIT_LIST_HEAD(&priv->cm_passive);
	INIT_LIST_HEAD(&priv->cm_flush);
	INIT_LIST_HEAD(&priv->cm_drain);
	INIT_LIST_HEAD(&priv->cm_dead);
	INIT_WORK(&priv->cm_reap_work, ipoib_cm_reap_work);
	INIT_LIST_HEAD(&priv->cm_tx_dead);
	INIT_WORK(&priv->cm_tx_reap_work, ipoib_cm_tx_reap_work);
	INIT_LIST_HEAD(&priv->cm_tx_free);
	INIT_WORK(&priv->cm_tx_free_work, ipoib_cm_tx_free_work);
	INIT_DELAYED_WORK(&priv->cm_stale_work, ipoib_cm_stale_work);
	priv->cm_evict_next = jiffies;
}
