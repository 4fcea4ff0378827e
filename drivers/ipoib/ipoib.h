/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ipoib-ng: IP over InfiniBand (RFC 4391/4392).
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#ifndef IPOIB_H
#define IPOIB_H

#include <linux/hashtable.h>
#include <linux/if_infiniband.h>
#include <linux/jhash.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/netdevice.h>
#include <net/rtnetlink.h>
#include <linux/skbuff.h>
#include <linux/workqueue.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_sa.h>
#include <rdma/ib_verbs.h>

/*
 * Names the test-only interop variant changes so that it can be loaded
 * beside the in-tree ib_ipoib (see drivers/ipoib/Kbuild).
 */
#ifdef IPOIB_NG_INTEROP
#define IPOIB_LINK_KIND		"ipoib_interop"
#define IPOIB_IFNAME		"ibx%d"
#else
#define IPOIB_LINK_KIND		"ipoib"
#define IPOIB_IFNAME		"ib%d"
#endif

/* The 4-byte IPoIB header on the wire (RFC 4391). */
struct ipoib_header {
	__be16 proto;
	u16 reserved;
};

/*
 * Between header_ops->create and ndo_start_xmit the destination hardware
 * address travels in front of the IPoIB header, as in-tree does.
 */
#define IPOIB_PSEUDO_LEN	INFINIBAND_ALEN
#define IPOIB_HARD_LEN		(IPOIB_PSEUDO_LEN + IPOIB_ENCAP_LEN)
#define IPOIB_ENCAP_LEN		((unsigned int)sizeof(struct ipoib_header))
#define IPOIB_UD_MTU(ib_mtu)	((ib_mtu) - IPOIB_ENCAP_LEN)
#define IPOIB_UD_BUF(ib_mtu)	((ib_mtu) + IB_GRH_BYTES)
#define IPOIB_MIN_MTU		68

#define IPOIB_QPN_MASK		0xffffff
#define IPOIB_MCAST_QPN		0xffffff
/* wr_id: bit 63 receive, bit 62 connected mode, the rest a ring slot */
#define IPOIB_OP_RECV		BIT_ULL(63)
#define IPOIB_OP_CM		BIT_ULL(62)
#define IPOIB_CM_DRAIN		(IPOIB_OP_CM | 0xffffffffULL)

/* byte 0 of the hardware address: this interface accepts RC connections */
#define IPOIB_FLAGS_RC		0x80

/*
 * Connected mode (RFC 4755): a SEND carries the 4-byte header and up to
 * 65520 bytes; receive buffers are a linear head plus whole pages.
 */
#define IPOIB_CM_MTU		65520
#define IPOIB_CM_BUF		(IPOIB_CM_MTU + IPOIB_ENCAP_LEN)
#define IPOIB_CM_FRAGS		(IPOIB_CM_BUF / PAGE_SIZE)
#define IPOIB_CM_HEAD		(IPOIB_CM_BUF - IPOIB_CM_FRAGS * PAGE_SIZE)
#define IPOIB_CM_SGE		(IPOIB_CM_FRAGS + 1)
#define IPOIB_CM_COPYBREAK	256
#define IPOIB_CM_SERVICE_ID	0x1000000000000000ULL
#define IPOIB_CM_TX_PER_PATH	8	/* active entries (QPNs) per GID */

/*
 * RNR retries of our RC QPs, whatever the peer's REP asked: 7 means "for
 * ever" in IB, and a peer that accepts a connection but never posts a
 * receive buffer would then keep our sends in flight for good, with the
 * one send ring all destinations share. 6, the most patient finite count,
 * still gives a receiver whose queue ran briefly empty six of its own RNR
 * timers to refill it (ours ask 1.28 ms: about 8 ms; the CM's default,
 * 655 ms, makes it about 4 s); after that the send fails with
 * IB_WC_RNR_RETRY_EXC_ERR and UD carries the traffic for the connection's
 * backoff.
 */
#define IPOIB_CM_RNR_RETRY	6

/*
 * One connection may have at most tx_size / IPOIB_CM_TX_SHARE sends in
 * flight of the ring all destinations share (ipoib_cm_send()). At that
 * share the queue stops until the connection completes one, as it
 * stops for a full ring; a connection that completed nothing for
 * IPOIB_CM_TX_STALL is stuck (an RNR-retrying or dead peer), so what is
 * sent to it meanwhile is dropped and the others go on.
 */
#define IPOIB_CM_TX_SHARE	4
#define IPOIB_CM_TX_STALL	(HZ / 10)

