/* SPDX-License-Identifier: GPL-2.0 */
/*
 * softib: a software InfiniBand (IB link layer) HCA with an in-kernel fabric.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#ifndef SOFTIB_H
#define SOFTIB_H

#include <linux/atomic.h>
#include <linux/idr.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/platform_device.h>
#include <linux/rcupdate.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>

#define SOFTIB_MAX_PORTS	16
/* nodes in other kernels one node links to (link.c), a switch port each */
#define SOFTIB_LINK_PEERS_MAX	8
#define SOFTIB_PKEY_TBL_LEN	32
#define SOFTIB_GID_TBL_LEN	1
#define SOFTIB_MAX_QP		16384
#define SOFTIB_MAX_QP_WR	16384
#define SOFTIB_MAX_SGE		32
#define SOFTIB_MAX_CQ		16384
#define SOFTIB_MAX_CQE		65536
#define SOFTIB_MAX_PD		16384
#define SOFTIB_MAX_AH		65536
#define SOFTIB_MAX_MR		16384
#define SOFTIB_MAX_MCAST_GRP	8192
#define SOFTIB_MAX_MCAST_ATTACH	1024
#define SOFTIB_MAX_MSG		BIT(31)
/* UD payload limit: the port's MTU (4096); the GRH sits in front of it. */
#define SOFTIB_MTU		IB_MTU_4096
#define SOFTIB_MTU_BYTES	4096
/*
 * What NodeInfo and query_device say of the hardware. The DeviceID is
 * outside every range for which OpenSM sends Mellanox vendor MADs.
 */
#define SOFTIB_VENDOR_ID	0xffffff
#define SOFTIB_DEVICE_ID	0x0000
#define SOFTIB_SW_DEVICE_ID	0x0001
/* the switch's forwarding tables: every unicast LID, 16,384 MLIDs */
#define SOFTIB_SW_LFT_CAP	0xc000
#define SOFTIB_SW_MFT_CAP	0x4000
#define SOFTIB_SW_MFT_BLOCK	32	/* MLIDs per MulticastForwardingTable block */
#define SOFTIB_HW_REV		1
/* PortInfo: VLArbitration entries per priority, RespTimeValue (2^18 x 4 us) */
#define SOFTIB_VLARB_CAP	32
#define SOFTIB_RESP_TIME	18

/*
 * Addressing. The built-in SM gives port N of the device LID N, and the
 * switch (where it runs) the SM LID, which every port reports as sm_lid;
 * an SM's PortInfo Set may change them (sma.c). GUIDs are EUI-64 with
 * the locally administered bit set, derived from the port number so that
 * partitions.conf member lists stay valid across loads.
 *
 * A node of a fabric across kernels (node=K, link.c) puts K into bits
 * 24-29 of its GUIDs and numbers its LIDs from 32*K: port N is LID
 * 32*K+N and the switch 32*K, all below the virtual nodes' LIDs. Node 0,
 * the default, keeps the single-kernel addresses above.
 */
#define SOFTIB_GUID_BASE	0x02110bff00000000ULL
#define SOFTIB_GUID_NODE_SHIFT	24
#define SOFTIB_SWITCH_GUID_BIT	0x10000ULL
#define SOFTIB_SM_LID_SINGLE	0x0100
#define SOFTIB_NODE_LIDS	32
#define SOFTIB_NODE_MAX		63
#define SOFTIB_SUBNET_PREFIX	0xfe80000000000000ULL
/* this node's identity (main.c), fixed before the device registers */
extern u32 softib_node;
extern u64 softib_node_guid;	/* the CA; port N is softib_node_guid | N */
extern u64 softib_switch_guid;	/* the switch, where the built-in SM runs */
extern u16 softib_sm_lid;	/* the switch's LID, the SM LID it hands out */
extern u16 softib_lid_base;	/* port N's LID is softib_lid_base + N */
#define SOFTIB_SM_PRIORITY	15
#define SOFTIB_SM_STATE_MASTER	3
#define SOFTIB_SM_NONE		0xff	/* handshake: the node runs no SM */
#define SOFTIB_QP1_QKEY		0x80010000
#define SOFTIB_MLID_BASE	0xc000
/* MLIDs the SA hands out: 0xC001..0xFFFE */
#define SOFTIB_MLID_FIRST	(SOFTIB_MLID_BASE + 1)
#define SOFTIB_MLID_LAST	(SOFTIB_LID_PERMISSIVE - 1)
#define SOFTIB_SA_GROUPS_DEFAULT	4096
/* fault/sa_delay_ms: answers held back at most; beyond, they go at once */
#define SOFTIB_SA_DELAYED_MAX		1024
#define SOFTIB_SA_DELAY_MAX_MS		60000
#define SOFTIB_LID_PERMISSIVE	0xffff
/* virtual nodes (vnode.c): LIDs, port GUIDs and QPN */
#define SOFTIB_VNODES_MAX	32768
#define SOFTIB_VNODE_LID	0x1000
#define SOFTIB_VNODE_GUID	0x02110bfe00000000ULL
#define SOFTIB_VNODE_QPN	0x00fe00
/* a node's end of connection k (vnode_cm.c): QPN SOFTIB_VNODE_RC_QPN + k */
#define SOFTIB_VNODE_RC_QPN	0xf00000
#define SOFTIB_VNODE_CONNS	65536

#define SOFTIB_IPOIB_HLEN	4	/* IPoIB header: ethertype, reserved */
#define SOFTIB_IPOIB_FLAG_RC	0x80	/* hardware address: connected mode */
#define SOFTIB_GRH_NEXT_HDR	0x1b	/* IBA: next header after a GRH is a BTH */

