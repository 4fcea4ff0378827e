// SPDX-License-Identifier: GPL-2.0
/*
 * ipoib-ng: the UD transport of one interface. One PD, a receive CQ and
 * a send CQ (each polled by a NAPI of its own) and one UD QP bound to the
 * interface's P_Key index. The QP exists as long as the interface or
 * until ethtool -G asks for rings of other sizes (its QPN is part of the
 * hardware address); it is brought to RTS when the interface goes up and
 * back to RESET, with every buffer returned, when it goes down.
 *
 * On an enhanced interface (rn.c) the provider's QP carries the
 * datagrams: there is no UD QP or ring here, and the CQs, PD and NAPI
 * serve connected mode (and the address handles) alone.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#include <linux/delay.h>
#include <linux/if_arp.h>
#include <net/ip.h>

#define IPOIB_NG_PAGE_POOL
#include "compat.h"

#include "ipoib.h"

static void ipoib_cq_event(struct ib_cq *cq, void *ctx)
{
	struct ipoib_dev_priv *priv = ctx;

	napi_schedule(&priv->napi);
}

static void ipoib_send_cq_event(struct ib_cq *cq, void *ctx)
{
	struct ipoib_dev_priv *priv = ctx;

	napi_schedule(&priv->send_napi);
}

/*
 * A connection at its share of the send ring stopped the queue and has
 * completed nothing since (ipoib_cm_tx_at_share()): let the send NAPI
 * wake the queue for the other destinations; what is for that connection
 * is then dropped until it completes a send again.
 */
static void ipoib_cm_tx_stall_timer(struct timer_list *t)
{
	struct ipoib_dev_priv *priv = from_timer(priv, t, cm_tx_stall_timer);

	WRITE_ONCE(priv->cm_tx_capped, NULL);
	napi_schedule(&priv->send_napi);
}

/*
 * What the ring sizes decide: the rings, the SRQ, both CQs and the QP,
 * made for priv->tx_size and priv->rx_size. On error none is left.
 */
static int ipoib_rings_create(struct ipoib_dev_priv *priv)
{
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_UD,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = {
			.max_send_wr = priv->tx_size,
			.max_recv_wr = priv->rx_size,
			.max_send_sge = priv->max_send_sge,
			.max_recv_sge = priv->max_recv_sge,
		},
	};
	struct ib_cq_init_attr cq_attr = {};
	int ret;

	if (priv->lso)
		init.create_flags |= IB_QP_CREATE_IPOIB_UD_LSO;
	/* a stopped queue wakes at half the ring: completions come before */
	priv->tx_signal = min_t(unsigned int, IPOIB_TX_SIGNAL, priv->tx_size / 4);
	if (!priv->enhanced) {
		priv->tx_ring = kvcalloc(priv->tx_size, sizeof(*priv->tx_ring),
					 GFP_KERNEL);
		priv->rx_ring = kvcalloc(priv->rx_size, sizeof(*priv->rx_ring),
					 GFP_KERNEL);
		priv->tx_chain = kvcalloc(priv->tx_signal,
					  sizeof(*priv->tx_chain), GFP_KERNEL);
		if (!priv->tx_ring || !priv->rx_ring || !priv->tx_chain) {
			ret = -ENOMEM;
			goto err_free_rings;
		}
	}
	/* the SRQ (if any) decides how many receive completions CM can have */
	ipoib_cm_srq_create(priv);
	/* receives: UD, CM (the SRQ or the passive rings), the drain WR */
	cq_attr.cqe = min_t(unsigned int, priv->ca->attrs.max_cqe,
			    (priv->enhanced ? 0 : priv->rx_size) +
			    ipoib_cm_cqe(priv));
	priv->cq = ib_create_cq(priv->ca, ipoib_cq_event, NULL, priv, &cq_attr);
	if (IS_ERR(priv->cq)) {
		ret = PTR_ERR(priv->cq);
		goto err_destroy_srq;
	}
	/* sends, UD and CM: at most tx_size in flight (ipoib_tx_sent) */
	cq_attr.cqe = priv->tx_size + 1;
	priv->send_cq = ib_create_cq(priv->ca, ipoib_send_cq_event, NULL, priv,
				     &cq_attr);
	if (IS_ERR(priv->send_cq)) {
		ret = PTR_ERR(priv->send_cq);
		goto err_destroy_cq;
	}
	init.send_cq = priv->send_cq;
	init.recv_cq = priv->cq;
	if (!priv->enhanced)
		priv->qp = ib_create_qp(priv->pd, &init);
	if (IS_ERR(priv->qp)) {
		ret = PTR_ERR(priv->qp);
		priv->qp = NULL;
		goto err_destroy_send_cq;
	}
	/* what ethtool -C set holds for new CQs too (0 is the default) */
	if (priv->rx_coal_frames || priv->rx_coal_usecs)
		rdma_set_cq_moderation(priv->cq, priv->rx_coal_frames,
				       priv->rx_coal_usecs);
	if (priv->tx_coal_frames || priv->tx_coal_usecs)
		rdma_set_cq_moderation(priv->send_cq, priv->tx_coal_frames,
				       priv->tx_coal_usecs);
	return 0;

err_destroy_send_cq:
	ib_destroy_cq(priv->send_cq);
err_destroy_cq:
	ib_destroy_cq(priv->cq);
err_destroy_srq:
	ipoib_cm_srq_destroy(priv);
err_free_rings:
	kvfree(priv->tx_chain);
	kvfree(priv->rx_ring);
	kvfree(priv->tx_ring);
	return ret;
}

/* No buffer is posted (transport down) and no connection is left. */
static void ipoib_rings_destroy(struct ipoib_dev_priv *priv)
{
	if (priv->qp)
		ib_destroy_qp(priv->qp);
	ipoib_cm_srq_destroy(priv);
	ib_destroy_cq(priv->send_cq);
	ib_destroy_cq(priv->cq);
	kvfree(priv->tx_chain);
	kvfree(priv->rx_ring);
	kvfree(priv->tx_ring);
}

/* Everything ipoib_rings_create() makes, to hold one set aside. */
struct ipoib_rings {
	struct ib_qp *qp;
	struct ib_cq *cq;
	struct ib_cq *send_cq;
	struct ib_srq *srq;
	struct ipoib_cm_rx_buf *srq_ring;
	/* how far srq_ring is posted: an SRQ kept after a refusal keeps it */
	bool srq_filled;
	unsigned int srq_fill_next;
	unsigned int srq_stranded;
	struct ipoib_tx_buf *tx_ring;
	struct ipoib_rx_buf *rx_ring;
	struct ipoib_tx_wr *tx_chain;
	unsigned int tx_size;
	unsigned int rx_size;
	unsigned int tx_signal;
	unsigned int cm_nonsrq_max;
};