/* send_queue_size and recv_queue_size go up to this (as in-tree) */
#define IPOIB_MAX_QUEUE_SIZE	8192
#define IPOIB_MIN_SEND_QUEUE	128
#define IPOIB_MIN_RECV_QUEUE	2

/* announcements of a new hardware address, a second apart */
#define IPOIB_NOTIFY_PEERS	3

/* queue limits: bounded waits while a path or a group is resolved */
#define IPOIB_MAX_PATH_QUEUE	3
#define IPOIB_MAX_MCAST_QUEUE	64
#define IPOIB_MAX_BACKOFF	16	/* seconds */
#define IPOIB_PATH_HASH_BITS	8
#define IPOIB_MCAST_HASH_BITS	6

/* What an IB event asks of an interface, from light to heavy. */
#define IPOIB_EV_FLUSH		0	/* paths may be stale: forget them */
#define IPOIB_EV_PKEY		1	/* the P_Key table changed */
#define IPOIB_EV_RESTART	2	/* port/LID/GID changed: start over */
#define IPOIB_EV_TX_TIMEOUT	3	/* this interface's sends stalled */
/* the watchdog: a stopped queue with no send for this long is stalled */
#define IPOIB_TX_TIMEOUT	(5 * HZ)

/* Why an interface has no carrier; read back as sysfs carrier_reason. */
enum ipoib_carrier_reason {
	IPOIB_CARRIER_DOWN,		/* administratively down */
	IPOIB_CARRIER_PORT_DOWN,
	IPOIB_CARRIER_PKEY_ABSENT,
	IPOIB_CARRIER_JOIN_PENDING,
	IPOIB_CARRIER_JOIN_FAILED,
	IPOIB_CARRIER_UP,
};

/*
 * An address handle, owned by a path or a multicast group (the kref).
 * Sends take no reference: each records its place in the UD send ring in
 * last_send. When the owners are gone, the handle waits for an RCU grace
 * period (no transmit still holds it from a lockless path lookup, and
 * last_send is final), then for that send's completion (ipoib_ah_reap).
 */
struct ipoib_ah {
	struct kref ref;
	struct ib_ah *ah;
	struct ipoib_dev_priv *priv;
	u32 last_send;			/* tx_head of its last send; tx lock */
	struct list_head dead;		/* priv->ah_dead */
	struct rcu_head rcu;
};

/* The head and each page fragment of a packet are mapped separately. */
#define IPOIB_MAX_TX_SGE	(MAX_SKB_FRAGS + 1)

struct ipoib_tx_buf {
	struct sk_buff *skb;
	u64 mapping[IPOIB_MAX_TX_SGE];
};

/*
 * UD sends ask for a completion at the end of each burst (no xmit_more),
 * when the ring is about to fill, and at least every IPOIB_TX_SIGNAL
 * sends; a completion retires every send before it.
 */
#define IPOIB_TX_SIGNAL		16

/*
 * A UD send waiting in the chain that the next signalled send posts (see
 * ipoib_send()): its WR and gather list live here until ib_post_send().
 */
struct ipoib_tx_wr {
	struct ib_ud_wr wr;
	struct ib_sge sge[IPOIB_MAX_TX_SGE];
};

/* Receive WRs reposted by one NAPI poll go to the QP in chains of this. */
#define IPOIB_RX_BATCH		16

struct ipoib_rx_wr {
	struct ib_recv_wr wr;
	struct ib_sge sge[2];
};

/*
 * A datagram receive buffer: the first rx_head bytes (GRH, IPoIB header,
 * the L3/L4 headers) in a small skb head, the rest in a page. A linear
 * buffer for a 4K MTU needs an 8 KiB kmalloc head (4136 bytes plus
 * skb_shared_info); head and page need 4 KiB and a few hundred bytes,
 * and GRO merges the pages as fragments. An HCA with one receive SGE
 * gets linear buffers (page NULL, rx_head the whole size).
 */
#define IPOIB_UD_HEAD		128

struct ipoib_rx_buf {
	struct sk_buff *skb;
	struct page *page;
	u64 mapping[2];			/* head, page */
	bool posted;			/* on the QP or in rx_chain */
};

/* A connected-mode receive buffer: head in the skb, pages beside it. */
struct ipoib_cm_rx_buf {
	struct sk_buff *skb;
	struct page *pages[IPOIB_CM_FRAGS];
	u64 mapping[IPOIB_CM_SGE];
	unsigned long pooled;		/* bit j: pages[j] is cm_pool's */
	bool stranded;			/* SRQ: NAPI's repost failed; NAPI */
};

