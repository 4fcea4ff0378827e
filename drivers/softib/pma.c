// SPDX-License-Identifier: GPL-2.0
/*
 * softib: the performance management agent (PMA) of each port, and the
 * port's hardware counters for "rdma statistic".
 *
 * The PMA answers ClassPortInfo, PortCounters and PortCountersExtended
 * (IBTA 16.1) from the fabric's own per-port counters: perfquery reads it
 * over the wire, and ib_core's sysfs ports/N/counters/ through
 * process_mad. A Set of either counter attribute clears the counters its
 * CounterSelect names, for the PMA only: the PMA keeps the values it was
 * cleared at, so softib's debugfs counters never go backwards.
 *
 * Data counters are in units of four octets, as on the wire; the 32-bit
 * counters of PortCounters stop at their maximum (IBTA 16.1.3.5).
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#include <rdma/ib_mad.h>
#include <rdma/ib_pma.h>

#include "softib.h"

/* the PMA's data starts 40 reserved bytes after the MAD header */
#define PMA_DATA_OFF	offsetof(struct ib_pma_mad, data)

/* counters the PMA shows, in the order of pma_base[] */
enum {
	PMA_XMIT_DATA,
	PMA_RCV_DATA,
	PMA_XMIT_PKTS,
	PMA_RCV_PKTS,
	PMA_MC_XMIT_PKTS,
	PMA_MC_RCV_PKTS,
	PMA_XMIT_DISCARDS,
	PMA_RCV_ERRORS,
	PMA_RCV_CONSTRAINT,
	PMA_LINK_DOWNED,
	PMA_NUM,
};

static_assert(PMA_NUM == SOFTIB_PMA_COUNTERS);

static u64 pma_raw(struct softib_port *port, int which)
{
	struct softib_counters *c = &port->cnt;

	switch (which) {
	case PMA_XMIT_DATA:
		return atomic64_read(&c->xmit_bytes) / 4;
	case PMA_RCV_DATA:
		return atomic64_read(&c->rcv_bytes) / 4;
	case PMA_XMIT_PKTS:
		return atomic64_read(&c->xmit_packets);
	case PMA_RCV_PKTS:
		return atomic64_read(&c->rcv_packets);
	case PMA_MC_XMIT_PKTS:
		return atomic64_read(&c->mcast_xmit_packets);
	case PMA_MC_RCV_PKTS:
		return atomic64_read(&c->mcast_rcv_packets);
	case PMA_XMIT_DISCARDS:
		/* sent into no port, or out of a port that is not Active */
		return atomic64_read(&c->drops[SOFTIB_DROP_NO_DEST]) +
		       atomic64_read(&c->drops[SOFTIB_DROP_PORT_DOWN]);
	case PMA_RCV_ERRORS:
		return atomic64_read(&c->drops[SOFTIB_DROP_TOO_LONG]);
	case PMA_RCV_CONSTRAINT:
		return atomic64_read(&c->drops[SOFTIB_DROP_PKEY]);
	case PMA_LINK_DOWNED:
		return atomic64_read(&c->link_downed);
	}
	return 0;
}

/* a counter as the PMA shows it: since it was last cleared */
static u64 pma_get(struct softib_port *port, int which)
{
	return pma_raw(port, which) - READ_ONCE(port->pma_base[which]);
}

static void pma_clear(struct softib_port *port, int which)
{
	WRITE_ONCE(port->pma_base[which], pma_raw(port, which));
}

static __be32 pma_be32(struct softib_port *port, int which)
{
	return cpu_to_be32(min_t(u64, pma_get(port, which), U32_MAX));
}

static __be16 pma_be16(struct softib_port *port, int which)
{
	return cpu_to_be16(min_t(u64, pma_get(port, which), U16_MAX));
}

static u8 pma_u8(struct softib_port *port, int which)
{
	return min_t(u64, pma_get(port, which), U8_MAX);
}

static void pma_class_port_info(u8 *data)
{
	struct ib_class_port_info *cpi = (struct ib_class_port_info *)data;

	cpi->base_version = IB_MGMT_BASE_VERSION;
	cpi->class_version = 1;
	/* PortCountersExtended with the unicast and multicast counters */
	cpi->capability_mask = IB_PMA_CLASS_CAP_EXT_WIDTH;
	ib_set_cpi_resp_time(cpi, SOFTIB_RESP_TIME);
}