static void ipoib_rings_swap(struct ipoib_dev_priv *priv,
			     struct ipoib_rings *r)
{
	swap(priv->qp, r->qp);
	swap(priv->cq, r->cq);
	swap(priv->send_cq, r->send_cq);
	swap(priv->srq, r->srq);
	swap(priv->srq_ring, r->srq_ring);
	swap(priv->srq_filled, r->srq_filled);
	swap(priv->srq_fill_next, r->srq_fill_next);
	swap(priv->srq_stranded, r->srq_stranded);
	swap(priv->tx_ring, r->tx_ring);
	swap(priv->rx_ring, r->rx_ring);
	swap(priv->tx_chain, r->tx_chain);
	swap(priv->tx_size, r->tx_size);
	swap(priv->rx_size, r->rx_size);
	swap(priv->tx_signal, r->tx_signal);
	swap(priv->cm_nonsrq_max, r->cm_nonsrq_max);
}

/*
 * New rings of other sizes for an interface whose transport is down and
 * whose connections are reaped (under rtnl): the new set is made while
 * the old one still exists, so a refusal (memory, the HCA's limits)
 * leaves the interface as it was. The QP, and so the QPN, is new.
 */
int ipoib_transport_resize(struct ipoib_dev_priv *priv, unsigned int tx_size,
			   unsigned int rx_size)
{
	struct ipoib_rings r = { .tx_size = tx_size, .rx_size = rx_size };
	int ret;

	ASSERT_RTNL();
	if (WARN_ON_ONCE(priv->transport_up))
		return -EBUSY;
	/* 1. the old set aside, the new one made in priv */
	ipoib_rings_swap(priv, &r);
	ret = ipoib_rings_create(priv);
	/* 2. the old one back in priv (with its sizes) to be destroyed */
	ipoib_rings_swap(priv, &r);
	if (ret)
		return ret;
	ipoib_rings_destroy(priv);
	/* 3. the new one in */
	ipoib_rings_swap(priv, &r);
	return 0;
}

int ipoib_transport_init(struct ipoib_dev_priv *priv)
{
	int ret;

	/* page fragments go to the HCA as they are when it takes enough SGEs */
	priv->max_send_sge = clamp_t(unsigned int, priv->ca->attrs.max_send_sge,
				     1, IPOIB_MAX_TX_SGE);
	/* head + page per receive where the HCA scatters into two SGEs */
	priv->max_recv_sge = clamp_t(unsigned int, priv->ca->attrs.max_recv_sge,
				     1, 2);
	/* an HCA that segments (mlx4, mlx5, softib) gets TCP in one send */
	priv->lso = priv->ca->attrs.kernel_cap_flags & IBK_UD_TSO;
	priv->tx_size = ipoib_send_queue_size;
	priv->rx_size = ipoib_recv_queue_size;
	timer_setup(&priv->cm_tx_stall_timer, ipoib_cm_tx_stall_timer, 0);
	spin_lock_init(&priv->ah_lock);
	INIT_LIST_HEAD(&priv->ah_dead);
	atomic_set(&priv->ah_rcu_pending, 0);
	priv->rx_chain = kcalloc(IPOIB_RX_BATCH, sizeof(*priv->rx_chain),
				 GFP_KERNEL);
	if (!priv->rx_chain)
		return -ENOMEM;
	priv->pd = ib_alloc_pd(priv->ca, 0);
	if (IS_ERR(priv->pd)) {
		ret = PTR_ERR(priv->pd);
		goto err_free_chain;
	}
	ipoib_cm_pool_create(priv);
	ret = ipoib_rings_create(priv);
	if (ret)
		goto err_destroy_pool;
	return 0;

err_destroy_pool:
	ipoib_cm_pool_destroy(priv);
	ib_dealloc_pd(priv->pd);
err_free_chain:
	kfree(priv->rx_chain);
	return ret;
}

static void ipoib_ah_free(struct ipoib_ah *ah)
{
	/* no sleeping flag: NAPI and RCU callbacks free address handles */
	rdma_destroy_ah(ah->ah, 0);
	kfree(ah);
}

/* Its last send is not in flight: in [tx_tail, tx_head) of the UD ring. */
static bool ipoib_ah_idle(struct ipoib_dev_priv *priv, struct ipoib_ah *ah)
{
	u32 tail = READ_ONCE(priv->tx_tail);

	return ah->last_send - tail >= READ_ONCE(priv->tx_head) - tail;
}

/* Free the ownerless address handles whose last send completed. */
static void ipoib_ah_reap(struct ipoib_dev_priv *priv)
{
	struct ipoib_ah *ah, *tmp;
	unsigned long flags;
	LIST_HEAD(done);

	spin_lock_irqsave(&priv->ah_lock, flags);
	list_for_each_entry_safe(ah, tmp, &priv->ah_dead, dead)
		if (ipoib_ah_idle(priv, ah))
			list_move(&ah->dead, &done);
	spin_unlock_irqrestore(&priv->ah_lock, flags);
	list_for_each_entry_safe(ah, tmp, &done, dead)
		ipoib_ah_free(ah);
}

void ipoib_transport_cleanup(struct ipoib_dev_priv *priv)
{
	/*
	 * The owners are gone (paths and groups went with the transport):
	 * their handles' grace periods end, and nothing is in flight. Most
	 * often unregistration's own rcu_barrier() already ran their
	 * callbacks; a second one would cost every child deletion another
	 * grace period under rtnl.
	 */
	if (atomic_read_acquire(&priv->ah_rcu_pending))
		rcu_barrier();
	ipoib_ah_reap(priv);
	WARN_ON_ONCE(!list_empty(&priv->ah_dead));
	ipoib_rings_destroy(priv);
	ipoib_cm_pool_destroy(priv);
	ib_dealloc_pd(priv->pd);
	kfree(priv->rx_chain);
}

/* A grace period after the last owner let go: no lockless user is left. */
static void ipoib_ah_rcu(struct rcu_head *rcu)
{
	struct ipoib_ah *ah = container_of(rcu, struct ipoib_ah, rcu);
	struct ipoib_dev_priv *priv = ah->priv;
	unsigned long flags;

	if (ipoib_ah_idle(priv, ah)) {
		ipoib_ah_free(ah);
	} else {
		spin_lock_irqsave(&priv->ah_lock, flags);
		list_add_tail(&ah->dead, &priv->ah_dead);
		spin_unlock_irqrestore(&priv->ah_lock, flags);
		/* send_napi reaps it after its last send's completion */
		napi_schedule(&priv->send_napi);
	}
	/* the last use of priv: ipoib_transport_cleanup() may go on */
	atomic_dec_return_release(&priv->ah_rcu_pending);
}

static void ipoib_ah_release(struct kref *ref)
{
	struct ipoib_ah *ah = container_of(ref, struct ipoib_ah, ref);

	atomic_inc(&ah->priv->ah_rcu_pending);
	call_rcu(&ah->rcu, ipoib_ah_rcu);
}