/* Why a packet was not delivered; one counter per port per reason. */
enum softib_drop {
	SOFTIB_DROP_NO_DEST,	/* no port owns the DLID (e.g. the SM's) */
	SOFTIB_DROP_NO_QP,	/* no such QPN, or QP not ready to receive */
	SOFTIB_DROP_PKEY,	/* partition check failed at the receiving port */
	SOFTIB_DROP_QKEY,	/* Q_Key mismatch */
	SOFTIB_DROP_NO_RWQE,	/* receiver had no posted receive */
	SOFTIB_DROP_TOO_LONG,	/* payload larger than MTU or receive buffer */
	SOFTIB_DROP_PORT_DOWN,	/* sending or receiving port not ACTIVE */
	SOFTIB_DROP_MAX,
};

struct softib_counters {
	atomic64_t xmit_packets;
	atomic64_t xmit_bytes;
	atomic64_t rcv_packets;
	atomic64_t rcv_bytes;
	/* of the packets above, those sent to or received from an MLID */
	atomic64_t mcast_xmit_packets;
	atomic64_t mcast_rcv_packets;
	/* times the link went down from LinkUp (PMA LinkDownedCounter) */
	atomic64_t link_downed;
	atomic64_t drops[SOFTIB_DROP_MAX];
};

/* counters the PMA shows (pma.c), each cleared by a PMA Set on its own */
#define SOFTIB_PMA_COUNTERS	10

struct softib_dev;
struct seq_file;
struct ib_sa_mad;
struct softib_qp;

struct softib_port {
	struct softib_dev *sdev;
	u32 num;
	/*
	 * lock protects state, cap_flags, the pkey table and what the
	 * subnet management agent keeps (sma.c); the data path reads
	 * state, lid and pkeys with READ_ONCE.
	 */
	spinlock_t lock;
	enum ib_port_state state;
	u8 phys_state;			/* IB_PORT_PHYS_STATE_* */
	bool cabled;			/* debugfs link: up/down */
	u32 cap_flags;
	u16 lid;
	u8 lmc;
	u16 sm_lid;
	u8 sm_sl;
	u16 pkeys[SOFTIB_PKEY_TBL_LEN];
	u64 gid_prefix;
	/* M_Key, its protect level, lease and violations (IBTA 14.2.4) */
	u64 mkey;
	u8 mkeyprot;
	u16 mkey_lease_period;		/* seconds; 0: no lease */
	unsigned long mkey_lease_end;	/* jiffies; 0: lease not running */
	u16 mkey_violations;
	/* the rest of PortInfo that an SM writes and reads back */
	u8 link_down_default;
	u8 width_enabled, speed_enabled, speed_ext_enabled;
	u8 neighbor_mtu;
	u8 mtu_cap;			/* enum ib_mtu: what the port can carry */
	u8 op_vls;
	/*
	 * PortInfo PartitionEnforcementInbound/Outbound, FilterRawInbound/
	 * Outbound (SOFTIB_PE_*): a switch external port's; the data path
	 * reads them with READ_ONCE
	 */
	u8 pe_flags;
	u8 vl_high_limit;
	u8 vlstall_hoqlife;
	u8 subnet_timeout;
	u8 phy_overrun_thresh;
	u8 sl2vl[8];
	u8 vlarb[2][SOFTIB_VLARB_CAP * 2];	/* low, high priority */
	/* a link taken down by the SM trains again (sma.c) */
	struct delayed_work link_work;
	/* QP0 (SMI) and QP1 (GSI) of this port, looked up under RCU */
	struct softib_qp __rcu *special[2];
	struct softib_counters cnt;
	u64 pma_base[SOFTIB_PMA_COUNTERS];
};

/*
 * Affiliated asynchronous QP events, bits of softib_qp.pending_events
 * and fail_events, delivered in this order (the error, then the SRQ's
 * last WQE)
 */
enum softib_qp_ev {
	SOFTIB_EV_FATAL,	/* IB_EVENT_QP_FATAL */
	SOFTIB_EV_REQ_ERR,	/* IB_EVENT_QP_REQ_ERR */
	SOFTIB_EV_ACCESS_ERR,	/* IB_EVENT_QP_ACCESS_ERR */
	SOFTIB_EV_LAST_WQE,	/* IB_EVENT_QP_LAST_WQE_REACHED */
	SOFTIB_EV_MAX,
};

/* PortInfo byte 43, after OperationalVLs (IBTA 14.2.5.6, ib_port_info) */
#define SOFTIB_PE_IN		0x08	/* PartitionEnforcementInbound */
#define SOFTIB_PE_OUT		0x04	/* PartitionEnforcementOutbound */
#define SOFTIB_PE_MASK		0x0f	/* and FilterRawInbound/Outbound */

/* Why the switch discarded a packet; counted per switch port. */
enum softib_sw_drop {
	SOFTIB_SW_DROP_RCV_PKEY,	/* in: PartitionEnforcementInbound */
	SOFTIB_SW_DROP_XMIT_PKEY,	/* out: PartitionEnforcementOutbound */
	SOFTIB_SW_DROP_UNROUTED,	/* in: no LFT entry, or back out of it */
	SOFTIB_SW_DROP_PORT_DOWN,	/* in or out: the switch port not up */
	SOFTIB_SW_DROP_MAX,
};

/*
 * The fabric's switch (switch.c): ports 0..nports, port N cabled to
 * softib0's port N, then one port for each node of the link (link_ports,
 * the link's peers in the order link_peers names them). Its ports are
 * softib_ports for their PortInfo and P_Key state (no QPs, no counters
 * of their own: discards[] instead).
 * lock protects the rest; the data path reads lft, mft, lft_top and
 * the ports' P_Key tables and pe_flags with READ_ONCE, without it.
 */
