// SPDX-License-Identifier: GPL-2.0
/*
 * softib: the subnet management agent (SMA) of each port, and process_mad.
 *
 * ib_mad hands a provider every MAD that reaches QP0 or QP1 of its ports,
 * and every directed-route SMP that ends at the local device, before any
 * agent sees it (process_mad). Real HCAs answer SMPs in firmware; softib
 * answers them here, as qib does in software:
 *
 *  - subnet management (LID-routed and directed-route SMPs): NodeInfo,
 *    NodeDescription, PortInfo, P_KeyTable, GUIDInfo, SLtoVLMappingTable
 *    and VLArbitrationTable, Get and (where the attribute is writable)
 *    Set, with M_Key protection; SMInfo goes on to the SM of the port
 *    (an opensm holding issm) or is refused;
 *  - performance management: pma.c.
 *
 * ib_core has already checked the hop pointer and filled the return path
 * of a directed-route SMP (smi.c): an SMP that reaches us is ours to
 * answer. ib_mad sends the reply back the way the request came.
 *
 * Context: called from ib_mad's receive completion, from a send to the
 * local device under the agent's spinlock, and from sysfs (in_wc NULL).
 * Nothing here sleeps. A Set changes the port under its lock first and
 * raises the IB events after it, because ib_core's cache re-reads the port
 * (query_port, query_pkey) when it handles them.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#include <rdma/ib_mad.h>
#include <rdma/ib_smi.h>

#include "softib.h"

/* PortInfo LinkWidth and LinkSpeed bit masks (IBTA 14.2.5.6) */
#define SMA_WIDTH_1X		0x01
#define SMA_WIDTH_4X		0x02
#define SMA_SPEED_SDR		0x01
#define SMA_SPEED_DDR		0x02
#define SMA_SPEED_QDR		0x04
#define SMA_SPEED_EXT_FDR	0x01
#define SMA_SPEED_EXT_EDR	0x02
/* byte offsets of the extended-speed fields behind struct ib_port_info */
#define SMA_PI_CAP_MASK2	60
#define SMA_PI_SPEED_EXT	62	/* active(4) supported(4) */
#define SMA_PI_SPEED_EXT_EN	63	/* reserved(3) enabled(5) */

/* PortInfo CapabilityMask: what every softib port offers */
#define SMA_CAP_FIXED		(IB_PORT_CLIENT_REG_SUP | IB_PORT_TRAP_SUP | \
				 IB_PORT_SYS_IMAGE_GUID_SUP | \
				 IB_PORT_EXTENDED_SPEEDS_SUP)

/* the SMA's view of one port at power-up (before any SM wrote it) */
void softib_sma_init_port(struct softib_port *port)
{
	port->cap_flags = SMA_CAP_FIXED;
	port->gid_prefix = SOFTIB_SUBNET_PREFIX;
	port->phys_state = IB_PORT_PHYS_STATE_POLLING;
	port->link_down_default = IB_PORT_PHYS_STATE_POLLING;
	port->width_enabled = SMA_WIDTH_1X | SMA_WIDTH_4X;
	port->speed_enabled = SMA_SPEED_SDR | SMA_SPEED_DDR | SMA_SPEED_QDR;
	port->speed_ext_enabled = SMA_SPEED_EXT_FDR | SMA_SPEED_EXT_EDR;
	port->neighbor_mtu = SOFTIB_MTU;
	port->mtu_cap = SOFTIB_MTU;
	port->op_vls = 1;
	port->subnet_timeout = 18;
	port->vlstall_hoqlife = (7 << 5) | 19;	/* IBA defaults */
	/* every SL on VL0: the only data VL */
	memset(port->sl2vl, 0, sizeof(port->sl2vl));
}

/*
 * M_Key (IBTA 14.2.4): a key of 0 protects nothing. Otherwise a request
 * with the wrong key fails per the protect level: Sets from level 1 on,
 * Gets from level 2 on (at level 1 a Get answers with the key zeroed).
 * A failure counts a violation, starts the lease timer and is dropped
 * without an answer. When the lease runs out, the protection is gone.
 * Returns true if the request may go on; *key_ok says if the key matched.
 */
