// SPDX-License-Identifier: GPL-2.0
/*
 * softib: the fabric's switch, as subnet management sees it.
 *
 * Every port of softib0 is cabled to the port of the same number of one
 * switch node (NodeType 2, its own GUID). Port 0 is the switch's
 * management port: it has the switch's LID, and the built-in SM runs
 * there (a managed switch's SM), so the SM LID is the switch's LID.
 * With a link to nodes in other kernels (link.c), the switch has one
 * more port for each of them, after the CA ports, in link_peers' order:
 * the link is the cable between this switch and that node's, which
 * trains when the link's session comes up. An SM on any node discovers
 * the whole fabric through these ports (directed routes cross them),
 * and under an external SM the data path to another node goes out of
 * the one its LFT names.
 *
 * The switch is not an ib_device: its subnet management agent lives
 * here, and so does the directed-route forwarding that a switch does in
 * hardware (IBTA 14.2.2, C14-9 on the way out, C14-13 on the way back).
 * A directed-route SMP that a CA port sends (DLID permissive) arrives
 * at the switch port it is cabled to; the switch answers it when the
 * path ends here, or passes it out of the next port of the path into the
 * CA port there, from the permissive LID. ib_mad at that CA port checks
 * the hop pointer again, asks the port's SMA (sma.c) and sends the answer
 * back the same way. LID-routed SMPs to the switch's LID are answered
 * here too.
 *
 * The switch keeps what an SM programs: SwitchInfo, the linear and
 * multicast forwarding tables, PortInfo and P_Key tables of its ports.
 * The built-in SM programs them as it programs the CA ports: the switch
 * at the SM LID, port N's LID behind switch port N.
 *
 * Whichever SM programmed them, the data path goes by them: a packet
 * from a CA port to another port's LID enters the switch at the port it
 * is cabled to, leaves by the LFT entry of its DLID, and the partition
 * enforcement bits of each switch port's PortInfo decide whether its
 * P_Key table is checked on the way in and out; multicast leaves by the
 * MFT entry of its MLID (softib_switch_unicast(), softib_switch_mcast()).
 *
 * Context: the sending QP's send engine (process context); the switch's
 * lock is a spinlock, never held while a packet is delivered.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_smi.h>

#include "softib.h"

/* SwitchInfo (IBTA 14.2.5.4) byte offsets */
#define SI_LFT_CAP	0
#define SI_RFT_CAP	2
#define SI_MFT_CAP	4
#define SI_LFT_TOP	6
#define SI_DEF_PORT	8
#define SI_DEF_MC_PRI	9
#define SI_DEF_MC_NOT	10
#define SI_LIFE_PSC	11	/* LifeTimeValue(5) PortStateChange(1) OSL2VL(2) */
#define SI_LIDS_PER	12
#define SI_PE_CAP	14
#define SI_FLAGS	16	/* Inb Outb FilterRawInb FilterRawOutb EnhP0 */
#define SI_MFT_TOP	18

#define SW_PSC		0x04	/* PortStateChange, in SI_LIFE_PSC */
#define SW_LFT_BLOCK	64	/* LIDs per LinearForwardingTable block */
#define SW_PORT_NONE	0xff	/* an LFT entry that forwards nowhere */

static u32 sw_nports(const struct softib_switch *sw)
{
	return sw->sdev->nports + sw->sdev->link_ports;
}

/* Is switch port "num" a port to another node (the link's)? */
static bool sw_link_port(const struct softib_switch *sw, u32 num)
{
	return num > sw->sdev->nports && num <= sw_nports(sw);
}

/* Power-up state; the built-in SM's programming is softib_switch_sm(). */
int softib_switch_init(struct softib_dev *sdev)
{
	struct softib_switch *sw = &sdev->sw;
	u32 i;

	sw->sdev = sdev;
	spin_lock_init(&sw->lock);
	sw->lft = kvmalloc(SOFTIB_SW_LFT_CAP, GFP_KERNEL);
	sw->mft = kvcalloc(SOFTIB_SW_MFT_CAP, sizeof(*sw->mft), GFP_KERNEL);
	if (!sw->lft || !sw->mft) {
		kvfree(sw->lft);
		kvfree(sw->mft);
		return -ENOMEM;
	}
	memset(sw->lft, SW_PORT_NONE, SOFTIB_SW_LFT_CAP);
	sw->life_psc = 18 << 3;		/* LifeTimeValue as OpenSM sets it */
	strscpy(sw->node_desc, "softib switch", sizeof(sw->node_desc));
	for (i = 0; i <= sw_nports(sw); i++) {
		struct softib_port *p = &sw->ports[i];

		p->sdev = sdev;
		p->num = i;
		spin_lock_init(&p->lock);
		softib_sma_init_port(p);
		/* base port 0 is always up; the others follow their cable */
		p->state = i ? IB_PORT_DOWN : IB_PORT_ACTIVE;
		p->phys_state = i ? IB_PORT_PHYS_STATE_POLLING :
				    IB_PORT_PHYS_STATE_LINK_UP;
		p->pkeys[0] = 0xffff;
		/* only port 0 is a port in the SM's sense (IsSM, traps) */
		if (i)
			p->cap_flags = 0;
	}
	return 0;
}

void softib_switch_cleanup(struct softib_dev *sdev)
{
	kvfree(sdev->sw.lft);
	kvfree(sdev->sw.mft);
}