struct softib_switch {
	struct softib_dev *sdev;
	spinlock_t lock;	/* the tables and SwitchInfo fields below */
	u8 *lft;		/* LID -> port; 0xff: nowhere */
	u32 *mft;		/* MLID - 0xc000 -> mask of ports 0..31 */
	u16 lft_top, mft_top;
	u8 def_port, def_mc_pri, def_mc_not;
	u8 life_psc;		/* LifeTimeValue, PortStateChange */
	u8 sl2vl[8];
	char node_desc[IB_DEVICE_NODE_DESC_MAX];
	atomic64_t sma_answered, sma_dropped, dr_forwarded, dr_discards;
	struct softib_port ports[SOFTIB_MAX_PORTS + SOFTIB_LINK_PEERS_MAX + 1];
	atomic64_t discards[SOFTIB_MAX_PORTS + SOFTIB_LINK_PEERS_MAX + 1]
			   [SOFTIB_SW_DROP_MAX];
};

struct softib_dev {
	struct ib_device ibdev;
	struct platform_device *pdev;
	struct workqueue_struct *wq;
	u32 nports;
	struct softib_port *ports;
	u32 link_ports;		/* the switch's ports to other nodes */
	/* QPN >= 2 -> struct softib_qp, looked up under RCU */
	struct xarray qps;
	u32 next_qpn;
	/* multicast groups: RCU list, writers hold mcast_lock */
	spinlock_t mcast_lock;
	struct list_head mcast;
	u32 n_mcast;
	/* the subnet administrator's multicast groups (sa.c) */
	struct mutex sa_lock;
	struct list_head mcgs;
	struct ida mlids;		/* MLIDs in use, under sa_lock */
	u32 sa_groups;			/* groups in mcgs, under sa_lock */
	u32 sa_max_groups;		/* the cap on sa_groups (sa_max_groups=) */
	atomic64_t sa_groups_refused;	/* joins refused at the cap */
	char *policy_text;	/* active partitions.conf text, under sa_lock */
	atomic64_t sa_requests;
	atomic_t sm_act_count;		/* the built-in SM's SMInfo ActCount */
	/* the fabric's master SM (sm.c): its node, elected by sm_work */
	u32 sm_master;
	u32 sm_master_gen;		/* its link session (0: this node) */
	u64 sm_nodes;			/* nodes on the link at the last election */
	struct work_struct sm_work;
	atomic64_t sm_master_changes;
	atomic64_t sm_mft_sets;		/* MFT blocks set at other switches */
	atomic64_t sa_standby_drops;	/* SA requests to a standby SM */
	/* PathRecord queries, and the most in one second (sa.c) */
	atomic64_t sa_path_queries;
	spinlock_t sa_rate_lock;	/* sa_rate_sec, sa_rate_count, sa_path_peak */
	unsigned long sa_rate_sec;
	u32 sa_rate_count, sa_path_peak;
	/* MCMemberRecord joins (Set) and leaves (Delete) asked for */
	atomic64_t sa_mc_joins, sa_mc_leaves;
	/* what the virtual nodes answered and dropped (vnode.c) */
	atomic64_t vnode_arp_replies, vnode_echo_replies;
	atomic64_t vnode_sent, vnode_dropped;
	/* connected mode of the nodes (vnode_cm.c) */
	atomic64_t vnode_cm_accepted, vnode_cm_closed, vnode_rc_received;
	/* fault/sa_delay_ms: SA answers held back this long (0: at once) */
	u32 sa_delay_ms;
	spinlock_t sa_delay_lock;	/* sa_delayed, n_sa_delayed */
	struct list_head sa_delayed;	/* answers held back (sa.c) */
	u32 n_sa_delayed;
	atomic64_t sa_replies_delayed;
	/* GetTable answers on their way by RMPP (sa_table.c) */
	struct mutex sa_rmpp_lock;	/* sa_rmpp, n_sa_rmpp, each transfer */
	struct list_head sa_rmpp;
	u32 n_sa_rmpp;
	struct delayed_work sa_rmpp_work;	/* resends, drops stale ones */
	atomic64_t sa_rmpp_started, sa_rmpp_done, sa_rmpp_segments;
	atomic64_t sa_rmpp_aborted, sa_rmpp_evicted;
	/* offload.c: LSO sends and their datagrams; checksums on delivery */
	atomic64_t lso_sends, lso_segments;
	atomic64_t csum_filled, csum_verified, csum_unverified;
	/* completions removed from CQs because their QP was destroyed */
	atomic64_t purged_cqes;
	/* SMPs the SMA answered, answered with an error, dropped (M_Key) */
	atomic64_t sma_answered, sma_errors, sma_dropped;
	/* wr_id bookkeeping errors seen with debug_wrid=1 */
	atomic64_t wrid_errors;
	/* affiliated QP events raised, by enum softib_qp_ev */
	atomic64_t qp_events[SOFTIB_EV_MAX];
	atomic_t fault_post_srq;	/* fault.c: calls until one fails */
	atomic_t fault_create_qp;	/* fault.c: the same for create_qp */
	struct mutex bench_lock;	/* one bench run at a time */
	char bench_result[160];		/* the last one's (bench.c) */
	struct delayed_work sweep;
	struct softib_link *link;	/* to nodes in other kernels, or NULL */
	struct softib_switch sw;
	struct dentry *debugfs_root;
	struct dentry *debugfs;
	atomic_t n_pd, n_ah, n_cq, n_qp, n_mr, n_srq;
};

struct softib_pd {
	struct ib_pd ibpd;
};

/* An address vector: what a UD WR or an AH says about the destination. */
struct softib_av {
	u16 dlid;
	u8 sl;
	u8 port_num;
	bool grh;
	u8 sgid_index;
	u8 hop_limit;
	u8 traffic_class;
	u32 flow_label;
	union ib_gid dgid;
};

struct softib_ah {
	struct ib_ah ibah;
	struct softib_av av;
};

struct softib_mr {
	struct ib_mr ibmr;
};

