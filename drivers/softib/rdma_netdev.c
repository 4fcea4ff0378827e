// SPDX-License-Identifier: GPL-2.0
/*
 * softib: the IPoIB rdma_netdev, "enhanced IPoIB", as mlx5 offers it on
 * ConnectX-4 and later (module parameter enhanced=1). IPoIB asks the
 * device for its rdma_netdev parameters, allocates the netdev with the
 * queues they name, and this file then owns the datapath under the
 * ULP's control logic:
 *
 *  - each netdev has one UD QP: its QPN (the hardware address), P_Key
 *    index (set_id), Q_Key (attach_mcast) and multicast attachments;
 *  - send: IPoIB calls rn->send() with the skb (IPoIB header first), an
 *    AH and the remote QPN; the skb goes onto the fabric at once, from
 *    the sending CPU, as one datagram or, for a TSO skb, one datagram a
 *    segment, with the TCP/UDP checksum filled in (offload.c);
 *  - receive: the fabric writes each datagram for the QP into a buffer
 *    posted on one of the netdev's receive rings, picked by a hash of the
 *    flow (RSS), and schedules that ring's NAPI; the poll builds the skb
 *    on the buffer (a page_pool page) as mlx5 does (GRH pulled, pkt_type
 *    from the DGID, the multicast copies of the netdev's own sends
 *    dropped, the 20-byte pseudo header pushed) and hands it to GRO.
 *
 * There is no connected mode on such a netdev: IPoIB's own CM needs its
 * own QPs and CQs, which it sets up only for a netdev without a provider.
 *
 * Locking: the rings' producers are the senders on any CPU, and each
 * delivers under the netdev's QP's rq.lock (fabric.c), which serializes
 * them and guards "running", "nrxq" and each ring's producer index; a
 * ring's one consumer is its NAPI. Open, stop and the ethtool changes
 * run under RTNL.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#define IPOIB_NG_PAGE_POOL
#include "compat.h"

#include <linux/etherdevice.h>
#include <linux/ethtool.h>
#include <linux/if_infiniband.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/jhash.h>
#include <linux/moduleparam.h>
#include <linux/netdevice.h>
#include <linux/tcp.h>
#include <linux/u64_stats_sync.h>
#include <net/ipv6.h>
#include <rdma/ib_pack.h>
#include <rdma/ib_verbs.h>

#include "softib.h"

bool softib_enhanced;
module_param_named(enhanced, softib_enhanced, bool, 0444);
MODULE_PARM_DESC(enhanced,
		 "offer IPoIB an rdma_netdev (enhanced IPoIB, as mlx5): multi-queue, RSS, TSO, checksum and GRO; no connected mode (default 0)");

/*
 * Which ports offer it: a fabric that mixes HCAs with and without an
 * rdma_netdev (ConnectX-3 and ConnectX-4 nodes), in one softib.
 */
static unsigned int softib_enhanced_ports = ~0U;
module_param_named(enhanced_ports, softib_enhanced_ports, uint, 0444);
MODULE_PARM_DESC(enhanced_ports,
		 "with enhanced=1, the ports that offer the rdma_netdev: bit 0 is port 1 (default: all)");

#define SOFTIB_RN_MAX_QUEUES	16
#define SOFTIB_RN_RING_DEF	512
#define SOFTIB_RN_RING_MIN	64
#define SOFTIB_RN_RING_MAX	8192
/* a receive buffer: headroom, GRH and a 4096-byte message, skb_shared_info */
#define SOFTIB_RN_ORDER		1
#define SOFTIB_RN_BUF		(PAGE_SIZE << SOFTIB_RN_ORDER)
#define SOFTIB_RN_HEADROOM	NET_SKB_PAD
#define SOFTIB_RN_ROOM		(SOFTIB_RN_BUF - SOFTIB_RN_HEADROOM - \
				 SKB_DATA_ALIGN(sizeof(struct skb_shared_info)))
#define SOFTIB_RN_PSEUDO_LEN	20	/* IPoIB's pseudo header */
#define SOFTIB_RN_HARD_LEN	(SOFTIB_IPOIB_HLEN + SOFTIB_RN_PSEUDO_LEN)
/* IPoIB's send path gives at most the linear part and every fragment */
#define SOFTIB_RN_MAX_SGE	(MAX_SKB_FRAGS + 1)

enum {
	SOFTIB_RN_F_GRH = BIT(0),
	SOFTIB_RN_F_CSUM_OK = BIT(1),
	SOFTIB_RN_F_L4 = BIT(2),	/* the hash covers TCP/UDP ports */
};

/* one receive buffer and, once the fabric has filled it, its completion */
struct softib_rn_slot {
	struct page *page;
	u32 len;		/* GRH space + message */
	u32 src_qpn;
	u32 hash;
	u32 flags;		/* SOFTIB_RN_F_* */
};

struct softib_rn_rq_stats {
	u64 packets;
	u64 bytes;
	u64 csum_unnecessary;
	u64 multicast;		/* multicast and broadcast received */
	u64 mcast_echo;		/* the netdev's own multicast, dropped */
	u64 length_errors;	/* shorter than the IPoIB header, dropped */
	u64 no_skb;
	struct u64_stats_sync syncp;
};

struct softib_rn_rxq {
	struct softib_rn *rn;
	u32 index;
	struct napi_struct napi;
	struct page_pool *pool;
	struct softib_rn_slot *slots;
	u32 mask;
	/* the fabric's side, under the QP's rq.lock: the next slot it fills */
	u32 prod;
	/* NAPI's side: the next slot it takes, and how far buffers are posted */
	u32 cons;
	u32 fill;
	atomic64_t no_buf;	/* datagrams lost: no buffer posted */
	struct softib_rn_rq_stats st;
};

struct softib_rn_sq_stats {
	u64 packets;
	u64 bytes;
	u64 tso_packets;
	u64 csum_partial;
	u64 dropped;
	struct u64_stats_sync syncp;
};