/*
 * The built-in SM programs the switch as a real SM would: LID and SM LID
 * of port 0, port N's LID (N) out of port N, its own LID to port 0, the
 * ports it sees up made Active. The P_Key tables and partition
 * enforcement of the external ports follow the policy (policy.c), the
 * MFT the SA's groups (sa.c).
 */
void softib_switch_sm(struct softib_dev *sdev)
{
	struct softib_switch *sw = &sdev->sw;
	struct softib_port *p0 = &sw->ports[0];
	unsigned long flags;
	u32 i;

	spin_lock_irqsave(&sw->lock, flags);
	p0->lid = softib_sm_lid;
	p0->sm_lid = softib_sm_lid;
	p0->cap_flags |= IB_PORT_SM;
	sw->lft[softib_sm_lid] = 0;
	for (i = 1; i <= sdev->nports; i++)
		sw->lft[softib_lid_base + i] = i;
	sw->lft_top = max_t(u16, softib_sm_lid, softib_lid_base + sdev->nports);
	spin_unlock_irqrestore(&sw->lock, flags);
}

/*
 * The built-in SM routes again after a PortInfo Set gave CA port "num"
 * new LIDs (sma.c): the LIDs that went out of switch port "num" go
 * nowhere, the port's LIDs now (base LID, LMC) go there, as OpenSM's
 * next sweep would program them. LFTTop grows to cover them.
 */
void softib_switch_sm_lid(struct softib_dev *sdev, u32 num)
{
	struct softib_port *port = softib_port(sdev, num);
	struct softib_switch *sw = &sdev->sw;
	unsigned long flags;
	u32 lid, base, n, top;

	spin_lock_irqsave(&port->lock, flags);
	base = port->lid;
	n = 1U << port->lmc;
	spin_unlock_irqrestore(&port->lock, flags);

	spin_lock_irqsave(&sw->lock, flags);
	top = sw->lft_top;
	for (lid = 1; lid <= top; lid++)
		if (sw->lft[lid] == num)
			WRITE_ONCE(sw->lft[lid], SW_PORT_NONE);
	for (lid = base; base && lid < base + n && lid < SOFTIB_SW_LFT_CAP;
	     lid++) {
		WRITE_ONCE(sw->lft[lid], num);
		top = max(top, lid);
	}
	WRITE_ONCE(sw->lft_top, top);
	spin_unlock_irqrestore(&sw->lock, flags);
}

/*
 * The built-in SM's MFT entry of one MLID: the ports with members that
 * receive (sa.c). A store of the whole mask: the data path reads it
 * with one READ_ONCE.
 */
void softib_switch_sm_mft(struct softib_dev *sdev, u16 mlid, u32 mask)
{
	struct softib_switch *sw = &sdev->sw;
	unsigned long flags;

	if (mlid < SOFTIB_MLID_BASE || mlid >= SOFTIB_LID_PERMISSIVE)
		return;
	spin_lock_irqsave(&sw->lock, flags);
	WRITE_ONCE(sw->mft[mlid - SOFTIB_MLID_BASE], mask);
	spin_unlock_irqrestore(&sw->lock, flags);
}

/*
 * A new master SM (sm.c): the MFT is empty until its joins fill it, here
 * or by its SMPs from another node.
 */
void softib_switch_sm_mft_clear(struct softib_dev *sdev)
{
	struct softib_switch *sw = &sdev->sw;
	unsigned long flags;
	u32 i;

	spin_lock_irqsave(&sw->lock, flags);
	for (i = 0; i < SOFTIB_SW_MFT_CAP; i++)
		WRITE_ONCE(sw->mft[i], 0);
	spin_unlock_irqrestore(&sw->lock, flags);
}

/* The master SM's LID at the switch's port 0 (sm.c). */
void softib_switch_sm_set_lid(struct softib_dev *sdev, u16 sm_lid)
{
	struct softib_port *p0 = &sdev->sw.ports[0];
	unsigned long flags;

	spin_lock_irqsave(&p0->lock, flags);
	p0->sm_lid = sm_lid;
	spin_unlock_irqrestore(&p0->lock, flags);
}

/*
 * The built-in SM's partitions at switch port "num", as OpenSM programs
 * a switch's external ports (osm_pkey_mgr.c, part_enforce "both", its
 * default): the P_Key table of the CA port at the other end of the
 * cable, enforced inbound and outbound. policy.c calls this before it
 * writes the CA port's table, so that a P_Key a CA port gains already
 * passes the switch, and one it loses the CA port drops anyway.
 */
void softib_switch_sm_pkeys(struct softib_dev *sdev, u32 num,
			    const u16 *pkeys)
{
	struct softib_port *p = &sdev->sw.ports[num];
	unsigned long flags;
	int i;

	spin_lock_irqsave(&p->lock, flags);
	for (i = 0; i < SOFTIB_PKEY_TBL_LEN; i++)
		WRITE_ONCE(p->pkeys[i], pkeys[i]);
	WRITE_ONCE(p->pe_flags, (p->pe_flags & ~SOFTIB_PE_MASK) |
		   SOFTIB_PE_IN | SOFTIB_PE_OUT);
	spin_unlock_irqrestore(&p->lock, flags);
}

/*
 * The cable of switch port "num" (softib0's port "num") trained or went
 * down. Under the built-in SM a trained link is Active at once; else it
 * waits in Init for an SM.
 */