struct softib_cq {
	struct ib_cq ibcq;
	/* lock protects the ring and the notify state */
	spinlock_t lock;
	struct ib_wc *ring;
	u32 size;
	u32 head;	/* next slot to fill */
	u32 count;	/* filled slots */
	u8 notify;	/* armed: IB_CQ_SOLICITED or IB_CQ_NEXT_COMP */
	bool overflow;
	/*
	 * Moderation (modify_cq, as mlx5's CQ moderation): an armed
	 * NEXT_COMP event waits until mod_count completions came since it
	 * was armed or mod_period microseconds passed since the first of
	 * them, whichever is first. 0/0 (and count 1): no waiting. A count
	 * with no period waits for the count, as hardware does.
	 */
	u16 mod_count;
	u16 mod_period;
	u32 mod_pending;	/* completions since armed, not yet signalled */
	struct hrtimer mod_timer;
	struct work_struct comp_work;
	struct work_struct err_work;
};

/* A posted send: the WR with its gather list and, for UD, its address. */
struct softib_swqe {
	u64 wr_id;
	enum ib_wr_opcode opcode;
	int send_flags;
	__be32 imm;
	u32 length;
	u32 remote_qpn;
	u32 remote_qkey;
	u16 pkey_index;
	u16 lso_hlen;		/* IB_WR_LSO: header bytes, after the sges */
	u32 lso_mss;
	struct softib_av av;
	u32 num_sge;
	struct ib_sge sge[];
};

/* a send WQE with one gather entry, built on the stack (wire.c, inject.c) */
struct softib_swqe_one {
	struct softib_swqe wqe;
	struct ib_sge sge;
};

struct softib_rwqe {
	u64 wr_id;
	u32 num_sge;
	struct ib_sge sge[];
};

struct softib_wrids;
struct softib_rcr;

/* A work queue ring: entries of "stride" bytes, head produces, tail consumes. */
struct softib_wq {
	/* lock protects head/tail, wrids and, for the SQ, the QP state */
	spinlock_t lock;
	void *buf;
	u32 size;
	u32 stride;
	u32 max_sge;
	u32 head;
	u32 tail;
	/* outstanding wr_ids, only with debug_wrid=1 (wrid.c) */
	struct softib_wrids *wrids;
};

struct softib_srq {
	struct ib_srq ibsrq;
	struct softib_wq rq;
	u32 limit;
	struct work_struct limit_work;
};

struct softib_qp {
	struct ib_qp ibqp;
	struct softib_dev *sdev;
	/* state and the attributes below are written under sq.lock */
	enum ib_qp_state state;
	u32 port_num;
	u16 pkey_index;
	u32 qkey;
	bool sig_all;
	struct softib_wq sq;
	struct softib_wq rq;
	struct softib_srq *srq;
	struct softib_cq *scq;
	struct softib_cq *rcq;
	bool block_mcast_loopback;
	/* an rdma_netdev's QP: the fabric delivers into its rings */
	struct softib_rn *rn;
	bool sends_stalled;	/* fault/stall_sends: the engine sends nothing */
	bool rnr_stuck;		/* fault/rnr_stuck: RNR NAK whatever is posted */
	/*
	 * fault/rem_inv_req, fault/rem_access: the IB_WC_REM_* status the
	 * next message to this responder gets (0: none)
	 */
	u8 resp_fault;
	/* IB_QP_CREATE_IPOIB_UD_LSO: the engine's segment and header buffers */
	bool lso;
	struct softib_swqe *lso_seg;
	u8 *lso_hdr;
	/* RC connection, set by modify_qp under sq.lock and rq.lock */
	struct softib_av av;
	u32 dest_qpn;
	u8 rnr_retry;		/* 7 = retry forever */
	u8 rnr_left;		/* retries left for the WQE at the SQ head */
	u8 min_rnr_timer;
	u8 retry_cnt;
	u8 timeout;
	u8 path_mtu;		/* enum ib_mtu */
	u32 sq_psn;		/* the PSN of the next packet sent */
	u32 rq_psn;		/* the PSN expected next (under rq.lock) */
	/* RC to and from other nodes (rc_remote.c); NULL without a link */
	struct softib_rcr *rcr;
	/*
	 * The QP's work items. They are queued only by softib_qp_queue(),
	 * which refuses once destroy_qp has set "dying" (both under
	 * work_lock, the innermost lock), so destroy can cancel them for good.
	 */
	spinlock_t work_lock;
	bool dying;
	/* delayed: an RNR NAK backs the engine off for the responder's timer */
	struct delayed_work send_work;
	struct work_struct err_work;
	struct work_struct event_work;
	unsigned long pending_events;
	/* the events err_work raises if it moves the QP to ERR (SOFTIB_EV_*) */
	unsigned long fail_events;
};

/* what softib_qp_queue() queues */
enum softib_qp_work {
	SOFTIB_QPW_SEND,	/* the send engine after "delay", unless pending */
	SOFTIB_QPW_SEND_NOW,	/* the send engine, cutting a back-off short */
	SOFTIB_QPW_ERR,		/* move the QP to ERR (+ fail_events) */
	SOFTIB_QPW_EVENT,	/* deliver pending_events */
};

struct softib_mcast_attach {
	struct list_head list;
	struct softib_qp *qp;
	struct rcu_head rcu;
};

struct softib_mcast {
	struct list_head list;
	u16 mlid;
	union ib_gid mgid;
	struct list_head attached;
	u32 n_attached;
	struct rcu_head rcu;
};

/* A multicast group as the SA knows it (membership, not QP attachment). */
struct softib_mcg {
	struct list_head list;
	union ib_gid mgid;
	u16 mlid;
	u16 pkey;
	u32 qkey;
	u8 mtu;
	u8 rate;
	u8 sl;
	u8 tclass;
	u32 flow_label;
	u8 hop_limit;
	bool permanent;		/* created by the partition policy */
	struct list_head members;
};

