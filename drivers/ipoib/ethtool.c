// SPDX-License-Identifier: GPL-2.0
/*
 * ipoib-ng: ethtool. What in-tree offers, with its names and order
 * (driver info, link speed, interrupt moderation, the eight statistics),
 * then what an admin of ours needs besides: the counters of every
 * bounded table, connection and fallback, which are in debugfs too but
 * ethtool -S is where a monitoring agent looks; moderation of the send
 * completions as well as the receive ones; the ring sizes, which can be
 * changed while the interface runs.
 *
 * On an enhanced interface (rn.c) the device's rdma_netdev owns the
 * datagram queues, so what describes them is the device's own ethtool
 * (driver, link, channels, rings, its statistics), as in-tree shows it
 * there; our counters follow the device's in ethtool -S, and the
 * moderation is of our connected-mode CQs where the device has none.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ethtool.h>
#include <linux/netdevice.h>

#include "ipoib.h"

/* what a device's rdma_netdev without ethtool operations has (rn.c) */
const struct ethtool_ops ipoib_rn_no_ethtool_ops = {};

/* The device's ethtool operations on an enhanced interface, else none. */
static const struct ethtool_ops *ipoib_rn_eops(const struct ipoib_dev_priv *priv)
{
	return priv->enhanced ? priv->rn_ethtool_ops : &ipoib_rn_no_ethtool_ops;
}

static void ipoib_get_drvinfo(struct net_device *dev,
			      struct ethtool_drvinfo *info)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);
	struct device *bus = priv->ca->dev.parent ?: &priv->ca->dev;
	const struct ethtool_ops *rn = ipoib_rn_eops(priv);

	if (rn->get_drvinfo) {
		rn->get_drvinfo(dev, info);
		return;
	}

	strscpy(info->driver, KBUILD_MODNAME, sizeof(info->driver));
	strscpy(info->version, IPOIB_NG_VERSION, sizeof(info->version));
	/* as in-tree: the HCA's bus device (a PCI address on hardware) */
	strscpy(info->bus_info, dev_name(bus), sizeof(info->bus_info));
	ib_get_device_fw_str(priv->ca, info->fw_version);
}

/* Mbit/s of one lane at an IB signalling rate (after encoding). */
static int ipoib_lane_speed(u16 active_speed)
{
	switch (active_speed) {
	case IB_SPEED_SDR:
		return SPEED_2500;
	case IB_SPEED_DDR:
		return SPEED_5000;
	case IB_SPEED_QDR:
	case IB_SPEED_FDR10:
		return SPEED_10000;
	case IB_SPEED_FDR:
		return SPEED_14000;
	case IB_SPEED_EDR:
		return SPEED_25000;
	case IB_SPEED_HDR:
		return SPEED_50000;
	case IB_SPEED_NDR:
		return SPEED_100000;
	default:
		return SPEED_UNKNOWN;
	}
}

static int ipoib_get_link_ksettings(struct net_device *dev,
				    struct ethtool_link_ksettings *cmd)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);
	struct ib_port_attr attr;
	int speed, width;

	cmd->base.speed = SPEED_UNKNOWN;
	cmd->base.duplex = DUPLEX_UNKNOWN;
	cmd->base.port = PORT_OTHER;
	if (!netif_carrier_ok(dev) || ib_query_port(priv->ca, priv->port, &attr))
		return 0;
	speed = ipoib_lane_speed(attr.active_speed);
	width = ib_width_enum_to_int(attr.active_width);
	if (speed > 0 && width > 0) {
		cmd->base.speed = speed * width;
		cmd->base.duplex = DUPLEX_FULL;
	}
	return 0;
}

/*
 * ethtool -S: in-tree's eight netdev counters first, in its order, so
 * that scripts written for it keep working; then ours, named as in
 * debugfs's stats file.
 */