void softib_switch_link(struct softib_dev *sdev, u32 num, bool up)
{
	struct softib_switch *sw = &sdev->sw;
	struct softib_port *p = &sw->ports[num];
	unsigned long flags;
	bool was_down;

	spin_lock_irqsave(&p->lock, flags);
	if (p->phys_state != IB_PORT_PHYS_STATE_DISABLED)
		p->phys_state = up ? IB_PORT_PHYS_STATE_LINK_UP :
				     IB_PORT_PHYS_STATE_POLLING;
	was_down = p->state == IB_PORT_DOWN;
	if (up == was_down)
		p->state = !up ? IB_PORT_DOWN :
			   softib_builtin_sm ? IB_PORT_ACTIVE : IB_PORT_INIT;
	spin_unlock_irqrestore(&p->lock, flags);

	if (up == was_down) {
		/* a port changed state: the SM polls this bit */
		spin_lock_irqsave(&sw->lock, flags);
		sw->life_psc |= SW_PSC;
		spin_unlock_irqrestore(&sw->lock, flags);
	}
}

/*
 * The built-in SM's route to another node: its LIDs (its switch's, 32K,
 * and its "nports" ports', 32K + 1 on) out of link port "num", as an
 * SM's sweep programs them once the link trained; none out of it when
 * "node" is 0 (the link is down). Under the built-in SM the data path
 * goes by the LIDs alone (wire.c): this is for what ibroute and
 * ibtracert read.
 */
static void sw_sm_route_node(struct softib_switch *sw, u32 num, u32 node,
			     u32 nports)
{
	u32 lid, base = node * SOFTIB_NODE_LIDS, top;
	unsigned long flags;

	spin_lock_irqsave(&sw->lock, flags);
	top = sw->lft_top;
	for (lid = 1; lid <= top; lid++)
		if (sw->lft[lid] == num)
			WRITE_ONCE(sw->lft[lid], SW_PORT_NONE);
	if (node) {
		nports = min_t(u32, nports, SOFTIB_NODE_LIDS - 1);
		for (lid = base; lid <= base + nports &&
		     lid < SOFTIB_SW_LFT_CAP; lid++)
			WRITE_ONCE(sw->lft[lid], num);
		top = max(top, min_t(u32, base + nports,
				     SOFTIB_SW_LFT_CAP - 1));
		WRITE_ONCE(sw->lft_top, top);
	}
	spin_unlock_irqrestore(&sw->lock, flags);
}

/*
 * The link to the node of link_peers entry "idx" came up (a new session)
 * or went down: the switch's port to it trains or goes down, as the
 * cable between two switches does. It carries the link's IB MTU
 * ("ib_mtu" bytes): an SM reads it in MTUCap, sets NeighborMTU at both
 * ends and gives paths across the link that MTU. Under the built-in SM,
 * the other node ("node", with "nports" CA ports) is routed out of it.
 * Any context; takes only the port's and the switch's locks.
 */
void softib_switch_link_port(struct softib_dev *sdev, u32 idx, bool up,
			     u32 ib_mtu, u32 node, u32 nports)
{
	struct softib_port *p;
	unsigned long flags;
	u32 num;

	if (!sdev || idx >= sdev->link_ports)
		return;
	num = sdev->nports + 1 + idx;
	p = &sdev->sw.ports[num];
	if (up) {
		spin_lock_irqsave(&p->lock, flags);
		p->mtu_cap = ib_mtu_int_to_enum(ib_mtu);
		p->neighbor_mtu = p->mtu_cap;
		spin_unlock_irqrestore(&p->lock, flags);
	}
	softib_switch_link(sdev, num, up);
	if (softib_builtin_sm)
		sw_sm_route_node(&sdev->sw, num, up ? node : 0, nports);
}

/*
 * The node that a packet to "lid" leaves for, by the switch's LFT: the
 * node at the other end of the link port the entry names, if that link
 * is up. How the data path finds another node's LIDs under an external
 * SM, which may give any node any LIDs (wire.c).
 */
bool softib_switch_lid_node(struct softib_dev *sdev, u16 lid, u32 *node)
{
	struct softib_switch *sw = &sdev->sw;
	u32 o;

	if (!sdev->link_ports || lid > READ_ONCE(sw->lft_top))
		return false;
	o = READ_ONCE(sw->lft[lid]);
	if (!sw_link_port(sw, o))
		return false;
	*node = softib_link_port_node(sdev, o - sdev->nports - 1);
	return *node != 0;
}

/* May the cable of switch port "num" train (not disabled at the switch)? */
bool softib_switch_port_enabled(struct softib_dev *sdev, u32 num)
{
	return READ_ONCE(sdev->sw.ports[num].phys_state) !=
	       IB_PORT_PHYS_STATE_DISABLED;
}

static void sw_node_info(struct softib_switch *sw, u32 in_port,
			 struct ib_smp *out)
{
	/* a switch has one port GUID, port 0's */
	softib_sma_node_info(out, RDMA_NODE_IB_SWITCH, sw_nports(sw),
			     softib_switch_guid, softib_switch_guid,
			     SOFTIB_SW_DEVICE_ID, in_port);
}

static void sw_switch_info(struct softib_switch *sw, const struct ib_smp *in,
			   struct ib_smp *out)
{
	u8 *d = out->data;