bool softib_sma_check_mkey(struct softib_port *port, const struct ib_smp *smp,
			   int mad_flags, bool *key_ok)
{
	bool ok;

	lockdep_assert_held(&port->lock);
	if (port->mkey_lease_end &&
	    time_after_eq(jiffies, port->mkey_lease_end)) {
		port->mkey_lease_end = 0;
		port->mkeyprot = 0;
	}
	ok = !port->mkey || port->mkey == be64_to_cpu(smp->mkey) ||
	     (mad_flags & IB_MAD_IGNORE_MKEY);
	*key_ok = ok;
	if (ok) {
		/* a request with the right key stops the lease timer */
		if (port->mkey && port->mkey == be64_to_cpu(smp->mkey))
			port->mkey_lease_end = 0;
		return true;
	}
	if ((smp->method == IB_MGMT_METHOD_GET ||
	     smp->method == IB_MGMT_METHOD_TRAP_REPRESS) &&
	    port->mkeyprot < 2)
		return true;
	if (smp->method == IB_MGMT_METHOD_SET && port->mkeyprot < 1)
		return true;

	if (port->mkey_violations != U16_MAX)
		port->mkey_violations++;
	if (port->mkey_lease_period && !port->mkey_lease_end)
		port->mkey_lease_end = (jiffies +
					port->mkey_lease_period * HZ) ?: 1;
	return false;
}

/* NodeInfo of a CA or a switch, as seen from port "in_port" */
void softib_sma_node_info(struct ib_smp *out, u8 node_type, u8 nports,
			  u64 node_guid, u64 port_guid, u16 device_id,
			  u32 in_port)
{
	struct ib_node_info *ni = (struct ib_node_info *)out->data;

	ni->base_version = IB_MGMT_BASE_VERSION;
	ni->class_version = 1;
	ni->node_type = node_type;
	ni->num_ports = nports;
	/* one node per system: the system image GUID is the node's */
	ni->sys_guid = cpu_to_be64(node_guid);
	ni->node_guid = cpu_to_be64(node_guid);
	ni->port_guid = cpu_to_be64(port_guid);
	ni->partition_cap = cpu_to_be16(SOFTIB_PKEY_TBL_LEN);
	ni->device_id = cpu_to_be16(device_id);
	ni->revision = cpu_to_be32(SOFTIB_HW_REV);
	ni->local_port_num = in_port;
	ni->vendor_id[0] = (SOFTIB_VENDOR_ID >> 16) & 0xff;
	ni->vendor_id[1] = (SOFTIB_VENDOR_ID >> 8) & 0xff;
	ni->vendor_id[2] = SOFTIB_VENDOR_ID & 0xff;
}

/* PortInfo of "port" as seen from the port the SMP came in on. */
void softib_sma_port_info(struct softib_port *port, u32 in_port, bool key_ok,
			  struct ib_smp *out)
{
	struct ib_port_info *pi = (struct ib_port_info *)out->data;
	u8 *raw = out->data;