/* A packet in flight: a send WQE plus what the wire would carry. */
#define SOFTIB_RNR	(-EAGAIN)	/* the responder had no receive WQE */
#define SOFTIB_PSN_MASK	0xffffff	/* PSNs are 24 bits */
/* the message is on its way to another node; its answer restarts the engine */
#define SOFTIB_PENDING	(-EINPROGRESS)
struct softib_pkt {
	struct softib_dev *sdev;
	struct softib_qp *src;		/* NULL when the SA sends */
	struct softib_port *sport;	/* NULL when the SA sends */
	const struct softib_swqe *wqe;
	u32 src_qpn;
	u16 slid;
	u16 pkey;
	u32 qkey;
	bool mcast;
	const union ib_gid *sgid;	/* GRH SGID; NULL: the GID of SLID */
	bool from_link;			/* from another node (wire.c) */
	u32 in_port;			/* from_link: the switch port it entered */
};

static inline struct softib_dev *to_sdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct softib_dev, ibdev);
}

static inline struct softib_qp *to_sqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct softib_qp, ibqp);
}

static inline struct softib_cq *to_scq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct softib_cq, ibcq);
}

static inline struct softib_srq *to_ssrq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct softib_srq, ibsrq);
}

static inline struct softib_ah *to_sah(struct ib_ah *ibah)
{
	return container_of(ibah, struct softib_ah, ibah);
}

static inline struct softib_port *softib_port(struct softib_dev *sdev, u32 num)
{
	return &sdev->ports[num - 1];
}

static inline void *softib_wq_entry(struct softib_wq *wq, u32 idx)
{
	return wq->buf + (size_t)(idx & (wq->size - 1)) * wq->stride;
}

static inline u32 softib_wq_used(const struct softib_wq *wq)
{
	return wq->head - wq->tail;
}

static inline bool softib_qp_can_recv(enum ib_qp_state state)
{
	return state == IB_QPS_RTR || state == IB_QPS_RTS ||
	       state == IB_QPS_SQD || state == IB_QPS_SQE;
}

/*
 * States in which the send engine runs: RTS sends, SQE and ERR flush.
 * WRs posted in RESET, INIT, RTR and SQD wait in the ring.
 */
static inline bool softib_qp_sq_runs(enum ib_qp_state state)
{
	return state == IB_QPS_RTS || state == IB_QPS_SQE ||
	       state == IB_QPS_ERR;
}

/* Is "lid" one of a CA port's, its base LID with the LMC's bits masked? */
static inline bool softib_port_owns_lid(struct softib_port *port, u16 lid)
{
	u16 base = READ_ONCE(port->lid);

	return base && (lid & ~((1U << READ_ONCE(port->lmc)) - 1)) == base;
}

static inline __be64 softib_port_guid(u32 port)
{
	return cpu_to_be64(softib_node_guid | port);
}

/* A CA port's GID 0: the SM's subnet prefix and the port GUID. */
static inline void softib_port_gid(struct softib_port *port,
				   union ib_gid *gid)
{
	gid->global.subnet_prefix = cpu_to_be64(READ_ONCE(port->gid_prefix));
	gid->global.interface_id = softib_port_guid(port->num);
}

/* main.c */
extern const struct ib_device_ops softib_dev_ops;
extern bool softib_srq;
extern bool softib_builtin_sm;
extern u8 softib_fabric_mtu;
extern bool softib_debug_wrid;
void softib_port_set_state(struct softib_port *port, enum ib_port_state state);
void softib_port_event(struct softib_port *port, enum ib_event_type type);
void softib_port_phys(struct softib_port *port, u8 phys_state);
/* how long a link takes to train (Polling to LinkUp) */
#define SOFTIB_LINK_TRAIN_MS	10
void softib_port_retrain(struct softib_port *port);

/* sma.c */
/* MAD status of an SMP (IBTA 13.4.7): bits 2..4, "invalid field" codes */
#define SOFTIB_SMA_BAD_VERSION		IB_MGMT_MAD_STATUS_BAD_VERSION
#define SOFTIB_SMA_UNSUP_METHOD		IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD
#define SOFTIB_SMA_UNSUP_ATTR		IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB
#define SOFTIB_SMA_INVALID_FIELD	IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE
/* not a status: dropped unanswered, or handed on to the agents */
#define SOFTIB_SMA_DROP			U16_MAX
#define SOFTIB_SMA_PASS			(U16_MAX - 1)

/* IB events a PortInfo or P_KeyTable Set raises, in the order raised */
enum {
	SMA_EV_LID		= BIT(0),
	SMA_EV_SM		= BIT(1),
	SMA_EV_GID		= BIT(2),
	SMA_EV_REREG		= BIT(3),
	SMA_EV_PKEY		= BIT(4),
};

struct ib_smp;
void softib_sma_init_port(struct softib_port *port);
void softib_sma_node_info(struct ib_smp *out, u8 node_type, u8 nports,
			  u64 node_guid, u64 port_guid, u16 device_id,
			  u32 in_port);
bool softib_sma_check_mkey(struct softib_port *port, const struct ib_smp *smp,
			   int mad_flags, bool *key_ok);
void softib_sma_port_info(struct softib_port *port, u32 in_port, bool key_ok,
			  struct ib_smp *out);
u16 softib_sma_set_port_info(struct softib_port *port, const struct ib_smp *in,
			     bool addressed, unsigned int *events,
			     enum ib_port_state *new_state, u8 *new_phys);
bool softib_sma_sl2vl_ok(const u8 *tbl);
void softib_sma_set_pkeys(struct softib_port *port, const struct ib_smp *in,
			  unsigned int *events);