	lockdep_assert_held(&sw->lock);
	if (in->method == IB_MGMT_METHOD_SET) {
		const u8 *r = in->data;

		sw->lft_top = min_t(u16, get_unaligned_be16(r + SI_LFT_TOP),
				    SOFTIB_SW_LFT_CAP - 1);
		sw->def_port = r[SI_DEF_PORT];
		sw->def_mc_pri = r[SI_DEF_MC_PRI];
		sw->def_mc_not = r[SI_DEF_MC_NOT];
		/* PortStateChange: writing 1 clears it */
		sw->life_psc = (r[SI_LIFE_PSC] & ~SW_PSC) |
			       (sw->life_psc & SW_PSC &
				~(r[SI_LIFE_PSC] & SW_PSC));
		sw->mft_top = get_unaligned_be16(r + SI_MFT_TOP);
	}
	put_unaligned_be16(SOFTIB_SW_LFT_CAP, d + SI_LFT_CAP);
	put_unaligned_be16(0, d + SI_RFT_CAP);
	put_unaligned_be16(SOFTIB_SW_MFT_CAP, d + SI_MFT_CAP);
	put_unaligned_be16(sw->lft_top, d + SI_LFT_TOP);
	d[SI_DEF_PORT] = sw->def_port;
	d[SI_DEF_MC_PRI] = sw->def_mc_pri;
	d[SI_DEF_MC_NOT] = sw->def_mc_not;
	d[SI_LIFE_PSC] = sw->life_psc;
	put_unaligned_be16(1, d + SI_LIDS_PER);
	put_unaligned_be16(SOFTIB_PKEY_TBL_LEN, d + SI_PE_CAP);
	/* inbound and outbound partition enforcement, no raw filtering */
	d[SI_FLAGS] = 0xc0;
	put_unaligned_be16(sw->mft_top, d + SI_MFT_TOP);
}

static u16 sw_lft(struct softib_switch *sw, const struct ib_smp *in,
		  struct ib_smp *out)
{
	u32 block = be32_to_cpu(in->attr_mod);

	lockdep_assert_held(&sw->lock);
	if (block >= SOFTIB_SW_LFT_CAP / SW_LFT_BLOCK)
		return SOFTIB_SMA_INVALID_FIELD;
	if (in->method == IB_MGMT_METHOD_SET)
		memcpy(sw->lft + block * SW_LFT_BLOCK, in->data, SW_LFT_BLOCK);
	memcpy(out->data, sw->lft + block * SW_LFT_BLOCK, SW_LFT_BLOCK);
	return 0;
}

/*
 * MulticastForwardingTable: AttributeModifier bits 0..8 the block of 32
 * MLIDs, bits 28..31 the position (which 16 ports the masks cover).
 */
static u16 sw_mft(struct softib_switch *sw, const struct ib_smp *in,
		  struct ib_smp *out)
{
	u32 mod = be32_to_cpu(in->attr_mod);
	u32 block = mod & 0x1ff, pos = mod >> 28;
	const __be16 *src = (const __be16 *)in->data;
	__be16 *dst = (__be16 *)out->data;
	u32 i, idx;

	lockdep_assert_held(&sw->lock);
	if ((mod & 0x0ffffe00) || pos > sw_nports(sw) / 16 ||
	    block >= SOFTIB_SW_MFT_CAP / SOFTIB_SW_MFT_BLOCK)
		return SOFTIB_SMA_INVALID_FIELD;
	for (i = 0; i < SOFTIB_SW_MFT_BLOCK; i++) {
		idx = block * SOFTIB_SW_MFT_BLOCK + i;
		if (in->method == IB_MGMT_METHOD_SET) {
			sw->mft[idx] &= ~(0xffffU << (pos * 16));
			sw->mft[idx] |= (u32)be16_to_cpu(src[i]) << (pos * 16);
		}
		dst[i] = cpu_to_be16(sw->mft[idx] >> (pos * 16));
	}
	return 0;
}

/*
 * PortInfo of a switch port: any port 0..N (AttributeModifier), Get and
 * Set. Disabling or enabling a CA port's switch port takes the cable,
 * and so the CA port at its other end, down or lets it train again. A
 * link port's cable is the link's session: it follows that alone.
 */
static u16 sw_port_info(struct softib_switch *sw, u32 in_port, bool key_ok,
			const struct ib_smp *in, struct ib_smp *out)
{
	u32 num = be32_to_cpu(in->attr_mod) & 0xff;
	struct softib_port *p;
	enum ib_port_state old_state, new_state;
	unsigned int events = 0;
	unsigned long flags;
	u8 new_phys = 0;
	u16 status = 0;

	if ((be32_to_cpu(in->attr_mod) & 0x7fffff00) || num > sw_nports(sw))
		return SOFTIB_SMA_INVALID_FIELD;
	p = &sw->ports[num];
	spin_lock_irqsave(&p->lock, flags);
	old_state = p->state;
	new_state = old_state;
	if (in->method == IB_MGMT_METHOD_SET) {
		status = softib_sma_set_port_info(p, in, !num, &events,
						  &new_state, &new_phys);
		/* base port 0 is always Active; external ports as set */
		if (!status && num && new_state != IB_PORT_DOWN)
			p->state = new_state;
	}
	softib_sma_port_info(p, in_port, key_ok || num, out);
	spin_unlock_irqrestore(&p->lock, flags);

	if (status || !num || sw_link_port(sw, num))
		return status;
	if (new_phys == IB_PORT_PHYS_STATE_DISABLED) {
		WRITE_ONCE(p->phys_state, IB_PORT_PHYS_STATE_DISABLED);
		softib_port_phys(softib_port(sw->sdev, num),
				 IB_PORT_PHYS_STATE_POLLING);
	} else if ((new_phys == IB_PORT_PHYS_STATE_POLLING &&
		    READ_ONCE(p->phys_state) == IB_PORT_PHYS_STATE_DISABLED) ||
		   (new_state == IB_PORT_DOWN && old_state != IB_PORT_DOWN)) {
		/* enabled again, or set Down: the link trains again */
		WRITE_ONCE(p->phys_state, IB_PORT_PHYS_STATE_POLLING);
		softib_port_retrain(softib_port(sw->sdev, num));
	}
	return 0;
}