	lockdep_assert_held(&port->lock);
	/* at protect level 1 a Get with the wrong key reads the key as 0 */
	pi->mkey = key_ok ? cpu_to_be64(port->mkey) : 0;
	pi->gid_prefix = cpu_to_be64(port->gid_prefix);
	pi->lid = cpu_to_be16(port->lid);
	pi->sm_lid = cpu_to_be16(port->sm_lid);
	pi->cap_mask = cpu_to_be32(port->cap_flags);
	pi->mkey_lease_period = cpu_to_be16(port->mkey_lease_period);
	pi->local_port_num = in_port;
	pi->link_width_enabled = port->width_enabled;
	pi->link_width_supported = SMA_WIDTH_1X | SMA_WIDTH_4X;
	pi->link_width_active = SMA_WIDTH_4X;
	pi->linkspeed_portstate = (SMA_SPEED_SDR | SMA_SPEED_DDR |
				   SMA_SPEED_QDR) << 4 | port->state;
	pi->portphysstate_linkdown = port->phys_state << 4 |
				     port->link_down_default;
	pi->mkeyprot_resv_lmc = port->mkeyprot << 6 | port->lmc;
	/* the legacy field says QDR; LinkSpeedExtActive says EDR */
	pi->linkspeedactive_enabled = SMA_SPEED_QDR << 4 |
				      port->speed_enabled;
	pi->neighbormtu_mastersmsl = port->neighbor_mtu << 4 | port->sm_sl;
	pi->vlcap_inittype = 1 << 4;		/* VLCap: VL0 only */
	pi->vl_high_limit = port->vl_high_limit;
	pi->vl_arb_high_cap = SOFTIB_VLARB_CAP;
	pi->vl_arb_low_cap = SOFTIB_VLARB_CAP;
	pi->inittypereply_mtucap = port->mtu_cap;
	pi->vlstallcnt_hoqlife = port->vlstall_hoqlife;
	pi->operationalvl_pei_peo_fpi_fpo = port->op_vls << 4 | port->pe_flags;
	pi->mkey_violations = cpu_to_be16(port->mkey_violations);
	pi->pkey_violations =
		cpu_to_be16(min_t(u64, U16_MAX,
				  atomic64_read(&port->cnt.drops[SOFTIB_DROP_PKEY])));
	pi->qkey_violations =
		cpu_to_be16(min_t(u64, U16_MAX,
				  atomic64_read(&port->cnt.drops[SOFTIB_DROP_QKEY])));
	pi->guid_cap = SOFTIB_GID_TBL_LEN;
	pi->clientrereg_resv_subnetto = port->subnet_timeout;
	pi->resv_resptimevalue = SOFTIB_RESP_TIME;
	pi->localphyerrors_overrunerrors = port->phy_overrun_thresh;
	raw[SMA_PI_SPEED_EXT] = SMA_SPEED_EXT_EDR << 4 |
				(SMA_SPEED_EXT_FDR | SMA_SPEED_EXT_EDR);
	raw[SMA_PI_SPEED_EXT_EN] = port->speed_ext_enabled;
}

static void sma_raise(struct softib_port *port, unsigned int events)
{
	if (events & SMA_EV_LID)
		softib_port_event(port, IB_EVENT_LID_CHANGE);
	if (events & SMA_EV_SM)
		softib_port_event(port, IB_EVENT_SM_CHANGE);
	if (events & SMA_EV_GID)
		softib_port_event(port, IB_EVENT_GID_CHANGE);
	if (events & SMA_EV_PKEY)
		softib_port_event(port, IB_EVENT_PKEY_CHANGE);
	if (events & SMA_EV_REREG)
		softib_port_event(port, IB_EVENT_CLIENT_REREGISTER);
}

/* a LinkWidth/LinkSpeed Enabled value: 0 keeps, "all" takes supported */
static int sma_enabled(u8 val, u8 all, u8 supported, u8 *field)
{
	if (!val)
		return 0;
	if (val == all) {
		*field = supported;
		return 0;
	}
	if (val & ~supported)
		return -EINVAL;
	*field = val;
	return 0;
}

/*
 * PortInfo Set (IBTA 14.2.5.6), fields in wire order. Every field is
 * checked before any is applied: a Set with one bad field changes
 * nothing and answers INVALID_FIELD with the port as it is.
 * A switch's external ports have no LID, SM LID or M_Key of their own
 * (!addressed): those fields are reserved there and ignored.
 * Returns the MAD status; *events gets what the caller raises.
 */
u16 softib_sma_set_port_info(struct softib_port *port, const struct ib_smp *in,
			     bool addressed, unsigned int *events,
			     enum ib_port_state *new_state, u8 *new_phys)
{
	const struct ib_port_info *pi = (const struct ib_port_info *)in->data;
	const u8 *raw = in->data;
	u16 lid = be16_to_cpu(pi->lid), sm_lid = be16_to_cpu(pi->sm_lid);
	u8 lmc = pi->mkeyprot_resv_lmc & 7;
	u8 state = pi->linkspeed_portstate & 0xf;
	u8 phys = pi->portphysstate_linkdown >> 4;
	u8 ldd = pi->portphysstate_linkdown & 0xf;
	u8 nmtu = pi->neighbormtu_mastersmsl >> 4;
	u8 op_vls = pi->operationalvl_pei_peo_fpi_fpo >> 4;
	u8 width = port->width_enabled, speed = port->speed_enabled;
	u8 speed_ext = port->speed_ext_enabled;
	u8 ext_en = raw[SMA_PI_SPEED_EXT_EN] & 0x1f;
	/* without bit 31 of the modifier, the SM did not fill ext speeds */
	bool ext_sm = be32_to_cpu(in->attr_mod) & BIT(31);

	lockdep_assert_held(&port->lock);
	*new_state = port->state;