struct softib_rn_txq {
	/* the WQE a send is described in, with room for the LSO header */
	struct softib_swqe *wqe;
	u8 *tmpl;		/* after the WQE's SGEs: a TSO skb's headers */
	struct softib_lso_buf lso;
	struct softib_rn_sq_stats st;
};

struct softib_rn {
	struct rdma_netdev rn;	/* first: IPoIB's priv is found through it */
	struct softib_dev *sdev;
	struct net_device *ndev;
	u32 port_num;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp;
	u32 nq;			/* queues allocated: the most channels */
	u32 nrxq;		/* in use */
	u32 ntxq;
	u32 ring_size;
	u16 pkey_index;		/* set_id(), kept for the QP */
	/* rings allocated, NAPI on: softib_rn_set_running() */
	bool running;
	struct softib_rn_rxq *rxq;
	struct softib_rn_txq *txq;
};

static struct softib_rn *to_srn(struct net_device *ndev)
{
	return netdev_priv(ndev);
}

/* ---- receive ------------------------------------------------------- */

/*
 * The flow hash of an IPoIB datagram, for RSS: its IPv4 or IPv6
 * addresses and, for TCP and UDP, its ports (*l4 then); else the
 * sender's QPN.
 */
static u32 softib_rn_hash(const struct softib_pkt *pkt, bool *l4port)
{
	const struct softib_swqe *wqe = pkt->wqe;
	u8 h[SOFTIB_IPOIB_HLEN + sizeof(struct ipv6hdr) + 4];
	u32 n = min_t(u32, wqe->length, sizeof(h));
	u32 ports = 0, a, b;
	struct ipv6hdr *ip6;
	struct iphdr *ip;
	__be16 proto;
	u8 l4;

	*l4port = false;
	if (!softib_sg_read(wqe->sge, wqe->num_sge, 0, h, n) ||
	    n < SOFTIB_IPOIB_HLEN + sizeof(*ip))
		return jhash_1word(pkt->src_qpn, 0);
	proto = *(__be16 *)h;
	if (proto == htons(ETH_P_IP)) {
		ip = (struct iphdr *)(h + SOFTIB_IPOIB_HLEN);
		a = (__force u32)ip->saddr;
		b = (__force u32)ip->daddr;
		l4 = ip->protocol;
		if (!(ip->frag_off & htons(IP_MF | IP_OFFSET)) && ip->ihl == 5 &&
		    n >= SOFTIB_IPOIB_HLEN + sizeof(*ip) + 4)
			ports = get_unaligned((u32 *)(ip + 1));
	} else if (proto == htons(ETH_P_IPV6) &&
		   n >= SOFTIB_IPOIB_HLEN + sizeof(*ip6)) {
		ip6 = (struct ipv6hdr *)(h + SOFTIB_IPOIB_HLEN);
		a = (__force u32)ipv6_addr_hash(&ip6->saddr);
		b = (__force u32)ipv6_addr_hash(&ip6->daddr);
		l4 = ip6->nexthdr;
		if (n >= SOFTIB_IPOIB_HLEN + sizeof(*ip6) + 4)
			ports = get_unaligned((u32 *)(ip6 + 1));
	} else {
		return jhash_1word(pkt->src_qpn, 0);
	}
	if (l4 != IPPROTO_TCP && l4 != IPPROTO_UDP)
		ports = 0;
	*l4port = ports;
	return jhash_3words(a ^ b, ports, l4, 0);
}

static void softib_rn_kick(struct softib_rn_rxq *rxq)
{
	napi_schedule(&rxq->napi);
}

/*
 * A datagram for an rdma_netdev's QP (fabric.c, under the QP's rq.lock
 * and RCU): into the next posted buffer of the ring its flow hashes to,
 * or lost (counted) if the ring has none.
 */
void softib_rn_recv(const struct softib_pkt *pkt, struct softib_qp *dqp,
		    struct softib_port *dport, int pkey_index)
{
	struct softib_rn *rn = dqp->rn;
	struct softib_rn_slot *slot;
	struct softib_rn_rxq *rxq;
	struct ib_wc wc = {};
	struct ib_sge sge;
	u32 hash, prod;
	bool l4;

	lockdep_assert_held(&dqp->rq.lock);
	if (!rn->running) {
		atomic64_inc(&dport->cnt.drops[SOFTIB_DROP_NO_RWQE]);
		return;
	}
	hash = softib_rn_hash(pkt, &l4);
	rxq = &rn->rxq[reciprocal_scale(hash, rn->nrxq)];
	prod = rxq->prod;
	/* pairs with softib_rn_refill(): the slot's page is posted */
	if (prod == smp_load_acquire(&rxq->fill)) {
		atomic64_inc(&rxq->no_buf);
		atomic64_inc(&dport->cnt.drops[SOFTIB_DROP_NO_RWQE]);
		/* the poll posts buffers: let it try again */
		softib_rn_kick(rxq);
		return;
	}
	slot = &rxq->slots[prod & rxq->mask];
	sge.addr = (uintptr_t)page_address(slot->page) + SOFTIB_RN_HEADROOM;
	sge.length = SOFTIB_RN_ROOM;
	sge.lkey = 0;
	/* too long for a buffer: counted, and the buffer stays posted */
	if (softib_recv_copy(pkt, dqp, dport, &sge, 1, pkey_index,
			     IB_GRH_BYTES, &wc))
		return;
	slot->len = wc.byte_len;
	slot->src_qpn = wc.src_qp;
	slot->hash = hash;
	slot->flags = (wc.wc_flags & IB_WC_GRH ? SOFTIB_RN_F_GRH : 0) |
		      (wc.wc_flags & IB_WC_IP_CSUM_OK ? SOFTIB_RN_F_CSUM_OK : 0) |
		      (l4 ? SOFTIB_RN_F_L4 : 0);
	/* the data and the slot are written before NAPI sees the slot */
	smp_store_release(&rxq->prod, prod + 1);
	softib_rn_kick(rxq);
}