void ipoib_ah_put(struct ipoib_ah *ah)
{
	if (ah)
		kref_put(&ah->ref, ipoib_ah_release);
}

struct ipoib_ah *ipoib_ah_create(struct ipoib_dev_priv *priv,
				 struct rdma_ah_attr *attr)
{
	struct ipoib_ah *ah;

	ah = kzalloc(sizeof(*ah), GFP_KERNEL);
	if (!ah)
		return NULL;
	ah->ah = rdma_create_ah(priv->pd, attr, RDMA_CREATE_AH_SLEEPABLE);
	if (IS_ERR(ah->ah)) {
		kfree(ah);
		return NULL;
	}
	kref_init(&ah->ref);
	ah->priv = priv;
	/* no send yet: one that is surely not in flight */
	ah->last_send = READ_ONCE(priv->tx_tail) - 1;
	return ah;
}

/* A page of a connected-mode receive buffer, mapped whole. */
struct page *ipoib_alloc_rx_page(struct ipoib_dev_priv *priv, u64 *mapping,
				 gfp_t gfp)
{
	struct page *page = alloc_page(gfp);

	if (!page)
		return NULL;
	*mapping = ib_dma_map_page(priv->ca, page, 0, PAGE_SIZE,
				   DMA_FROM_DEVICE);
	if (ib_dma_mapping_error(priv->ca, *mapping)) {
		__free_page(page);
		return NULL;
	}
	return page;
}

/*
 * The receive buffer layout for this port MTU, and the pool of its pages
 * (while the transport is down). Without a pool the buffers are linear.
 */
static void ipoib_rx_layout(struct ipoib_dev_priv *priv)
{
	struct page_pool_params pp = {
		.pool_size = priv->rx_size,
		.nid = NUMA_NO_NODE,
		.dma_dir = DMA_FROM_DEVICE,
	};
	struct page_pool *pool;

	priv->rx_len = IPOIB_UD_BUF(priv->max_ib_mtu);
	priv->rx_head = priv->rx_len;
	if (priv->max_recv_sge < 2 || priv->rx_len <= IPOIB_UD_HEAD ||
	    priv->rx_len - IPOIB_UD_HEAD > PAGE_SIZE)
		return;
	/* the HCA's mapping is ours (ib_dma_map_page): no PP_FLAG_DMA_MAP */
	pool = page_pool_create(&pp);
	if (IS_ERR(pool))
		return;
	priv->rx_pool = pool;
	priv->rx_head = IPOIB_UD_HEAD;
}

/*
 * A receive page from "pool" (datagram or connected mode), mapped here:
 * the pools do not map (no PP_FLAG_DMA_MAP), the HCA's mapping is ours.
 */
struct page *ipoib_pool_page(struct ipoib_dev_priv *priv,
			     struct page_pool *pool, u64 *mapping)
{
	struct page *page = page_pool_dev_alloc_pages(pool);

	if (!page)
		return NULL;
	*mapping = ib_dma_map_page(priv->ca, page, 0, PAGE_SIZE,
				   DMA_FROM_DEVICE);
	if (ib_dma_mapping_error(priv->ca, *mapping)) {
		page_pool_put_full_page(pool, page, false);
		return NULL;
	}
	return page;
}

/* Unmap a receive page and give it back to its pool. */
void ipoib_pool_page_free(struct ipoib_dev_priv *priv, struct page_pool *pool,
			  struct page *page, u64 mapping)
{
	ib_dma_unmap_page(priv->ca, mapping, PAGE_SIZE, DMA_FROM_DEVICE);
	page_pool_put_full_page(pool, page, false);
}

/* A receive head of "len" bytes after "pad" bytes of headroom, mapped. */
struct sk_buff *ipoib_alloc_rx_skb(struct ipoib_dev_priv *priv,
				   unsigned int len, unsigned int pad,
				   u64 *mapping, gfp_t gfp)
{
	struct sk_buff *skb;

	skb = __netdev_alloc_skb(priv->dev, len + pad, gfp);
	if (!skb)
		return NULL;
	skb_reserve(skb, pad);
	*mapping = ib_dma_map_single(priv->ca, skb->data, len,
				     DMA_FROM_DEVICE);
	if (ib_dma_mapping_error(priv->ca, *mapping)) {
		dev_kfree_skb_any(skb);
		return NULL;
	}
	return skb;
}

/* Post the receive WRs chained so far (NAPI, or before NAPI runs). */
static void ipoib_rx_flush(struct ipoib_dev_priv *priv)
{
	const struct ib_recv_wr *bad = NULL;
	unsigned int n = priv->rx_chained, k;
	int ret;

	if (!n)
		return;
	priv->rx_chained = 0;
	priv->rx_chain[n - 1].wr.next = NULL;
	ret = ib_post_recv(priv->qp, &priv->rx_chain[0].wr, &bad);
	if (likely(!ret))
		return;
	/*
	 * From the refused one on (all of them if the HCA named none),
	 * nothing was posted: the slots keep their buffers and
	 * ipoib_refill() posts them again on the next poll.
	 */
	k = bad ? container_of(bad, struct ipoib_rx_wr, wr) - priv->rx_chain : 0;
	for (; k < n; k++) {
		priv->rx_ring[priv->rx_chain[k].wr.wr_id &
			      ~IPOIB_OP_RECV].posted = false;
		priv->rx_outstanding--;
	}
}

/*
 * Repost receive slot "i", with fresh pieces where it has none: its WR
 * joins the chain that ipoib_rx_flush() posts at the end of the poll
 * (one call into the HCA per IPOIB_RX_BATCH buffers, not one each). A
 * slot that gets no buffer stays unposted with what it has;
 * ipoib_refill() tries again on the next poll, so the ring cannot stall
 * for good.
 */
static int ipoib_post_rx(struct ipoib_dev_priv *priv, unsigned int i)
{
	struct ipoib_rx_buf *buf = &priv->rx_ring[i];
	bool paged = priv->rx_head < priv->rx_len;
	struct ipoib_rx_wr *rxw;

	if (!buf->skb) {
		/* 4 bytes of headroom keep the IP header aligned after GRH+4 */
		buf->skb = ipoib_alloc_rx_skb(priv, priv->rx_head, 4,
					      &buf->mapping[0], GFP_ATOMIC);
		if (!buf->skb)
			return -ENOMEM;
	}
	if (paged && !buf->page) {
		buf->page = ipoib_pool_page(priv, priv->rx_pool,
					    &buf->mapping[1]);
		if (!buf->page)
			return -ENOMEM;
	}
	rxw = &priv->rx_chain[priv->rx_chained];
	rxw->wr.wr_id = i | IPOIB_OP_RECV;
	rxw->wr.sg_list = rxw->sge;
	rxw->wr.num_sge = paged ? 2 : 1;
	rxw->sge[0].addr = buf->mapping[0];
	rxw->sge[0].length = priv->rx_head;
	rxw->sge[0].lkey = priv->pd->local_dma_lkey;
	rxw->sge[1].addr = buf->mapping[1];
	rxw->sge[1].length = priv->rx_len - priv->rx_head;
	rxw->sge[1].lkey = priv->pd->local_dma_lkey;
	if (priv->rx_chained)
		priv->rx_chain[priv->rx_chained - 1].wr.next = &rxw->wr;
	buf->posted = true;
	priv->rx_outstanding++;
	if (++priv->rx_chained == IPOIB_RX_BATCH)
		ipoib_rx_flush(priv);
	return 0;
}