	if (addressed && (lid == 0 || lid >= SOFTIB_MLID_BASE ||
			  sm_lid == 0 || sm_lid >= SOFTIB_MLID_BASE))
		return SOFTIB_SMA_INVALID_FIELD;
	if (sma_enabled(pi->link_width_enabled, 0xff,
			SMA_WIDTH_1X | SMA_WIDTH_4X, &width) ||
	    sma_enabled(pi->linkspeedactive_enabled & 0xf, 0xf,
			SMA_SPEED_SDR | SMA_SPEED_DDR | SMA_SPEED_QDR,
			&speed) ||
	    (ext_sm && sma_enabled(ext_en, 0x1f,
				   SMA_SPEED_EXT_FDR | SMA_SPEED_EXT_EDR,
				   &speed_ext)))
		return SOFTIB_SMA_INVALID_FIELD;
	/* PortPhysicalState: 0 keeps it, 2 Polling, 3 Disabled */
	if (phys && phys != IB_PORT_PHYS_STATE_POLLING &&
	    phys != IB_PORT_PHYS_STATE_DISABLED)
		return SOFTIB_SMA_INVALID_FIELD;
	/* LinkDownDefaultState: 0 keeps it, 1 Sleep, 2 Polling */
	if (ldd > IB_PORT_PHYS_STATE_POLLING)
		return SOFTIB_SMA_INVALID_FIELD;
	if (nmtu && (nmtu < IB_MTU_256 || nmtu > port->mtu_cap))
		return SOFTIB_SMA_INVALID_FIELD;
	/* OperationalVLs: 0 keeps them; at most VLCap (VL0 only) */
	if (op_vls > 1)
		return SOFTIB_SMA_INVALID_FIELD;
	/*
	 * PortState: 0 keeps it, Down takes the link down (it trains
	 * again unless disabled), Armed only from Init, Active only from
	 * Armed. Setting Armed or Active again is no change.
	 */
	switch (state) {
	case IB_PORT_NOP:
		break;
	case IB_PORT_DOWN:
		*new_state = IB_PORT_DOWN;
		break;
	case IB_PORT_ARMED:
		if (port->state != IB_PORT_INIT &&
		    port->state != IB_PORT_ARMED)
			return SOFTIB_SMA_INVALID_FIELD;
		*new_state = IB_PORT_ARMED;
		break;
	case IB_PORT_ACTIVE:
		if (port->state != IB_PORT_ARMED &&
		    port->state != IB_PORT_ACTIVE)
			return SOFTIB_SMA_INVALID_FIELD;
		*new_state = IB_PORT_ACTIVE;
		break;
	default:
		return SOFTIB_SMA_INVALID_FIELD;
	}

	/* all checked: apply */
	if (addressed) {
		port->mkey = be64_to_cpu(pi->mkey);
		port->mkey_lease_period = be16_to_cpu(pi->mkey_lease_period);
		port->mkeyprot = pi->mkeyprot_resv_lmc >> 6;
		if (be64_to_cpu(pi->gid_prefix) != port->gid_prefix) {
			port->gid_prefix = be64_to_cpu(pi->gid_prefix);
			*events |= SMA_EV_GID;
		}
		if (lid != port->lid || lmc != port->lmc) {
			WRITE_ONCE(port->lid, lid);
			WRITE_ONCE(port->lmc, lmc);
			*events |= SMA_EV_LID;
		}
		if (sm_lid != port->sm_lid ||
		    (pi->neighbormtu_mastersmsl & 0xf) != port->sm_sl) {
			port->sm_lid = sm_lid;
			port->sm_sl = pi->neighbormtu_mastersmsl & 0xf;
			*events |= SMA_EV_SM;
		}
		port->subnet_timeout = pi->clientrereg_resv_subnetto & 0x1f;
		if (pi->clientrereg_resv_subnetto & 0x80)
			*events |= SMA_EV_REREG;
	}
	port->width_enabled = width;
	port->speed_enabled = speed;
	port->speed_ext_enabled = speed_ext;
	*new_phys = phys;
	if (ldd)
		port->link_down_default = ldd;
	if (nmtu)
		port->neighbor_mtu = nmtu;
	port->vl_high_limit = pi->vl_high_limit;
	port->vlstall_hoqlife = pi->vlstallcnt_hoqlife;
	if (op_vls)
		port->op_vls = op_vls;
	/*
	 * Partition enforcement and raw packet filtering belong to a
	 * switch's external ports: they keep the bits, which OpenSM sets
	 * and reads back, and softib_switch_unicast() goes by them. At a
	 * CA port and switch port 0 they are reserved.
	 */
	if (!addressed)
		WRITE_ONCE(port->pe_flags, pi->operationalvl_pei_peo_fpi_fpo &
					   SOFTIB_PE_MASK);
	/* writing 0 to a violation counter resets it */
	if (!pi->mkey_violations)
		port->mkey_violations = 0;
	if (!pi->pkey_violations)
		atomic64_set(&port->cnt.drops[SOFTIB_DROP_PKEY], 0);
	if (!pi->qkey_violations)
		atomic64_set(&port->cnt.drops[SOFTIB_DROP_QKEY], 0);
	port->phy_overrun_thresh = pi->localphyerrors_overrunerrors;
	return 0;
}