/* CounterSelect bits of PortCounters and the counters they clear */
static const struct {
	__be16 sel;
	int which;
} pma_sel[] = {
	{ IB_PMA_SEL_PORT_XMIT_DATA, PMA_XMIT_DATA },
	{ IB_PMA_SEL_PORT_RCV_DATA, PMA_RCV_DATA },
	{ IB_PMA_SEL_PORT_XMIT_PACKETS, PMA_XMIT_PKTS },
	{ IB_PMA_SEL_PORT_RCV_PACKETS, PMA_RCV_PKTS },
	{ IB_PMA_SEL_PORT_XMIT_DISCARDS, PMA_XMIT_DISCARDS },
	{ IB_PMA_SEL_PORT_RCV_ERRORS, PMA_RCV_ERRORS },
	{ IB_PMA_SEL_LINK_DOWNED, PMA_LINK_DOWNED },
}, pma_selx[] = {
	{ IB_PMA_SELX_PORT_XMIT_DATA, PMA_XMIT_DATA },
	{ IB_PMA_SELX_PORT_RCV_DATA, PMA_RCV_DATA },
	{ IB_PMA_SELX_PORT_XMIT_PACKETS, PMA_XMIT_PKTS },
	{ IB_PMA_SELX_PORT_RCV_PACKETS, PMA_RCV_PKTS },
	{ IB_PMA_SELX_PORT_MULTI_XMIT_PACKETS, PMA_MC_XMIT_PKTS },
	{ IB_PMA_SELX_PORT_MULTI_RCV_PACKETS, PMA_MC_RCV_PKTS },
};

static void pma_port_counters(struct softib_port *port, u8 *data, bool set)
{
	struct ib_pma_portcounters *pc = (struct ib_pma_portcounters *)data;
	__be16 sel = pc->counter_select;
	u8 port_select = pc->port_select;
	int i;

	if (set) {
		for (i = 0; i < ARRAY_SIZE(pma_sel); i++)
			if (sel & pma_sel[i].sel)
				pma_clear(port, pma_sel[i].which);
		/* the constraint errors have no select bit of their own */
		if (sel & IB_PMA_SEL_PORT_RCV_ERRORS)
			pma_clear(port, PMA_RCV_CONSTRAINT);
	}
	memset(pc, 0, sizeof(*pc));
	pc->port_select = port_select;
	pc->counter_select = sel;
	pc->link_downed_counter = pma_u8(port, PMA_LINK_DOWNED);
	pc->port_rcv_errors = pma_be16(port, PMA_RCV_ERRORS);
	pc->port_xmit_discards = pma_be16(port, PMA_XMIT_DISCARDS);
	pc->port_rcv_constraint_errors = pma_u8(port, PMA_RCV_CONSTRAINT);
	pc->port_xmit_data = pma_be32(port, PMA_XMIT_DATA);
	pc->port_rcv_data = pma_be32(port, PMA_RCV_DATA);
	pc->port_xmit_packets = pma_be32(port, PMA_XMIT_PKTS);
	pc->port_rcv_packets = pma_be32(port, PMA_RCV_PKTS);
}

static void pma_port_counters_ext(struct softib_port *port, u8 *data,
				  bool set)
{
	struct ib_pma_portcounters_ext *pc =
		(struct ib_pma_portcounters_ext *)data;
	__be16 sel = pc->counter_select;
	u8 port_select = pc->port_select;
	u64 mc, all;
	int i;

	if (set) {
		for (i = 0; i < ARRAY_SIZE(pma_selx); i++)
			if (sel & pma_selx[i].sel)
				pma_clear(port, pma_selx[i].which);
	}
	memset(pc, 0, sizeof(*pc));
	pc->port_select = port_select;
	pc->counter_select = sel;
	pc->port_xmit_data = cpu_to_be64(pma_get(port, PMA_XMIT_DATA));
	pc->port_rcv_data = cpu_to_be64(pma_get(port, PMA_RCV_DATA));
	/*
	 * Multicast first, then all: a packet counted in between makes
	 * unicast one more, never negative; each total is read once, so
	 * unicast + multicast is the total the answer shows. (A Set that
	 * cleared all but not multicast leaves unicast at 0 for a while.)
	 */
	mc = pma_get(port, PMA_MC_XMIT_PKTS);
	all = pma_get(port, PMA_XMIT_PKTS);
	pc->port_xmit_packets = cpu_to_be64(all);
	pc->port_multicast_xmit_packets = cpu_to_be64(mc);
	pc->port_unicast_xmit_packets = cpu_to_be64(all - min(mc, all));
	mc = pma_get(port, PMA_MC_RCV_PKTS);
	all = pma_get(port, PMA_RCV_PKTS);
	pc->port_rcv_packets = cpu_to_be64(all);
	pc->port_multicast_rcv_packets = cpu_to_be64(mc);
	pc->port_unicast_rcv_packets = cpu_to_be64(all - min(mc, all));
}