static void ipoib_refill(struct ipoib_dev_priv *priv)
{
	unsigned int i;

	if (priv->enhanced || priv->rx_outstanding == priv->rx_size)
		return;
	/* a slot whose repost failed still holds its buffer: post it too */
	for (i = 0; i < priv->rx_size; i++)
		if (!priv->rx_ring[i].posted && ipoib_post_rx(priv, i))
			break;
	ipoib_rx_flush(priv);
}

static void ipoib_free_rx_buf(struct ipoib_dev_priv *priv, unsigned int i)
{
	struct ipoib_rx_buf *buf = &priv->rx_ring[i];

	if (buf->skb) {
		ib_dma_unmap_single(priv->ca, buf->mapping[0], priv->rx_head,
				    DMA_FROM_DEVICE);
		dev_kfree_skb_any(buf->skb);
		buf->skb = NULL;
	}
	if (buf->page) {
		ipoib_pool_page_free(priv, priv->rx_pool, buf->page,
				     buf->mapping[1]);
		buf->page = NULL;
	}
	buf->posted = false;
}

/*
 * The pieces of slot "i" that carry a datagram of "len" bytes, taken out
 * of the slot and unmapped: the head, and the page if the datagram
 * reached it. A slot that cannot be given fresh pieces keeps the old
 * ones instead (the datagram is dropped: a full ring matters more than
 * one packet); then NULL.
 */
static struct sk_buff *ipoib_rx_take(struct ipoib_dev_priv *priv,
				     unsigned int i, unsigned int len)
{
	struct ipoib_rx_buf *buf = &priv->rx_ring[i];
	struct sk_buff *skb = buf->skb;
	struct page *page = NULL;
	u64 map_head = buf->mapping[0], map_page = buf->mapping[1];

	buf->skb = NULL;
	if (len > priv->rx_head) {
		page = buf->page;
		buf->page = NULL;
	}
	if (ipoib_post_rx(priv, i) == -ENOMEM) {
		/* whatever the slot did not get anew, it gets back */
		priv->dev->stats.rx_dropped++;
		if (!buf->skb) {
			buf->skb = skb;
			buf->mapping[0] = map_head;
		} else {
			ib_dma_unmap_single(priv->ca, map_head, priv->rx_head,
					    DMA_FROM_DEVICE);
			dev_kfree_skb_any(skb);
		}
		if (page && !buf->page) {
			buf->page = page;
			buf->mapping[1] = map_page;
		} else if (page) {
			ipoib_pool_page_free(priv, priv->rx_pool, page,
					     map_page);
		}
		ipoib_post_rx(priv, i);
		return NULL;
	}

	ib_dma_unmap_single(priv->ca, map_head, priv->rx_head,
			    DMA_FROM_DEVICE);
	skb_put(skb, min(len, priv->rx_head));
	if (page) {
		ib_dma_unmap_page(priv->ca, map_page, PAGE_SIZE,
				  DMA_FROM_DEVICE);
		skb_add_rx_frag(skb, 0, page, 0, len - priv->rx_head,
				PAGE_SIZE);
		/* freeing the skb returns the page to rx_pool */
		skb_mark_for_recycle(skb);
	}
	return skb;
}

static bool ipoib_proto_ok(__be16 proto)
{
	return proto == htons(ETH_P_IP) || proto == htons(ETH_P_IPV6) ||
	       proto == htons(ETH_P_ARP) || proto == htons(ETH_P_RARP);
}

static void ipoib_handle_rx(struct ipoib_dev_priv *priv, struct ib_wc *wc)
{
	unsigned int i = wc->wr_id & ~IPOIB_OP_RECV;
	struct net_device *dev = priv->dev;
	struct ipoib_rx_buf *buf;
	struct sk_buff *skb;
	struct ib_grh *grh;

	if (i >= priv->rx_size || !priv->rx_ring[i].posted) {
		netdev_warn_once(dev, "completion for an empty receive slot %u\n", i);
		return;
	}
	buf = &priv->rx_ring[i];
	buf->posted = false;
	priv->rx_outstanding--;

	/* draining for transport_down(): nothing is delivered or reposted */
	if (!priv->transport_up) {
		ipoib_free_rx_buf(priv, i);
		return;
	}
	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR) {
			dev->stats.rx_errors++;
			ipoib_post_rx(priv, i);
		} else {
			ipoib_free_rx_buf(priv, i);
		}
		return;
	}

	/*
	 * Drop what is not ours to deliver: our own multicast copies (the
	 * fabric loops them back) and runts. The buffer is reposted as is.
	 */
	if ((wc->src_qp == priv->qp->qp_num && wc->slid == priv->local_lid) ||
	    wc->byte_len < IB_GRH_BYTES + IPOIB_ENCAP_LEN ||
	    wc->byte_len > priv->rx_len) {
		/* more than the buffer: a broken HCA; skb_put would panic */
		if (wc->byte_len < IB_GRH_BYTES + IPOIB_ENCAP_LEN ||
		    wc->byte_len > priv->rx_len)
			dev->stats.rx_length_errors++;
		ipoib_post_rx(priv, i);
		return;
	}

	skb = ipoib_rx_take(priv, i, wc->byte_len);
	if (!skb)
		return;
	grh = (struct ib_grh *)skb->data;
	if (!(wc->wc_flags & IB_WC_GRH) || grh->dgid.raw[0] != 0xff)
		skb->pkt_type = PACKET_HOST;
	else if (!memcmp(&grh->dgid, dev->broadcast + 4, sizeof(grh->dgid)))
		skb->pkt_type = PACKET_BROADCAST;
	else
		skb->pkt_type = PACKET_MULTICAST;
	if (skb->pkt_type != PACKET_HOST)
		dev->stats.multicast++;
	/* the HCA checked (or computed) the TCP/UDP checksum */
	if ((wc->wc_flags & IB_WC_IP_CSUM_OK) && (dev->features & NETIF_F_RXCSUM))
		skb->ip_summed = CHECKSUM_UNNECESSARY;
	skb_pull(skb, IB_GRH_BYTES);
	ipoib_rx_deliver(priv, skb);
}