/* SLtoVL: with VLCap 1, every SL goes to VL0, or to VL15 (dropped) */
bool softib_sma_sl2vl_ok(const u8 *tbl)
{
	int i;

	for (i = 0; i < 16; i++) {
		u8 vl = (tbl[i / 2] >> (i % 2 ? 0 : 4)) & 0xf;

		if (vl != 0 && vl != 15)
			return false;
	}
	return true;
}

/* P_KeyTable Set of block 0 (the whole table of a softib port). */
void softib_sma_set_pkeys(struct softib_port *port, const struct ib_smp *in,
			  unsigned int *events)
{
	const __be16 *p = (const __be16 *)in->data;
	int i;

	lockdep_assert_held(&port->lock);
	for (i = 0; i < SOFTIB_PKEY_TBL_LEN; i++) {
		u16 pkey = be16_to_cpu(p[i]);

		if (port->pkeys[i] != pkey) {
			WRITE_ONCE(port->pkeys[i], pkey);
			*events |= SMA_EV_PKEY;
		}
	}
}

void softib_sma_get_pkeys(struct softib_port *port, struct ib_smp *out)
{
	__be16 *p = (__be16 *)out->data;
	int i;

	lockdep_assert_held(&port->lock);
	for (i = 0; i < SOFTIB_PKEY_TBL_LEN; i++)
		p[i] = cpu_to_be16(port->pkeys[i]);
}

/*
 * The subnet management class at one CA port. Returns the MAD status of
 * the answer, or SOFTIB_SMA_DROP when the request is dropped (M_Key violation)
 * and SOFTIB_SMA_PASS when it belongs to an agent (SMInfo to an SM).
 */