enum ipoib_cm_tx_state {
	IPOIB_CM_TX_IDLE,		/* no QP; UD until retry_after */
	IPOIB_CM_TX_CONNECTING,		/* work creates the QP, REQ sent */
	IPOIB_CM_TX_UP,
	IPOIB_CM_TX_CLOSING,		/* work tears the QP down */
	IPOIB_CM_TX_DYING,		/* its path goes: freed after teardown */
};

/*
 * Our side of a connection we initiated to (path, QPN). The structure
 * lives as long as its path; the QP, CM ID and ring exist per attempt.
 */
struct ipoib_cm_tx {
	struct list_head node;		/* path->cm_tx, under priv->lock */
	struct ipoib_dev_priv *priv;
	struct ipoib_path *path;
	u32 qpn;			/* the peer's UD QPN */
	enum ipoib_cm_tx_state state;	/* under priv->lock */
	bool retry_later;		/* refused: UD until retry_after */
	unsigned long retry_after;
	unsigned int backoff;		/* seconds */
	unsigned long last_used;	/* jiffies of the last send */
	unsigned int mtu;		/* the peer's limit, header included */
	struct ib_cm_id *id;
	struct ib_qp *qp;
	struct ipoib_tx_buf *ring;
	unsigned int head;		/* xmit, under priv->lock */
	unsigned int tail;		/* NAPI */
	/*
	 * jiffies of the last completion (NAPI), or of the send that found
	 * none in flight (xmit): the connection is stuck when at its share
	 * of the ring this is IPOIB_CM_TX_STALL old
	 */
	unsigned long last_done;
	struct sk_buff_head queue;	/* while connecting */
	struct work_struct work;
};

enum ipoib_cm_rx_state {
	IPOIB_CM_RX_NEW,		/* being accepted, on no list */
	IPOIB_CM_RX_LIVE,
	IPOIB_CM_RX_ERROR,		/* QP in ERR, waiting for the last WQE */
	IPOIB_CM_RX_FLUSH,		/* last WQE reached, drain to be posted */
	IPOIB_CM_RX_DRAIN,		/* drain WR posted */
	IPOIB_CM_RX_DEAD,		/* every completion seen: destroy */
};

/* A connection a peer initiated to us; we only receive on it. */
struct ipoib_cm_rx {
	struct list_head node;		/* one of priv's cm lists */
	struct ipoib_dev_priv *priv;
	struct ib_cm_id *id;
	struct ib_qp *qp;
	u32 remote_qpn;			/* the peer's RC QPN */
	enum ipoib_cm_rx_state state;	/* under priv->lock */
	struct ipoib_cm_rx_buf *ring;	/* without an SRQ only */
	unsigned int posted;		/* without an SRQ: receives out */
	bool failed;			/* a receive failed: close it */
	bool last_wqe;			/* LAST_WQE_REACHED while NEW */
	unsigned long last_active;	/* jiffies */
};

/*
 * A unicast destination. Transmit finds it without the lock (RCU: the
 * hash is changed under priv->lock, paths are freed after a grace
 * period); "ah" is published with a release store once resolved.
 */
struct ipoib_path {
	struct hlist_node node;
	/*
	 * priv->path_lru, in the order paths were created or last seen by
	 * the locked slow path; "used" (set locklessly by transmit) gives a
	 * path a second chance when eviction scans it (CLOCK)
	 */
	struct list_head lru;
	bool used;
	/*
	 * Made to answer a neighbour request (ipoib_skb_answers()) and not
	 * sent anything else yet: on priv->path_answers, with its own bound
	 */
	bool answer;
	struct list_head answers;
	/* on priv->path_stale: to be asked for again (ipoib_path_reval_work) */
	struct list_head stale;
	struct list_head flush;
	union ib_gid dgid;
	struct ipoib_ah *ah;		/* NULL until resolved */
	u16 dlid;			/* from the path record */
	struct sk_buff_head queue;	/* waiting for resolution */
	struct ib_sa_query *query;
	int query_id;
	struct completion done;		/* the query's callback has run */
	unsigned long retry_after;	/* jiffies; failed queries back off */
	unsigned long last_used;	/* jiffies; idle paths are collected */
	struct sa_path_rec rec;		/* for connection requests */
	struct list_head cm_tx;		/* struct ipoib_cm_tx, one per QPN */
	/*
	 * The connection transmit found last, while it is up: the lockless
	 * connected-mode send (ipoib_cm_xmit_fast()). Set and cleared under
	 * priv->lock; a teardown waits for the tx lock after clearing it.
	 */
	struct ipoib_cm_tx __rcu *cm_fast;
	struct ipoib_dev_priv *priv;
	struct rcu_head rcu;
};