/* A received packet, IPoIB header first, goes up the stack (NAPI). */
void ipoib_rx_deliver(struct ipoib_dev_priv *priv, struct sk_buff *skb)
{
	struct net_device *dev = priv->dev;
	__be16 proto;

	proto = ((struct ipoib_header *)skb->data)->proto;
	if (!ipoib_proto_ok(proto)) {
		dev->stats.rx_dropped++;
		dev_kfree_skb_any(skb);
		return;
	}
	skb_pull(skb, IPOIB_ENCAP_LEN);
	skb->protocol = proto;
	/* the MAC header as packet sockets see it: pseudo address + header */
	memset(skb_push(skb, IPOIB_HARD_LEN), 0, IPOIB_PSEUDO_LEN);
	skb_reset_mac_header(skb);
	skb_pull(skb, IPOIB_HARD_LEN);
	skb->dev = dev;

	dev->stats.rx_packets++;
	dev->stats.rx_bytes += skb->len;
	napi_gro_receive(&priv->napi, skb);
}

/* A send (UD or RC) completed: release its slot's packet and mapping. */
void ipoib_tx_done(struct ipoib_dev_priv *priv, struct ipoib_tx_buf *buf,
		   enum ib_wc_status status)
{
	struct net_device *dev = priv->dev;

	ipoib_unmap_tx(priv, buf);
	if (status == IB_WC_SUCCESS) {
		dev->stats.tx_packets++;
		dev->stats.tx_bytes += buf->skb->len;
	} else if (status != IB_WC_WR_FLUSH_ERR) {
		DEV_STATS_INC(dev, tx_errors);
	}
	napi_consume_skb(buf->skb, priv->send_napi_budget);
	buf->skb = NULL;
	/* pairs with the acquire in ipoib_tx_sent(): one more free slot */
	smp_store_release(&priv->global_tail, priv->global_tail + 1);
}

/* A send was posted (tx lock held): stop the queue before any ring fills. */
void ipoib_tx_sent(struct ipoib_dev_priv *priv)
{
	priv->global_head++;
	netif_trans_update(priv->dev);
	/* pairs with the release in ipoib_tx_done(): slots NAPI freed */
	if (priv->global_head - smp_load_acquire(&priv->global_tail) <
	    priv->tx_size)
		return;
	netif_stop_queue(priv->dev);
	/*
	 * NAPI may have freed every slot between our read of the tail and
	 * the stop, and seen the queue running: nobody would wake it on a
	 * quiet link. Pairs with the barrier before NAPI's stopped test.
	 */
	smp_mb();
	if (priv->global_head - READ_ONCE(priv->global_tail) < priv->tx_size)
		netif_start_queue(priv->dev);
}

/*
 * A UD send completed, and with it every unsignalled one before it (a
 * failed send always completes, in order). The wr_id is the send's
 * tx_head; the poster may not have advanced tx_head yet, so only the
 * ring's size bounds it.
 */
static void ipoib_handle_tx(struct ipoib_dev_priv *priv, struct ib_wc *wc)
{
	u32 id = wc->wr_id, mask = priv->tx_size - 1;

	if (id - priv->tx_tail >= priv->tx_size) {
		netdev_warn_once(priv->dev, "send completion %u outside the ring (oldest %u)\n",
				 id, priv->tx_tail);
		return;
	}
	for (; priv->tx_tail != id; priv->tx_tail++)
		ipoib_tx_done(priv, &priv->tx_ring[priv->tx_tail & mask],
			      IB_WC_SUCCESS);
	ipoib_tx_done(priv, &priv->tx_ring[id & mask], wc->status);
	priv->tx_tail++;
}

/* A completion of the receive CQ: CM (receive or drain) or UD receive. */
static void ipoib_handle_recv_wc(struct ipoib_dev_priv *priv,
				 struct ib_wc *wc)
{
	if (wc->wr_id & IPOIB_OP_CM)
		ipoib_cm_handle_wc(priv, wc);
	else
		ipoib_handle_rx(priv, wc);
}

/* A completion of the send CQ: CM or UD. */
static void ipoib_handle_send_wc(struct ipoib_dev_priv *priv,
				 struct ib_wc *wc)
{
	if (wc->wr_id & IPOIB_OP_CM)
		ipoib_cm_handle_wc(priv, wc);
	else
		ipoib_handle_tx(priv, wc);
}

/*
 * Poll at most "cap" completions of "cq" in batches, handing each to
 * "handle" (inlined per caller: a direct call per completion), and note
 * the most one poll took in "max" (debugfs). Bounded, because another
 * CPU keeps posting as we go and net_rx_action() checks its time limit
 * only between polls.
 */
static __always_inline int
ipoib_poll_cq(struct ipoib_dev_priv *priv, struct ib_cq *cq, int cap,
	      void (*handle)(struct ipoib_dev_priv *, struct ib_wc *),
	      int *max)
{
	struct ib_wc wcs[16];
	int polled = 0, want, n, i;

	while (polled < cap) {
		want = min_t(int, cap - polled, ARRAY_SIZE(wcs));
		n = ib_poll_cq(cq, want, wcs);
		if (n <= 0)
			break;
		polled += n;
		for (i = 0; i < n; i++)
			handle(priv, &wcs[i]);
		/*
		 * The CQ had no more: asking again only takes its lock once
		 * more (the re-arm in ipoib_poll_done() reports what came
		 * in since)
		 */
		if (n < want)
			break;
	}
	if (polled > READ_ONCE(*max))
		WRITE_ONCE(*max, polled);
	return polled;
}

/*
 * Done when the CQ gave less than the budget: re-arm it, and poll again
 * if a completion slipped in before the arming.
 */
static void ipoib_poll_done(struct napi_struct *napi, struct ib_cq *cq,
			    int polled, int budget)
{
	if (polled < budget && napi_complete_done(napi, polled) &&
	    ib_req_notify_cq(cq, IB_CQ_NEXT_COMP |
			     IB_CQ_REPORT_MISSED_EVENTS) > 0)
		napi_schedule(napi);
}

/* Receives: UD, CM, and the CM drain WR. */
static int ipoib_napi_poll(struct napi_struct *napi, int budget)
{
	struct ipoib_dev_priv *priv = container_of(napi, struct ipoib_dev_priv,
						   napi);
	int polled;

	polled = ipoib_poll_cq(priv, priv->cq, budget, ipoib_handle_recv_wc,
			       &priv->napi_max_polled);
	ipoib_rx_flush(priv);
	if (priv->transport_up) {
		ipoib_refill(priv);
		ipoib_cm_poll(priv);
	}
	ipoib_poll_done(napi, priv->cq, polled, budget);
	return polled;
}

/*
 * Whether the send NAPI may wake the stopped queue. A connection at its
 * share of the ring stopped it: only a completion of that connection in
 * this poll (or the stall timer, which clears cm_tx_capped) does, lest
 * every wake let one more send to a stuck peer in. Otherwise the ring
 * must be half empty: completions come before the next stop.
 */