static u16 sma_process(struct softib_dev *sdev, u32 port_num, int mad_flags,
		       const struct ib_smp *in, struct ib_smp *out)
{
	struct softib_port *port = softib_port(sdev, port_num);
	struct softib_port *target = port;
	enum ib_port_state old_state, new_state;
	u8 new_phys = 0;
	u32 mod = be32_to_cpu(in->attr_mod);
	bool set = in->method == IB_MGMT_METHOD_SET;
	unsigned int events = 0;
	unsigned long flags;
	bool key_ok;
	u16 status = 0;

	if (in->class_version != 1)
		return SOFTIB_SMA_BAD_VERSION;
	if (in->method != IB_MGMT_METHOD_GET && !set)
		return SOFTIB_SMA_UNSUP_METHOD;

	switch (in->attr_id) {
	case IB_SMP_ATTR_NODE_DESC:
		if (set)
			return SOFTIB_SMA_UNSUP_ATTR;
		/* ib_core's copy: set_node_desc and modify_device write it */
		memcpy(out->data, sdev->ibdev.node_desc, IB_DEVICE_NODE_DESC_MAX);
		return 0;
	case IB_SMP_ATTR_NODE_INFO:
		if (set)
			return SOFTIB_SMA_UNSUP_ATTR;
		softib_sma_node_info(out, RDMA_NODE_IB_CA, sdev->nports,
				     softib_node_guid,
				     be64_to_cpu(softib_port_guid(port_num)),
				     SOFTIB_DEVICE_ID, port_num);
		return 0;
	case IB_SMP_ATTR_SM_INFO:
		/* the SM that holds this port's issm answers; none: refused */
		if (READ_ONCE(port->cap_flags) & IB_PORT_SM)
			return SOFTIB_SMA_PASS;
		return SOFTIB_SMA_UNSUP_ATTR;
	case IB_SMP_ATTR_PORT_INFO:
		/*
		 * AttributeModifier: a port number (0: the receiving one);
		 * bit 31 says the SM knows the extended-speed fields.
		 */
		if ((mod & 0x7fffff00) || (mod & 0xff) > sdev->nports ||
		    (set && (mod & 0xff) && (mod & 0xff) != port_num))
			return SOFTIB_SMA_INVALID_FIELD;
		if (mod & 0xff)
			target = softib_port(sdev, mod & 0xff);
		break;
	case IB_SMP_ATTR_PKEY_TABLE:
		/* one block of 32; a CA ignores the port bits (31..16) */
		if ((mod & 0xffff) != 0)
			return SOFTIB_SMA_INVALID_FIELD;
		break;
	case IB_SMP_ATTR_GUID_INFO:
		/* one GUID per port: its own, which no SM may change */
		if (set || mod)
			return set ? SOFTIB_SMA_UNSUP_ATTR : SOFTIB_SMA_INVALID_FIELD;
		break;
	case IB_SMP_ATTR_SL_TO_VL_TABLE:
		if (mod)
			return SOFTIB_SMA_INVALID_FIELD;
		break;
	case IB_SMP_ATTR_VL_ARB_TABLE:
		/*
		 * Blocks 1 and 3: low and high priority entries 0..31;
		 * 2 and 4 (entries 32..63) are beyond our capacity.
		 */
		if (((mod >> 16) != 1 && (mod >> 16) != 3) || (mod & 0xffff))
			return SOFTIB_SMA_INVALID_FIELD;
		break;
	default:
		return SOFTIB_SMA_UNSUP_ATTR;
	}

	spin_lock_irqsave(&port->lock, flags);
	if (!softib_sma_check_mkey(port, in, mad_flags, &key_ok)) {
		spin_unlock_irqrestore(&port->lock, flags);
		return SOFTIB_SMA_DROP;
	}
	old_state = port->state;
	new_state = old_state;
	switch (in->attr_id) {
	case IB_SMP_ATTR_PORT_INFO:
		if (set)
			status = softib_sma_set_port_info(port, in, true,
							  &events, &new_state,
							  &new_phys);
		if (target == port)
			softib_sma_port_info(port, port_num, key_ok, out);
		break;
	case IB_SMP_ATTR_PKEY_TABLE:
		if (set)
			softib_sma_set_pkeys(port, in, &events);
		softib_sma_get_pkeys(port, out);
		break;
	case IB_SMP_ATTR_GUID_INFO:
		*(__be64 *)out->data = softib_port_guid(port_num);
		break;
	case IB_SMP_ATTR_SL_TO_VL_TABLE:
		if (set && softib_sma_sl2vl_ok(in->data))
			memcpy(port->sl2vl, in->data, sizeof(port->sl2vl));
		else if (set)
			status = SOFTIB_SMA_INVALID_FIELD;
		memcpy(out->data, port->sl2vl, sizeof(port->sl2vl));
		break;
	case IB_SMP_ATTR_VL_ARB_TABLE:
		mod = (mod >> 16) == 3;
		if (set)
			memcpy(port->vlarb[mod], in->data,
			       SOFTIB_VLARB_CAP * 2);
		memcpy(out->data, port->vlarb[mod], SOFTIB_VLARB_CAP * 2);
		break;
	}
	spin_unlock_irqrestore(&port->lock, flags);

	/* another port's PortInfo (a Get), its M_Key never shown */
	if (target != port) {
		spin_lock_irqsave(&target->lock, flags);
		softib_sma_port_info(target, port_num, false, out);
		spin_unlock_irqrestore(&target->lock, flags);
	}

	/*
	 * The port is updated: now its consumers may look at it. A link
	 * the SM takes down trains again (Polling, then LinkUp in Init)
	 * unless it was disabled; Polling enables a disabled one.
	 */
	if (new_phys == IB_PORT_PHYS_STATE_DISABLED) {
		softib_port_phys(port, new_phys);
	} else if ((new_state == IB_PORT_DOWN && old_state != IB_PORT_DOWN) ||
		   (new_phys == IB_PORT_PHYS_STATE_POLLING &&
		    READ_ONCE(port->phys_state) ==
		    IB_PORT_PHYS_STATE_DISABLED)) {
		softib_port_retrain(port);
	} else if (new_state != old_state) {
		softib_port_set_state(port, new_state);
	}
	/*
	 * The built-in SM routes the port's new LIDs before anyone hears
	 * of them: traffic follows once its senders look them up again.
	 */
	if ((events & SMA_EV_LID) && softib_builtin_sm)
		softib_switch_sm_lid(sdev, port_num);
	sma_raise(port, events);
	return status;
}