static const struct {
	char name[ETH_GSTRING_LEN];
	size_t offset;
} ipoib_netdev_stats[] = {
#define IPOIB_NETDEV_STAT(f) { #f, offsetof(struct net_device_stats, f) }
	IPOIB_NETDEV_STAT(rx_packets),
	IPOIB_NETDEV_STAT(tx_packets),
	IPOIB_NETDEV_STAT(rx_bytes),
	IPOIB_NETDEV_STAT(tx_bytes),
	IPOIB_NETDEV_STAT(tx_errors),
	IPOIB_NETDEV_STAT(rx_dropped),
	IPOIB_NETDEV_STAT(tx_dropped),
	IPOIB_NETDEV_STAT(multicast),
#undef IPOIB_NETDEV_STAT
};

/*
 * The driver's own counters: one snapshot, taken under priv->lock (the
 * tables' counts and counters); the NAPI-side ones are single-writer and
 * read with READ_ONCE.
 */
struct ipoib_counters {
	u64 paths;
	u64 path_evictions;
	u64 path_drops;
	u64 answer_paths;
	u64 path_answer_evictions;
	u64 path_revalidations;
	u64 full_groups;
	u64 full_groups_over;
	u64 full_groups_refused;
	u64 sendonly_groups;
	u64 sendonly_expired;
	u64 sendonly_evictions;
	u64 sendonly_drops;
	u64 cm_passive;
	u64 cm_passive_evicted;
	u64 cm_passive_refused;
	u64 cm_passive_failed;
	u64 cm_active;
	u64 cm_active_evicted;
	u64 cm_active_refused;
	u64 cm_path_evicted;
	u64 cm_path_refused;
	u64 cm_rnr_fallbacks;
	u64 cm_tx_stalled_drops;
	u64 srq_stranded;
	u64 srq_reposted;
	u64 tx_timeouts;
};

static const struct {
	char name[ETH_GSTRING_LEN];
	size_t offset;
} ipoib_driver_stats[] = {
#define IPOIB_COUNTER(f) { #f, offsetof(struct ipoib_counters, f) }
	IPOIB_COUNTER(paths),
	IPOIB_COUNTER(path_evictions),
	IPOIB_COUNTER(path_drops),
	IPOIB_COUNTER(answer_paths),
	IPOIB_COUNTER(path_answer_evictions),
	IPOIB_COUNTER(path_revalidations),
	IPOIB_COUNTER(full_groups),
	IPOIB_COUNTER(full_groups_over),
	IPOIB_COUNTER(full_groups_refused),
	IPOIB_COUNTER(sendonly_groups),
	IPOIB_COUNTER(sendonly_expired),
	IPOIB_COUNTER(sendonly_evictions),
	IPOIB_COUNTER(sendonly_drops),
	IPOIB_COUNTER(cm_passive),
	IPOIB_COUNTER(cm_passive_evicted),
	IPOIB_COUNTER(cm_passive_refused),
	IPOIB_COUNTER(cm_passive_failed),
	IPOIB_COUNTER(cm_active),
	IPOIB_COUNTER(cm_active_evicted),
	IPOIB_COUNTER(cm_active_refused),
	IPOIB_COUNTER(cm_path_evicted),
	IPOIB_COUNTER(cm_path_refused),
	IPOIB_COUNTER(cm_rnr_fallbacks),
	IPOIB_COUNTER(cm_tx_stalled_drops),
	IPOIB_COUNTER(srq_stranded),
	IPOIB_COUNTER(srq_reposted),
	IPOIB_COUNTER(tx_timeouts),
#undef IPOIB_COUNTER
};

#define IPOIB_NSTATS	(ARRAY_SIZE(ipoib_netdev_stats) + \
			 ARRAY_SIZE(ipoib_driver_stats))

static void ipoib_read_counters(struct ipoib_dev_priv *priv,
				struct ipoib_counters *c)
{
	struct ipoib_mcast *mc;