enum ipoib_mcast_state {
	IPOIB_MCAST_IDLE,		/* join to be started */
	IPOIB_MCAST_JOINING,
	IPOIB_MCAST_JOINED,
	IPOIB_MCAST_FAILED,		/* waiting for the backoff */
};

struct ipoib_mcast {
	struct list_head list;
	struct hlist_node node;		/* in priv->mcast_hash, by MGID */
	union ib_gid mgid;
	bool sendonly;
	bool join_sendonly;		/* what the join in flight asked for */
	bool wanted;			/* in the netdev's multicast list */
	bool expired;			/* send-only, idle: mcast_work leaves it */
	unsigned long last_used;	/* jiffies; send-only groups expire */
	enum ipoib_mcast_state state;
	int status;			/* last join failure */
	unsigned int backoff;		/* seconds */
	unsigned long retry_after;	/* jiffies */
	struct ib_sa_multicast *mc;
	struct ib_sa_mcmember_rec rec;
	struct ipoib_ah *ah;
	bool attached;
	struct sk_buff_head queue;
	struct ipoib_dev_priv *priv;
};

struct ipoib_dev_priv {
	struct net_device *dev;
	struct ib_device *ca;
	u32 port;
	struct list_head list;		/* parents: on the HCA's list */

	/*
	 * Enhanced IPoIB (rn.c): the device's rdma_netdev owns the UD
	 * datapath (its QP, queues, NAPI and ring sizes); connected mode
	 * stays ours. Fixed from before registration on.
	 */
	bool enhanced;
	const struct net_device_ops *rn_ops;
	const struct ethtool_ops *rn_ethtool_ops;
	void (*rn_destructor)(struct net_device *dev);

	/* pkey children; the lists are protected by rtnl */
	struct ipoib_dev_priv *parent;	/* NULL for a parent */
	netdevice_tracker parent_tracker;
	struct list_head children;
	struct list_head child_node;
	bool sysfs_child;		/* created through create_child */
	bool umcast;

	u16 pkey;			/* with the full-member bit */
	u16 pkey_index;
	u32 qkey;
	union ib_gid local_gid;
	u16 local_lid;
	unsigned int max_ib_mtu;	/* bytes */
	unsigned int mcast_mtu;		/* IPoIB MTU the broadcast group allows */
	unsigned int admin_mtu;

	struct ib_pd *pd;
	/*
	 * Receives (UD, CM, and the CM drain WR, which must follow its
	 * QPs' receives) complete on cq, polled by napi; sends (UD and CM)
	 * on send_cq, polled by send_napi. Each poll handles at most its
	 * budget, and neither kind of completion waits behind the other.
	 */
	struct ib_cq *cq;
	struct ib_cq *send_cq;
	unsigned int max_send_sge;	/* what the HCA takes, at most ours */
	unsigned int max_recv_sge;	/* the UD QP's: 2 (head + page) or 1 */
	/* receive buffer layout, fixed while the transport is up */
	unsigned int rx_len;		/* GRH + the largest datagram */
	unsigned int rx_head;		/* of which in the skb head */
	/*
	 * The receive pages, while the transport is up and rx_head <
	 * rx_len: the stack gives them back when it frees the skb, so they
	 * are not zeroed again (init_on_alloc) for every datagram. Only
	 * NAPI (and transport_up before NAPI runs) allocates from it.
	 */
	struct page_pool *rx_pool;
	bool lso;			/* the UD QP takes IB_WR_LSO */
	struct ib_qp *qp;
	struct napi_struct napi;
	struct napi_struct send_napi;
	bool transport_up;		/* under rtnl */
	bool tx_halted;			/* rtnl: the queue must stay stopped */