void softib_sma_get_pkeys(struct softib_port *port, struct ib_smp *out);
int softib_sma_reply(const struct ib_mad *in, struct ib_mad *out, u16 status);
int softib_process_mad(struct ib_device *ibdev, int mad_flags, u32 port_num,
		       const struct ib_wc *in_wc, const struct ib_grh *in_grh,
		       const struct ib_mad *in, struct ib_mad *out,
		       size_t *out_mad_size, u16 *out_mad_pkey_index);

/* switch.c */
int softib_switch_init(struct softib_dev *sdev);
void softib_switch_cleanup(struct softib_dev *sdev);
void softib_switch_sm(struct softib_dev *sdev);
void softib_switch_sm_lid(struct softib_dev *sdev, u32 num);
void softib_switch_sm_mft_clear(struct softib_dev *sdev);
void softib_switch_sm_set_lid(struct softib_dev *sdev, u16 sm_lid);
void softib_switch_sm_mft(struct softib_dev *sdev, u16 mlid, u32 mask);
void softib_switch_sm_pkeys(struct softib_dev *sdev, u32 num,
			    const u16 *pkeys);
struct softib_port *softib_switch_unicast(const struct softib_pkt *pkt,
					  u16 dlid, bool smp);
u32 softib_switch_mcast(const struct softib_pkt *pkt, u16 mlid);
void softib_switch_link(struct softib_dev *sdev, u32 num, bool up);
void softib_switch_link_port(struct softib_dev *sdev, u32 idx, bool up,
			     u32 ib_mtu, u32 node, u32 nports);
bool softib_switch_lid_node(struct softib_dev *sdev, u16 lid, u32 *node);
void softib_switch_unrouted(struct softib_dev *sdev, u32 in);
bool softib_switch_port_enabled(struct softib_dev *sdev, u32 num);
void softib_switch_recv(const struct softib_pkt *pkt, u32 in);
int softib_switch_show(struct seq_file *m, struct softib_dev *sdev);

/* pma.c */
u16 softib_pma_process(struct softib_dev *sdev, u32 port_num,
		       const struct ib_mad *in, struct ib_mad *out);
struct rdma_hw_stats *softib_alloc_hw_port_stats(struct ib_device *ibdev,
						 u32 port_num);
int softib_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
			u32 port_num, int index);

/* verbs.c */
int softib_query_device(struct ib_device *ibdev, struct ib_device_attr *attr,
			struct ib_udata *udata);
int softib_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int softib_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int softib_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		     struct ib_udata *udata);
int softib_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr);
int softib_destroy_ah(struct ib_ah *ibah, u32 flags);
struct ib_mr *softib_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *softib_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				 u64 virt, int access, struct ib_udata *udata);
int softib_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
int softib_create_cq_common(struct ib_cq *ibcq,
			    const struct ib_cq_init_attr *attr, bool user);
int softib_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int softib_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc);
int softib_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
int softib_modify_cq(struct ib_cq *ibcq, u16 cq_count, u16 cq_period);
void softib_cq_signal(struct softib_cq *cq);
int softib_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		      struct ib_udata *udata);
int softib_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		      enum ib_srq_attr_mask mask, struct ib_udata *udata);
int softib_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int softib_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int softib_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			 const struct ib_recv_wr **bad_wr);
int softib_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		     struct ib_udata *udata);
int softib_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		     struct ib_udata *udata);
int softib_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_qp_init_attr *init);
int softib_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int softib_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		     const struct ib_send_wr **bad_wr);
int softib_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		     const struct ib_recv_wr **bad_wr);
int softib_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
int softib_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
void softib_mcast_cleanup(struct softib_dev *sdev);
bool softib_qp_queue(struct softib_qp *qp, enum softib_qp_work which,
		     unsigned long delay);

/* fabric.c */
void softib_cq_add(struct softib_cq *cq, const struct ib_wc *wc, bool solicited);
void softib_send_worker(struct work_struct *work);
void softib_qp_to_error(struct softib_qp *qp);
void softib_qp_fail(struct softib_qp *qp, unsigned long events);
void softib_qp_err_work(struct work_struct *work);
void softib_av_from_attr(struct softib_av *av, const struct rdma_ah_attr *attr);
void softib_flush_rq(struct softib_qp *qp);
void softib_route_pkt(struct softib_pkt *pkt);
void softib_grh_fill(struct ib_grh *grh, const struct softib_av *av,
		     u32 paylen, const union ib_gid *sgid);
int softib_pkey_match(struct softib_port *port, u16 pkt_pkey, int only_index);
u32 softib_rnr_timer_usec(u8 code);
bool softib_rq_take(struct softib_qp *dqp, struct softib_port *dport,
		    struct softib_rwqe *copy);
void softib_deliver_smi(const struct softib_pkt *pkt,
			struct softib_port *dport);
struct ib_mad *softib_pkt_mad(const struct softib_pkt *pkt);
void softib_copy_sg(const struct ib_sge *dst, u32 ndst, u32 off,
		    const struct ib_sge *src, u32 nsrc, u32 len);
__wsum softib_copy_sg_csum(const struct ib_sge *dst, u32 ndst, u32 off,
			   const struct ib_sge *src, u32 nsrc, u32 len,
			   u32 from, u32 clen);

/* wrid.c: debug_wrid bookkeeping; the caller holds the queue's lock */
int softib_wrids_init(struct softib_wq *wq, struct softib_dev *sdev,
		      const char *kind);
void softib_wrids_free(struct softib_wq *wq);
void softib_wrids_set_qpn(struct softib_wq *wq, u32 qpn);
void __softib_wrid_post(struct softib_wq *wq, u64 wr_id);
void __softib_wrid_retire(struct softib_wq *wq, u64 wr_id);
void __softib_wrids_clear(struct softib_wq *wq);

static inline void softib_wrid_post(struct softib_wq *wq, u64 wr_id)
{
	if (unlikely(wq->wrids))
		__softib_wrid_post(wq, wr_id);
}

