// SPDX-License-Identifier: GPL-2.0
/*
 * ipoib-ng: module entry, the ib_client that creates one interface per
 * InfiniBand port, the net_device operations, sysfs attributes and IB
 * event handling. rtnetlink is in netlink.c, ethtool in ethtool.c.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/if_arp.h>
#include <linux/module.h>
#include <linux/rtnetlink.h>
#include <linux/slab.h>
#include <net/rtnetlink.h>
#include <net/sch_generic.h>

#include "ipoib.h"

unsigned int ipoib_send_queue_size = 128;
unsigned int ipoib_recv_queue_size = 256;
unsigned int ipoib_debug_level;

static const struct ipoib_param_range ipoib_send_queue_size_range =
	IPOIB_PARAM_RANGE(ipoib_send_queue_size, IPOIB_MIN_SEND_QUEUE,
			  IPOIB_MAX_QUEUE_SIZE);
module_param_cb(send_queue_size, &ipoib_param_range_ops, (void *)&ipoib_send_queue_size_range,
		0444);
__MODULE_PARM_TYPE(send_queue_size, "uint");
MODULE_PARM_DESC(send_queue_size, "Number of descriptors in send queue (128-8192, power of two)");
static const struct ipoib_param_range ipoib_recv_queue_size_range =
	IPOIB_PARAM_RANGE(ipoib_recv_queue_size, IPOIB_MIN_RECV_QUEUE,
			  IPOIB_MAX_QUEUE_SIZE);
module_param_cb(recv_queue_size, &ipoib_param_range_ops, (void *)&ipoib_recv_queue_size_range,
		0444);
__MODULE_PARM_TYPE(recv_queue_size, "uint");
MODULE_PARM_DESC(recv_queue_size, "Number of descriptors in receive queue (2-8192)");
module_param_named(debug_level, ipoib_debug_level, uint, 0644);
MODULE_PARM_DESC(debug_level, "Enable debug tracing if > 0");

struct workqueue_struct *ipoib_wq;
struct workqueue_struct *ipoib_reap_wq;
struct ib_sa_client ipoib_sa_client;

/* One HCA we are attached to: its IPoIB interfaces and event handler. */
struct ipoib_hca {
	struct ib_device *ca;
	spinlock_t lock;		/* privs: add_one vs. the event handler */
	struct list_head privs;
	struct ib_event_handler event_handler;
};

static const char * const ipoib_reason_names[] = {
	[IPOIB_CARRIER_DOWN] = "down",
	[IPOIB_CARRIER_PORT_DOWN] = "port-down",
	[IPOIB_CARRIER_PKEY_ABSENT] = "pkey-absent",
	[IPOIB_CARRIER_JOIN_PENDING] = "join-pending",
	[IPOIB_CARRIER_JOIN_FAILED] = "join-failed",
	[IPOIB_CARRIER_UP] = "up",
};

/*
 * Record why the interface has (no) carrier and let carrier_work apply it
 * under rtnl. Callable from any context.
 */
void ipoib_set_reason(struct ipoib_dev_priv *priv,
		      enum ipoib_carrier_reason reason, int status)
{
	unsigned long flags;

	spin_lock_irqsave(&priv->lock, flags);
	priv->reason = reason;
	priv->reason_status = status;
	spin_unlock_irqrestore(&priv->lock, flags);
	queue_work(ipoib_wq, &priv->carrier_work);
}

static void ipoib_carrier_work(struct work_struct *work)
{
	struct ipoib_dev_priv *priv = container_of(work, struct ipoib_dev_priv,
						   carrier_work);
	struct net_device *dev = priv->dev;
	bool up;

	rtnl_lock();
	up = netif_running(dev) && READ_ONCE(priv->reason) == IPOIB_CARRIER_UP;
	if (up) {
		unsigned int admin = priv->admin_mtu;

		/* the broadcast group decides the datagram MTU; keep the admin's */
		if (!priv->cm_mode) {
			dev_set_mtu(dev, min(admin, priv->mcast_mtu));
			priv->admin_mtu = admin;
		}
		netif_carrier_on(dev);
		if (priv->notify_peers)
			mod_delayed_work(ipoib_wq, &priv->notify_work, 0);
	} else {
		netif_carrier_off(dev);
	}
	rtnl_unlock();
}

/*
 * The hardware address changed (a new QP): tell the peers, whose
 * neighbour entries hold the old QPN, by gratuitous ARP and unsolicited
 * neighbour advertisements, IPOIB_NOTIFY_PEERS times a second apart: they
 * are datagrams, which a peer's full receive ring drops (most likely
 * just then, as TCP resends a window), and a peer that missed them all
 * would send into the void until its entry goes stale. Not before
 * linkwatch has let the queue out of the noop qdisc the carrier loss put
 * it in: that would drop them.
 */