	spin_lock_irq(&priv->lock);
	c->paths = priv->npaths;
	c->path_evictions = priv->path_evictions;
	c->path_drops = priv->path_drops;
	c->answer_paths = priv->nanswers;
	c->path_answer_evictions = priv->path_answer_evictions;
	c->path_revalidations = priv->path_revalidations;
	list_for_each_entry(mc, &priv->mcasts, list)
		c->full_groups += !mc->sendonly && mc != priv->broadcast;
	c->full_groups_over = priv->full_over;
	c->full_groups_refused = priv->full_refused;
	c->sendonly_groups = priv->nsendonly;
	c->sendonly_expired = priv->sendonly_expired;
	c->sendonly_evictions = priv->sendonly_evictions;
	c->sendonly_drops = priv->sendonly_drops;
	c->cm_passive = priv->cm_rx_count;
	c->cm_passive_evicted = priv->cm_passive_evicted;
	c->cm_passive_refused = priv->cm_passive_refused;
	c->cm_passive_failed = priv->cm_passive_failed;
	c->cm_active = priv->cm_tx_qps;
	c->cm_active_evicted = priv->cm_active_evicted;
	c->cm_active_refused = priv->cm_active_refused;
	c->cm_path_evicted = priv->cm_path_evicted;
	c->cm_path_refused = priv->cm_path_refused;
	spin_unlock_irq(&priv->lock);
	c->cm_rnr_fallbacks = READ_ONCE(priv->cm_rnr_fallbacks);
	c->cm_tx_stalled_drops = READ_ONCE(priv->cm_tx_stalled_drops);
	c->srq_stranded = READ_ONCE(priv->srq_stranded);
	c->srq_reposted = READ_ONCE(priv->srq_reposted);
	c->tx_timeouts = READ_ONCE(priv->tx_timeouts);
}

/* Enhanced: how many statistics the device has (they come first). */
static int ipoib_rn_nstats(struct ipoib_dev_priv *priv)
{
	const struct ethtool_ops *rn = ipoib_rn_eops(priv);
	int n;

	if (!rn->get_sset_count || !rn->get_strings || !rn->get_ethtool_stats)
		return -1;
	n = rn->get_sset_count(priv->dev, ETH_SS_STATS);
	return n > 0 ? n : -1;
}

static int ipoib_get_sset_count(struct net_device *dev, int sset)
{
	int rn = ipoib_rn_nstats(ipoib_priv(dev));

	if (sset != ETH_SS_STATS)
		return -EOPNOTSUPP;
	if (rn > 0)
		return rn + ARRAY_SIZE(ipoib_driver_stats);
	return IPOIB_NSTATS;
}

static void ipoib_get_strings(struct net_device *dev, u32 sset, u8 *data)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);
	int rn = ipoib_rn_nstats(priv);
	unsigned int i;

	if (sset != ETH_SS_STATS)
		return;
	if (rn > 0) {
		ipoib_rn_eops(priv)->get_strings(dev, sset, data);
		data += rn * ETH_GSTRING_LEN;
	}
	for (i = 0; rn < 0 && i < ARRAY_SIZE(ipoib_netdev_stats); i++) {
		memcpy(data, ipoib_netdev_stats[i].name, ETH_GSTRING_LEN);
		data += ETH_GSTRING_LEN;
	}
	for (i = 0; i < ARRAY_SIZE(ipoib_driver_stats); i++) {
		memcpy(data, ipoib_driver_stats[i].name, ETH_GSTRING_LEN);
		data += ETH_GSTRING_LEN;
	}
}

static void ipoib_get_ethtool_stats(struct net_device *dev,
				    struct ethtool_stats *stats, u64 *data)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);
	const struct net_device_stats *ns = &dev->stats;
	int rn = ipoib_rn_nstats(priv);
	struct ipoib_counters c = {};
	unsigned int i;

	if (rn > 0) {
		ipoib_rn_eops(priv)->get_ethtool_stats(dev, stats, data);
		data += rn;
	}
	for (i = 0; rn < 0 && i < ARRAY_SIZE(ipoib_netdev_stats); i++)
		*data++ = *(unsigned long *)((u8 *)ns +
					     ipoib_netdev_stats[i].offset);
	ipoib_read_counters(priv, &c);
	for (i = 0; i < ARRAY_SIZE(ipoib_driver_stats); i++)
		*data++ = *(u64 *)((u8 *)&c + ipoib_driver_stats[i].offset);
}

/*
 * Interrupt moderation: completion events of the receive CQ (rx-usecs,
 * rx-frames, in-tree's two) and of the send CQ (tx-usecs, tx-frames).
 * The CQs live as long as the interface, so a setting holds across down
 * and up. A device without CQ moderation keeps the values (as in-tree)
 * and raises an event per completion.
 */