static inline void softib_wrid_retire(struct softib_wq *wq, u64 wr_id)
{
	if (unlikely(wq->wrids))
		__softib_wrid_retire(wq, wr_id);
}

static inline void softib_wrids_clear(struct softib_wq *wq)
{
	if (unlikely(wq->wrids))
		__softib_wrids_clear(wq);
}

/* sa.c */
extern unsigned int softib_sa_max_groups;
void softib_sa_init(struct softib_dev *sdev);
int softib_sa_members_show(struct seq_file *m, struct softib_dev *sdev);
u16 softib_sa_process(struct softib_dev *sdev, struct softib_port *sport,
		      u16 rlid, const struct ib_sa_mad *req,
		      struct ib_sa_mad *resp);
void softib_sa_forget_members(struct softib_dev *sdev, u32 node);
u32 softib_mcg_ports(struct softib_dev *sdev, const struct softib_mcg *g,
		     u32 node);
u16 softib_sa_mcmember_req(struct softib_dev *sdev, struct softib_port *port,
			   struct softib_port *member, u8 method,
			   const union ib_gid *mgid, u8 join, u16 *status);
void softib_sa_cleanup(struct softib_dev *sdev);
void softib_sa_reset_peak(struct softib_dev *sdev);
void softib_sa_drop_delayed(struct softib_dev *sdev);
void softib_sa_recv(const struct softib_pkt *pkt);
void softib_sm_reply(const struct softib_pkt *req, u16 slid,
		     struct ib_smp *resp);
void softib_sm_send(struct softib_dev *sdev, u16 slid, u16 dlid, u32 qpn,
		    u16 pkey, void *resp);
void softib_sa_path_fill(u8 *r, const union ib_gid *sgid,
			 const union ib_gid *dgid, u16 slid, u16 dlid,
			 u16 pkey, u8 tclass, u8 mtu);

/* A GetTable answer being built (sa_table.c): records of rec_len bytes */
struct softib_sa_table {
	u8 *buf;
	u32 len, cap;
	u32 rec_len;
};

u8 *softib_sa_table_slot(struct softib_sa_table *t);
int softib_sa_mc_table(struct softib_dev *sdev, struct softib_port *sport,
		       const struct ib_sa_mad *req, struct softib_sa_table *t);
void softib_sa_get_table(struct softib_dev *sdev, const struct softib_pkt *pkt,
			 const struct ib_sa_mad *req, struct ib_sa_mad *resp);
bool softib_sa_rmpp_recv(struct softib_dev *sdev, u16 slid,
			 const struct ib_sa_mad *req);
void softib_sa_table_init(struct softib_dev *sdev);
void softib_sa_table_cleanup(struct softib_dev *sdev);
struct softib_port *softib_gid_to_port(struct softib_dev *sdev,
				       const union ib_gid *gid);
int softib_port_find_pkey(struct softib_port *port, u16 pkey);
u16 softib_shared_pkey(struct softib_port *s, struct softib_port *d, u16 pkey);
struct softib_mcg *softib_mcg_create(struct softib_dev *sdev,
				     const union ib_gid *mgid, u32 qkey,
				     u16 pkey, u8 mtu, u8 rate, u8 sl,
				     u8 tclass, u32 flow_label, u8 hop_limit,
				     bool permanent);
void softib_mcg_free(struct softib_dev *sdev, struct softib_mcg *g);

/* policy.c */
#define SOFTIB_POLICY_MAX	65536
int softib_policy_set(struct softib_dev *sdev, const char *text, size_t len);

/* selftest.c */
int softib_selftest(struct softib_dev *sdev, const char *name);
int softib_bench(struct softib_dev *sdev, char *cmd, char *out,
		 size_t len);

/* offload.c: IPoIB checksum offload and LSO on UD QPs */
#define SOFTIB_LSO_HDR_MAX	128	/* IPoIB + IPv4/IPv6 + TCP, options too */
extern bool softib_offloads;

/* a TCP/UDP datagram inside an IPoIB frame (message offsets) */
struct softib_csum {
	bool v6;
	u8 proto;
	u32 l4off;
	u32 l4len;
	u32 field;		/* the checksum's offset in the L4 header */
	bool ip_ok;		/* IPv4 header checksum good (IPv6: true) */
	__be32 saddr4, daddr4;
	struct in6_addr saddr6, daddr6;
};

/* an LSO WQE's header: after the largest gather list the ring takes */
static inline u8 *softib_swqe_lso_hdr(const struct softib_qp *qp,
				      const struct softib_swqe *wqe)
{
	return (u8 *)&wqe->sge[qp->sq.max_sge];
}

bool softib_sg_read(const struct ib_sge *sg, u32 n, u32 off, void *buf,
		    u32 len);
bool softib_csum_parse(const struct ib_sge *sg, u32 nsge, u32 msglen,
		       struct softib_csum *cs);
int softib_csum_finish(const struct softib_csum *cs, const struct ib_sge *dst,
		       u32 ndst, u32 off, __wsum sum, bool fill);
int softib_lso_post(struct softib_qp *qp, struct softib_swqe *wqe,
		    const struct ib_ud_wr *ud);
/* where an LSO send is built: the header template, a segment, its header */
struct softib_lso_buf {
	const u8 *tmpl;
	struct softib_swqe *seg;
	u8 *hdr;
};

enum ib_wc_status softib_lso_send(struct softib_qp *qp,
				  const struct softib_swqe *wqe,
				  const struct softib_lso_buf *buf,
				  enum ib_wc_status (*xmit)(struct softib_qp *,
							    const struct softib_swqe *));
enum ib_wc_status softib_send_ud(struct softib_qp *qp,
				 const struct softib_swqe *wqe,
				 const struct softib_lso_buf *buf);