/*
 * For the injector's pacing (inject.c): every receive ring of the QP's
 * netdev has a buffer posted. A peek under the lock that keeps the rings.
 */
bool softib_rn_can_recv(struct softib_qp *qp)
{
	struct softib_rn *rn;
	unsigned long flags;
	bool ret = true;
	u32 q;

	spin_lock_irqsave(&qp->rq.lock, flags);
	rn = qp->rn;
	for (q = 0; rn && rn->running && q < rn->nrxq; q++)
		/* NAPI posts on its own: a peek, no ordering needed */
		if (rn->rxq[q].prod == READ_ONCE(rn->rxq[q].fill))
			ret = false;
	spin_unlock_irqrestore(&qp->rq.lock, flags);
	return ret;
}

/* Post buffers up to a full ring; NAPI context (or the ring is idle). */
static void softib_rn_refill(struct softib_rn_rxq *rxq)
{
	u32 fill = rxq->fill;
	struct page *page;

	while (fill - rxq->cons <= rxq->mask) {
		page = page_pool_dev_alloc_pages(rxq->pool);
		if (!page)
			break;
		rxq->slots[fill & rxq->mask].page = page;
		fill++;
	}
	/* the pages are in their slots before the fabric may take them */
	smp_store_release(&rxq->fill, fill);
}

/* The skb of one filled slot, as mlx5 builds it for IPoIB; NULL: dropped. */
static struct sk_buff *softib_rn_build_skb(struct softib_rn_rxq *rxq,
					   struct softib_rn_slot *slot)
{
	struct net_device *ndev = rxq->rn->ndev;
	const u8 *grh, *dgid;
	struct sk_buff *skb;

	skb = napi_build_skb(page_address(slot->page), SOFTIB_RN_BUF);
	if (!skb) {
		page_pool_put_full_page(rxq->pool, slot->page, true);
		u64_stats_update_begin(&rxq->st.syncp);
		rxq->st.no_skb++;
		u64_stats_update_end(&rxq->st.syncp);
		return NULL;
	}
	skb_mark_for_recycle(skb);
	skb_reserve(skb, SOFTIB_RN_HEADROOM);
	skb_put(skb, slot->len);

	grh = skb->data;
	dgid = grh + offsetof(struct ib_grh, dgid);
	skb->pkt_type = PACKET_HOST;
	if ((slot->flags & SOFTIB_RN_F_GRH) && dgid[0] == 0xff) {
		/* the copy of our own multicast send that the HCA replicated */
		if (slot->src_qpn == rxq->rn->qp->qp_num &&
		    !memcmp(grh + offsetof(struct ib_grh, sgid),
			    ndev->dev_addr + 4, sizeof(union ib_gid))) {
			u64_stats_update_begin(&rxq->st.syncp);
			rxq->st.mcast_echo++;
			u64_stats_update_end(&rxq->st.syncp);
			dev_kfree_skb_any(skb);
			return NULL;
		}
		skb->pkt_type = memcmp(dgid, ndev->broadcast + 4,
				       sizeof(union ib_gid)) ?
				PACKET_MULTICAST : PACKET_BROADCAST;
	}
	skb_pull(skb, IB_GRH_BYTES);
	if (unlikely(skb->len < SOFTIB_IPOIB_HLEN)) {
		/*
		 * A completion like any other to the queue's counters, as
		 * mlx5 counts every one it hands up; not handed up here
		 */
		u64_stats_update_begin(&rxq->st.syncp);
		rxq->st.packets++;
		rxq->st.bytes += skb->len;
		rxq->st.length_errors++;
		u64_stats_update_end(&rxq->st.syncp);
		dev_kfree_skb_any(skb);
		return NULL;
	}
	skb->protocol = *(__be16 *)skb->data;
	if ((ndev->features & NETIF_F_RXCSUM) &&
	    (slot->flags & SOFTIB_RN_F_CSUM_OK)) {
		skb->ip_summed = CHECKSUM_UNNECESSARY;
		u64_stats_update_begin(&rxq->st.syncp);
		rxq->st.csum_unnecessary++;
		u64_stats_update_end(&rxq->st.syncp);
	}
	skb_record_rx_queue(skb, rxq->index);
	if (ndev->features & NETIF_F_RXHASH)
		skb_set_hash(skb, slot->hash, slot->flags & SOFTIB_RN_F_L4 ?
			     PKT_HASH_TYPE_L4 : PKT_HASH_TYPE_L3);
	/* IPoIB's layout: a zeroed pseudo header, then the IPoIB header */
	memset(skb_push(skb, SOFTIB_RN_PSEUDO_LEN), 0, SOFTIB_RN_PSEUDO_LEN);
	skb_reset_mac_header(skb);
	skb_pull(skb, SOFTIB_RN_HARD_LEN);
	skb->dev = ndev;
	return skb;
}

static int softib_rn_poll(struct napi_struct *napi, int budget)
{
	struct softib_rn_rxq *rxq = container_of(napi, struct softib_rn_rxq,
						 napi);
	struct softib_rn_slot *slot;
	struct sk_buff *skb;
	u32 prod, len;
	int done = 0;

	/* pairs with softib_rn_recv(): the slots up to prod are filled */
	prod = smp_load_acquire(&rxq->prod);
	while (done < budget && rxq->cons != prod) {
		slot = &rxq->slots[rxq->cons & rxq->mask];
		len = slot->len;
		skb = softib_rn_build_skb(rxq, slot);
		slot->page = NULL;
		rxq->cons++;
		done++;
		if (!skb)
			continue;
		u64_stats_update_begin(&rxq->st.syncp);
		rxq->st.packets++;
		rxq->st.bytes += len - IB_GRH_BYTES;
		rxq->st.multicast += skb->pkt_type != PACKET_HOST;
		u64_stats_update_end(&rxq->st.syncp);
		napi_gro_receive(napi, skb);
	}
	softib_rn_refill(rxq);
	if (done < budget && napi_complete_done(napi, done)) {
		/* a slot filled after the last look, before completion */
		if (smp_load_acquire(&rxq->prod) != rxq->cons)
			napi_schedule(napi);
	}
	return done;
}

