// SPDX-License-Identifier: GPL-2.0
/*
 * ipoib-ng: enhanced IPoIB. A device that offers an rdma_netdev
 * (ib_device_ops.rdma_netdev_get_params: mlx5 on ConnectX-4 and later,
 * softib with enhanced=1) runs the datagram datapath of each of our
 * interfaces: its own UD QP, whose QPN is in the hardware address, its
 * send and receive queues (one per CPU, RSS), the offloads and NAPI. We
 * keep what IPoIB decides on any device (P_Keys, paths, multicast,
 * children, carrier, the bounded tables) and connected mode, whose RC
 * QPs, SRQ and CQs stay ours beside the provider's QP: in-tree drops
 * connected mode on such a device, we do not. ipoib_enhanced=0 (the
 * name NVIDIA's driver uses) keeps our own datapath on every device.
 *
 * The provider calls us for nothing: its NAPI hands received datagrams
 * to the stack itself. We call it at these points, as in-tree does:
 * initialize_rdma_netdev before registration, ndo_init/ndo_uninit from
 * ours, set_id and ndo_open when the transport comes up, ndo_stop when
 * it goes down, send for every datagram, attach/detach_mcast for the
 * groups (the broadcast group's attach sets the Q_Key), tx_timeout and
 * ndo_get_stats64.
 *
 * Memory: the netdev's private area begins with the provider's part
 * (a struct rdma_netdev first) and ours follows, on every device; the
 * rdma_netdev's clnt_priv points to ours. rtnetlink allocates a child
 * with ipoib_link_ops.priv_size before newlink can say on which device
 * it goes, so that size grows to the largest provider's part of the
 * HCAs we have seen (as in-tree does); it changes, and netdevs are
 * allocated with it, only under rtnl.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>

#include "ipoib.h"

bool ipoib_enhanced = true;
/* the most queues an rdma_netdev asked for: a netlink child's (rtnl) */
static unsigned int ipoib_rn_txqs = 1, ipoib_rn_rxqs = 1;
module_param_named(ipoib_enhanced, ipoib_enhanced, bool, 0444);
MODULE_PARM_DESC(ipoib_enhanced,
		 "Use the device's rdma_netdev (enhanced IPoIB: its multi-queue datagram datapath; connected mode stays available) where it offers one; 0: our own datapath on every device (default 1)");

/* The provider's part, rounded up so that ours starts aligned. */
static unsigned int ipoib_rn_room(unsigned int sizeof_priv)
{
	return ALIGN(max_t(unsigned int, sizeof_priv,
			   sizeof(struct rdma_netdev)), NETDEV_ALIGN);
}

static bool ipoib_rn_params(struct ib_device *ca, u32 port,
			    struct rdma_netdev_alloc_params *params)
{
	if (!ipoib_enhanced || !ca->ops.rdma_netdev_get_params)
		return false;
	memset(params, 0, sizeof(*params));
	return !ca->ops.rdma_netdev_get_params(ca, port, RDMA_NETDEV_IPOIB,
					       params);
}

/*
 * Room for this HCA's rdma_netdev in every netdev allocated from now on
 * (rtnl; before its interfaces are made).
 */
void ipoib_rn_reserve(struct ib_device *ca)
{
	struct rdma_netdev_alloc_params params;
	unsigned int need;
	u32 p;

	ASSERT_RTNL();
	rdma_for_each_port(ca, p) {
		if (!rdma_protocol_ib(ca, p) ||
		    !ipoib_rn_params(ca, p, &params))
			continue;
		need = ipoib_rn_room(params.sizeof_priv) +
		       sizeof(struct ipoib_dev_priv);
		if (need > ipoib_link_ops.priv_size)
			ipoib_link_ops.priv_size = need;
		WRITE_ONCE(ipoib_rn_txqs, max(ipoib_rn_txqs, params.txqs));
		WRITE_ONCE(ipoib_rn_rxqs, max(ipoib_rn_rxqs, params.rxqs));
	}
}

/*
 * rtnetlink's queues for a child made by "ip link add", before newlink
 * says on which device (mlx5 refuses a child with fewer receive queues
 * than its parent uses); a child without a provider keeps one of each.
 */
unsigned int ipoib_rn_num_txqs(void)
{
	return READ_ONCE(ipoib_rn_txqs);
}

unsigned int ipoib_rn_num_rxqs(void)
{
	return READ_ONCE(ipoib_rn_rxqs);
}

/*
 * Point the rdma_netdev of a netdev just allocated with
 * ipoib_link_ops.priv_size (rtnl held since) at our part, at its end.
 */
void ipoib_rn_place(struct net_device *dev)
{
	struct rdma_netdev *rn = netdev_priv(dev);

	ASSERT_RTNL();
	rn->clnt_priv = (u8 *)netdev_priv(dev) + ipoib_link_ops.priv_size -
			sizeof(struct ipoib_dev_priv);
}

/*
 * A parent's or a sysfs child's netdev, with the queues the device's
 * rdma_netdev asks for (one each without one). rtnl.
 */
struct net_device *ipoib_alloc_netdev(struct ib_device *ca, u32 port,
				      const char *name)
{
	struct rdma_netdev_alloc_params params;
	unsigned int txqs = 1, rxqs = 1;
	struct net_device *dev;

	ASSERT_RTNL();
	if (ipoib_rn_params(ca, port, &params)) {
		txqs = max(params.txqs, 1U);
		rxqs = max(params.rxqs, 1U);
	}
	dev = alloc_netdev_mqs(ipoib_link_ops.priv_size, name,
			       NET_NAME_UNKNOWN, ipoib_setup, txqs, rxqs);
	if (dev)
		ipoib_rn_place(dev);
	return dev;
}