static void ipoib_notify_work(struct work_struct *work)
{
	struct ipoib_dev_priv *priv = container_of(to_delayed_work(work),
						   struct ipoib_dev_priv,
						   notify_work);
	struct net_device *dev = priv->dev;

	rtnl_lock();
	if (!priv->notify_peers || !netif_running(dev) ||
	    !netif_carrier_ok(dev))
		goto out;	/* the next carrier_work brings it back */
	if (qdisc_tx_is_noop(dev)) {
		/* linkwatch runs soon: it needs rtnl, which we give back */
		queue_delayed_work(ipoib_wq, &priv->notify_work, HZ / 50);
		goto out;
	}
	__netdev_notify_peers(dev);
	if (--priv->notify_peers)
		queue_delayed_work(ipoib_wq, &priv->notify_work, HZ);
out:
	rtnl_unlock();
}

/* The broadcast address: QPN 0xffffff, MGID ff12:401b:<pkey>::ffff:ffff. */
static void ipoib_set_broadcast(struct ipoib_dev_priv *priv)
{
	static const u8 bcast[INFINIBAND_ALEN] = {
		0x00, 0xff, 0xff, 0xff, 0xff, 0x12, 0x40, 0x1b, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff };
	struct net_device *dev = priv->dev;

	memcpy(dev->broadcast, bcast, INFINIBAND_ALEN);
	dev->broadcast[8] = priv->pkey >> 8;
	dev->broadcast[9] = priv->pkey & 0xff;
}

/*
 * Flags, QPN and GID. The QPN is our UD QP's, or on an enhanced interface
 * the provider's, which its ndo_init wrote (bytes 1-3 are kept).
 */
static void ipoib_set_hwaddr(struct ipoib_dev_priv *priv)
{
	u8 addr[INFINIBAND_ALEN];
	u32 qpn = priv->enhanced ? ipoib_ud_qpn(priv) : priv->qp->qp_num;

	addr[0] = IPOIB_FLAGS_RC;	/* we accept connections in either mode */
	addr[1] = qpn >> 16;
	addr[2] = qpn >> 8;
	addr[3] = qpn;
	memcpy(addr + 4, &priv->local_gid, sizeof(priv->local_gid));
	dev_addr_set(priv->dev, addr);
}

/*
 * Learn what the port says now: state, LID, GID, MTU and the parent's
 * P_Key (table index 0). Returns the carrier reason it implies.
 */
static enum ipoib_carrier_reason ipoib_query_port(struct ipoib_dev_priv *priv)
{
	struct ib_port_attr attr;
	u16 pkey;

	ASSERT_RTNL();
	if (ib_query_port(priv->ca, priv->port, &attr))
		return IPOIB_CARRIER_PORT_DOWN;
	priv->local_lid = attr.lid;
	priv->max_ib_mtu = ib_mtu_enum_to_int(attr.max_mtu);
	if (!rdma_query_gid(priv->ca, priv->port, 0, &priv->local_gid))
		ipoib_set_hwaddr(priv);
	/* a parent's P_Key is whatever table index 0 holds now */
	if (!priv->parent && !ib_query_pkey(priv->ca, priv->port, 0, &pkey) &&
	    pkey) {
		priv->pkey = pkey | 0x8000;
		ipoib_set_broadcast(priv);
	}
	if (attr.state != IB_PORT_ACTIVE)
		return IPOIB_CARRIER_PORT_DOWN;
	if (ib_find_pkey(priv->ca, priv->port, priv->pkey, &priv->pkey_index))
		return IPOIB_CARRIER_PKEY_ABSENT;
	return IPOIB_CARRIER_JOIN_PENDING;
}

/* Start the datapath if the port allows it; admin-up either way. */
static void ipoib_start(struct ipoib_dev_priv *priv)
{
	enum ipoib_carrier_reason reason;
	int ret;

	ASSERT_RTNL();
	reason = ipoib_query_port(priv);
	if (reason == IPOIB_CARRIER_PKEY_ABSENT)
		net_warn_ratelimited("%s: P_Key 0x%04x is not in port %u's table: the subnet manager's partitions.conf must list 0x%04x for port GUID 0x%016llx\n",
				     priv->dev->name, priv->pkey, priv->port,
				     priv->pkey & 0x7fff,
				     be64_to_cpu(priv->local_gid.global.interface_id));
	if (reason != IPOIB_CARRIER_JOIN_PENDING) {
		ipoib_set_reason(priv, reason, 0);
		return;
	}
	if (ipoib_transport_up(priv)) {
		ipoib_set_reason(priv, IPOIB_CARRIER_PORT_DOWN, 0);
		return;
	}
	ret = ipoib_cm_start(priv);
	if (ret)
		netdev_warn(priv->dev, "cannot listen for connections (%d): peers use datagrams\n",
			    ret);
	ipoib_set_reason(priv, IPOIB_CARRIER_JOIN_PENDING, 0);
	WRITE_ONCE(priv->tx_halted, false);
	netif_tx_start_all_queues(priv->dev);
	ipoib_mcast_start(priv);
	ipoib_path_gc_start(priv);
}