/* ---- send ---------------------------------------------------------- */

/*
 * rn->send: put the skb on the fabric now. Called by IPoIB's xmit under
 * the skb's TX queue lock, which is what makes the queue's WQE ours.
 * IPoIB uses the return value as the send's sequence number for its AH
 * reaper: the AH is no longer needed once this returns, hence 0.
 */
static int softib_rn_send(struct net_device *ndev, struct sk_buff *skb,
			  struct ib_ah *address, u32 dqpn)
{
	struct softib_rn *rn = to_srn(ndev);
	u32 q = skb_get_queue_mapping(skb);
	struct softib_rn_txq *txq;
	struct softib_swqe *wqe;
	enum ib_wc_status st;
	u32 i, n = 0, hlen = 0;
	bool tso;

	/*
	 * Every send queue exists from ndo_init on, and the stack holds
	 * queue q's lock: q's WQE is ours even while ethtool -L moves the
	 * queue count.
	 */
	if (unlikely(q >= rn->nq)) {
		dev_kfree_skb_any(skb);
		return 0;
	}
	txq = &rn->txq[q];
	wqe = txq->wqe;
	/* IPoIB never sends to QP0 or QP1: nothing else may reach the SMA or SA */
	if (unlikely(dqpn <= 1 || skb_shinfo(skb)->nr_frags >= SOFTIB_RN_MAX_SGE))
		goto drop;

	tso = skb_is_gso(skb);
	memset(wqe, 0, sizeof(*wqe));
	wqe->opcode = tso ? IB_WR_LSO : IB_WR_SEND;
	if (skb->ip_summed == CHECKSUM_PARTIAL)
		wqe->send_flags |= IB_SEND_IP_CSUM;
	wqe->av = to_sah(address)->av;
	wqe->remote_qpn = dqpn;
	/* the QP's own Q_Key, which attach_mcast set */
	wqe->remote_qkey = 0x80000000;
	if (tso) {
		hlen = skb_tcp_all_headers(skb);
		if (unlikely(hlen > skb_headlen(skb) ||
			     hlen > SOFTIB_LSO_HDR_MAX))
			goto drop;
		memcpy(txq->tmpl, skb->data, hlen);
		wqe->lso_hlen = hlen;
		wqe->lso_mss = skb_shinfo(skb)->gso_size;
	}
	if (skb_headlen(skb) > hlen) {
		wqe->sge[n].addr = (uintptr_t)skb->data + hlen;
		wqe->sge[n].length = skb_headlen(skb) - hlen;
		n++;
	}
	for (i = 0; i < skb_shinfo(skb)->nr_frags; i++) {
		const skb_frag_t *f = &skb_shinfo(skb)->frags[i];

		wqe->sge[n].addr = (uintptr_t)skb_frag_address(f);
		wqe->sge[n].length = skb_frag_size(f);
		n++;
	}
	wqe->num_sge = n;
	wqe->length = skb->len;

	st = softib_send_ud(to_sqp(rn->qp), wqe, &txq->lso);
	if (st != IB_WC_SUCCESS)
		goto drop;
	u64_stats_update_begin(&txq->st.syncp);
	txq->st.packets += tso ? skb_shinfo(skb)->gso_segs : 1;
	txq->st.bytes += skb->len;
	txq->st.tso_packets += tso;
	txq->st.csum_partial += skb->ip_summed == CHECKSUM_PARTIAL;
	u64_stats_update_end(&txq->st.syncp);
	dev_consume_skb_any(skb);
	return 0;

drop:
	u64_stats_update_begin(&txq->st.syncp);
	txq->st.dropped++;
	u64_stats_update_end(&txq->st.syncp);
	dev_kfree_skb_any(skb);
	return 0;
}

static void softib_rn_tx_timeout(struct net_device *ndev, unsigned int txqueue)
{
	/* sends never wait for a completion: a queue cannot stay stopped */
	netdev_warn(ndev, "TX queue %u timed out\n", txqueue);
}

/* ---- control: set_id, multicast ------------------------------------ */

static void softib_rn_set_id(struct net_device *ndev, int id)
{
	struct softib_rn *rn = to_srn(ndev);
	struct softib_qp *qp;
	unsigned long flags;

	if (id < 0 || id >= SOFTIB_PKEY_TBL_LEN)
		return;
	/* before ndo_init, the QP is made with it */
	rn->pkey_index = id;
	if (!rn->qp)
		return;
	qp = to_sqp(rn->qp);
	spin_lock_irqsave(&qp->sq.lock, flags);
	WRITE_ONCE(qp->pkey_index, id);
	spin_unlock_irqrestore(&qp->sq.lock, flags);
}

static int softib_rn_attach_mcast(struct net_device *ndev,
				  struct ib_device *hca, union ib_gid *gid,
				  u16 mlid, int set_qkey, u32 qkey)
{
	struct softib_rn *rn = to_srn(ndev);
	struct softib_qp *qp;
	unsigned long flags;

	if (!rn->qp)
		return -ENODEV;
	qp = to_sqp(rn->qp);
	if (set_qkey) {
		spin_lock_irqsave(&qp->sq.lock, flags);
		WRITE_ONCE(qp->qkey, qkey);
		spin_unlock_irqrestore(&qp->sq.lock, flags);
	}
	return ib_attach_mcast(rn->qp, gid, mlid);
}

static int softib_rn_detach_mcast(struct net_device *ndev,
				  struct ib_device *hca, union ib_gid *gid,
				  u16 mlid)
{
	struct softib_rn *rn = to_srn(ndev);

	return rn->qp ? ib_detach_mcast(rn->qp, gid, mlid) : -ENODEV;
}

/* ---- rings ----------------------------------------------------------- */