/*
 * The switch's SMA. Returns the MAD status of the answer in "out",
 * SOFTIB_SMA_DROP for an M_Key violation, SOFTIB_SMA_PASS for SMInfo
 * when no SM runs on the switch.
 */
static u16 sw_sma(struct softib_switch *sw, u32 in_port,
		  const struct ib_smp *in, struct ib_smp *out)
{
	struct softib_port *p0 = &sw->ports[0];
	bool set = in->method == IB_MGMT_METHOD_SET;
	u32 mod = be32_to_cpu(in->attr_mod);
	unsigned int events = 0;
	unsigned long flags;
	bool key_ok, ok;
	u16 status = 0;
	u32 port;

	if (in->class_version != 1)
		return SOFTIB_SMA_BAD_VERSION;
	if (in->method != IB_MGMT_METHOD_GET && !set)
		return SOFTIB_SMA_UNSUP_METHOD;

	/* the switch has one M_Key, port 0's */
	spin_lock_irqsave(&p0->lock, flags);
	ok = softib_sma_check_mkey(p0, in, 0, &key_ok);
	spin_unlock_irqrestore(&p0->lock, flags);
	if (!ok)
		return SOFTIB_SMA_DROP;

	switch (in->attr_id) {
	case IB_SMP_ATTR_NODE_DESC:
		if (set)
			return SOFTIB_SMA_UNSUP_ATTR;
		memcpy(out->data, sw->node_desc, sizeof(sw->node_desc));
		return 0;
	case IB_SMP_ATTR_NODE_INFO:
		if (set)
			return SOFTIB_SMA_UNSUP_ATTR;
		sw_node_info(sw, in_port, out);
		return 0;
	case IB_SMP_ATTR_PORT_INFO:
		return sw_port_info(sw, in_port, key_ok, in, out);
	case IB_SMP_ATTR_SM_INFO:
		/* the built-in SM on port 0 answers; else nobody does */
		if (READ_ONCE(p0->cap_flags) & IB_PORT_SM)
			return SOFTIB_SMA_PASS;
		return SOFTIB_SMA_UNSUP_ATTR;
	case IB_SMP_ATTR_PKEY_TABLE:
		/* AttributeModifier: port << 16 | block (one block a port) */
		port = mod >> 16;
		if ((mod & 0xffff) || port > sw_nports(sw))
			return SOFTIB_SMA_INVALID_FIELD;
		spin_lock_irqsave(&sw->ports[port].lock, flags);
		if (set)
			softib_sma_set_pkeys(&sw->ports[port], in, &events);
		softib_sma_get_pkeys(&sw->ports[port], out);
		spin_unlock_irqrestore(&sw->ports[port].lock, flags);
		return 0;
	case IB_SMP_ATTR_SL_TO_VL_TABLE:
		/* input port << 8 | output port; VL0 only, one table */
		if ((mod & ~0xffffU) || ((mod >> 8) & 0xff) > sw_nports(sw) ||
		    (mod & 0xff) > sw_nports(sw))
			return SOFTIB_SMA_INVALID_FIELD;
		spin_lock_irqsave(&sw->lock, flags);
		if (set && softib_sma_sl2vl_ok(in->data))
			memcpy(sw->sl2vl, in->data, sizeof(sw->sl2vl));
		else if (set)
			status = SOFTIB_SMA_INVALID_FIELD;
		memcpy(out->data, sw->sl2vl, sizeof(sw->sl2vl));
		spin_unlock_irqrestore(&sw->lock, flags);
		return status;
	case IB_SMP_ATTR_VL_ARB_TABLE:
		/* block << 16 | port; blocks 1 and 3, as at a CA */
		port = mod & 0xff;
		if (((mod >> 16) != 1 && (mod >> 16) != 3) ||
		    (mod & 0xff00) || port > sw_nports(sw))
			return SOFTIB_SMA_INVALID_FIELD;
		spin_lock_irqsave(&sw->ports[port].lock, flags);
		if (set)
			memcpy(sw->ports[port].vlarb[(mod >> 16) == 3],
			       in->data, SOFTIB_VLARB_CAP * 2);
		memcpy(out->data, sw->ports[port].vlarb[(mod >> 16) == 3],
		       SOFTIB_VLARB_CAP * 2);
		spin_unlock_irqrestore(&sw->ports[port].lock, flags);
		return 0;
	case IB_SMP_ATTR_SWITCH_INFO:
		spin_lock_irqsave(&sw->lock, flags);
		sw_switch_info(sw, in, out);
		spin_unlock_irqrestore(&sw->lock, flags);
		return 0;
	case IB_SMP_ATTR_LINEAR_FORWARD_TABLE:
		spin_lock_irqsave(&sw->lock, flags);
		status = sw_lft(sw, in, out);
		spin_unlock_irqrestore(&sw->lock, flags);
		return status;
	case IB_SMP_ATTR_MCAST_FORWARD_TABLE:
		spin_lock_irqsave(&sw->lock, flags);
		status = sw_mft(sw, in, out);
		spin_unlock_irqrestore(&sw->lock, flags);
		return status;
	default:
		return SOFTIB_SMA_UNSUP_ATTR;
	}
}