static void ipoib_halt(struct ipoib_dev_priv *priv)
{
	ASSERT_RTNL();
	netif_carrier_off(priv->dev);
	/*
	 * Stopped for good: the send NAPI, still running while connections
	 * drain, must not wake the queue, or xmit would make paths and
	 * connections (QPs on the CQs) after ipoib_flush_paths() below
	 */
	WRITE_ONCE(priv->tx_halted, true);
	netif_tx_disable(priv->dev);
	ipoib_mcast_stop(priv);
	cancel_delayed_work_sync(&priv->gc_work);
	/* the flush below takes every path off path_stale */
	cancel_delayed_work_sync(&priv->path_reval_work);
	/* connections need NAPI to drain: before the transport goes */
	ipoib_flush_paths(priv);
	ipoib_cm_stop(priv);
	ipoib_transport_down(priv);
}

static int ipoib_open(struct net_device *dev)
{
	ipoib_start(ipoib_priv(dev));
	return 0;
}

static int ipoib_stop(struct net_device *dev)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);

	ipoib_halt(priv);
	ipoib_set_reason(priv, IPOIB_CARRIER_DOWN, 0);
	return 0;
}

/*
 * ethtool -G: rings of other sizes. A running interface stops (its
 * connections close; peers connect again), gets the new rings and QP and
 * starts again. The QPN in the hardware address is new: the stack hears
 * of it at once, the peers once the carrier is back (ipoib_notify_work).
 * A refusal leaves the old rings and QP, and the interface runs on.
 */
int ipoib_set_rings(struct ipoib_dev_priv *priv, unsigned int tx_size,
		    unsigned int rx_size)
{
	bool running = netif_running(priv->dev);
	int ret;

	ASSERT_RTNL();
	if (running)
		ipoib_halt(priv);
	/* the stopped connections' QPs hold the CQs: they go first */
	ipoib_cm_reap(priv);
	ret = ipoib_transport_resize(priv, tx_size, rx_size);
	if (!ret) {
		ipoib_set_hwaddr(priv);
		call_netdevice_notifiers(NETDEV_CHANGEADDR, priv->dev);
		priv->notify_peers = IPOIB_NOTIFY_PEERS;
	}
	if (running)
		ipoib_start(priv);
	return ret;
}

/*
 * React to the IB events recorded in "events" as lightly as possible: a
 * P_Key table change restarts only an interface whose P_Key moved or went
 * (or came back), and changes nothing else (the paths do not depend on
 * the other entries); an SM change or a reregistration only asks the SA
 * again for the paths, at a bounded rate, while traffic keeps flowing on
 * them (the SA layer tells our joins to rejoin by itself). A port, LID or
 * GID change restarts the datapath.
 */
static void ipoib_restart(struct ipoib_dev_priv *priv, unsigned long events)
{
	u16 index;

	ASSERT_RTNL();
	if (!netif_running(priv->dev))
		return;
	ipoib_dbg(priv, "IB event:%s%s%s%s\n",
		  events & BIT(IPOIB_EV_RESTART) ? " port/LID/GID change" : "",
		  events & BIT(IPOIB_EV_PKEY) ? " P_Key table change" : "",
		  events & BIT(IPOIB_EV_FLUSH) ? " SM change/reregister" : "",
		  events & BIT(IPOIB_EV_TX_TIMEOUT) ? " transmit timeout" : "");
	if (!(events & (BIT(IPOIB_EV_RESTART) | BIT(IPOIB_EV_TX_TIMEOUT))) &&
	    priv->transport_up) {
		if (events & BIT(IPOIB_EV_PKEY)) {
			u16 pkey = 0;

			if (!priv->parent)
				ib_query_pkey(priv->ca, priv->port, 0, &pkey);
			if ((priv->parent || (pkey | 0x8000) == priv->pkey) &&
			    !ib_find_pkey(priv->ca, priv->port, priv->pkey, &index) &&
			    index == priv->pkey_index)
				events &= ~BIT(IPOIB_EV_PKEY);
		}
		if (!(events & BIT(IPOIB_EV_PKEY))) {
			if (events & BIT(IPOIB_EV_FLUSH))
				ipoib_paths_revalidate(priv);
			return;
		}
	}
	ipoib_halt(priv);
	ipoib_start(priv);
}

/* Port events arrive for the parent; its children share the port. */
static void ipoib_restart_work(struct work_struct *work)
{
	struct ipoib_dev_priv *priv = container_of(work, struct ipoib_dev_priv,
						   restart_work);
	struct ipoib_dev_priv *child;
	unsigned long events = xchg(&priv->pending_events, 0);

	rtnl_lock();
	ipoib_restart(priv, events);
	/* a transmit timeout is this interface's own */
	events &= ~BIT(IPOIB_EV_TX_TIMEOUT);
	if (events)
		list_for_each_entry(child, &priv->children, child_node)
			ipoib_restart(child, events);
	rtnl_unlock();
}

/*
 * dev_watchdog: the queue has been stopped for IPOIB_TX_TIMEOUT with no
 * send, so the HCA completes none of ours (a send queue that hangs). Only
 * a new datapath helps: restart the interface, as a port event does; its
 * teardown gives up on the sends after 5 s and resets the QP. Softirq.
 */