static int ipoib_get_coalesce(struct net_device *dev,
			      struct ethtool_coalesce *coal,
			      struct kernel_ethtool_coalesce *kernel_coal,
			      struct netlink_ext_ack *extack)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);
	const struct ethtool_ops *rn = ipoib_rn_eops(priv);

	/* the provider's moderation as a pair, else our CQs' */
	if (rn->get_coalesce && rn->set_coalesce)
		return rn->get_coalesce(dev, coal, kernel_coal, extack);
	coal->rx_coalesce_usecs = priv->rx_coal_usecs;
	coal->rx_max_coalesced_frames = priv->rx_coal_frames;
	coal->tx_coalesce_usecs = priv->tx_coal_usecs;
	coal->tx_max_coalesced_frames = priv->tx_coal_frames;
	return 0;
}

static int ipoib_moderate(struct ipoib_dev_priv *priv, struct ib_cq *cq,
			  const char *which, u32 frames, u32 usecs)
{
	int ret;

	ret = rdma_set_cq_moderation(cq, frames, usecs);
	if (ret == -EOPNOTSUPP)
		return 0;
	if (ret)
		netdev_warn(priv->dev, "%s moderation (%u frames, %u us) refused by %s: %d\n",
			    which, frames, usecs, dev_name(&priv->ca->dev), ret);
	else if (frames > 1 && !usecs)
		netdev_info(priv->dev, "%s completions now wait for %u of them with no time limit: set %s-usecs too\n",
			    which, frames, which);
	return ret;
}

static int ipoib_set_coalesce(struct net_device *dev,
			      struct ethtool_coalesce *coal,
			      struct kernel_ethtool_coalesce *kernel_coal,
			      struct netlink_ext_ack *extack)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);
	const struct ethtool_ops *rn = ipoib_rn_eops(priv);
	int ret;

	ASSERT_RTNL();
	/* the pair ipoib_get_coalesce() shows */
	if (rn->get_coalesce && rn->set_coalesce)
		return rn->set_coalesce(dev, coal, kernel_coal, extack);
	/* the CQ moderation fields are 16 bits wide, as in-tree checks */
	if (coal->rx_coalesce_usecs > U16_MAX ||
	    coal->rx_max_coalesced_frames > U16_MAX ||
	    coal->tx_coalesce_usecs > U16_MAX ||
	    coal->tx_max_coalesced_frames > U16_MAX) {
		NL_SET_ERR_MSG(extack, "ipoib: usecs and frames go up to 65535");
		return -EINVAL;
	}
	ret = ipoib_moderate(priv, priv->cq, "rx", coal->rx_max_coalesced_frames,
			     coal->rx_coalesce_usecs);
	if (ret)
		return ret;
	priv->rx_coal_usecs = coal->rx_coalesce_usecs;
	priv->rx_coal_frames = coal->rx_max_coalesced_frames;
	ret = ipoib_moderate(priv, priv->send_cq, "tx",
			     coal->tx_max_coalesced_frames,
			     coal->tx_coalesce_usecs);
	if (ret)
		return ret;
	priv->tx_coal_usecs = coal->tx_coalesce_usecs;
	priv->tx_coal_frames = coal->tx_max_coalesced_frames;
	return 0;
}

/* The rings of the datagram QP: send_queue_size and recv_queue_size. */
static void ipoib_get_ringparam(struct net_device *dev,
				struct ethtool_ringparam *ring,
				struct kernel_ethtool_ringparam *kernel_ring,
				struct netlink_ext_ack *extack)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);
	const struct ethtool_ops *rn = ipoib_rn_eops(priv);

	if (priv->enhanced) {
		if (rn->get_ringparam)
			rn->get_ringparam(dev, ring, kernel_ring, extack);
		return;
	}
	ring->rx_max_pending = IPOIB_MAX_QUEUE_SIZE;
	ring->tx_max_pending = IPOIB_MAX_QUEUE_SIZE;
	ring->rx_pending = priv->rx_size;
	ring->tx_pending = priv->tx_size;
}

/*
 * ethtool -G: the rings of the datagram QP, which connected mode sizes
 * its own by (the SRQ or a passive connection's ring: rx; an active
 * connection's: tx). The send ring is a power of two, as the module
 * parameter; the ethtool core already refused what is above the maxima.
 */