/*
 * The performance management class at one port. Returns the MAD status
 * of the answer (its data written into "out"), or U16_MAX for what is
 * not a request to the PMA.
 */
u16 softib_pma_process(struct softib_dev *sdev, u32 port_num,
		       const struct ib_mad *in, struct ib_mad *out)
{
	u8 *data = (u8 *)out + PMA_DATA_OFF;
	u8 method = in->mad_hdr.method;
	bool set = method == IB_MGMT_METHOD_SET;
	u8 port_select;

	if (method != IB_MGMT_METHOD_GET && !set)
		return method & IB_MGMT_METHOD_RESP ? U16_MAX :
		       IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD;
	if (in->mad_hdr.class_version != 1)
		return IB_MGMT_MAD_STATUS_BAD_VERSION;

	switch (in->mad_hdr.attr_id) {
	case IB_PMA_CLASS_PORT_INFO:
		if (set)
			return IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB;
		pma_class_port_info(data);
		return 0;
	case IB_PMA_PORT_COUNTERS:
	case IB_PMA_PORT_COUNTERS_EXT:
		break;
	default:
		return IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB;
	}

	/* PortSelect: a port of this CA (no AllPortSelect) */
	memcpy(data, (const u8 *)in + PMA_DATA_OFF,
	       sizeof(struct ib_pma_portcounters_ext));
	port_select = data[1];
	if (port_select < 1 || port_select > sdev->nports)
		return IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE;

	if (in->mad_hdr.attr_id == IB_PMA_PORT_COUNTERS)
		pma_port_counters(softib_port(sdev, port_select), data, set);
	else
		pma_port_counters_ext(softib_port(sdev, port_select), data,
				      set);
	return 0;
}

/*
 * "rdma statistic": why each port did not deliver what it was given, the
 * drop counters of debugfs ports/N/counters by the same names.
 */
static const struct rdma_stat_desc softib_hw_stats[] = {
	[SOFTIB_DROP_NO_DEST] = { .name = "drop_no_dest" },
	[SOFTIB_DROP_NO_QP] = { .name = "drop_no_qp" },
	[SOFTIB_DROP_PKEY] = { .name = "drop_pkey" },
	[SOFTIB_DROP_QKEY] = { .name = "drop_qkey" },
	[SOFTIB_DROP_NO_RWQE] = { .name = "drop_no_rwqe" },
	[SOFTIB_DROP_TOO_LONG] = { .name = "drop_too_long" },
	[SOFTIB_DROP_PORT_DOWN] = { .name = "drop_port_down" },
};

static_assert(ARRAY_SIZE(softib_hw_stats) == SOFTIB_DROP_MAX);

struct rdma_hw_stats *softib_alloc_hw_port_stats(struct ib_device *ibdev,
						 u32 port_num)
{
	return rdma_alloc_hw_stats_struct(softib_hw_stats,
					  ARRAY_SIZE(softib_hw_stats),
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

int softib_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
			u32 port_num, int index)
{
	struct softib_port *port;
	int i;

	/* no device-wide counters: ib_core asks with port 0 for those */
	if (port_num < 1 || port_num > to_sdev(ibdev)->nports)
		return 0;
	port = softib_port(to_sdev(ibdev), port_num);
	for (i = 0; i < SOFTIB_DROP_MAX; i++)
		stats->value[i] = atomic64_read(&port->cnt.drops[i]);
	return SOFTIB_DROP_MAX;
}