static void softib_rn_free_rings(struct softib_rn *rn)
{
	struct softib_rn_rxq *rxq;
	u32 q, i;

	for (q = 0; q < rn->nrxq; q++) {
		rxq = &rn->rxq[q];
		if (rxq->slots) {
			for (i = 0; i <= rxq->mask; i++)
				if (rxq->slots[i].page)
					page_pool_put_full_page(rxq->pool,
								rxq->slots[i].page,
								false);
			kvfree(rxq->slots);
			rxq->slots = NULL;
		}
		if (!IS_ERR_OR_NULL(rxq->pool))
			page_pool_destroy(rxq->pool);
		rxq->pool = NULL;
		rxq->prod = 0;
		rxq->cons = 0;
		rxq->fill = 0;
	}
}

static int softib_rn_alloc_rings(struct softib_rn *rn)
{
	struct page_pool_params pp = {
		.order = SOFTIB_RN_ORDER,
		.pool_size = rn->ring_size,
		.nid = NUMA_NO_NODE,
	};
	struct softib_rn_rxq *rxq;
	u32 q;

	for (q = 0; q < rn->nrxq; q++) {
		rxq = &rn->rxq[q];
		rxq->slots = kvcalloc(rn->ring_size, sizeof(*rxq->slots),
				      GFP_KERNEL);
		if (!rxq->slots)
			goto err_free_rings;
		rxq->mask = rn->ring_size - 1;
		rxq->prod = 0;
		rxq->cons = 0;
		rxq->fill = 0;
		rxq->pool = page_pool_create(&pp);
		if (IS_ERR(rxq->pool)) {
			rxq->pool = NULL;
			goto err_free_rings;
		}
		softib_rn_refill(rxq);
		if (rxq->fill == rxq->cons)
			goto err_free_rings;
	}
	return 0;

err_free_rings:
	softib_rn_free_rings(rn);
	return -ENOMEM;
}

/*
 * Every delivery runs under the QP's rq.lock: once "running" is written
 * under it, no sender still works with the old value, and one that sees
 * "true" sees the rings and the queue count set up before.
 */
static void softib_rn_set_running(struct softib_rn *rn, bool running)
{
	struct softib_qp *qp = to_sqp(rn->qp);

	spin_lock_irq(&qp->rq.lock);
	rn->running = running;
	spin_unlock_irq(&qp->rq.lock);
}

/* Rings and NAPI up, then the fabric may deliver. RTNL. */
static int softib_rn_start(struct softib_rn *rn)
{
	u32 q;
	int ret;

	ASSERT_RTNL();
	if (rn->running)
		return 0;
	ret = softib_rn_alloc_rings(rn);
	if (ret)
		return ret;
	for (q = 0; q < rn->nrxq; q++)
		napi_enable(&rn->rxq[q].napi);
	softib_rn_set_running(rn, true);
	return 0;
}

/*
 * The fabric stops delivering (it checks "running" under the ring's
 * lock), then NAPI goes, then the buffers. RTNL.
 */
static void softib_rn_halt(struct softib_rn *rn)
{
	u32 q;

	ASSERT_RTNL();
	if (!rn->running)
		return;
	softib_rn_set_running(rn, false);
	for (q = 0; q < rn->nrxq; q++)
		napi_disable(&rn->rxq[q].napi);
	softib_rn_free_rings(rn);
}

/* ---- netdev ops ------------------------------------------------------ */

static int softib_rn_open(struct net_device *ndev)
{
	return softib_rn_start(to_srn(ndev));
}

static int softib_rn_stop(struct net_device *ndev)
{
	softib_rn_halt(to_srn(ndev));
	return 0;
}

/* The netdev's QP, Q_Key and P_Key index as IPoIB's own UD QP has them. */
static int softib_rn_create_qp(struct softib_rn *rn)
{
	struct ib_device *ibdev = &rn->sdev->ibdev;
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_UD,
		.port_num = rn->port_num,
		.cap = {
			.max_send_wr = 1,
			.max_recv_wr = 1,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.sq_sig_type = IB_SIGNAL_ALL_WR,
	};
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_INIT,
		.port_num = rn->port_num,
		.pkey_index = rn->pkey_index,
		.qkey = 0,
	};
	int ret;

	rn->pd = ib_alloc_pd(ibdev, 0);
	if (IS_ERR(rn->pd))
		return PTR_ERR(rn->pd);
	rn->cq = ib_create_cq(ibdev, NULL, NULL, NULL,
			      &(struct ib_cq_init_attr){ .cqe = 2 });
	if (IS_ERR(rn->cq)) {
		ret = PTR_ERR(rn->cq);
		goto err_dealloc_pd;
	}
	init.send_cq = rn->cq;
	init.recv_cq = rn->cq;
	rn->qp = ib_create_qp(rn->pd, &init);
	if (IS_ERR(rn->qp)) {
		ret = PTR_ERR(rn->qp);
		goto err_destroy_cq;
	}
	ret = ib_modify_qp(rn->qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_QKEY);
	if (ret)
		goto err_destroy_qp;
	attr.qp_state = IB_QPS_RTR;
	ret = ib_modify_qp(rn->qp, &attr, IB_QP_STATE);
	if (ret)
		goto err_destroy_qp;
	attr.qp_state = IB_QPS_RTS;
	attr.sq_psn = 0;
	ret = ib_modify_qp(rn->qp, &attr, IB_QP_STATE | IB_QP_SQ_PSN);
	if (ret)
		goto err_destroy_qp;
	to_sqp(rn->qp)->rn = rn;
	return 0;

err_destroy_qp:
	ib_destroy_qp(rn->qp);
err_destroy_cq:
	ib_destroy_cq(rn->cq);
err_dealloc_pd:
	ib_dealloc_pd(rn->pd);
	rn->qp = NULL;
	return ret;
}