static bool ipoib_tx_may_wake(struct ipoib_dev_priv *priv)
{
	struct ipoib_cm_tx *capped = READ_ONCE(priv->cm_tx_capped);

	/* ipoib_halt() stopped it: a packet now could make a new path */
	if (READ_ONCE(priv->tx_halted))
		return false;
	if (capped) {
		if (capped != priv->cm_tx_napi_last)
			return false;
		WRITE_ONCE(priv->cm_tx_capped, NULL);
	}
	return READ_ONCE(priv->global_head) - priv->global_tail <=
	       priv->tx_size / 2;
}

/*
 * Sends, UD and CM, at most the budget per poll as well. Netpoll's
 * budget 0 still frees a batch, through dev_consume_skb_any().
 */
static int ipoib_send_napi_poll(struct napi_struct *napi, int budget)
{
	struct ipoib_dev_priv *priv = container_of(napi, struct ipoib_dev_priv,
						   send_napi);
	struct net_device *dev = priv->dev;
	int polled;

	priv->cm_tx_napi_last = NULL;
	priv->send_napi_budget = budget;
	polled = ipoib_poll_cq(priv, priv->send_cq, budget ?: 16,
			       ipoib_handle_send_wc,
			       &priv->send_napi_max_polled);
	if (unlikely(!list_empty(&priv->ah_dead)))
		ipoib_ah_reap(priv);

	/*
	 * pairs with the barriers in ipoib_tx_sent() and
	 * ipoib_cm_tx_at_share(): tail, then stopped
	 */
	smp_mb();
	if (netif_queue_stopped(dev) && ipoib_tx_may_wake(priv)) {
		netif_tx_lock(dev);
		if (netif_queue_stopped(dev) && ipoib_tx_may_wake(priv))
			netif_wake_queue(dev);
		netif_tx_unlock(dev);
	}

	if (!budget)
		return 0;
	ipoib_poll_done(napi, priv->send_cq, polled, budget);
	return min(polled, budget);
}

void ipoib_napi_add(struct ipoib_dev_priv *priv)
{
	netif_napi_add(priv->dev, &priv->napi, ipoib_napi_poll);
	netif_napi_add_tx(priv->dev, &priv->send_napi, ipoib_send_napi_poll);
}

/*
 * Unlist both NAPI contexts. Unregistration calls this from ndo_uninit and
 * its own synchronize_net() afterwards is the grace period their lockless
 * users (busy polling) need before the netdev memory goes. It takes none
 * of its own: outside rtnl, as in a child's destructor, each of those is a
 * full grace period (two of them were a fifth of a child's deletion).
 * NAPI was disabled or never enabled: an event still coming from the CQ
 * schedules nothing.
 */
void ipoib_napi_unlist(struct ipoib_dev_priv *priv)
{
	__netif_napi_del(&priv->send_napi);
	__netif_napi_del(&priv->napi);
}

/* The same for a netdev that never got registered: one grace period. */
void ipoib_napi_del(struct ipoib_dev_priv *priv)
{
	ipoib_napi_unlist(priv);
	synchronize_net();
}

/*
 * Post the chained UD sends (tx lock held). A refusal means the QP left
 * RTS (the interface is going down): the sends from the refused one on
 * were never posted, so no completion would retire them. They are taken
 * back here, and their ring slots are used again.
 */
void ipoib_tx_flush(struct ipoib_dev_priv *priv)
{
	unsigned int n = priv->tx_chained, mask = priv->tx_size - 1;
	const struct ib_send_wr *bad = NULL;
	struct ipoib_tx_buf *buf;
	u32 first, id;

	if (!n)
		return;
	priv->tx_chained = 0;
	priv->tx_chain[n - 1].wr.wr.next = NULL;
	/*
	 * A chain posted because the burst ended another way (a packet
	 * over a connection, or dropped) ends unsignalled: signal it, or
	 * its sends, their packets and address handles, stay unretired
	 * until the next datagram, which on an idle link may never come.
	 */
	priv->tx_chain[n - 1].wr.wr.send_flags |= IB_SEND_SIGNALED;
	if (likely(!ib_post_send(priv->qp, &priv->tx_chain[0].wr.wr, &bad)))
		return;
	first = bad ? bad->wr_id : priv->tx_head - n;
	for (id = first; id != priv->tx_head; id++) {
		buf = &priv->tx_ring[id & mask];
		ipoib_unmap_tx(priv, buf);
		DEV_STATS_INC(priv->dev, tx_errors);
		dev_kfree_skb_any(buf->skb);
		buf->skb = NULL;
	}
	priv->global_head -= priv->tx_head - first;
	WRITE_ONCE(priv->tx_head, first);
	/* not while transport_down() holds the queue stopped */
	if (netif_queue_stopped(priv->dev) && READ_ONCE(priv->transport_up) &&
	    priv->global_head - READ_ONCE(priv->global_tail) < priv->tx_size)
		netif_wake_queue(priv->dev);
}

/*
 * Send one packet (IPoIB header first) over UD. Called from
 * ndo_start_xmit with the netdev's tx lock held and "ah" kept alive by
 * the caller (a reference, or an RCU read section over its owner);
 * consumes the skb. The handle records the send, so that it is not
 * destroyed before the completion.
 *
 * Sends are chained and posted together with the next signalled one:
 * the end of a burst (no xmit_more; ipoib_start_xmit() also posts the
 * chain when a burst ends with a packet that took another way), a ring
 * about to fill (a stopped queue needs a completion to wake), and every
 * tx_signal sends. So a burst costs one post and one completion per
 * tx_signal packets rather than one each.
 */
int ipoib_send(struct ipoib_dev_priv *priv, struct sk_buff *skb,
	       struct ipoib_ah *ah, u32 qpn, u32 qkey)
{
	struct net_device *dev = priv->dev;
	unsigned int i = priv->tx_head & (priv->tx_size - 1);
	struct ipoib_tx_buf *buf;
	struct ipoib_tx_wr *txw;
	struct ib_sge *sge;
	struct ib_ud_wr *wr;
	unsigned int hlen = 0;
	bool signal;
	int ret;

	/* a TSO packet's segments, or the packet, must fit a datagram */
	if (unlikely(skb_is_gso(skb) ?
		     skb_tcp_all_headers(skb) + skb_shinfo(skb)->gso_size >
		     priv->max_ib_mtu : skb->len > priv->max_ib_mtu)) {
		/*
		 * A packet segmented for connected mode's MTU may still sit
		 * in the qdisc when the interface went back to datagram
		 * mode. TCP sends it again with the new MSS.
		 */
		DEV_STATS_INC(dev, tx_dropped);
		dev_kfree_skb_any(skb);
		return -EMSGSIZE;
	}
	if (priv->enhanced)
		return ipoib_rn_send(priv, skb, ah, qpn);