/*
 * Let the device's rdma_netdev take the datagram datapath of an
 * initialised, unregistered interface, if it offers one: it installs
 * its netdev and ethtool operations, which we keep to call and replace
 * with ours. rtnl.
 */
int ipoib_rn_attach(struct ipoib_dev_priv *priv)
{
	struct net_device *dev = priv->dev;
	struct rdma_netdev *rn = netdev_priv(dev);
	struct rdma_netdev_alloc_params params;
	void *clnt_priv = rn->clnt_priv;
	int ret;

	ASSERT_RTNL();
	BUILD_BUG_ON(__alignof__(struct ipoib_dev_priv) > NETDEV_ALIGN);
	if (!ipoib_rn_params(priv->ca, priv->port, &params)) {
		/* our own datapath has one queue of each (ipoib_send()) */
		ret = netif_set_real_num_tx_queues(dev, 1);
		return ret ?: netif_set_real_num_rx_queues(dev, 1);
	}
	/* allocated before ipoib_rn_reserve() saw this HCA: cannot happen */
	if (WARN_ON_ONCE(ipoib_rn_room(params.sizeof_priv) >
			 (u8 *)priv - (u8 *)rn))
		return -EOVERFLOW;
	ret = params.initialize_rdma_netdev(priv->ca, priv->port, dev,
					    params.param);
	rn->clnt_priv = clnt_priv;
	if (ret) {
		netdev_err(dev, "%s refused an rdma_netdev for port %u (%d): load ib_ipoib with ipoib_enhanced=0 to run IPoIB's own datapath on it\n",
			   dev_name(&priv->ca->dev), priv->port, ret);
		return ret;
	}
	priv->rn_ops = dev->netdev_ops;
	/* ipoib_setup() installed ours: the provider has none of its own */
	priv->rn_ethtool_ops = dev->ethtool_ops && dev->ethtool_ops != &ipoib_ethtool_ops ?
			       dev->ethtool_ops : &ipoib_rn_no_ethtool_ops;
	/* a provider's destructor runs after our release (ipoib_rn_free()) */
	priv->rn_destructor = dev->priv_destructor;
	dev->priv_destructor = NULL;
	/* a parent is freed by ipoib_remove_port(), a child as we set it */
	dev->needs_free_netdev = false;
	dev->netdev_ops = &ipoib_netdev_ops;
	dev->ethtool_ops = &ipoib_ethtool_ops;
	priv->enhanced = true;
	return 0;
}

/* What the provider keeps until the netdev goes (once; any context). */
void ipoib_rn_free(struct ipoib_dev_priv *priv)
{
	void (*destructor)(struct net_device *dev) = priv->rn_destructor;

	priv->rn_destructor = NULL;
	if (destructor)
		destructor(priv->dev);
}

/* The transport comes up: the provider's QP on our P_Key index. rtnl. */
int ipoib_rn_up(struct ipoib_dev_priv *priv)
{
	struct rdma_netdev *rn = netdev_priv(priv->dev);

	ASSERT_RTNL();
	if (rn->set_id)
		rn->set_id(priv->dev, priv->pkey_index);
	return priv->rn_ops->ndo_open ? priv->rn_ops->ndo_open(priv->dev) : 0;
}

void ipoib_rn_down(struct ipoib_dev_priv *priv)
{
	ASSERT_RTNL();
	if (priv->rn_ops->ndo_stop)
		priv->rn_ops->ndo_stop(priv->dev);
}

/*
 * One datagram through the provider (the stack holds the skb's TX
 * queue). The provider copies the address vector as it posts, so "ah"
 * needs no record of the send (see ipoib_ah_idle()).
 */
int ipoib_rn_send(struct ipoib_dev_priv *priv, struct sk_buff *skb,
		  struct ipoib_ah *ah, u32 qpn)
{
	struct rdma_netdev *rn = netdev_priv(priv->dev);

	return rn->send(priv->dev, skb, ah->ah, qpn);
}

/*
 * The broadcast group's Q_Key and datagram MTU for the datagram QP. Ours
 * takes the Q_Key now; the provider's with the group's attach
 * (ipoib_ud_attach_mcast()), and it sizes its receive buffers by the MTU.
 */
int ipoib_ud_set_broadcast(struct ipoib_dev_priv *priv, u32 qkey,
			   unsigned int mtu)
{
	struct ib_qp_attr attr = { .qkey = qkey };
	int ret;

	if (priv->enhanced) {
		((struct rdma_netdev *)netdev_priv(priv->dev))->mtu = mtu;
	} else {
		ret = ib_modify_qp(priv->qp, &attr, IB_QP_QKEY);
		if (ret)
			return ret;
	}
	priv->qkey = qkey;
	priv->mcast_mtu = mtu;
	return 0;
}

/* A group's datagrams to the datagram QP: the provider's, or ours. */
int ipoib_ud_attach_mcast(struct ipoib_dev_priv *priv, union ib_gid *mgid,
			  u16 mlid, bool broadcast)
{
	struct rdma_netdev *rn = netdev_priv(priv->dev);

	if (!priv->enhanced)
		return ib_attach_mcast(priv->qp, mgid, mlid);
	return rn->attach_mcast(priv->dev, priv->ca, mgid, mlid, broadcast,
				priv->qkey);
}

void ipoib_ud_detach_mcast(struct ipoib_dev_priv *priv, union ib_gid *mgid,
			   u16 mlid)
{
	struct rdma_netdev *rn = netdev_priv(priv->dev);

	if (!priv->enhanced)
		ib_detach_mcast(priv->qp, mgid, mlid);
	else
		rn->detach_mcast(priv->dev, priv->ca, mgid, mlid);
}