static void softib_rn_destroy_qp(struct softib_rn *rn)
{
	struct softib_qp *qp = to_sqp(rn->qp);

	/* no delivery into the rings after this, whatever destroy says */
	spin_lock_irq(&qp->rq.lock);
	qp->rn = NULL;
	spin_unlock_irq(&qp->rq.lock);
	/* it fails only while a group is still attached: IPoIB detaches all */
	WARN_ON(ib_destroy_qp(rn->qp));
	ib_destroy_cq(rn->cq);
	ib_dealloc_pd(rn->pd);
	rn->qp = NULL;
}

static void softib_rn_free_queues(struct softib_rn *rn)
{
	u32 q;

	if (rn->txq)
		for (q = 0; q < rn->nq; q++) {
			kfree(rn->txq[q].wqe);
			kfree(rn->txq[q].lso.seg);
			kfree(rn->txq[q].lso.hdr);
		}
	if (rn->rxq)
		for (q = 0; q < rn->nq; q++)
			netif_napi_del(&rn->rxq[q].napi);
	kfree(rn->txq);
	kfree(rn->rxq);
	rn->txq = NULL;
	rn->rxq = NULL;
}

static int softib_rn_alloc_queues(struct softib_rn *rn)
{
	struct softib_rn_txq *txq;
	struct softib_rn_rxq *rxq;
	size_t wqe_size = struct_size(txq->wqe, sge, SOFTIB_RN_MAX_SGE);
	u32 q;

	rn->txq = kcalloc(rn->nq, sizeof(*rn->txq), GFP_KERNEL);
	rn->rxq = kcalloc(rn->nq, sizeof(*rn->rxq), GFP_KERNEL);
	if (!rn->txq || !rn->rxq)
		goto err_free_queues;
	for (q = 0; q < rn->nq; q++) {
		txq = &rn->txq[q];
		txq->wqe = kzalloc(wqe_size + SOFTIB_LSO_HDR_MAX, GFP_KERNEL);
		txq->lso.seg = kzalloc(struct_size(txq->lso.seg, sge,
						   SOFTIB_RN_MAX_SGE + 1),
				       GFP_KERNEL);
		txq->lso.hdr = kzalloc(SOFTIB_LSO_HDR_MAX, GFP_KERNEL);
		if (!txq->wqe || !txq->lso.seg || !txq->lso.hdr)
			goto err_free_queues;
		txq->tmpl = (u8 *)txq->wqe + wqe_size;
		txq->lso.tmpl = txq->tmpl;
		u64_stats_init(&txq->st.syncp);
	}
	for (q = 0; q < rn->nq; q++) {
		rxq = &rn->rxq[q];
		rxq->rn = rn;
		rxq->index = q;
		atomic64_set(&rxq->no_buf, 0);
		u64_stats_init(&rxq->st.syncp);
		netif_napi_add(rn->ndev, &rxq->napi, softib_rn_poll);
	}
	return 0;

err_free_queues:
	softib_rn_free_queues(rn);
	return -ENOMEM;
}

/*
 * ndo_init, from IPoIB's own at register time: the QP, whose QPN goes
 * into bytes 1-3 of the hardware address (IPoIB writes the GID), and the
 * queues.
 */
static int softib_rn_dev_init(struct net_device *ndev)
{
	struct softib_rn *rn = to_srn(ndev);
	u8 addr_mod[3];
	int ret;

	ret = softib_rn_alloc_queues(rn);
	if (ret)
		return ret;
	ret = softib_rn_create_qp(rn);
	if (ret)
		goto err_free_queues;
	addr_mod[0] = (rn->qp->qp_num >> 16) & 0xff;
	addr_mod[1] = (rn->qp->qp_num >> 8) & 0xff;
	addr_mod[2] = rn->qp->qp_num & 0xff;
	dev_addr_mod(ndev, 1, addr_mod, sizeof(addr_mod));
	return 0;

err_free_queues:
	softib_rn_free_queues(rn);
	return ret;
}

static void softib_rn_dev_uninit(struct net_device *ndev)
{
	struct softib_rn *rn = to_srn(ndev);

	softib_rn_halt(rn);
	softib_rn_destroy_qp(rn);
	softib_rn_free_queues(rn);
}

static void softib_rn_get_stats64(struct net_device *ndev,
				  struct rtnl_link_stats64 *s)
{
	struct softib_rn *rn = to_srn(ndev);
	u64 packets, bytes, dropped, mcast, runts;
	unsigned int start;
	u32 q;

	/* a netdev whose ndo_init failed has no queues */
	if (!rn->rxq)
		return;
	for (q = 0; q < rn->nrxq; q++) {
		struct softib_rn_rxq *rxq = &rn->rxq[q];

		do {
			start = u64_stats_fetch_begin(&rxq->st.syncp);
			packets = rxq->st.packets;
			bytes = rxq->st.bytes;
			dropped = rxq->st.no_skb;
			mcast = rxq->st.multicast;
			runts = rxq->st.length_errors;
		} while (u64_stats_fetch_retry(&rxq->st.syncp, start));
		s->multicast += mcast;
		s->rx_length_errors += runts;
		s->rx_errors += runts;
		s->rx_packets += packets;
		s->rx_bytes += bytes;
		s->rx_dropped += dropped;
		s->rx_missed_errors += atomic64_read(&rxq->no_buf);
	}
	for (q = 0; q < rn->ntxq; q++) {
		struct softib_rn_txq *txq = &rn->txq[q];

		do {
			start = u64_stats_fetch_begin(&txq->st.syncp);
			packets = txq->st.packets;
			bytes = txq->st.bytes;
			dropped = txq->st.dropped;
		} while (u64_stats_fetch_retry(&txq->st.syncp, start));
		s->tx_packets += packets;
		s->tx_bytes += bytes;
		s->tx_dropped += dropped;
	}
	/*
	 * The ULP's own counters (dev->stats: what IPoIB drops before a
	 * send) are not the provider's, as with mlx5: ipoib-ng adds them,
	 * in-tree on a provider does not show them.
	 */
}