	struct ipoib_rx_buf *rx_ring;
	unsigned int rx_size;
	unsigned int rx_outstanding;	/* NAPI context */
	struct ipoib_rx_wr *rx_chain;	/* NAPI: reposts not posted yet */
	unsigned int rx_chained;
	struct ipoib_tx_buf *tx_ring;
	/* UD sends not posted yet, tx_head - tx_chained up to tx_head */
	struct ipoib_tx_wr *tx_chain;	/* tx_signal of them; tx lock */
	unsigned int tx_chained;
	unsigned int tx_size;
	/* UD sends posted and retired; a send's wr_id is its tx_head */
	unsigned int tx_head;		/* xmit, under the tx lock */
	unsigned int tx_tail;		/* NAPI */
	unsigned int tx_signal;		/* sends between completions */
	/* address handles without owners, waiting for their last send */
	spinlock_t ah_lock;
	struct list_head ah_dead;
	atomic_t ah_rcu_pending;	/* released, grace period not over */
	/* every send in flight, UD and RC: the queue stops at tx_size */
	unsigned int global_head;	/* xmit, under the tx lock */
	unsigned int global_tail;	/* NAPI */
	int napi_max_polled;		/* most completions in one poll */
	int send_napi_max_polled;
	/*
	 * The send NAPI's budget in this poll: 0 when netpoll calls it,
	 * possibly with hard interrupts off, where a freed packet must not
	 * go to the per-CPU NAPI skb cache
	 */
	int send_napi_budget;
	u64 cm_rnr_fallbacks;		/* NAPI: RNR_RETRY_EXC, UD for a while */
	/*
	 * The connection whose share of the ring stopped the queue (tx lock;
	 * NAPI and the timer clear it): while set, only its progress or
	 * cm_tx_stall_timer wakes the queue. Compared, never dereferenced
	 * outside xmit.
	 */
	struct ipoib_cm_tx *cm_tx_capped;
	struct ipoib_cm_tx *cm_tx_napi_last;	/* send NAPI: this poll's */
	struct timer_list cm_tx_stall_timer;
	u64 cm_tx_stalled_drops;	/* xmit: to a stuck connection */
	u64 tx_timeouts;		/* dev_watchdog: datapath restarted */
	/* CQ moderation that ethtool -C set (rtnl): cq and send_cq */
	u16 rx_coal_usecs;
	u16 rx_coal_frames;
	u16 tx_coal_usecs;
	u16 tx_coal_frames;
	/* gratuitous ARPs/NAs still to send for a new QPN (rtnl) */
	unsigned int notify_peers;
	struct delayed_work notify_work;

	/* connected mode (cm.c); the lists are under lock */
	bool cm_mode;			/* admin: connected */
	struct ib_cm_id *cm_listen;
	struct ib_srq *srq;		/* NULL: a ring per connection */
	struct ipoib_cm_rx_buf *srq_ring;
	/* pages NAPI gives receive buffers (SRQ or not), recycled */
	struct page_pool *cm_pool;
	bool srq_filled;		/* buffers go in with the first REQ */
	unsigned int srq_fill_next;	/* first slot not posted yet; cm_mutex */
	unsigned int srq_stranded;	/* slots whose repost failed; NAPI */
	u64 srq_reposted;		/* of those, posted again later; NAPI */
	struct mutex cm_mutex;		/* srq_filled; rx lifetime vs. reaper */
	struct list_head cm_passive;	/* LIVE and ERROR */
	struct list_head cm_flush;	/* FLUSH: last WQE reached */
	struct list_head cm_drain;	/* DRAIN: waiting for the drain WR */
	struct list_head cm_dead;	/* DEAD: to be destroyed */
	bool cm_draining;		/* a drain WR is in flight */
	unsigned int cm_nonsrq;		/* passive connections with a ring */
	unsigned int cm_nonsrq_max;	/* what max_nonsrq_conn_qp and CQ allow */
	unsigned int cm_rx_count;	/* passive connections, any state */
	unsigned int cm_tx_qps;		/* active ones connecting, up or closing */
	/* limits reached (max_cm_passive, max_cm_active); under priv->lock */
	u64 cm_passive_evicted;		/* closed to make room */
	u64 cm_passive_refused;		/* REQs refused at the limit */
	u64 cm_active_evicted;
	u64 cm_active_refused;		/* packets sent over UD at the limit */
	unsigned long cm_evict_next;	/* jiffies: no active eviction before */
	u64 cm_path_evicted;		/* idle entries dropped at the path's cap */
	u64 cm_path_refused;		/* packets over UD: the path's cap is busy */
	struct work_struct cm_reap_work;
	struct list_head cm_tx_dead;	/* DYING ipoib_cm_tx, under priv->lock */
	struct work_struct cm_tx_reap_work;
	/* DYING, in ERR with every send back: QP and CM ID to destroy */
	struct list_head cm_tx_free;	/* under priv->lock */
	struct work_struct cm_tx_free_work;
	u64 cm_passive_failed;		/* passive QPs the HCA failed; lock */
	struct delayed_work cm_stale_work;