static void sw_discard(struct softib_switch *sw, u32 port,
		       enum softib_sw_drop why)
{
	atomic64_inc(&sw->discards[port][why]);
}

/*
 * May a packet pass switch port "p"? Data needs it Active; SMPs (VL15)
 * pass in Init and Armed too, as they must for an SM to bring it up.
 */
static bool sw_port_up(struct softib_port *p, bool smp)
{
	enum ib_port_state state = READ_ONCE(p->state);

	return state == IB_PORT_ACTIVE ||
	       (smp && (state == IB_PORT_INIT || state == IB_PORT_ARMED));
}

/*
 * Put an SMP out of switch port "num", from the permissive LID: into
 * the QP0 of the CA port there, or across the link to the switch of the
 * node at the other end, which takes it in at its port to this node. A
 * link port that is down (or not up in the SM's sense) discards it.
 */
static void sw_xmit(struct softib_switch *sw, u32 num, u16 slid,
		    const struct ib_smp *smp)
{
	struct {
		struct softib_swqe wqe;
		struct ib_sge sge;
	} out = {};
	struct softib_pkt pkt = {
		.sdev = sw->sdev,
		.src_qpn = 0,
		.slid = slid,
		.pkey = 0xffff,
		.wqe = &out.wqe,
	};

	u32 node;

	out.wqe.opcode = IB_WR_SEND;
	out.wqe.length = sizeof(*smp);
	out.wqe.num_sge = 1;
	out.wqe.av.dlid = SOFTIB_LID_PERMISSIVE;
	out.sge.addr = (uintptr_t)smp;
	out.sge.length = sizeof(*smp);
	if (sw_link_port(sw, num)) {
		node = softib_link_port_node(sw->sdev,
					     num - sw->sdev->nports - 1);
		if (!node || !sw_port_up(&sw->ports[num], true)) {
			sw_discard(sw, num, SOFTIB_SW_DROP_PORT_DOWN);
			return;
		}
		softib_wire_send(&pkt, node);
		return;
	}
	softib_deliver_smi(&pkt, softib_port(sw->sdev, num));
}

/*
 * A directed-route SMP came in on switch port "in" (IBTA 14.2.2.2).
 * Going out (D = 0), the switch records the port it came in on in the
 * return path and moves the hop pointer on: either the path ends here
 * (hop pointer == hop count: ours to answer) or it goes on out of the
 * next port of the initial path. Coming back (D = 1), it goes out of the
 * port the return path names. Anything else is discarded.
 * Returns true if the SMP is for the switch's SMA.
 */
static bool sw_dr_forward(struct softib_switch *sw, u32 in, struct ib_smp *smp)
{
	u32 out;

	if (smp->hop_cnt >= IB_SMP_MAX_PATH_HOPS)
		return false;
	if (!ib_get_smp_direction(smp)) {
		if (!smp->hop_ptr || smp->hop_ptr > smp->hop_cnt)
			return false;
		smp->return_path[smp->hop_ptr] = in;
		if (smp->hop_ptr == smp->hop_cnt) {
			smp->hop_ptr++;
			return smp->dr_dlid == IB_LID_PERMISSIVE;
		}
		smp->hop_ptr++;
		out = smp->initial_path[smp->hop_ptr];
	} else {
		/* C14-13:2: on the way back through an intermediate hop */
		if (smp->hop_ptr < 2 || smp->hop_ptr > smp->hop_cnt)
			return false;
		smp->hop_ptr--;
		out = smp->return_path[smp->hop_ptr];
	}
	if (out < 1 || out > sw_nports(sw)) {
		atomic64_inc(&sw->dr_discards);
		return false;
	}
	sw_xmit(sw, out, SOFTIB_LID_PERMISSIVE, smp);
	atomic64_inc(&sw->dr_forwarded);
	return false;
}

/*
 * A subnet management datagram that reaches the switch at port "in": a
 * CA port's or a link port's (from another node), either directed route
 * (DLID permissive) or LID-routed to the switch's LID. Runs in the
 * sender's send engine or the link's rx work.
 */