static void ipoib_tx_timeout(struct net_device *dev, unsigned int txqueue)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);
	struct rdma_netdev *rn = netdev_priv(dev);

	/*
	 * An enhanced interface's queue that our connections' sends do not
	 * hold stopped: the provider's own recovery, where it has one
	 */
	if (priv->enhanced && rn->tx_timeout &&
	    (txqueue || READ_ONCE(priv->global_head) ==
			READ_ONCE(priv->global_tail))) {
		rn->tx_timeout(dev, txqueue);
		return;
	}

	netdev_warn(dev, "no send completed for %u ms with %u in flight: restarting the interface\n",
		    jiffies_to_msecs(IPOIB_TX_TIMEOUT),
		    READ_ONCE(priv->global_head) - READ_ONCE(priv->global_tail));
	WRITE_ONCE(priv->tx_timeouts, priv->tx_timeouts + 1);
	set_bit(IPOIB_EV_TX_TIMEOUT, &priv->pending_events);
	queue_work(ipoib_wq, &priv->restart_work);
}

static netdev_tx_t ipoib_start_xmit(struct sk_buff *skb,
				    struct net_device *dev)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);
	u8 daddr[INFINIBAND_ALEN];

	if (skb->len < IPOIB_HARD_LEN) {
		DEV_STATS_INC(dev, tx_dropped);
		dev_kfree_skb_any(skb);
		goto out;
	}
	memcpy(daddr, skb->data, INFINIBAND_ALEN);
	skb_pull(skb, IPOIB_PSEUDO_LEN);

	if (ipoib_is_mcast_addr(daddr))
		ipoib_mcast_xmit(priv, skb, daddr);
	else
		ipoib_unicast_xmit(priv, skb, daddr);
out:
	/*
	 * The burst is over, or the queue was stopped (by a connected-mode
	 * send too) and no more packets come: post the UD sends that
	 * waited for a later one (ipoib_send()).
	 */
	if (!netdev_xmit_more() || netif_queue_stopped(dev))
		ipoib_tx_flush(priv);
	return NETDEV_TX_OK;
}

/*
 * An enhanced interface's provider sizes its receive buffers by the
 * datagram MTU: it hears of each change, as in-tree tells it (in
 * connected mode the datagrams stay at the broadcast group's).
 */
static int ipoib_rn_mtu(struct ipoib_dev_priv *priv, unsigned int mtu)
{
	if (!priv->enhanced || !priv->rn_ops->ndo_change_mtu)
		return 0;
	return priv->rn_ops->ndo_change_mtu(priv->dev, mtu);
}

static int ipoib_change_mtu(struct net_device *dev, int new_mtu)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);
	int ret;

	if (priv->cm_mode) {
		ret = ipoib_rn_mtu(priv, priv->mcast_mtu);
		if (ret)
			return ret;
		/* anything RC carries; UD peers get ICMP "too big" */
		dev->mtu = new_mtu;
		return 0;
	}
	if (new_mtu > IPOIB_UD_MTU(priv->max_ib_mtu)) {
		netdev_info(dev, "MTU %d is above the datagram maximum %u (connected mode allows %u)\n",
			    new_mtu, IPOIB_UD_MTU(priv->max_ib_mtu),
			    IPOIB_CM_MTU);
		return -EINVAL;
	}
	ret = ipoib_rn_mtu(priv, min_t(unsigned int, new_mtu, priv->mcast_mtu));
	if (ret)
		return ret;
	priv->admin_mtu = new_mtu;
	/* effective MTU: what both the admin and the broadcast group allow */
	dev->mtu = min_t(unsigned int, new_mtu, priv->mcast_mtu);
	return 0;
}

/* RC sends carry no offload: connected mode checksums in software */
static netdev_features_t ipoib_fix_features(struct net_device *dev,
					    netdev_features_t features)
{
	if (READ_ONCE(ipoib_priv(dev)->cm_mode))
		features &= ~(NETIF_F_IP_CSUM | NETIF_F_IPV6_CSUM |
			      NETIF_F_TSO | NETIF_F_TSO6);
	return features;
}

/*
 * Enhanced: the stack spreads datagrams over the provider's queues. In
 * connected mode every packet takes queue 0, whose lock serializes our
 * RC sends as the one queue of our own datapath does (ipoib_cm_wanted()).
 */
static u16 ipoib_select_queue(struct net_device *dev, struct sk_buff *skb,
			      struct net_device *sb_dev)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);

	if (!priv->enhanced || READ_ONCE(priv->cm_mode))
		return 0;
	return netdev_pick_tx(dev, skb, sb_dev);
}

/*
 * Counters: the provider's queues count the datagrams of an enhanced
 * interface, ours what went over connections and what we dropped.
 */
static void ipoib_get_stats64(struct net_device *dev,
			      struct rtnl_link_stats64 *stats)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);
	const struct net_device_stats *ns = &dev->stats;

	if (!priv->enhanced || !priv->rn_ops->ndo_get_stats64) {
		netdev_stats_to_stats64(stats, ns);
		return;
	}
	priv->rn_ops->ndo_get_stats64(dev, stats);
	stats->rx_packets += READ_ONCE(ns->rx_packets);
	stats->rx_bytes += READ_ONCE(ns->rx_bytes);
	stats->tx_packets += READ_ONCE(ns->tx_packets);
	stats->tx_bytes += READ_ONCE(ns->tx_bytes);
	stats->multicast += READ_ONCE(ns->multicast);
	stats->rx_length_errors += READ_ONCE(ns->rx_length_errors);
	stats->rx_errors += READ_ONCE(ns->rx_errors);
	stats->rx_dropped += READ_ONCE(ns->rx_dropped);
	stats->tx_dropped += READ_ONCE(ns->tx_dropped);
	stats->tx_errors += READ_ONCE(ns->tx_errors);
}