static int ipoib_set_ringparam(struct net_device *dev,
			       struct ethtool_ringparam *ring,
			       struct kernel_ethtool_ringparam *kernel_ring,
			       struct netlink_ext_ack *extack)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);
	const struct ethtool_ops *rn = ipoib_rn_eops(priv);
	unsigned int tx = ring->tx_pending, rx = ring->rx_pending;
	int ret;

	ASSERT_RTNL();
	if (priv->enhanced) {
		if (rn->set_ringparam)
			return rn->set_ringparam(dev, ring, kernel_ring, extack);
		return -EOPNOTSUPP;
	}
	if (tx < IPOIB_MIN_SEND_QUEUE || rx < IPOIB_MIN_RECV_QUEUE) {
		netdev_info(dev, "rings of tx %u rx %u refused: tx takes %u-%u, rx %u-%u\n",
			    tx, rx, IPOIB_MIN_SEND_QUEUE, IPOIB_MAX_QUEUE_SIZE,
			    IPOIB_MIN_RECV_QUEUE, IPOIB_MAX_QUEUE_SIZE);
		NL_SET_ERR_MSG(extack, "ipoib: tx takes 128 to 8192 entries, rx 2 to 8192");
		return -EINVAL;
	}
	if (!is_power_of_2(tx)) {
		netdev_info(dev, "tx ring of %u rounded up to %lu (a power of two)\n",
			    tx, roundup_pow_of_two(tx));
		tx = roundup_pow_of_two(tx);
	}
	if (tx == priv->tx_size && rx == priv->rx_size)
		return 0;
	ret = ipoib_set_rings(priv, tx, rx);
	if (ret) {
		netdev_warn(dev, "rings of tx %u rx %u refused by %s (%d): still tx %u rx %u, try smaller ones\n",
			    tx, rx, dev_name(&priv->ca->dev), ret,
			    priv->tx_size, priv->rx_size);
		NL_SET_ERR_MSG(extack, "ipoib: the HCA refused rings of that size");
		return ret;
	}
	netdev_info(dev, "rings now tx %u rx %u; hardware address (QPN) 0x%06x\n",
		    tx, rx, ipoib_ud_qpn(priv));
	return 0;
}

/*
 * ethtool -l: one receive and one send channel (a CQ with a NAPI of its
 * own each, one TX queue); there is nothing to choose, so -L is only
 * for an enhanced interface's queues.
 */
static void ipoib_get_channels(struct net_device *dev,
			       struct ethtool_channels *ch)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);
	const struct ethtool_ops *rn = ipoib_rn_eops(priv);

	if (priv->enhanced) {
		if (rn->get_channels)
			rn->get_channels(dev, ch);
		return;
	}
	ch->max_rx = 1;
	ch->max_tx = 1;
	ch->rx_count = 1;
	ch->tx_count = 1;
}

static int ipoib_set_channels(struct net_device *dev,
			      struct ethtool_channels *ch)
{
	const struct ethtool_ops *rn = ipoib_rn_eops(ipoib_priv(dev));

	ASSERT_RTNL();
	if (rn->set_channels)
		return rn->set_channels(dev, ch);
	return -EOPNOTSUPP;
}

const struct ethtool_ops ipoib_ethtool_ops = {
	.supported_coalesce_params = ETHTOOL_COALESCE_USECS |
				     ETHTOOL_COALESCE_MAX_FRAMES,
	.get_drvinfo = ipoib_get_drvinfo,
	.get_link = ethtool_op_get_link,
	.get_link_ksettings = ipoib_get_link_ksettings,
	.get_coalesce = ipoib_get_coalesce,
	.set_coalesce = ipoib_set_coalesce,
	.get_ringparam = ipoib_get_ringparam,
	.set_ringparam = ipoib_set_ringparam,
	.get_channels = ipoib_get_channels,
	.set_channels = ipoib_set_channels,
	.get_sset_count = ipoib_get_sset_count,
	.get_strings = ipoib_get_strings,
	.get_ethtool_stats = ipoib_get_ethtool_stats,
};