void softib_switch_recv(const struct softib_pkt *pkt, u32 in)
{
	struct softib_switch *sw = &pkt->sdev->sw;
	struct ib_smp *req, *resp;
	bool dr;
	u16 status;

	if (pkt->wqe->remote_qpn != 0)
		return;
	req = (struct ib_smp *)softib_pkt_mad(pkt);
	if (!req)
		return;
	resp = req + 1;

	dr = req->mgmt_class == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE;
	if (req->base_version != IB_MGMT_BASE_VERSION ||
	    (!dr && req->mgmt_class != IB_MGMT_CLASS_SUBN_LID_ROUTED))
		goto out_free;
	if (dr && !sw_dr_forward(sw, in, req))
		goto out_free;
	/*
	 * Under the built-in SM, a Set from another node is taken only
	 * from the master SM this node elected, LID-routed from its SM
	 * LID: a node that wrongly takes itself for master (before its
	 * election ran, or on a fabric cut in two) must not rewrite this
	 * switch's tables. An external SM's Sets are the SM's to make (a
	 * switch's M_Key protects it, as on hardware).
	 */
	if (softib_builtin_sm && sw_link_port(sw, in) &&
	    req->method == IB_MGMT_METHOD_SET &&
	    (dr || pkt->slid != READ_ONCE(sw->ports[0].sm_lid) ||
	     softib_sm_is_master(pkt->sdev))) {
		atomic64_inc(&sw->sma_dropped);
		goto out_free;
	}
	/* answers and traps to the switch: it has no SM agent to give them */
	if (req->method & IB_MGMT_METHOD_RESP ||
	    req->method == IB_MGMT_METHOD_TRAP ||
	    req->method == IB_MGMT_METHOD_TRAP_REPRESS)
		goto out_free;

	status = sw_sma(sw, in, req, resp);
	if (status == SOFTIB_SMA_DROP) {
		atomic64_inc(&sw->sma_dropped);
		goto out_free;
	}
	if (status == SOFTIB_SMA_PASS)
		/* SMInfo to port 0, where the built-in SM runs */
		status = softib_sm_info(pkt->sdev, req, resp);
	atomic64_inc(&sw->sma_answered);
	softib_sma_reply((struct ib_mad *)req, (struct ib_mad *)resp, status);

	if (!dr) {
		/* LID-routed: from the switch's LID back to the requester's */
		softib_sm_reply(pkt, READ_ONCE(sw->ports[0].lid), resp);
		goto out_free;
	}
	/* C14-13:1: the way back starts at the port the SMP came in on */
	resp->hop_ptr--;
	if (resp->return_path[resp->hop_ptr] != in || !resp->hop_ptr)
		goto out_free;
	sw_xmit(sw, in, SOFTIB_LID_PERMISSIVE, resp);
out_free:
	kfree(req);
}

/*
 * The data path through the switch, as the hardware forwards: the tables
 * an SM programmed are read with READ_ONCE and never locked (their
 * writers hold sw->lock, or a port's lock, one entry at a time), nothing
 * is allocated, and a discard is one atomic add. Runs in the sender's
 * send engine under rcu_read_lock(), like the rest of the delivery.
 */

/*
 * A packet from another node that no port of this one owns: it came in
 * at link port "in" and goes nowhere (a node does not pass packets on
 * to a third one: the nodes of a fabric link to each other directly).
 */
void softib_switch_unrouted(struct softib_dev *sdev, u32 in)
{
	if (in <= sw_nports(&sdev->sw))
		sw_discard(&sdev->sw, in, SOFTIB_SW_DROP_UNROUTED);
}

/*
 * Partition enforcement at a switch port (IBTA 10.9.3): with the
 * PortInfo bit "pe" set, the packet's partition (the low 15 bits of its
 * P_Key) must be in the port's table. The membership bit is not
 * compared: an SM gives the switch port the table of its CA port,
 * limited entries as limited (OpenSM's pkey_mgr_update_peer_port()),
 * so "not both limited" here would cut a limited member off from the
 * full members it may talk to. The receiving CA port checks membership
 * (softib_pkey_match()). The default partition is usually at index 0:
 * the loop ends there for most traffic.
 */
static bool sw_pkey_ok(struct softib_port *p, u8 pe, u16 pkey)
{
	int i;

	if (!(READ_ONCE(p->pe_flags) & pe))
		return true;
	pkey &= 0x7fff;
	if (!pkey)	/* the invalid P_Key; 0 entries are no entries */
		return false;
	for (i = 0; i < SOFTIB_PKEY_TBL_LEN; i++)
		if ((READ_ONCE(p->pkeys[i]) & 0x7fff) == pkey)
			return true;
	return false;
}

/*
 * May a packet pass switch port "num" on its way in (pe SOFTIB_PE_IN) or
 * out (SOFTIB_PE_OUT)? The port must be up and, but for SMPs, the
 * packet's P_Key pass the port's partition check; a discard is counted.
 */
static bool sw_pass(struct softib_switch *sw, u32 num, bool smp, u8 pe,
		    u16 pkey)
{
	struct softib_port *p = &sw->ports[num];

	if (unlikely(!sw_port_up(p, smp))) {
		sw_discard(sw, num, SOFTIB_SW_DROP_PORT_DOWN);
		return false;
	}
	if (!smp && unlikely(!sw_pkey_ok(p, pe, pkey))) {
		sw_discard(sw, num, pe == SOFTIB_PE_IN ?
			   SOFTIB_SW_DROP_RCV_PKEY : SOFTIB_SW_DROP_XMIT_PKEY);
		return false;
	}
	return true;
}

/*
 * A unicast packet from CA port pkt->sport to "dlid" (a LID, not the
 * permissive LID or the switch's). Returns the CA port that takes it, or
 * NULL with the discard counted. A DLID of the sending port itself
 * loops back inside the HCA and never reaches the switch. Otherwise the
 * packet enters switch port S (partition check inbound), goes out of
 * the port LFT[dlid] names (partition check outbound), and the CA port
 * there takes it only if the DLID is one of its LIDs. Subnet management
 * packets ("smp", VL15) are never P_Key checked.
 */