/* hardware timestamping and the like are the provider's (mlx5) */
static int ipoib_eth_ioctl(struct net_device *dev, struct ifreq *ifr, int cmd)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);

	if (!priv->enhanced || !priv->rn_ops->ndo_eth_ioctl)
		return -EOPNOTSUPP;
	return priv->rn_ops->ndo_eth_ioctl(dev, ifr, cmd);
}

static void ipoib_set_rx_mode(struct net_device *dev)
{
	queue_work(ipoib_wq, &ipoib_priv(dev)->rx_mode_work);
}

/* children report their parent as link (ip link shows "ib0.8001@ib0") */
static int ipoib_get_iflink(const struct net_device *dev)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);

	return priv->parent ? priv->parent->dev->ifindex : dev->ifindex;
}

/* Enhanced: the provider's QP and queues, and the QPN in the address. */
static int ipoib_init(struct net_device *dev)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);

	if (!priv->enhanced || !priv->rn_ops->ndo_init)
		return 0;
	return priv->rn_ops->ndo_init(dev);
}

/*
 * NAPI goes off the lists before unregistration's last grace period.
 * The interface is down, its groups left (ipoib_halt()): the provider's
 * QP can go.
 */
static void ipoib_uninit(struct net_device *dev)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);

	ipoib_napi_unlist(priv);
	if (priv->enhanced && priv->rn_ops->ndo_uninit)
		priv->rn_ops->ndo_uninit(dev);
}

const struct net_device_ops ipoib_netdev_ops = {
	.ndo_init = ipoib_init,
	.ndo_uninit = ipoib_uninit,
	.ndo_select_queue = ipoib_select_queue,
	.ndo_get_stats64 = ipoib_get_stats64,
	.ndo_eth_ioctl = ipoib_eth_ioctl,
	.ndo_get_iflink = ipoib_get_iflink,
	.ndo_open = ipoib_open,
	.ndo_stop = ipoib_stop,
	.ndo_start_xmit = ipoib_start_xmit,
	.ndo_change_mtu = ipoib_change_mtu,
	.ndo_set_rx_mode = ipoib_set_rx_mode,
	.ndo_tx_timeout = ipoib_tx_timeout,
	.ndo_fix_features = ipoib_fix_features,
};

static int ipoib_hard_header(struct sk_buff *skb, struct net_device *dev,
			     unsigned short type, const void *daddr,
			     const void *saddr, unsigned int len)
{
	struct ipoib_header *hdr;

	hdr = skb_push(skb, sizeof(*hdr));
	hdr->proto = htons(type);
	hdr->reserved = 0;
	/* the destination rides in front until ndo_start_xmit */
	if (daddr)
		memcpy(skb_push(skb, IPOIB_PSEUDO_LEN), daddr, INFINIBAND_ALEN);
	else
		memset(skb_push(skb, IPOIB_PSEUDO_LEN), 0, INFINIBAND_ALEN);
	return IPOIB_HARD_LEN;
}

static const struct header_ops ipoib_header_ops = {
	.create = ipoib_hard_header,
};

static ssize_t carrier_reason_show(struct device *d,
				   struct device_attribute *attr, char *buf)
{
	struct ipoib_dev_priv *priv = ipoib_priv(to_net_dev(d));
	enum ipoib_carrier_reason reason;
	unsigned long flags;
	int status;

	spin_lock_irqsave(&priv->lock, flags);
	reason = priv->reason;
	status = priv->reason_status;
	spin_unlock_irqrestore(&priv->lock, flags);
	if (reason == IPOIB_CARRIER_JOIN_FAILED)
		return sysfs_emit(buf, "%s %d\n", ipoib_reason_names[reason],
				  status);
	return sysfs_emit(buf, "%s\n", ipoib_reason_names[reason]);
}
static DEVICE_ATTR_RO(carrier_reason);

static ssize_t pkey_show(struct device *d, struct device_attribute *attr,
			 char *buf)
{
	return sysfs_emit(buf, "0x%04x\n", ipoib_priv(to_net_dev(d))->pkey);
}
static DEVICE_ATTR_RO(pkey);

static ssize_t mode_show(struct device *d, struct device_attribute *attr,
			 char *buf)
{
	return sysfs_emit(buf, "%s\n", READ_ONCE(ipoib_priv(to_net_dev(d))->cm_mode) ?
			  "connected" : "datagram");
}

static ssize_t mode_store(struct device *d, struct device_attribute *attr,
			  const char *buf, size_t count)
{
	struct net_device *dev = to_net_dev(d);
	bool connected;
	int ret;

	ret = ipoib_may_configure(dev, "mode");
	if (ret)
		return ret;
	/* in-tree's spelling: exactly "connected\n" or "datagram\n" */
	if (!strcmp(buf, "connected\n"))
		connected = true;
	else if (!strcmp(buf, "datagram\n"))
		connected = false;
	else
		return -EINVAL;
	/* sysfs removal waits for us under rtnl: never block on it here */
	if (!rtnl_trylock())
		return restart_syscall();
	if (dev->reg_state == NETREG_REGISTERED)
		ipoib_set_mode(ipoib_priv(dev), connected);
	rtnl_unlock();
	return count;
}
static DEVICE_ATTR_RW(mode);