int softib_lso_init(struct softib_qp *qp);
void softib_lso_free(struct softib_qp *qp);

/* fabric.c, for rdma_netdev.c */
int softib_recv_copy(const struct softib_pkt *pkt, struct softib_qp *dqp,
		     struct softib_port *dport, const struct ib_sge *dst,
		     u32 ndst, int pkey_index, u32 hdr, struct ib_wc *wc);

/* rdma_netdev.c */
extern bool softib_enhanced;
bool softib_rn_can_recv(struct softib_qp *qp);
int softib_rn_get_params(struct ib_device *ibdev, u32 port_num,
			 enum rdma_netdev_t type,
			 struct rdma_netdev_alloc_params *params);
void softib_rn_recv(const struct softib_pkt *pkt, struct softib_qp *dqp,
		    struct softib_port *dport, int pkey_index);

/* fault.c */
void softib_fault_init(struct softib_dev *sdev);
bool softib_fault_post_srq(struct softib_dev *sdev);
bool softib_fault_create_qp(struct softib_dev *sdev);

/* inject.c */
extern const struct file_operations softib_inject_fops;

/* vnode.c */
extern unsigned int softib_vnodes;
extern bool softib_vnode_cm;
extern u32 softib_vnode_qkey;

/* where a virtual node's answer goes */
struct softib_vnode_to {
	u16 lid;
	u32 qpn;
	u32 qkey;
};

int softib_vnode_setup(void);
void softib_vnode_make_gid(u32 i, union ib_gid *gid);
void softib_vnode_send(const struct softib_pkt *req, u32 i, u32 src_qpn,
		       const struct softib_vnode_to *to, void *buf, u32 len);
u8 *softib_vnode_copy(const struct softib_pkt *req, u32 max, u32 *len);
bool softib_vnode_ipv4(const struct softib_pkt *req, u32 i,
		       const struct softib_vnode_to *to, u8 *buf, u32 len);
bool softib_vnode_lid(u16 lid, u32 *i);
bool softib_vnode_gid(const union ib_gid *gid, u32 *i);
void softib_vnode_recv(const struct softib_pkt *req, u32 i);
void softib_vnode_recv_mcast(const struct softib_pkt *req,
			     const union ib_gid *mgid);
int softib_vnode_show(struct seq_file *m, struct softib_dev *sdev);

/* vnode_cm.c */
int softib_vnode_cm_setup(void);
void softib_vnode_cm_cleanup(void);
void softib_vnode_cm_recv(const struct softib_pkt *req, u32 i);
int softib_vnode_rc_recv(const struct softib_pkt *pkt, u32 i, u32 dqpn);

/* sm.c: the fabric's one subnet manager */
int softib_sm_check_params(void);
u8 softib_sm_hs_priority(void);
bool softib_sm_is_master(struct softib_dev *sdev);
u16 softib_sm_info(struct softib_dev *sdev, const struct ib_smp *req,
		   struct ib_smp *resp);
void softib_sm_mft_update(struct softib_dev *sdev, u16 mlid);
void softib_sm_peers_changed(struct softib_dev *sdev);
void softib_sm_init(struct softib_dev *sdev);
void softib_sm_stop(struct softib_dev *sdev);

/* link.c */
struct softib_link *softib_link_prepare(void);
u32 softib_link_npeers(const struct softib_link *link);
u32 softib_link_sm_master(struct softib_dev *sdev, u8 prio, u64 guid,
			  u32 *gen);
u64 softib_link_sm_nodes(struct softib_dev *sdev);
bool softib_link_closing(struct softib_dev *sdev);
struct sk_buff *softib_link_alloc(unsigned int payload, gfp_t gfp);
bool softib_link_node_up(struct softib_dev *sdev, u32 node);
u32 softib_link_port_node(struct softib_dev *sdev, u32 idx);
void softib_link_send_ib(struct softib_dev *sdev, u32 node,
			 struct sk_buff *skb, u8 flags);
int softib_link_send_ib_list(struct softib_dev *sdev, u32 node,
			     struct sk_buff_head *list, bool control);
u32 softib_link_path_mtu(struct softib_dev *sdev);
u32 softib_link_queue_max(void);

/* rc_remote.c: RC between nodes */
int softib_rcr_create(struct softib_qp *qp, u32 max_recv_sge);
void softib_rcr_reset(struct softib_qp *qp, bool to_err);
void softib_rcr_destroy(struct softib_qp *qp);
int softib_rcr_send(struct softib_qp *qp, const struct softib_swqe *wqe,
		    u16 pkey, u32 node, u32 *rnr_usec);
bool softib_rcr_recv(struct softib_dev *sdev, struct sk_buff *skb,
		     unsigned int bth);

/* wire.c: IB packets between nodes: LRH, GRH, BTH, DETH, ImmDt */
#define SOFTIB_WIRE_HDR_MAX	72
bool softib_wire_lid_node(struct softib_dev *sdev, u16 lid, u32 *node);
bool softib_wire_gid_lid(struct softib_dev *sdev, const union ib_gid *gid,
			 u16 *lid);
bool softib_wire_gid_port(const union ib_gid *gid, u32 *node, u32 *num);
void softib_wire_lid_gid(u16 lid, union ib_gid *gid);
void softib_wire_send(const struct softib_pkt *pkt, u32 node);
bool softib_wire_recv(struct softib_dev *sdev, struct sk_buff *skb,
		      u8 flags, u32 link_idx);
int softib_link_start(struct softib_dev *sdev, struct softib_link *link);
void softib_link_stop(struct softib_dev *sdev);
void softib_link_discard(struct softib_link *link);

/* debugfs.c */
void softib_debugfs_init(struct softib_dev *sdev);
void softib_debugfs_cleanup(struct softib_dev *sdev);

#endif /* SOFTIB_H */