	buf = &priv->tx_ring[i];
	txw = &priv->tx_chain[priv->tx_chained];
	sge = txw->sge;
	wr = &txw->wr;
	*wr = (struct ib_ud_wr) {
		.wr = {
			.wr_id = priv->tx_head,
			.sg_list = sge,
			.opcode = IB_WR_SEND,
		},
		.ah = ah->ah,
		.remote_qpn = qpn,
		.remote_qkey = qkey,
	};
	if (skb_is_gso(skb)) {
		/*
		 * TSO (only offered with an LSO QP): the HCA cuts the payload
		 * into gso_size pieces behind copies of these headers.
		 */
		hlen = skb_tcp_all_headers(skb);
		wr->hlen = hlen;
		wr->mss = skb_shinfo(skb)->gso_size;
		wr->wr.opcode = IB_WR_LSO;
	}
	/*
	 * The completion comes back through the fabric much later than on a
	 * NIC: release the socket's send budget and route now, so that TCP
	 * small queues do not throttle on our completion latency (in-tree
	 * does the same).
	 */
	skb_orphan(skb);
	skb_dst_drop(skb);
	buf->skb = skb;
	ret = ipoib_map_tx(priv, buf, sge);
	if (ret < 0)
		goto err_drop;
	wr->wr.num_sge = ret;
	if (hlen) {
		/*
		 * The headers go in the WR (the HCA copies them at post time;
		 * after ipoib_map_tx(), which may have linearised the skb;
		 * the skb stays in the ring until the completion);
		 * the gather list starts after them.
		 */
		if (unlikely(hlen > skb_headlen(skb))) {
			ret = -EINVAL;
			goto err_unmap;
		}
		wr->header = skb->data;
		sge[0].addr += hlen;
		sge[0].length -= hlen;
		if (!sge[0].length) {
			wr->wr.sg_list = sge + 1;
			wr->wr.num_sge--;
		}
	}
	if (skb->ip_summed == CHECKSUM_PARTIAL)
		wr->wr.send_flags |= IB_SEND_IP_CSUM;
	signal = !netdev_xmit_more() ||
		 priv->tx_chained + 1 == priv->tx_signal ||
		 priv->global_head + 1 - READ_ONCE(priv->global_tail) >=
		 priv->tx_size;
	if (signal)
		wr->wr.send_flags |= IB_SEND_SIGNALED;
	WRITE_ONCE(ah->last_send, priv->tx_head);

	if (priv->tx_chained)
		priv->tx_chain[priv->tx_chained - 1].wr.wr.next = &wr->wr;
	priv->tx_chained++;
	WRITE_ONCE(priv->tx_head, priv->tx_head + 1);
	ipoib_tx_sent(priv);
	if (signal)
		ipoib_tx_flush(priv);
	return 0;

err_unmap:
	ipoib_unmap_tx(priv, buf);
err_drop:
	buf->skb = NULL;
	DEV_STATS_INC(dev, tx_errors);
	dev_kfree_skb_any(skb);
	return ret;
}

/*
 * Map buf->skb for sending: the linear part and each page fragment get an
 * SGE. A packet with more pieces than the HCA takes is linearised first.
 * Returns the number of SGEs filled in, or a negative errno (nothing is
 * left mapped).
 */
int ipoib_map_tx(struct ipoib_dev_priv *priv, struct ipoib_tx_buf *buf,
		 struct ib_sge *sge)
{
	struct sk_buff *skb = buf->skb;
	struct ib_device *ca = priv->ca;
	unsigned int n, i;

	if (skb_shinfo(skb)->nr_frags + 1 > priv->max_send_sge &&
	    skb_linearize(skb))
		return -ENOMEM;
	n = skb_shinfo(skb)->nr_frags + 1;

	buf->mapping[0] = ib_dma_map_single(ca, skb->data, skb_headlen(skb),
					    DMA_TO_DEVICE);
	if (ib_dma_mapping_error(ca, buf->mapping[0]))
		return -EIO;
	sge[0].addr = buf->mapping[0];
	sge[0].length = skb_headlen(skb);
	sge[0].lkey = priv->pd->local_dma_lkey;

	for (i = 1; i < n; i++) {
		const skb_frag_t *frag = &skb_shinfo(skb)->frags[i - 1];

		buf->mapping[i] = ib_dma_map_page(ca, skb_frag_page(frag),
						  skb_frag_off(frag),
						  skb_frag_size(frag),
						  DMA_TO_DEVICE);
		if (ib_dma_mapping_error(ca, buf->mapping[i]))
			goto err_unmap_frags;
		sge[i].addr = buf->mapping[i];
		sge[i].length = skb_frag_size(frag);
		sge[i].lkey = priv->pd->local_dma_lkey;
	}
	return n;

err_unmap_frags:
	while (--i > 0)
		ib_dma_unmap_page(ca, buf->mapping[i],
				  skb_frag_size(&skb_shinfo(skb)->frags[i - 1]),
				  DMA_TO_DEVICE);
	ib_dma_unmap_single(ca, buf->mapping[0], skb_headlen(skb),
			    DMA_TO_DEVICE);
	return -EIO;
}

void ipoib_unmap_tx(struct ipoib_dev_priv *priv, struct ipoib_tx_buf *buf)
{
	struct sk_buff *skb = buf->skb;
	unsigned int i;

	ib_dma_unmap_single(priv->ca, buf->mapping[0], skb_headlen(skb),
			    DMA_TO_DEVICE);
	for (i = 0; i < skb_shinfo(skb)->nr_frags; i++)
		ib_dma_unmap_page(priv->ca, buf->mapping[i + 1],
				  skb_frag_size(&skb_shinfo(skb)->frags[i]),
				  DMA_TO_DEVICE);
}

/*
 * tx_dropped and tx_errors are counted from xmit, NAPI and work items, so
 * atomically (DEV_STATS_INC); the other counters only from NAPI.
 */
void ipoib_drop(struct ipoib_dev_priv *priv, struct sk_buff *skb)
{
	DEV_STATS_INC(priv->dev, tx_dropped);
	dev_kfree_skb_any(skb);
}

/*
 * Park a packet (its IPoIB header first) while its path or group is
 * resolved; it keeps the pseudo header so that it can simply be sent
 * again. False when "queue" already holds "limit" packets.
 */
bool ipoib_park(struct sk_buff_head *queue, unsigned int limit,
		struct sk_buff *skb)
{
	if (skb_queue_len(queue) >= limit)
		return false;
	skb_push(skb, IPOIB_PSEUDO_LEN);
	__skb_queue_tail(queue, skb);
	return true;
}

/* The wait is over: send the parked packets again, or drop them. */
void ipoib_release_queue(struct ipoib_dev_priv *priv,
			 struct sk_buff_head *queue, bool send)
{
	struct sk_buff *skb;