static ssize_t umcast_show(struct device *d, struct device_attribute *attr,
			   char *buf)
{
	return sysfs_emit(buf, "%d\n", ipoib_priv(to_net_dev(d))->umcast);
}

static ssize_t umcast_store(struct device *d, struct device_attribute *attr,
			    const char *buf, size_t count)
{
	struct net_device *dev = to_net_dev(d);
	unsigned long v;
	int ret;

	ret = ipoib_may_configure(dev, "umcast");
	if (ret)
		return ret;
	/* as in-tree: non-zero means on, anything else off; no other error */
	if (kstrtoul(buf, 0, &v))
		v = 0;
	WRITE_ONCE(ipoib_priv(dev)->umcast, !!v);
	return count;
}
static DEVICE_ATTR_RW(umcast);

static struct attribute *ipoib_attrs[] = {
	&dev_attr_carrier_reason.attr,
	&dev_attr_pkey.attr,
	&dev_attr_mode.attr,
	&dev_attr_umcast.attr,
	&dev_attr_create_child.attr,
	&dev_attr_delete_child.attr,
	&dev_attr_parent.attr,
	NULL,
};

/*
 * One group for every interface (the core owns the other sysfs_groups
 * slots): create_child/delete_child on parents, parent on sysfs children.
 */
static umode_t ipoib_attr_visible(struct kobject *kobj, struct attribute *a,
				  int n)
{
	struct ipoib_dev_priv *priv = ipoib_priv(to_net_dev(kobj_to_dev(kobj)));

	if (a == &dev_attr_create_child.attr || a == &dev_attr_delete_child.attr)
		return priv->parent ? 0 : a->mode;
	if (a == &dev_attr_parent.attr)
		return priv->sysfs_child ? a->mode : 0;
	return a->mode;
}

const struct attribute_group ipoib_attr_group = {
	.attrs = ipoib_attrs,
	.is_visible = ipoib_attr_visible,
};

void ipoib_setup(struct net_device *dev)
{
	dev->netdev_ops = &ipoib_netdev_ops;
	dev->header_ops = &ipoib_header_ops;
	dev->ethtool_ops = &ipoib_ethtool_ops;
	dev->type = ARPHRD_INFINIBAND;
	dev->addr_len = INFINIBAND_ALEN;
	dev->hard_header_len = IPOIB_HARD_LEN;
	dev->flags = IFF_BROADCAST | IFF_MULTICAST;
	dev->features = NETIF_F_VLAN_CHALLENGED | NETIF_F_HIGHDMA;
	/* ICMP "too big" (connected mode) needs the route of the packet */
	netif_keep_dst(dev);
	dev->min_mtu = IPOIB_MIN_MTU;
	dev->mtu = IPOIB_UD_MTU(2048);
	dev->watchdog_timeo = IPOIB_TX_TIMEOUT;
	dev->tx_queue_len = ipoib_send_queue_size * 2;
	dev->sysfs_groups[0] = &ipoib_attr_group;
}

void ipoib_priv_init(struct ipoib_dev_priv *priv, struct net_device *dev,
		     struct ib_device *ca, u32 port)
{
	priv->dev = dev;
	priv->ca = ca;
	priv->port = port;
	priv->pkey = 0xffff;
	priv->reason = IPOIB_CARRIER_DOWN;
	priv->mcast_mtu = IPOIB_UD_MTU(2048);
	spin_lock_init(&priv->lock);
	INIT_LIST_HEAD(&priv->children);
	INIT_LIST_HEAD(&priv->child_node);
	hash_init(priv->paths);
	INIT_LIST_HEAD(&priv->mcasts);
	hash_init(priv->mcast_hash);
	INIT_DELAYED_WORK(&priv->mcast_work, ipoib_mcast_work);
	INIT_DELAYED_WORK(&priv->gc_work, ipoib_path_gc_work);
	ipoib_path_init(priv);
	ipoib_cm_init(priv);
	INIT_WORK(&priv->carrier_work, ipoib_carrier_work);
	INIT_DELAYED_WORK(&priv->notify_work, ipoib_notify_work);
	INIT_WORK(&priv->restart_work, ipoib_restart_work);
	INIT_WORK(&priv->rx_mode_work, ipoib_rx_mode_work);
	ipoib_napi_add(priv);
}

/*
 * Verbs resources, port facts and registration of an initialised
 * interface (parent or child). Under rtnl; on error nothing is left but
 * the netdev memory, which the caller owns.
 */