static const struct net_device_ops softib_rn_netdev_ops = {
	.ndo_init = softib_rn_dev_init,
	.ndo_uninit = softib_rn_dev_uninit,
	.ndo_open = softib_rn_open,
	.ndo_stop = softib_rn_stop,
	.ndo_get_stats64 = softib_rn_get_stats64,
};

/* ---- ethtool ---------------------------------------------------------- */

static void softib_rn_get_drvinfo(struct net_device *ndev,
				  struct ethtool_drvinfo *info)
{
	struct softib_rn *rn = to_srn(ndev);

	strscpy(info->driver, "softib", sizeof(info->driver));
	strscpy(info->version, IPOIB_NG_VERSION, sizeof(info->version));
	strscpy(info->fw_version, IPOIB_NG_VERSION, sizeof(info->fw_version));
	strscpy(info->bus_info, dev_name(&rn->sdev->ibdev.dev),
		sizeof(info->bus_info));
}

static int softib_rn_get_link_ksettings(struct net_device *ndev,
					struct ethtool_link_ksettings *cmd)
{
	ethtool_link_ksettings_zero_link_mode(cmd, supported);
	ethtool_link_ksettings_zero_link_mode(cmd, advertising);
	/* 4X EDR, as the port reports */
	cmd->base.speed = netif_carrier_ok(ndev) ? SPEED_100000 : SPEED_UNKNOWN;
	cmd->base.duplex = netif_carrier_ok(ndev) ? DUPLEX_FULL : DUPLEX_UNKNOWN;
	cmd->base.port = PORT_OTHER;
	cmd->base.autoneg = AUTONEG_DISABLE;
	return 0;
}

static void softib_rn_get_channels(struct net_device *ndev,
				   struct ethtool_channels *ch)
{
	struct softib_rn *rn = to_srn(ndev);

	ch->max_combined = rn->nq;
	ch->combined_count = min(rn->nrxq, rn->ntxq);
}

/*
 * The queues are allocated for the most channels at ndo_init; a change
 * only restarts the rings with the new count.
 */
static int softib_rn_set_channels(struct net_device *ndev,
				  struct ethtool_channels *ch)
{
	struct softib_rn *rn = to_srn(ndev);
	bool running = rn->running;
	u32 n = ch->combined_count;
	int ret;

	if (!n || ch->rx_count || ch->tx_count || ch->other_count ||
	    n > rn->nq)
		return -EINVAL;
	if (n == rn->nrxq && n == rn->ntxq)
		return 0;
	softib_rn_halt(rn);
	ret = netif_set_real_num_tx_queues(ndev, n);
	if (!ret) {
		ret = netif_set_real_num_rx_queues(ndev, n);
		if (ret)
			netif_set_real_num_tx_queues(ndev, rn->ntxq);
	}
	if (!ret) {
		rn->ntxq = n;
		rn->nrxq = n;
	}
	if (running) {
		int err = softib_rn_start(rn);

		if (err) {
			netdev_err(ndev, "no memory for the receive rings after a channel change: take the interface down and up\n");
			return err;
		}
	}
	return ret;
}

static void softib_rn_get_ringparam(struct net_device *ndev,
				    struct ethtool_ringparam *rp,
				    struct kernel_ethtool_ringparam *krp,
				    struct netlink_ext_ack *ack)
{
	rp->rx_max_pending = SOFTIB_RN_RING_MAX;
	rp->rx_pending = to_srn(ndev)->ring_size;
}

static int softib_rn_set_ringparam(struct net_device *ndev,
				   struct ethtool_ringparam *rp,
				   struct kernel_ethtool_ringparam *krp,
				   struct netlink_ext_ack *ack)
{
	struct softib_rn *rn = to_srn(ndev);
	bool running = rn->running;
	u32 size, old;
	int ret;

	if (rp->tx_pending || rp->rx_mini_pending || rp->rx_jumbo_pending ||
	    rp->rx_pending < SOFTIB_RN_RING_MIN ||
	    rp->rx_pending > SOFTIB_RN_RING_MAX) {
		NL_SET_ERR_MSG_MOD(ack, "rx ring: 64 to 8192 buffers; there is no tx ring");
		return -EINVAL;
	}
	size = roundup_pow_of_two(rp->rx_pending);
	if (size == rn->ring_size)
		return 0;
	old = rn->ring_size;
	softib_rn_halt(rn);
	rn->ring_size = size;
	if (!running)
		return 0;
	ret = softib_rn_start(rn);
	if (ret) {
		/* no memory for the new rings: the old size, refused */
		rn->ring_size = old;
		if (softib_rn_start(rn))
			netdev_err(ndev, "no memory for the receive rings: take the interface down and up\n");
	}
	return ret;
}

/* the totals first, named and ordered as in-tree's own counters */
static const char softib_rn_names[][ETH_GSTRING_LEN] = {
	"rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "tx_errors",
	"rx_dropped", "tx_dropped", "multicast",
};

static const char softib_rn_rq_names[][ETH_GSTRING_LEN] = {
	"packets", "bytes", "csum_unnecessary", "mcast_echo", "length_errors",
	"no_skb", "no_buf",
};

static const char softib_rn_sq_names[][ETH_GSTRING_LEN] = {
	"packets", "bytes", "tso_packets", "csum_partial", "dropped",
};

static int softib_rn_get_sset_count(struct net_device *ndev, int sset)
{
	struct softib_rn *rn = to_srn(ndev);

	if (sset != ETH_SS_STATS)
		return -EOPNOTSUPP;
	return ARRAY_SIZE(softib_rn_names) +
	       rn->nrxq * ARRAY_SIZE(softib_rn_rq_names) +
	       rn->ntxq * ARRAY_SIZE(softib_rn_sq_names);
}