	/* lock protects paths, mcasts and the carrier reason */
	spinlock_t lock;
	DECLARE_HASHTABLE(paths, IPOIB_PATH_HASH_BITS);
	/* the path table's bound (max_paths): see ipoib_path_evict() */
	struct list_head path_lru;	/* every path in the table */
	unsigned int npaths;		/* in the table */
	struct list_head path_evicted;	/* out of the table, to be freed */
	unsigned int nevicted;		/* on path_evicted */
	struct work_struct path_evict_work;
	u64 path_evictions;		/* for a new path, with max_paths */
	u64 path_drops;			/* no path could be made */
	/* answer paths: bounded by max_answer_paths, oldest first out */
	struct list_head path_answers;
	unsigned int nanswers;
	u64 path_answer_evictions;
	/* after an SM change: paths asked for again, at revalidate_rate */
	struct list_head path_stale;
	struct delayed_work path_reval_work;
	unsigned long path_reval_last;	/* jiffies; the work's last run */
	u64 path_reval_credit;		/* queries x HZ earned, not yet made */
	u64 path_revalidations;
	struct list_head mcasts;
	/* the same groups by MGID: joins and sends look them up by it */
	DECLARE_HASHTABLE(mcast_hash, IPOIB_MCAST_HASH_BITS);
	struct ipoib_mcast *broadcast;
	bool mcast_running;		/* joins may be (re)started */
	/* send-only groups: bounded by max_sendonly, expire when idle */
	unsigned int nsendonly;
	u64 sendonly_expired;		/* left after 2 collector periods idle */
	u64 sendonly_evictions;		/* left to make room for a new one */
	u64 sendonly_drops;		/* packets for a new group at the bound */
	/* full-member groups: bounded by max_full_groups */
	unsigned int full_over;		/* wanted beyond it at the last sync */
	u64 full_refused;		/* groups refused at a sync, in all */
	enum ipoib_carrier_reason reason;
	int reason_status;

	unsigned long pending_events;	/* IPOIB_EV_*, for restart_work */
	struct dentry *debugfs;
	struct delayed_work mcast_work;
	struct delayed_work gc_work;
	struct work_struct carrier_work;
	struct work_struct restart_work;
	struct work_struct rx_mode_work;
};

/* main.c */
extern struct workqueue_struct *ipoib_wq;
/*
 * Work that frees (cm_reap_work, cm_tx_reap_work, path_evict_work) and
 * that rtnl holders flush: it never takes rtnl, and it must not share a
 * workqueue with work that does (carrier_work, restart_work), or the
 * flush under rtnl can wait behind a work waiting for rtnl (the rescuer
 * runs them one at a time; lockdep reports the cycle).
 */
extern struct workqueue_struct *ipoib_reap_wq;
extern const struct net_device_ops ipoib_netdev_ops;
extern struct rtnl_link_ops ipoib_link_ops;
extern const struct attribute_group ipoib_attr_group;
void ipoib_setup(struct net_device *dev);
void ipoib_priv_init(struct ipoib_dev_priv *priv, struct net_device *dev,
		     struct ib_device *ca, u32 port);
int ipoib_register(struct ipoib_dev_priv *priv);
int ipoib_set_rings(struct ipoib_dev_priv *priv, unsigned int tx_size,
		    unsigned int rx_size);
void ipoib_release(struct ipoib_dev_priv *priv);
extern struct ib_sa_client ipoib_sa_client;
extern unsigned int ipoib_send_queue_size;
extern unsigned int ipoib_recv_queue_size;
extern unsigned int ipoib_debug_level;

/* param.c: a numeric parameter with a range (see there for bad values) */
struct ipoib_param_range {
	unsigned int *val;
	unsigned int min;
	unsigned int max;
};

extern const struct kernel_param_ops ipoib_param_range_ops;
void ipoib_params_set_live(void);

#define IPOIB_PARAM_RANGE(var, lo, hi)					\
	{ .val = &(var), .min = (lo), .max = (hi) }

/*
 * Tracing that an admin switches on with the debug_level parameter (as
 * in-tree), without dynamic debug; lands in the kernel log at KERN_DEBUG.
 */