int ipoib_register(struct ipoib_dev_priv *priv)
{
	struct net_device *dev = priv->dev;
	int ret;

	ASSERT_RTNL();
	ret = ipoib_rn_attach(priv);
	if (ret)
		return ret;
	ret = ipoib_transport_init(priv);
	if (ret)
		goto err_rn_free;
	ipoib_query_port(priv);
	ipoib_set_broadcast(priv);
	priv->admin_mtu = IPOIB_UD_MTU(priv->max_ib_mtu);
	dev->max_mtu = IPOIB_CM_MTU;
	if (priv->max_send_sge > 1) {
		dev->hw_features |= NETIF_F_SG;
		dev->features |= NETIF_F_SG;
	}
	/*
	 * What the HCA offloads on UD, taken as in-tree takes it: IPv4
	 * checksums both ways, and TSO with an LSO QP (an rdma_netdev set
	 * its own). Connected mode turns them off (ipoib_fix_features).
	 */
	if (!priv->enhanced &&
	    priv->ca->attrs.device_cap_flags & IB_DEVICE_UD_IP_CSUM) {
		dev->hw_features |= NETIF_F_IP_CSUM | NETIF_F_RXCSUM;
		if (priv->lso)
			dev->hw_features |= NETIF_F_TSO;
		dev->features |= dev->hw_features;
	}
	/* no carrier until the broadcast group is joined (operstate follows) */
	netif_carrier_off(dev);
	ret = register_netdevice(dev);
	if (ret)
		goto err_transport_cleanup;
	ipoib_debugfs_add(priv);
	return 0;

err_transport_cleanup:
	ipoib_transport_cleanup(priv);
err_rn_free:
	ipoib_rn_free(priv);
	return ret;
}

/*
 * After unregistration: 1. no work item may run any more (they all use the
 * QP), 2. leave what is left of multicast, 3. the verbs objects go.
 */
void ipoib_release(struct ipoib_dev_priv *priv)
{
	ipoib_debugfs_remove(priv);
	cancel_delayed_work_sync(&priv->mcast_work);
	cancel_delayed_work_sync(&priv->gc_work);
	cancel_delayed_work_sync(&priv->path_reval_work);
	flush_work(&priv->path_evict_work);
	/* ipoib_cm_stop() left the stopped connections' QPs to the reapers */
	ipoib_cm_reap(priv);
	cancel_work_sync(&priv->restart_work);
	cancel_work_sync(&priv->rx_mode_work);
	cancel_work_sync(&priv->carrier_work);
	cancel_delayed_work_sync(&priv->notify_work);
	ipoib_mcast_stop(priv);
	ipoib_transport_cleanup(priv);
	ipoib_rn_free(priv);
}

static struct ipoib_dev_priv *ipoib_add_port(struct ipoib_hca *hca,
					     struct ib_device *ca, u32 port)
{
	struct ipoib_dev_priv *priv;
	struct net_device *dev;
	int ret;

	rtnl_lock();
	dev = ipoib_alloc_netdev(ca, port, IPOIB_IFNAME);
	rtnl_unlock();
	if (!dev)
		return ERR_PTR(-ENOMEM);
	dev->rtnl_link_ops = &ipoib_link_ops;
	priv = ipoib_priv(dev);
	ipoib_priv_init(priv, dev, ca, port);
	SET_NETDEV_DEV(dev, ca->dev.parent);
	dev->dev_port = port - 1;

	/*
	 * On the HCA's list before the interface exists: it may be opened as
	 * soon as it is registered, and a port event from then on must reach
	 * it (the handler is already registered).
	 */
	spin_lock_irq(&hca->lock);
	list_add_tail(&priv->list, &hca->privs);
	spin_unlock_irq(&hca->lock);

	rtnl_lock();
	ret = ipoib_register(priv);
	rtnl_unlock();
	if (ret)
		goto err_unlist;
	return priv;

err_unlist:
	spin_lock_irq(&hca->lock);
	list_del(&priv->list);
	spin_unlock_irq(&hca->lock);
	/* an event may have queued it meanwhile */
	cancel_work_sync(&priv->restart_work);
	ipoib_napi_del(priv);
	free_netdev(dev);
	return ERR_PTR(ret);
}

static void ipoib_remove_port(struct ipoib_dev_priv *priv)
{
	struct net_device *dev = priv->dev;

	/* children first, wherever their namespace; then the parent */
	rtnl_lock();
	ipoib_delete_children(priv);
	unregister_netdevice(dev);
	rtnl_unlock();
	ipoib_release(priv);
	free_netdev(dev);
}

static void ipoib_event(struct ib_event_handler *handler,
			struct ib_event *event)
{
	struct ipoib_hca *hca = container_of(handler, struct ipoib_hca,
					     event_handler);
	struct ipoib_dev_priv *priv;
	unsigned long flags;
	unsigned int ev;

	switch (event->event) {
	case IB_EVENT_PORT_ERR:
	case IB_EVENT_PORT_ACTIVE:
	case IB_EVENT_LID_CHANGE:
	case IB_EVENT_GID_CHANGE:
		ev = IPOIB_EV_RESTART;
		break;
	case IB_EVENT_PKEY_CHANGE:
		ev = IPOIB_EV_PKEY;
		break;
	case IB_EVENT_CLIENT_REREGISTER:
	case IB_EVENT_SM_CHANGE:
		ev = IPOIB_EV_FLUSH;
		break;
	default:
		return;
	}
	/* add_one may still be adding ports */
	spin_lock_irqsave(&hca->lock, flags);
	list_for_each_entry(priv, &hca->privs, list) {
		if (priv->port != event->element.port_num)
			continue;
		set_bit(ev, &priv->pending_events);
		queue_work(ipoib_wq, &priv->restart_work);
	}
	spin_unlock_irqrestore(&hca->lock, flags);
}