struct softib_port *softib_switch_unicast(const struct softib_pkt *pkt,
					  u16 dlid, bool smp)
{
	struct softib_port *sport = pkt->sport, *dport;
	struct softib_dev *sdev = pkt->sdev;
	struct softib_switch *sw = &sdev->sw;
	u32 s = sport->num, o;

	if (softib_port_owns_lid(sport, dlid))
		return sport;

	if (unlikely(!sw_pass(sw, s, smp, SOFTIB_PE_IN, pkt->pkey)))
		return NULL;
	/* beyond LinearFDBTop, 0xff or port 0: the switch has no way out */
	o = dlid <= READ_ONCE(sw->lft_top) ? READ_ONCE(sw->lft[dlid]) :
					      SW_PORT_NONE;
	if (unlikely(o < 1 || o > sdev->nports || o == s)) {
		sw_discard(sw, s, SOFTIB_SW_DROP_UNROUTED);
		/* and, as before the switch routed, at the sender */
		atomic64_inc(&sport->cnt.drops[SOFTIB_DROP_NO_DEST]);
		return NULL;
	}
	if (unlikely(!sw_pass(sw, o, smp, SOFTIB_PE_OUT, pkt->pkey)))
		return NULL;
	dport = softib_port(sdev, o);
	if (unlikely(!softib_port_owns_lid(dport, dlid))) {
		/* misrouted: the CA port's link layer drops it */
		atomic64_inc(&dport->cnt.drops[SOFTIB_DROP_NO_DEST]);
		return NULL;
	}
	return dport;
}

/*
 * A multicast packet from CA port pkt->sport to "mlid": the mask of CA
 * ports, besides the sending one, that the switch puts it out of. The
 * MFT entry without the port it came in on, each port there up and
 * passing the outbound partition check; nothing if the inbound check
 * fails. Each discard is counted once per packet and port, not per QP.
 */
u32 softib_switch_mcast(const struct softib_pkt *pkt, u16 mlid)
{
	struct softib_switch *sw = &pkt->sdev->sw;
	u32 s = pkt->sport->num, o, mask;
	struct softib_port *out;

	mask = READ_ONCE(sw->mft[mlid - SOFTIB_MLID_BASE]) &
	       GENMASK(pkt->sdev->nports, 1) & ~BIT(s);
	if (!mask)
		return 0;
	if (unlikely(!sw_port_up(&sw->ports[s], false))) {
		sw_discard(sw, s, SOFTIB_SW_DROP_PORT_DOWN);
		return 0;
	}
	if (unlikely(!sw_pkey_ok(&sw->ports[s], SOFTIB_PE_IN, pkt->pkey))) {
		sw_discard(sw, s, SOFTIB_SW_DROP_RCV_PKEY);
		return 0;
	}
	for (o = 1; o <= pkt->sdev->nports; o++) {
		if (!(mask & BIT(o)))
			continue;
		out = &sw->ports[o];
		if (unlikely(!sw_port_up(out, false))) {
			sw_discard(sw, o, SOFTIB_SW_DROP_PORT_DOWN);
			mask &= ~BIT(o);
		} else if (unlikely(!sw_pkey_ok(out, SOFTIB_PE_OUT,
					       pkt->pkey))) {
			sw_discard(sw, o, SOFTIB_SW_DROP_XMIT_PKEY);
			mask &= ~BIT(o);
		}
	}
	return mask;
}

static const char * const sw_drop_names[SOFTIB_SW_DROP_MAX] = {
	[SOFTIB_SW_DROP_RCV_PKEY] = "rcv_constraint",
	[SOFTIB_SW_DROP_XMIT_PKEY] = "xmit_constraint",
	[SOFTIB_SW_DROP_UNROUTED] = "unrouted",
	[SOFTIB_SW_DROP_PORT_DOWN] = "port_down",
};

int softib_switch_show(struct seq_file *m, struct softib_dev *sdev)
{
	struct softib_switch *sw = &sdev->sw;
	u32 i, d;

	seq_printf(m, "guid 0x%016llx\nlid 0x%x\nlft_top 0x%x\nmft_top 0x%x\n",
		   softib_switch_guid, READ_ONCE(sw->ports[0].lid),
		   READ_ONCE(sw->lft_top), READ_ONCE(sw->mft_top));
	seq_printf(m, "sma_answered %lld\nsma_dropped %lld\ndr_forwarded %lld\ndr_discards %lld\n",
		   atomic64_read(&sw->sma_answered),
		   atomic64_read(&sw->sma_dropped),
		   atomic64_read(&sw->dr_forwarded),
		   atomic64_read(&sw->dr_discards));
	for (i = 0; i <= sw_nports(sw); i++) {
		seq_printf(m, "port %u state %u phys %u enforce 0x%x", i,
			   READ_ONCE(sw->ports[i].state),
			   READ_ONCE(sw->ports[i].phys_state),
			   READ_ONCE(sw->ports[i].pe_flags));
		for (d = 0; d < SOFTIB_SW_DROP_MAX; d++)
			seq_printf(m, " %s %lld", sw_drop_names[d],
				   atomic64_read(&sw->discards[i][d]));
		seq_putc(m, '\n');
	}
	/* the MFT's entries that forward somewhere: MLID, port mask */
	for (i = 0; i < SOFTIB_SW_MFT_CAP; i++) {
		u32 mask = READ_ONCE(sw->mft[i]);

		if (mask)
			seq_printf(m, "mft 0x%04x 0x%x\n",
				   SOFTIB_MLID_BASE + i, mask);
	}
	return 0;
}