static void softib_rn_get_strings(struct net_device *ndev, u32 sset, u8 *data)
{
	struct softib_rn *rn = to_srn(ndev);
	u32 q, i;

	if (sset != ETH_SS_STATS)
		return;
	for (i = 0; i < ARRAY_SIZE(softib_rn_names); i++)
		ethtool_sprintf(&data, "%s", softib_rn_names[i]);
	for (q = 0; q < rn->nrxq; q++)
		for (i = 0; i < ARRAY_SIZE(softib_rn_rq_names); i++)
			ethtool_sprintf(&data, "rx%u_%s", q,
					softib_rn_rq_names[i]);
	for (q = 0; q < rn->ntxq; q++)
		for (i = 0; i < ARRAY_SIZE(softib_rn_sq_names); i++)
			ethtool_sprintf(&data, "tx%u_%s", q,
					softib_rn_sq_names[i]);
}

static void softib_rn_get_ethtool_stats(struct net_device *ndev,
					struct ethtool_stats *stats, u64 *data)
{
	struct softib_rn *rn = to_srn(ndev);
	struct rtnl_link_stats64 t = {};
	unsigned int start;
	u32 q;

	softib_rn_get_stats64(ndev, &t);
	*data++ = t.rx_packets;
	*data++ = t.tx_packets;
	*data++ = t.rx_bytes;
	*data++ = t.tx_bytes;
	*data++ = t.tx_errors;
	*data++ = t.rx_dropped;
	*data++ = t.tx_dropped;
	*data++ = t.multicast;
	for (q = 0; q < rn->nrxq; q++) {
		struct softib_rn_rxq *rxq = &rn->rxq[q];

		do {
			start = u64_stats_fetch_begin(&rxq->st.syncp);
			data[0] = rxq->st.packets;
			data[1] = rxq->st.bytes;
			data[2] = rxq->st.csum_unnecessary;
			data[3] = rxq->st.mcast_echo;
			data[4] = rxq->st.length_errors;
			data[5] = rxq->st.no_skb;
		} while (u64_stats_fetch_retry(&rxq->st.syncp, start));
		data[6] = atomic64_read(&rxq->no_buf);
		data += ARRAY_SIZE(softib_rn_rq_names);
	}
	for (q = 0; q < rn->ntxq; q++) {
		struct softib_rn_txq *txq = &rn->txq[q];

		do {
			start = u64_stats_fetch_begin(&txq->st.syncp);
			data[0] = txq->st.packets;
			data[1] = txq->st.bytes;
			data[2] = txq->st.tso_packets;
			data[3] = txq->st.csum_partial;
			data[4] = txq->st.dropped;
		} while (u64_stats_fetch_retry(&txq->st.syncp, start));
		data += ARRAY_SIZE(softib_rn_sq_names);
	}
}

static const struct ethtool_ops softib_rn_ethtool_ops = {
	.get_drvinfo = softib_rn_get_drvinfo,
	.get_link = ethtool_op_get_link,
	.get_link_ksettings = softib_rn_get_link_ksettings,
	.get_channels = softib_rn_get_channels,
	.set_channels = softib_rn_set_channels,
	.get_ringparam = softib_rn_get_ringparam,
	.set_ringparam = softib_rn_set_ringparam,
	.get_sset_count = softib_rn_get_sset_count,
	.get_strings = softib_rn_get_strings,
	.get_ethtool_stats = softib_rn_get_ethtool_stats,
};

/* ---- allocation ------------------------------------------------------- */

/*
 * initialize_rdma_netdev: after IPoIB's setup, on a netdev with the
 * queues asked for, or with those in-tree's rtnetlink ops give a child
 * made by "ip link add" (one a CPU): softib uses at most 16 of them.
 */
static int softib_rn_init(struct ib_device *ibdev, u32 port_num,
			  struct net_device *ndev, void *param)
{
	struct softib_rn *rn = to_srn(ndev);
	u32 n = min3(ndev->num_tx_queues, ndev->num_rx_queues,
		     (unsigned int)SOFTIB_RN_MAX_QUEUES);
	int ret;

	rn->sdev = param;
	rn->ndev = ndev;
	rn->port_num = port_num;
	rn->ring_size = SOFTIB_RN_RING_DEF;
	rn->nq = n;
	rn->ntxq = n;
	rn->nrxq = n;
	ret = netif_set_real_num_tx_queues(ndev, n);
	if (!ret)
		ret = netif_set_real_num_rx_queues(ndev, n);
	if (ret)
		return ret;

	rn->rn.hca = ibdev;
	rn->rn.send = softib_rn_send;
	rn->rn.attach_mcast = softib_rn_attach_mcast;
	rn->rn.detach_mcast = softib_rn_detach_mcast;
	rn->rn.set_id = softib_rn_set_id;
	rn->rn.tx_timeout = softib_rn_tx_timeout;

	ndev->netdev_ops = &softib_rn_netdev_ops;
	ndev->ethtool_ops = &softib_rn_ethtool_ops;
	ndev->hw_features |= NETIF_F_SG | NETIF_F_RXHASH;
	/* the checksums and segmentation are offloads=1's (offload.c) */
	if (softib_offloads)
		ndev->hw_features |= NETIF_F_IP_CSUM | NETIF_F_IPV6_CSUM |
				     NETIF_F_TSO | NETIF_F_TSO6 |
				     NETIF_F_RXCSUM;
	ndev->features |= ndev->hw_features;
	return 0;
}

int softib_rn_get_params(struct ib_device *ibdev, u32 port_num,
			 enum rdma_netdev_t type,
			 struct rdma_netdev_alloc_params *params)
{
	u32 n = min_t(u32, num_possible_cpus(), SOFTIB_RN_MAX_QUEUES);

	if (type != RDMA_NETDEV_IPOIB || port_num < 1 || port_num > 32 ||
	    !(softib_enhanced_ports & BIT(port_num - 1)))
		return -EOPNOTSUPP;
	*params = (struct rdma_netdev_alloc_params) {
		.sizeof_priv = sizeof(struct softib_rn),
		.txqs = n,
		.rxqs = n,
		.param = to_sdev(ibdev),
		.initialize_rdma_netdev = softib_rn_init,
	};
	return 0;
}