static int ipoib_add_one(struct ib_device *ca);
static void ipoib_remove_one(struct ib_device *ca, void *client_data);

static struct ib_client ipoib_client = {
	.name = "ipoib",
	.add = ipoib_add_one,
	.remove = ipoib_remove_one,
};

static int ipoib_add_one(struct ib_device *ca)
{
	struct ipoib_dev_priv *priv;
	struct ipoib_hca *hca;
	unsigned int found = 0;
	u32 p;

	hca = kzalloc(sizeof(*hca), GFP_KERNEL);
	if (!hca)
		return -ENOMEM;
	hca->ca = ca;
	spin_lock_init(&hca->lock);
	INIT_LIST_HEAD(&hca->privs);
	/* before the interfaces exist, as in-tree: no port event is lost */
	INIT_IB_EVENT_HANDLER(&hca->event_handler, ca, ipoib_event);
	ib_register_event_handler(&hca->event_handler);
	rtnl_lock();
	ipoib_rn_reserve(ca);
	rtnl_unlock();

	/* IPoIB runs only on InfiniBand-link-layer ports (not RoCE/iWARP) */
	rdma_for_each_port(ca, p) {
		if (!rdma_protocol_ib(ca, p))
			continue;
		found++;
		priv = ipoib_add_port(hca, ca, p);
		if (IS_ERR(priv))
			dev_warn(&ca->dev, "ipoib: port %u: cannot create an interface: %ld\n",
				 p, PTR_ERR(priv));
	}
	if (list_empty(&hca->privs)) {
		ib_unregister_event_handler(&hca->event_handler);
		kfree(hca);
		return found ? -ENODEV : -EOPNOTSUPP;
	}

	ib_set_client_data(ca, &ipoib_client, hca);
	return 0;
}

static void ipoib_remove_one(struct ib_device *ca, void *client_data)
{
	struct ipoib_hca *hca = client_data;
	struct ipoib_dev_priv *priv, *tmp;

	ib_unregister_event_handler(&hca->event_handler);
	list_for_each_entry_safe(priv, tmp, &hca->privs, list) {
		list_del(&priv->list);
		ipoib_remove_port(priv);
	}
	kfree(hca);
}

static int __init ipoib_init_module(void)
{
	int ret;

	/*
	 * The parameters' ranges are enforced as they are parsed (param.c);
	 * the send ring's index arithmetic also wants a power of two, as
	 * in-tree, and a silently different ring size makes tuning guesswork.
	 */
	if (!is_power_of_2(ipoib_send_queue_size)) {
		pr_warn("send_queue_size=%u is not a power of two: using %lu\n",
			ipoib_send_queue_size,
			roundup_pow_of_two(ipoib_send_queue_size));
		ipoib_send_queue_size = roundup_pow_of_two(ipoib_send_queue_size);
	}

	ipoib_wq = alloc_workqueue(KBUILD_MODNAME, WQ_MEM_RECLAIM, 0);
	if (!ipoib_wq)
		return -ENOMEM;
	ipoib_reap_wq = alloc_workqueue(KBUILD_MODNAME "_reap", WQ_MEM_RECLAIM, 0);
	if (!ipoib_reap_wq) {
		ret = -ENOMEM;
		goto err_destroy_wq;
	}
	ib_sa_register_client(&ipoib_sa_client);
	ipoib_debugfs_init();

	ret = ipoib_netlink_init();
	if (ret)
		goto err_unregister_sa;
	ret = ib_register_client(&ipoib_client);
	if (ret)
		goto err_netlink_exit;
	ipoib_params_set_live();
	return 0;

err_netlink_exit:
	ipoib_netlink_exit();
err_unregister_sa:
	ipoib_debugfs_cleanup();
	ib_sa_unregister_client(&ipoib_sa_client);
	destroy_workqueue(ipoib_reap_wq);
err_destroy_wq:
	destroy_workqueue(ipoib_wq);
	return ret;
}

static void __exit ipoib_cleanup_module(void)
{
	ib_unregister_client(&ipoib_client);
	ipoib_netlink_exit();
	ipoib_debugfs_cleanup();
	ib_sa_unregister_client(&ipoib_sa_client);
	/* address handle callbacks past their last use of an interface */
	rcu_barrier();
	destroy_workqueue(ipoib_reap_wq);
	destroy_workqueue(ipoib_wq);
}

module_init(ipoib_init_module);
module_exit(ipoib_cleanup_module);

MODULE_AUTHOR("The ipoib-ng authors");
MODULE_DESCRIPTION("IP-over-InfiniBand net driver (ipoib-ng)");
MODULE_LICENSE("GPL");
MODULE_VERSION(IPOIB_NG_VERSION);
MODULE_ALIAS_RTNL_LINK(IPOIB_LINK_KIND);