	while ((skb = __skb_dequeue(queue))) {
		if (send)
			dev_queue_xmit(skb);
		else
			ipoib_drop(priv, skb);
	}
}

static int ipoib_modify_state(struct ipoib_dev_priv *priv,
			      enum ib_qp_state state, int mask,
			      struct ib_qp_attr *attr)
{
	attr->qp_state = state;
	return ib_modify_qp(priv->qp, attr, mask | IB_QP_STATE);
}

/* NAPI on, and what completed before the CQs were armed polled now. */
static void ipoib_napi_start(struct ipoib_dev_priv *priv)
{
	napi_enable(&priv->napi);
	napi_enable(&priv->send_napi);
	local_bh_disable();
	if (ib_req_notify_cq(priv->cq, IB_CQ_NEXT_COMP |
			     IB_CQ_REPORT_MISSED_EVENTS) > 0)
		napi_schedule(&priv->napi);
	if (ib_req_notify_cq(priv->send_cq, IB_CQ_NEXT_COMP |
			     IB_CQ_REPORT_MISSED_EVENTS) > 0)
		napi_schedule(&priv->send_napi);
	local_bh_enable();
}

static void ipoib_transport_reset(struct ipoib_dev_priv *priv)
{
	priv->tx_head = 0;
	priv->tx_tail = 0;
	priv->global_head = 0;
	priv->global_tail = 0;
	priv->cm_tx_capped = NULL;
	priv->rx_outstanding = 0;
}

/* Enhanced: the provider's QP up, our CQs for connected mode. */
static int ipoib_transport_up_rn(struct ipoib_dev_priv *priv)
{
	int ret;

	ret = ipoib_rn_up(priv);
	if (ret) {
		netdev_err(priv->dev, "%s cannot open its datapath: %d\n",
			   dev_name(&priv->ca->dev), ret);
		return ret;
	}
	ipoib_transport_reset(priv);
	priv->transport_up = true;
	ipoib_napi_start(priv);
	return 0;
}

/*
 * Bring the QP to RTS on the interface's P_Key index and fill the receive
 * ring. The caller found the P_Key index (under rtnl).
 */
int ipoib_transport_up(struct ipoib_dev_priv *priv)
{
	struct ib_qp_attr attr = {
		.pkey_index = priv->pkey_index,
		.port_num = priv->port,
		.qkey = priv->qkey,
	};
	int ret;

	ASSERT_RTNL();
	if (priv->enhanced)
		return ipoib_transport_up_rn(priv);
	ret = ipoib_modify_state(priv, IB_QPS_INIT, IB_QP_PKEY_INDEX |
				 IB_QP_PORT | IB_QP_QKEY, &attr);
	if (!ret)
		ret = ipoib_modify_state(priv, IB_QPS_RTR, 0, &attr);
	attr.sq_psn = 0;
	if (!ret)
		ret = ipoib_modify_state(priv, IB_QPS_RTS, IB_QP_SQ_PSN, &attr);
	if (ret) {
		netdev_err(priv->dev, "cannot bring the UD QP to RTS: %d\n", ret);
		ipoib_modify_state(priv, IB_QPS_RESET, 0, &attr);
		return ret;
	}

	ipoib_transport_reset(priv);
	ipoib_rx_layout(priv);
	priv->transport_up = true;
	/*
	 * Fill the ring while NAPI is still disabled: after a down/up the CQ
	 * may still be armed, and a completion would let NAPI refill the
	 * same slots on another CPU.
	 */
	ipoib_refill(priv);
	ipoib_napi_start(priv);
	if (!priv->rx_outstanding) {
		netdev_err(priv->dev, "cannot post receive buffers\n");
		ipoib_transport_down(priv);
		return -ENOMEM;
	}
	return 0;
}

/*
 * Take the QP out of service: 1. no more NAPI, 2. QP to ERR so that every
 * posted WR completes (flushed), 3. reap those completions here until all
 * buffers are back, 4. RESET for the next transport_up().
 */
void ipoib_transport_down(struct ipoib_dev_priv *priv)
{
	struct ib_qp_attr attr = {};
	unsigned long deadline = jiffies + 5 * HZ;
	struct ib_wc wcs[16];
	unsigned int i;
	int n, m;

	ASSERT_RTNL();
	if (!priv->transport_up)
		return;
	priv->transport_up = false;
	napi_disable(&priv->napi);
	napi_disable(&priv->send_napi);
	netif_tx_disable(priv->dev);
	/* a burst cut short by the stop: post its sends, to be flushed */
	netif_tx_lock_bh(priv->dev);
	ipoib_tx_flush(priv);
	netif_tx_unlock_bh(priv->dev);
	/* no transmit arms it again until the next transport_up() */
	timer_delete_sync(&priv->cm_tx_stall_timer);

	if (priv->enhanced) {
		/* connections are drained (ipoib_cm_stop()); no UD ring */
		ipoib_rn_down(priv);
		ipoib_ah_reap(priv);
		return;
	}
	ipoib_modify_state(priv, IB_QPS_ERR, 0, &attr);
	while (priv->rx_outstanding ||
	       priv->tx_head != READ_ONCE(priv->tx_tail)) {
		local_bh_disable();
		n = ib_poll_cq(priv->cq, ARRAY_SIZE(wcs), wcs);
		for (i = 0; i < n; i++)
			ipoib_handle_recv_wc(priv, &wcs[i]);
		m = ib_poll_cq(priv->send_cq, ARRAY_SIZE(wcs), wcs);
		for (i = 0; i < m; i++)
			ipoib_handle_send_wc(priv, &wcs[i]);
		local_bh_enable();
		if (n > 0 || m > 0)
			continue;
		if (time_after(jiffies, deadline)) {
			netdev_warn(priv->dev, "%u receives and %u sends not flushed after 5s\n",
				    priv->rx_outstanding,
				    priv->tx_head - priv->tx_tail);
			break;
		}
		usleep_range(1000, 2000);
	}
	ipoib_modify_state(priv, IB_QPS_RESET, 0, &attr);
	/* RESET discards, without completions, whatever the timeout left */
	local_bh_disable();
	for (; priv->tx_tail != priv->tx_head; priv->tx_tail++)
		ipoib_tx_done(priv, &priv->tx_ring[priv->tx_tail &
						   (priv->tx_size - 1)],
			      IB_WC_WR_FLUSH_ERR);
	local_bh_enable();
	/* nothing in flight: every ownerless address handle can go */
	ipoib_ah_reap(priv);
	for (i = 0; i < priv->rx_size; i++)
		ipoib_free_rx_buf(priv, i);
	/* pages still with the stack come back to it, then it goes */
	if (priv->rx_pool) {
		page_pool_destroy(priv->rx_pool);
		priv->rx_pool = NULL;
	}
}