#define ipoib_dbg(priv, fmt, ...)					\
	do {								\
		if (unlikely(READ_ONCE(ipoib_debug_level)))		\
			netdev_printk(KERN_DEBUG, (priv)->dev, fmt,	\
				      ##__VA_ARGS__);			\
	} while (0)
void ipoib_set_reason(struct ipoib_dev_priv *priv,
		      enum ipoib_carrier_reason reason, int status);

/* child.c */
extern struct device_attribute dev_attr_create_child;
extern struct device_attribute dev_attr_delete_child;
extern struct device_attribute dev_attr_parent;
int ipoib_may_configure(struct net_device *dev, const char *what);
int ipoib_child_create(struct ipoib_dev_priv *parent, struct net_device *dev,
		       u16 pkey, bool sysfs, struct netlink_ext_ack *extack);
void ipoib_delete_children(struct ipoib_dev_priv *parent);
void ipoib_child_unlink(struct ipoib_dev_priv *priv, struct list_head *head);

/* rn.c */
extern bool ipoib_enhanced;
void ipoib_rn_reserve(struct ib_device *ca);
unsigned int ipoib_rn_num_txqs(void);
unsigned int ipoib_rn_num_rxqs(void);
struct net_device *ipoib_alloc_netdev(struct ib_device *ca, u32 port,
				      const char *name);
void ipoib_rn_place(struct net_device *dev);
int ipoib_rn_attach(struct ipoib_dev_priv *priv);
void ipoib_rn_free(struct ipoib_dev_priv *priv);
int ipoib_rn_up(struct ipoib_dev_priv *priv);
void ipoib_rn_down(struct ipoib_dev_priv *priv);
int ipoib_rn_send(struct ipoib_dev_priv *priv, struct sk_buff *skb,
		  struct ipoib_ah *ah, u32 qpn);
int ipoib_ud_set_broadcast(struct ipoib_dev_priv *priv, u32 qkey,
			   unsigned int mtu);
int ipoib_ud_attach_mcast(struct ipoib_dev_priv *priv, union ib_gid *mgid,
			  u16 mlid, bool broadcast);
void ipoib_ud_detach_mcast(struct ipoib_dev_priv *priv, union ib_gid *mgid,
			   u16 mlid);

/* netlink.c */
int ipoib_netlink_init(void);
void ipoib_netlink_exit(void);

/* ethtool.c */
extern const struct ethtool_ops ipoib_ethtool_ops;
extern const struct ethtool_ops ipoib_rn_no_ethtool_ops;

/* debugfs.c */
void ipoib_debugfs_init(void);
void ipoib_debugfs_cleanup(void);
void ipoib_debugfs_add(struct ipoib_dev_priv *priv);
void ipoib_debugfs_remove(struct ipoib_dev_priv *priv);

/* ib.c */
int ipoib_transport_init(struct ipoib_dev_priv *priv);
void ipoib_transport_cleanup(struct ipoib_dev_priv *priv);
int ipoib_transport_resize(struct ipoib_dev_priv *priv, unsigned int tx_size,
			   unsigned int rx_size);
int ipoib_transport_up(struct ipoib_dev_priv *priv);
void ipoib_transport_down(struct ipoib_dev_priv *priv);
void ipoib_napi_add(struct ipoib_dev_priv *priv);
void ipoib_napi_unlist(struct ipoib_dev_priv *priv);
void ipoib_napi_del(struct ipoib_dev_priv *priv);
void ipoib_rx_deliver(struct ipoib_dev_priv *priv, struct sk_buff *skb);
void ipoib_tx_done(struct ipoib_dev_priv *priv, struct ipoib_tx_buf *buf,
		   enum ib_wc_status status);
void ipoib_tx_sent(struct ipoib_dev_priv *priv);
void ipoib_tx_flush(struct ipoib_dev_priv *priv);
int ipoib_send(struct ipoib_dev_priv *priv, struct sk_buff *skb,
	       struct ipoib_ah *ah, u32 qpn, u32 qkey);
struct sk_buff *ipoib_alloc_rx_skb(struct ipoib_dev_priv *priv,
				   unsigned int len, unsigned int pad,
				   u64 *mapping, gfp_t gfp);
struct page *ipoib_pool_page(struct ipoib_dev_priv *priv,
			     struct page_pool *pool, u64 *mapping);
void ipoib_pool_page_free(struct ipoib_dev_priv *priv, struct page_pool *pool,
			  struct page *page, u64 mapping);
struct page *ipoib_alloc_rx_page(struct ipoib_dev_priv *priv, u64 *mapping,
				 gfp_t gfp);
struct ipoib_ah *ipoib_ah_create(struct ipoib_dev_priv *priv,
				 struct rdma_ah_attr *attr);
void ipoib_ah_put(struct ipoib_ah *ah);
void ipoib_drop(struct ipoib_dev_priv *priv, struct sk_buff *skb);
int ipoib_map_tx(struct ipoib_dev_priv *priv, struct ipoib_tx_buf *buf,
		 struct ib_sge *sge);
void ipoib_unmap_tx(struct ipoib_dev_priv *priv, struct ipoib_tx_buf *buf);
bool ipoib_park(struct sk_buff_head *queue, unsigned int limit,
		struct sk_buff *skb);
void ipoib_release_queue(struct ipoib_dev_priv *priv,
			 struct sk_buff_head *queue, bool send);

/* path.c */
netdev_tx_t ipoib_unicast_xmit(struct ipoib_dev_priv *priv,
			       struct sk_buff *skb, const u8 *daddr);
void ipoib_flush_paths(struct ipoib_dev_priv *priv);
void ipoib_path_gc_work(struct work_struct *work);
void ipoib_path_gc_start(struct ipoib_dev_priv *priv);
void ipoib_path_init(struct ipoib_dev_priv *priv);
void ipoib_path_evict_work(struct work_struct *work);
void ipoib_path_reval_work(struct work_struct *work);
void ipoib_paths_revalidate(struct ipoib_dev_priv *priv);
extern unsigned int ipoib_max_paths;

/* cm.c */
extern unsigned int ipoib_max_nonsrq_conn_qp;
extern unsigned int ipoib_max_cm_passive;
extern unsigned int ipoib_max_cm_active;
void ipoib_cm_init(struct ipoib_dev_priv *priv);
void ipoib_cm_pool_create(struct ipoib_dev_priv *priv);
void ipoib_cm_pool_destroy(struct ipoib_dev_priv *priv);
void ipoib_cm_srq_create(struct ipoib_dev_priv *priv);
void ipoib_cm_srq_destroy(struct ipoib_dev_priv *priv);
void ipoib_cm_reap(struct ipoib_dev_priv *priv);
int ipoib_cm_start(struct ipoib_dev_priv *priv);
void ipoib_cm_stop(struct ipoib_dev_priv *priv);
unsigned int ipoib_cm_cqe(struct ipoib_dev_priv *priv);
bool ipoib_cm_wanted(struct ipoib_dev_priv *priv, struct sk_buff *skb,
		     const u8 *daddr);
bool ipoib_cm_xmit_fast(struct ipoib_dev_priv *priv, struct ipoib_path *path,
			struct sk_buff *skb, u32 qpn);
int ipoib_cm_xmit(struct ipoib_dev_priv *priv, struct ipoib_path *path,
		  struct sk_buff *skb, u32 qpn, unsigned int *mtu);
void ipoib_cm_path_release(struct ipoib_path *path);
void ipoib_cm_handle_wc(struct ipoib_dev_priv *priv, struct ib_wc *wc);
void ipoib_cm_poll(struct ipoib_dev_priv *priv);
void ipoib_too_big(struct ipoib_dev_priv *priv, struct sk_buff *skb,
		   unsigned int mtu);
void ipoib_set_mode(struct ipoib_dev_priv *priv, bool connected);

/* mcast.c */
netdev_tx_t ipoib_mcast_xmit(struct ipoib_dev_priv *priv,
			     struct sk_buff *skb, const u8 *daddr);
void ipoib_mcast_start(struct ipoib_dev_priv *priv);
void ipoib_mcast_stop(struct ipoib_dev_priv *priv);
void ipoib_mcast_work(struct work_struct *work);
void ipoib_rx_mode_work(struct work_struct *work);
void ipoib_mcast_expire(struct ipoib_dev_priv *priv, unsigned long idle);
extern unsigned int ipoib_max_sendonly;
extern unsigned int ipoib_max_full_groups;

/*
 * The netdev's private area starts with a struct rdma_netdev, the
 * provider's (enhanced) or a bare one, and ours follows it (rn.c).
 */
static inline struct ipoib_dev_priv *ipoib_priv(const struct net_device *dev)
{
	return ((struct rdma_netdev *)netdev_priv(dev))->clnt_priv;
}

/* The QPN of our UD datapath, the provider's QP when enhanced. */
static inline u32 ipoib_ud_qpn(const struct ipoib_dev_priv *priv)
{
	const u8 *a = priv->dev->dev_addr;

	return a[1] << 16 | a[2] << 8 | a[3];
}

/* One of our interfaces, parent or child (not just any ARPHRD_INFINIBAND). */
static inline bool ipoib_is_ours(const struct net_device *dev)
{
	return dev->netdev_ops == &ipoib_netdev_ops;
}

/* the bucket of a GID: paths by DGID, multicast groups by MGID */
static inline u32 ipoib_gid_hash(const union ib_gid *gid)
{
	return jhash(gid->raw, sizeof(gid->raw), 0);
}

/* Multicast hardware addresses carry QPN 0xffffff and an MGID (ff..). */
static inline bool ipoib_is_mcast_addr(const u8 *hwaddr)
{
	return hwaddr[4] == 0xff;
}

#endif /* IPOIB_H */