/*
 * Build the answer to a Get or Set in "out", whose attribute data the
 * class already wrote: the request's header (TID, attribute; for an SMP
 * also M_Key, hop pointer and DR LIDs) as GetResp, with the direction bit
 * and both paths for directed route. A PortInfo Set that fails answers
 * with the port as it is; other errors carry no data.
 */
int softib_sma_reply(const struct ib_mad *in, struct ib_mad *out, u16 status)
{
	bool smp = in->mad_hdr.mgmt_class != IB_MGMT_CLASS_PERF_MGMT;
	size_t hdr = smp ? offsetof(struct ib_smp, data) :
			   sizeof(struct ib_mad_hdr);

	memcpy(out, in, hdr);
	out->mad_hdr.method = IB_MGMT_METHOD_GET_RESP;
	out->mad_hdr.status = cpu_to_be16(status);
	if (in->mad_hdr.mgmt_class == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE) {
		const struct ib_smp *req = (const struct ib_smp *)in;
		struct ib_smp *rsp = (struct ib_smp *)out;

		memcpy(rsp->initial_path, req->initial_path,
		       sizeof(rsp->initial_path));
		memcpy(rsp->return_path, req->return_path,
		       sizeof(rsp->return_path));
		rsp->status |= IB_SMP_DIRECTION;
	}
	return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_REPLY;
}

int softib_process_mad(struct ib_device *ibdev, int mad_flags, u32 port_num,
		       const struct ib_wc *in_wc, const struct ib_grh *in_grh,
		       const struct ib_mad *in, struct ib_mad *out,
		       size_t *out_mad_size, u16 *out_mad_pkey_index)
{
	struct softib_dev *sdev = to_sdev(ibdev);
	const struct ib_smp *smp = (const struct ib_smp *)in;
	u8 class = in->mad_hdr.mgmt_class;
	u16 status;

	if (*out_mad_size < sizeof(*out) ||
	    in->mad_hdr.base_version != IB_MGMT_BASE_VERSION ||
	    port_num < 1 || port_num > sdev->nports)
		return IB_MAD_RESULT_SUCCESS;
	*out_mad_size = sizeof(*out);
	memset(out, 0, sizeof(*out));

	/*
	 * Answers, traps and reports are for the agents; so is every class
	 * we do not own (the SA's and the CM's MADs to an opensm on this
	 * port): plain SUCCESS hands them on untouched.
	 */
	if (in->mad_hdr.method & IB_MGMT_METHOD_RESP)
		return IB_MAD_RESULT_SUCCESS;

	switch (class) {
	case IB_MGMT_CLASS_SUBN_LID_ROUTED:
	case IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE:
		if (in->mad_hdr.method == IB_MGMT_METHOD_TRAP ||
		    in->mad_hdr.method == IB_MGMT_METHOD_REPORT)
			return IB_MAD_RESULT_SUCCESS;
		if (in->mad_hdr.method == IB_MGMT_METHOD_TRAP_REPRESS)
			return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_CONSUMED;
		status = sma_process(sdev, port_num, mad_flags, smp,
				     (struct ib_smp *)out);
		if (status == SOFTIB_SMA_DROP) {
			atomic64_inc(&sdev->sma_dropped);
			return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_CONSUMED;
		}
		if (status == SOFTIB_SMA_PASS)
			return IB_MAD_RESULT_SUCCESS;
		atomic64_inc(status ? &sdev->sma_errors : &sdev->sma_answered);
		return softib_sma_reply(in, out, status);
	case IB_MGMT_CLASS_PERF_MGMT:
		status = softib_pma_process(sdev, port_num, in, out);
		if (status == U16_MAX)
			return IB_MAD_RESULT_SUCCESS;
		return softib_sma_reply(in, out, status);
	default:
		return IB_MAD_RESULT_SUCCESS;
	}
}
