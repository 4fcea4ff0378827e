// SPDX-License-Identifier: GPL-2.0
/*
 * softib: the subnet administrator at the SM LID.
 *
 * GSI datagrams sent to (SM LID, QP1) end up here instead of on a port.
 * The SA answers the way OpenSM does for the queries kernel ULPs make:
 * ClassPortInfo, PathRecord Get (single record, no RMPP) and
 * MCMemberRecord Set (join/create), Delete (leave) and Get; and the
 * GetTable queries of the fabric tools (sa_table.c). The reply goes
 * back into the requester's QP1 from SLID = SM LID, QP 1, with the TID of
 * the request and no GRH.
 *
 * Runs in the requester's send engine (process context, no softib lock
 * held); sa_lock serialises the multicast group table.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#include <linux/moduleparam.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_sa.h>
#include <rdma/ib_smi.h>

#include "softib.h"

/*
 * Groups that joins create (not those of the partition policy) are capped
 * per device: any port's ULP can create one per MGID (IPoIB: one per
 * multicast address a local user sends to), and without a cap one user
 * could take every MLID and refuse every other join on the fabric.
 */
unsigned int softib_sa_max_groups = SOFTIB_SA_GROUPS_DEFAULT;
module_param_named(sa_max_groups, softib_sa_max_groups, uint, 0444);
MODULE_PARM_DESC(sa_max_groups, "Multicast groups the SA creates on joins, per device (1-16382, default 4096); a join beyond it gets status 0x0100 (no resources)");

/* SA-specific MAD status codes (IBTA 15.2.1.1, in bits 8..14 of status) */
#define SOFTIB_SA_ERR_NO_RESOURCES	0x0100
#define SOFTIB_SA_ERR_REQ_INVALID	0x0200
#define SOFTIB_SA_ERR_NO_RECORDS	0x0300
#define SOFTIB_SA_ERR_INSUFFICIENT_COMP	0x0600

/* Wire layout of PathRecord (64 bytes), IBTA 15.2.5.16 */
#define PR_DGID		8
#define PR_SGID		24
#define PR_DLID		40
#define PR_SLID		42
#define PR_FLOW_HOP	44	/* raw(1) rsvd(3) flow label(20) hop limit(8) */
#define PR_TCLASS	48
#define PR_REV_NUMB	49	/* reversible(1) numb_path(7) */
#define PR_PKEY		50
#define PR_QOS_SL	52	/* QoS class(12) SL(4) */
#define PR_MTU		54	/* selector(2) value(6) */
#define PR_RATE		55
#define PR_LIFE		56

/* Wire layout of MCMemberRecord (52 bytes), IBTA 15.2.5.17 */
#define MC_MGID		0
#define MC_PORT_GID	16
#define MC_QKEY		32
#define MC_MLID		36
#define MC_MTU		38
#define MC_TCLASS	39
#define MC_PKEY		40
#define MC_RATE		42
#define MC_LIFE		43
#define MC_SL_FLOW_HOP	44	/* SL(4) flow label(20) hop limit(8) */
#define MC_SCOPE_JOIN	48	/* scope(4) join state(4) */

#define SEL_EXACTLY	(2 << 6)
#define SOFTIB_PKT_LIFE	18	/* OpenSM's default subnet packet life time */

/* the creating components OpenSM requires for a new group */
#define MC_CREATE_COMP	(IB_SA_MCMEMBER_REC_QKEY | IB_SA_MCMEMBER_REC_TRAFFIC_CLASS | \
			 IB_SA_MCMEMBER_REC_PKEY | IB_SA_MCMEMBER_REC_FLOW_LABEL | \
			 IB_SA_MCMEMBER_REC_SL)

struct softib_mcg_member {
	struct list_head list;
	union ib_gid port_gid;
	u8 join_state;
};

static void put_be16(u8 *p, u16 v)
{
	*(__be16 *)p = cpu_to_be16(v);
}

static void put_be32(u8 *p, u32 v)
{
	*(__be32 *)p = cpu_to_be32(v);
}

static u16 get_be16(const u8 *p)
{
	return be16_to_cpu(*(const __be16 *)p);
}

static u32 get_be32(const u8 *p)
{
	return be32_to_cpu(*(const __be32 *)p);
}

/* Which of our ports owns a GID; NULL for a GID not on this fabric. */
struct softib_port *softib_gid_to_port(struct softib_dev *sdev,
				       const union ib_gid *gid)
{
	u64 guid = be64_to_cpu(gid->global.interface_id);
	u32 num = guid & 0xff;

	if (be64_to_cpu(gid->global.subnet_prefix) != SOFTIB_SUBNET_PREFIX ||
	    (guid & ~0xffULL) != softib_node_guid || num < 1 ||
	    num > sdev->nports)
		return NULL;
	return softib_port(sdev, num);
}

/* Index of the P_Key with these low 15 bits in a port's table, or -1. */
int softib_port_find_pkey(struct softib_port *port, u16 pkey)
{
	int i, found = -1;

	for (i = 0; i < SOFTIB_PKEY_TBL_LEN; i++) {
		u16 p = READ_ONCE(port->pkeys[i]);

		if (!(p & 0x7fff) || (p & 0x7fff) != (pkey & 0x7fff))
			continue;
		if (p & 0x8000)
			return i;	/* prefer the full-member entry */
		found = i;
	}
	return found;
}

/*
 * The P_Key by which port "s" reaches port "d" in the partition of
 * "pkey" (its low 15 bits), with s's membership bit; either NULL is a
 * virtual node or another node's port, a full member of every
 * partition as far as this SA knows (its own port enforces its table).
 * 0 if either end is not in the partition, or both are limited members:
 * a path needs a full member at one end.
 */
u16 softib_shared_pkey(struct softib_port *s, struct softib_port *d, u16 pkey)
{
	u16 sp = 0x8000, dp = 0x8000;
	int i;

	if (s) {
		i = softib_port_find_pkey(s, pkey);
		if (i < 0)
			return 0;
		sp = READ_ONCE(s->pkeys[i]);
	}
	if (d) {
		i = softib_port_find_pkey(d, pkey);
		if (i < 0)
			return 0;
		dp = READ_ONCE(d->pkeys[i]);
	}
	if (!((sp | dp) & 0x8000))
		return 0;
	return (pkey & 0x7fff) | (sp & 0x8000);
}

static void softib_sa_class_port_info(struct ib_sa_mad *resp)
{
	struct ib_class_port_info *cpi = (struct ib_class_port_info *)resp->data;

	cpi->base_version = IB_MGMT_BASE_VERSION;
	cpi->class_version = IB_SA_CLASS_VERSION;
	ib_set_cpi_resp_time(cpi, SOFTIB_PKT_LIFE);
	ib_set_cpi_capmask2(cpi, IB_SA_CAP_MASK2_SENDONLY_FULL_MEM_SUPPORT);
}

/* the node of a LID: another node's, or this one's (its ports, vnodes) */
static u32 softib_sa_lid_node(u16 lid)
{
	u32 k = lid / SOFTIB_NODE_LIDS;

	return softib_node && k && k <= SOFTIB_NODE_MAX ? k : softib_node;
}

/*
 * A PathRecord from "requester", or from another node's port at LID
 * "rlid" (requester NULL: the master SA answers the whole fabric).
 */
static u16 softib_sa_path_rec(struct softib_dev *sdev,
			      struct softib_port *requester, u16 rlid,
			      const struct ib_sa_mad *req, struct ib_sa_mad *resp)
{
	const u8 *q = req->data;
	u8 *r = resp->data;
	ib_sa_comp_mask comp = req->sa_hdr.comp_mask;
	struct softib_port *sport, *dport;
	union ib_gid sgid, dgid;
	u16 pkey, dlid, slid;
	u32 vnode;

	if (!(comp & IB_SA_PATH_REC_DGID))
		return SOFTIB_SA_ERR_INSUFFICIENT_COMP;
	memcpy(&dgid, q + PR_DGID, sizeof(dgid));
	dport = softib_gid_to_port(sdev, &dgid);
	if (comp & IB_SA_PATH_REC_SGID) {
		memcpy(&sgid, q + PR_SGID, sizeof(sgid));
		sport = softib_gid_to_port(sdev, &sgid);
	} else if (requester) {
		sport = requester;
		sgid.global.subnet_prefix = cpu_to_be64(SOFTIB_SUBNET_PREFIX);
		sgid.global.interface_id = softib_port_guid(sport->num);
	} else {
		sport = NULL;
		softib_wire_lid_gid(rlid, &sgid);
	}
	/*
	 * A virtual node, or a port of another node of the link: a full
	 * member of every partition as far as this SA knows (that node's
	 * own port enforces its table).
	 */
	if (!dport && softib_vnode_gid(&dgid, &vnode))
		dlid = SOFTIB_VNODE_LID + vnode;
	else if (dport)
		dlid = dport->lid;
	else if (!softib_wire_gid_lid(sdev, &dgid, &dlid))
		return SOFTIB_SA_ERR_NO_RECORDS;
	if (sport)
		slid = READ_ONCE(sport->lid);
	else if (!softib_wire_gid_lid(sdev, &sgid, &slid))
		return SOFTIB_SA_ERR_NO_RECORDS;

	/* a path exists only inside a partition both ends belong to */
	pkey = (comp & IB_SA_PATH_REC_PKEY) ? get_be16(q + PR_PKEY) :
		sport ? READ_ONCE(sport->pkeys[0]) : 0xffff;
	pkey = softib_shared_pkey(sport, dport, pkey);
	if (!pkey)
		return SOFTIB_SA_ERR_NO_RECORDS;

	/* a path between two nodes crosses the link: its MTU */
	softib_sa_path_fill(r, &sgid, &dgid, slid, dlid, pkey,
			    (comp & IB_SA_PATH_REC_TRAFFIC_CLASS) ?
			    q[PR_TCLASS] : 0,
			    softib_sa_lid_node(slid) != softib_sa_lid_node(dlid) ?
			    softib_fabric_mtu : SOFTIB_MTU);
	return 0;
}

/*
 * One PathRecord (64 bytes at "r") of the fabric's paths, of IB MTU "mtu"
 * (enum ib_mtu).
 */
void softib_sa_path_fill(u8 *r, const union ib_gid *sgid,
			 const union ib_gid *dgid, u16 slid, u16 dlid,
			 u16 pkey, u8 tclass, u8 mtu)
{
	memcpy(r + PR_DGID, dgid, sizeof(*dgid));
	memcpy(r + PR_SGID, sgid, sizeof(*sgid));
	put_be16(r + PR_DLID, dlid);
	put_be16(r + PR_SLID, slid);
	put_be32(r + PR_FLOW_HOP, 0);
	r[PR_TCLASS] = tclass;
	r[PR_REV_NUMB] = 0x80 | 1;	/* reversible, one path */
	put_be16(r + PR_PKEY, pkey);
	put_be16(r + PR_QOS_SL, 0);
	r[PR_MTU] = SEL_EXACTLY | mtu;
	r[PR_RATE] = SEL_EXACTLY | IB_RATE_100_GBPS;
	r[PR_LIFE] = SEL_EXACTLY | SOFTIB_PKT_LIFE;
}

/* JoinState bits of a member that receives (IBTA 15.2.5.17) */
#define MC_JOIN_RECEIVES	(BIT(0) | BIT(1))	/* full, non-member */

/*
 * The ports of node "node" (this one's, or another's of the link) with a
 * member of "g" that receives: bit N for port N.
 */
u32 softib_mcg_ports(struct softib_dev *sdev, const struct softib_mcg *g,
		     u32 node)
{
	struct softib_mcg_member *m;
	struct softib_port *port;
	u32 mask = 0, k, num;

	lockdep_assert_held(&sdev->sa_lock);
	list_for_each_entry(m, &g->members, list) {
		if (!(m->join_state & MC_JOIN_RECEIVES))
			continue;
		if (node == softib_node) {
			port = softib_gid_to_port(sdev, &m->port_gid);
			if (port)
				mask |= BIT(port->num);
		} else if (softib_wire_gid_port(&m->port_gid, &k, &num) &&
			   k == node) {
			mask |= BIT(num);
		}
	}
	return mask;
}

/*
 * The built-in SM's MFT entry for a group (switch.c): the switch ports
 * cabled to CA ports with a member that receives: a full member or a
 * non-member. A send-only member (non-member or full) only sends; the
 * switch takes its packets in at its port whatever the MFT says there,
 * and IBTA has it receive nothing, so its port's bit is left clear, as
 * OpenSM leaves send-only members out of the multicast tree. ib_sa joins
 * once per port and group with the union of its local joins, so a port
 * with a full member and a send-only one still gets the group. The
 * switch reads the entry without a lock: it is written before the SA
 * answers the join (and after the leave), so a joined port hears the
 * group from the first packet on.
 */
static void softib_mcg_program(struct softib_dev *sdev,
			       const struct softib_mcg *g)
{
	lockdep_assert_held(&sdev->sa_lock);
	if (!softib_sm_is_master(sdev))
		return;
	softib_switch_sm_mft(sdev, g->mlid,
			     softib_mcg_ports(sdev, g, softib_node));
	/* and at the other nodes' switches, for their member ports */
	softib_sm_mft_update(sdev, g->mlid);
}

static struct softib_mcg *softib_mcg_find(struct softib_dev *sdev,
					  const union ib_gid *mgid)
{
	struct softib_mcg *g;

	lockdep_assert_held(&sdev->sa_lock);
	list_for_each_entry(g, &sdev->mcgs, list)
		if (!memcmp(&g->mgid, mgid, sizeof(*mgid)))
			return g;
	return NULL;
}

/*
 * Create a group; the caller checked the components. NULL when out of
 * MLIDs or memory, or for a join's group when the table holds
 * sa_max_groups groups (the policy's count too, but are never refused:
 * root wrote them, and the P_Key tables bound them).
 */
struct softib_mcg *softib_mcg_create(struct softib_dev *sdev,
				     const union ib_gid *mgid, u32 qkey,
				     u16 pkey, u8 mtu, u8 rate, u8 sl,
				     u8 tclass, u32 flow_label, u8 hop_limit,
				     bool permanent)
{
	struct softib_mcg *g;
	int mlid;

	lockdep_assert_held(&sdev->sa_lock);
	if (!permanent && sdev->sa_groups >= sdev->sa_max_groups) {
		atomic64_inc(&sdev->sa_groups_refused);
		return NULL;
	}
	g = kzalloc(sizeof(*g), GFP_KERNEL);
	if (!g)
		return NULL;
	mlid = ida_alloc_range(&sdev->mlids, SOFTIB_MLID_FIRST,
			       SOFTIB_MLID_LAST, GFP_KERNEL);
	if (mlid < 0) {
		kfree(g);
		return NULL;
	}
	sdev->sa_groups++;
	g->mgid = *mgid;
	g->mlid = mlid;
	g->qkey = qkey;
	g->pkey = pkey;
	/*
	 * Multicast reaches every node: a group carries no more than the
	 * link's IB MTU (IPoIB's datagram MTU follows its broadcast group)
	 */
	g->mtu = min_t(u8, mtu, softib_fabric_mtu);
	g->rate = rate;
	g->sl = sl;
	g->tclass = tclass;
	g->flow_label = flow_label;
	g->hop_limit = hop_limit;
	g->permanent = permanent;
	INIT_LIST_HEAD(&g->members);
	list_add_tail(&g->list, &sdev->mcgs);
	return g;
}

void softib_mcg_free(struct softib_dev *sdev, struct softib_mcg *g)
{
	struct softib_mcg_member *m, *tmp;

	lockdep_assert_held(&sdev->sa_lock);
	list_for_each_entry_safe(m, tmp, &g->members, list) {
		list_del(&m->list);
		kfree(m);
	}
	list_del(&g->list);
	/* the MLID goes: nothing left for the switches to forward */
	if (softib_sm_is_master(sdev)) {
		softib_switch_sm_mft(sdev, g->mlid, 0);
		softib_sm_mft_update(sdev, g->mlid);
	}
	ida_free(&sdev->mlids, g->mlid);
	sdev->sa_groups--;
	kfree(g);
}

static struct softib_mcg_member *softib_mcg_member(struct softib_mcg *g,
						   const union ib_gid *port_gid)
{
	struct softib_mcg_member *m;

	list_for_each_entry(m, &g->members, list)
		if (!memcmp(&m->port_gid, port_gid, sizeof(*port_gid)))
			return m;
	return NULL;
}

static void softib_mcg_fill(const struct softib_mcg *g,
			    const union ib_gid *port_gid, u8 join_state, u8 *r)
{
	memcpy(r + MC_MGID, &g->mgid, sizeof(g->mgid));
	memcpy(r + MC_PORT_GID, port_gid, sizeof(*port_gid));
	put_be32(r + MC_QKEY, g->qkey);
	put_be16(r + MC_MLID, g->mlid);
	r[MC_MTU] = SEL_EXACTLY | g->mtu;
	r[MC_TCLASS] = g->tclass;
	put_be16(r + MC_PKEY, g->pkey);
	r[MC_RATE] = SEL_EXACTLY | g->rate;
	r[MC_LIFE] = SEL_EXACTLY | SOFTIB_PKT_LIFE;
	put_be32(r + MC_SL_FLOW_HOP, (g->sl << 28) | (g->flow_label << 8) |
		 g->hop_limit);
	r[MC_SCOPE_JOIN] = ((g->mgid.raw[1] & 0xf) << 4) | (join_state & 0xf);
}

static u16 softib_sa_mcmember(struct softib_dev *sdev,
			      struct softib_port *sport, u16 rlid, u8 method,
			      const struct ib_sa_mad *req,
			      struct ib_sa_mad *resp)
{
	union ib_gid rgid;
	const u8 *q = req->data;
	ib_sa_comp_mask comp = req->sa_hdr.comp_mask;
	u8 join = q[MC_SCOPE_JOIN] & 0xf;
	struct softib_mcg_member *m;
	union ib_gid mgid, port_gid;
	struct softib_port *port;
	struct softib_mcg *g;
	int idx;

	if (!(comp & IB_SA_MCMEMBER_REC_MGID))
		return method == IB_MGMT_METHOD_GET ? SOFTIB_SA_ERR_NO_RECORDS :
						      SOFTIB_SA_ERR_INSUFFICIENT_COMP;
	memcpy(&mgid, q + MC_MGID, sizeof(mgid));
	memcpy(&port_gid, q + MC_PORT_GID, sizeof(port_gid));

	lockdep_assert_held(&sdev->sa_lock);
	g = softib_mcg_find(sdev, &mgid);

	if (method == IB_MGMT_METHOD_GET) {
		if (!g)
			return SOFTIB_SA_ERR_NO_RECORDS;
		m = softib_mcg_member(g, &port_gid);
		softib_mcg_fill(g, &port_gid, m ? m->join_state : 0,
				resp->data);
		return 0;
	}

	if (!(comp & IB_SA_MCMEMBER_REC_PORT_GID) ||
	    !(comp & IB_SA_MCMEMBER_REC_JOIN_STATE))
		return SOFTIB_SA_ERR_INSUFFICIENT_COMP;
	/*
	 * A port joins and leaves for itself: a record naming another
	 * port's GID is a proxy join, which the SM only takes from a
	 * trusted requester (OpenSM checks the SA key); ib_core's never is.
	 */
	port = softib_gid_to_port(sdev, &port_gid);
	if (sport) {
		if (!port || port != sport)
			return SOFTIB_SA_ERR_REQ_INVALID;
	} else {
		/* another node's port, for itself: its LID's GID */
		softib_wire_lid_gid(rlid, &rgid);
		if (memcmp(&rgid, &port_gid, sizeof(rgid)))
			return SOFTIB_SA_ERR_REQ_INVALID;
	}
	if (!join || mgid.raw[0] != 0xff)
		return SOFTIB_SA_ERR_REQ_INVALID;

	if (method == IB_SA_METHOD_DELETE) {
		m = g ? softib_mcg_member(g, &port_gid) : NULL;
		if (!m || !(m->join_state & join))
			return SOFTIB_SA_ERR_REQ_INVALID;
		softib_mcg_fill(g, &port_gid, m->join_state & join, resp->data);
		m->join_state &= ~join;
		if (!m->join_state) {
			list_del(&m->list);
			kfree(m);
		}
		if (list_empty(&g->members) && !g->permanent)
			softib_mcg_free(sdev, g);
		else
			softib_mcg_program(sdev, g);
		return 0;
	}

	/* Set: join, creating the group when the components allow it */
	if (!g) {
		u16 pkey = get_be16(q + MC_PKEY);
		u32 sfh = get_be32(q + MC_SL_FLOW_HOP);

		if ((comp & MC_CREATE_COMP) != MC_CREATE_COMP)
			return SOFTIB_SA_ERR_INSUFFICIENT_COMP;
		/*
		 * Only a full member of the partition may create a group
		 * (another node's port counts as one: its table is its own)
		 */
		idx = port ? softib_port_find_pkey(port, pkey) : 0;
		if (idx < 0 ||
		    (port && !(READ_ONCE(port->pkeys[idx]) & 0x8000)) ||
		    !(join & (BIT(0) | BIT(3))))
			return SOFTIB_SA_ERR_REQ_INVALID;
		g = softib_mcg_create(sdev, &mgid, get_be32(q + MC_QKEY),
				      pkey | 0x8000,
				      (comp & IB_SA_MCMEMBER_REC_MTU) ?
				      min_t(u8, q[MC_MTU] & 0x3f, SOFTIB_MTU) :
				      IB_MTU_2048,
				      (comp & IB_SA_MCMEMBER_REC_RATE) ?
				      q[MC_RATE] & 0x3f : IB_RATE_10_GBPS,
				      sfh >> 28, q[MC_TCLASS],
				      (sfh >> 8) & 0xfffff, sfh & 0xff, false);
		/* as OpenSM when it cannot create a group (MLIDs, memory) */
		if (!g)
			return SOFTIB_SA_ERR_NO_RESOURCES;
	} else if (port && softib_port_find_pkey(port, g->pkey) < 0) {
		return SOFTIB_SA_ERR_REQ_INVALID;
	}

	m = softib_mcg_member(g, &port_gid);
	if (!m) {
		m = kzalloc(sizeof(*m), GFP_KERNEL);
		if (!m) {
			if (list_empty(&g->members) && !g->permanent)
				softib_mcg_free(sdev, g);
			return SOFTIB_SA_ERR_NO_RESOURCES;
		}
		m->port_gid = port_gid;
		list_add_tail(&m->list, &g->members);
	}
	m->join_state |= join;
	softib_mcg_program(sdev, g);
	softib_mcg_fill(g, &port_gid, m->join_state, resp->data);
	return 0;
}

/*
 * MCMemberRecord GetTable, as OpenSM answers it: the groups matching the
 * request's MGID, MLID and P_Key components, of the partitions the
 * requesting port is in (another node's, "sport" NULL: all). A trusted
 * request (a nonzero SM_Key) without a PortGID component gets a record
 * per member, with its PortGID and JoinState; otherwise one record per
 * group, that of the member the PortGID names if any. An untrusted
 * request sees no PortGID and no JoinState (IBTA 15.2.5.17).
 */
int softib_sa_mc_table(struct softib_dev *sdev, struct softib_port *sport,
		       const struct ib_sa_mad *req, struct softib_sa_table *t)
{
	static const union ib_gid zero_gid;
	ib_sa_comp_mask comp = req->sa_hdr.comp_mask;
	bool trusted = req->sa_hdr.sm_key != 0;
	bool by_port = comp & IB_SA_MCMEMBER_REC_PORT_GID;
	const u8 *q = req->data;
	struct softib_mcg_member *m;
	struct softib_mcg *g;
	u8 *r;

	mutex_lock(&sdev->sa_lock);
	list_for_each_entry(g, &sdev->mcgs, list) {
		if ((comp & IB_SA_MCMEMBER_REC_MGID) &&
		    memcmp(&g->mgid, q + MC_MGID, sizeof(g->mgid)))
			continue;
		if ((comp & IB_SA_MCMEMBER_REC_MLID) &&
		    g->mlid != get_be16(q + MC_MLID))
			continue;
		if ((comp & IB_SA_MCMEMBER_REC_PKEY) &&
		    g->pkey != get_be16(q + MC_PKEY))
			continue;
		if (sport && softib_port_find_pkey(sport, g->pkey) < 0)
			continue;
		if (trusted && !by_port) {
			list_for_each_entry(m, &g->members, list) {
				r = softib_sa_table_slot(t);
				if (!r)
					goto out_full;
				softib_mcg_fill(g, &m->port_gid,
						m->join_state, r);
			}
			continue;
		}
		m = by_port ? softib_mcg_member(g, (const union ib_gid *)
						(q + MC_PORT_GID)) : NULL;
		if (by_port && !m)
			continue;
		r = softib_sa_table_slot(t);
		if (!r)
			goto out_full;
		softib_mcg_fill(g, m && trusted ? &m->port_gid : &zero_gid,
				m && trusted ? m->join_state : 0, r);
	}
	mutex_unlock(&sdev->sa_lock);
	return 0;

out_full:
	mutex_unlock(&sdev->sa_lock);
	return -ENOSPC;
}

/*
 * Send a MAD from "slid" to "dlid", into the QP "qpn" of the port there:
 * the SA's answers from QP1 into QP1, the switch's from QP0 into QP0.
 */
void softib_sm_send(struct softib_dev *sdev, u16 slid, u16 dlid, u32 qpn,
		    u16 pkey, void *resp)
{
	struct {
		struct softib_swqe wqe;
		struct ib_sge sge;
	} *out;
	struct softib_pkt pkt = {
		.sdev = sdev,
		.src_qpn = qpn,
		.slid = slid,
		.pkey = pkey,
		.qkey = qpn ? SOFTIB_QP1_QKEY : 0,
	};

	out = kzalloc(sizeof(*out), GFP_KERNEL);
	if (!out)
		return;	/* a lost response: the requester times out and retries */
	out->wqe.opcode = IB_WR_SEND;
	out->wqe.length = sizeof(struct ib_mad);
	out->wqe.num_sge = 1;
	out->wqe.remote_qpn = qpn;
	out->wqe.av.dlid = dlid;
	out->sge.addr = (uintptr_t)resp;
	out->sge.length = sizeof(struct ib_mad);
	pkt.wqe = &out->wqe;
	softib_route_pkt(&pkt);
	kfree(out);
}

/*
 * Count a PathRecord query, and the most in one second of the clock: the
 * load a fabric-wide event puts on the SA.
 */
static void softib_sa_count_path(struct softib_dev *sdev)
{
	unsigned long sec = jiffies / HZ;
	unsigned long flags;

	atomic64_inc(&sdev->sa_path_queries);
	spin_lock_irqsave(&sdev->sa_rate_lock, flags);
	if (sdev->sa_rate_sec != sec) {
		sdev->sa_rate_sec = sec;
		sdev->sa_rate_count = 0;
	}
	if (++sdev->sa_rate_count > sdev->sa_path_peak)
		sdev->sa_path_peak = sdev->sa_rate_count;
	spin_unlock_irqrestore(&sdev->sa_rate_lock, flags);
}

/* debugfs sa_path_peak: writing anything starts a new measurement */
void softib_sa_reset_peak(struct softib_dev *sdev)
{
	unsigned long flags;

	spin_lock_irqsave(&sdev->sa_rate_lock, flags);
	sdev->sa_rate_count = 0;
	sdev->sa_path_peak = 0;
	spin_unlock_irqrestore(&sdev->sa_rate_lock, flags);
}

/*
 * Answer one SA request from a port ("sport"; NULL: from another node's
 * port, at LID "rlid") into "resp"; returns the MAD status (also in
 * resp), or U16_MAX for a MAD that gets no answer. The self tests call
 * this directly.
 */
u16 softib_sa_process(struct softib_dev *sdev, struct softib_port *sport,
		      u16 rlid, const struct ib_sa_mad *req,
		      struct ib_sa_mad *resp)
{
	u16 status = 0;
	u8 method;

	method = req->mad_hdr.method;
	/* responses and traps are not requests: nothing to answer */
	if (req->mad_hdr.mgmt_class != IB_MGMT_CLASS_SUBN_ADM ||
	    (method & IB_MGMT_METHOD_RESP))
		return U16_MAX;

	resp->mad_hdr = req->mad_hdr;
	resp->mad_hdr.method = method == IB_SA_METHOD_DELETE ?
			       IB_SA_METHOD_DELETE_RESP : IB_MGMT_METHOD_GET_RESP;
	resp->mad_hdr.status = 0;
	resp->sa_hdr.comp_mask = req->sa_hdr.comp_mask;

	if (req->mad_hdr.base_version != IB_MGMT_BASE_VERSION ||
	    req->mad_hdr.class_version != IB_SA_CLASS_VERSION) {
		status = IB_MGMT_MAD_STATUS_BAD_VERSION;
		goto out_reply;
	}

	switch (be16_to_cpu(req->mad_hdr.attr_id)) {
	case IB_SA_ATTR_CLASS_PORTINFO:
		if (method != IB_MGMT_METHOD_GET)
			goto unsupported;
		softib_sa_class_port_info(resp);
		break;
	case IB_SA_ATTR_PATH_REC:
		if (method != IB_MGMT_METHOD_GET)
			goto unsupported;
		softib_sa_count_path(sdev);
		status = softib_sa_path_rec(sdev, sport, rlid, req, resp);
		break;
	case IB_SA_ATTR_MC_MEMBER_REC:
		if (method != IB_MGMT_METHOD_GET &&
		    method != IB_MGMT_METHOD_SET &&
		    method != IB_SA_METHOD_DELETE)
			goto unsupported;
		if (method == IB_MGMT_METHOD_SET)
			atomic64_inc(&sdev->sa_mc_joins);
		else if (method == IB_SA_METHOD_DELETE)
			atomic64_inc(&sdev->sa_mc_leaves);
		mutex_lock(&sdev->sa_lock);
		/*
		 * Again under the lock: a join that got past
		 * softib_sa_recv() as this SM stopped being master must not
		 * land after softib_sa_forget_members() (sm.c).
		 */
		if (softib_builtin_sm && !softib_sm_is_master(sdev)) {
			mutex_unlock(&sdev->sa_lock);
			atomic64_inc(&sdev->sa_standby_drops);
			return U16_MAX;
		}
		status = softib_sa_mcmember(sdev, sport, rlid, method, req,
					    resp);
		mutex_unlock(&sdev->sa_lock);
		break;
	default:
		goto unsupported;
	}
	goto out_reply;

unsupported:
	status = IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB;
out_reply:
	resp->mad_hdr.status = cpu_to_be16(status);
	if (status)
		memset(resp->data, 0, sizeof(resp->data));
	atomic64_inc(&sdev->sa_requests);
	return status;
}

/*
 * Build an MCMemberRecord request (Set = join, Delete = leave) for
 * "member"'s GID as IPoIB sends one, from "port", for the self tests;
 * returns the MLID of the answer or 0.
 */
u16 softib_sa_mcmember_req(struct softib_dev *sdev, struct softib_port *port,
			   struct softib_port *member, u8 method,
			   const union ib_gid *mgid, u8 join, u16 *status)
{
	struct ib_sa_mad *req, *resp;
	union ib_gid port_gid;
	u16 mlid = 0;
	u8 *q;

	req = kzalloc(2 * sizeof(*req), GFP_KERNEL);
	if (!req) {
		*status = U16_MAX;
		return 0;
	}
	resp = req + 1;
	req->mad_hdr.base_version = IB_MGMT_BASE_VERSION;
	req->mad_hdr.mgmt_class = IB_MGMT_CLASS_SUBN_ADM;
	req->mad_hdr.class_version = IB_SA_CLASS_VERSION;
	req->mad_hdr.method = method;
	req->mad_hdr.attr_id = cpu_to_be16(IB_SA_ATTR_MC_MEMBER_REC);
	req->sa_hdr.comp_mask = IB_SA_MCMEMBER_REC_MGID |
				IB_SA_MCMEMBER_REC_PORT_GID |
				IB_SA_MCMEMBER_REC_JOIN_STATE | MC_CREATE_COMP;
	port_gid.global.subnet_prefix = cpu_to_be64(SOFTIB_SUBNET_PREFIX);
	port_gid.global.interface_id = softib_port_guid(member->num);
	q = req->data;
	memcpy(q + MC_MGID, mgid, sizeof(*mgid));
	memcpy(q + MC_PORT_GID, &port_gid, sizeof(port_gid));
	put_be32(q + MC_QKEY, 0x0000000b);
	put_be16(q + MC_PKEY, 0xffff);
	q[MC_SCOPE_JOIN] = join & 0xf;
	*status = softib_sa_process(sdev, port, 0, req, resp);
	if (!*status)
		mlid = get_be16(resp->data + MC_MLID);
	kfree(req);
	return mlid;
}

/*
 * An answer that fault/sa_delay_ms holds back. It is on sdev->sa_delayed
 * until its work takes it off to send it, or softib_sa_drop_delayed()
 * takes it off to drop it; whoever takes it off owns it.
 */
struct softib_sa_delayed {
	struct delayed_work dwork;
	struct list_head list;
	struct softib_dev *sdev;
	struct softib_port *port;
	u16 pkey;
	struct ib_sa_mad resp;
};

static void softib_sa_unlink_delayed(struct softib_dev *sdev,
				     struct softib_sa_delayed *d)
{
	lockdep_assert_held(&sdev->sa_delay_lock);
	list_del_init(&d->list);
	sdev->n_sa_delayed--;
}

static bool softib_sa_take_delayed(struct softib_sa_delayed *d)
{
	struct softib_dev *sdev = d->sdev;
	bool mine;

	spin_lock(&sdev->sa_delay_lock);
	mine = !list_empty(&d->list);
	if (mine)
		softib_sa_unlink_delayed(sdev, d);
	spin_unlock(&sdev->sa_delay_lock);
	return mine;
}

static void softib_sa_delayed_work(struct work_struct *work)
{
	struct softib_sa_delayed *d = container_of(to_delayed_work(work),
						   struct softib_sa_delayed,
						   dwork);

	/* cleanup took it first and waits for us in cancel_delayed_work_sync */
	if (!softib_sa_take_delayed(d))
		return;
	softib_sm_send(d->sdev, softib_sm_lid, READ_ONCE(d->port->lid), 1,
		       d->pkey, &d->resp);
	kfree(d);
}

/*
 * Hold an answer back for sa_delay_ms; false if it must go at once (no
 * delay set, no memory, or SOFTIB_SA_DELAYED_MAX answers already wait).
 */
static bool softib_sa_delay(struct softib_dev *sdev, struct softib_port *port,
			    u16 pkey, const struct ib_sa_mad *resp)
{
	u32 ms = READ_ONCE(sdev->sa_delay_ms);
	struct softib_sa_delayed *d;

	if (!ms || !port ||
	    READ_ONCE(sdev->n_sa_delayed) >= SOFTIB_SA_DELAYED_MAX)
		return false;
	d = kmalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return false;
	INIT_DELAYED_WORK(&d->dwork, softib_sa_delayed_work);
	d->sdev = sdev;
	d->port = port;
	d->pkey = pkey;
	d->resp = *resp;
	spin_lock(&sdev->sa_delay_lock);
	/* softib_sa_drop_delayed() zeroed it under the lock: the device goes */
	if (!sdev->sa_delay_ms) {
		spin_unlock(&sdev->sa_delay_lock);
		kfree(d);
		return false;
	}
	list_add_tail(&d->list, &sdev->sa_delayed);
	sdev->n_sa_delayed++;
	/* queued under the lock: cleanup cannot see it without its work */
	queue_delayed_work(sdev->wq, &d->dwork, msecs_to_jiffies(ms));
	spin_unlock(&sdev->sa_delay_lock);
	atomic64_inc(&sdev->sa_replies_delayed);
	return true;
}

/* Drop the answers still held back: before the ports go. */
void softib_sa_drop_delayed(struct softib_dev *sdev)
{
	struct softib_sa_delayed *d;

	/* no answer is held back after this (softib_sa_delay checks it) */
	spin_lock(&sdev->sa_delay_lock);
	WRITE_ONCE(sdev->sa_delay_ms, 0);
	spin_unlock(&sdev->sa_delay_lock);
	for (;;) {
		spin_lock(&sdev->sa_delay_lock);
		d = list_first_entry_or_null(&sdev->sa_delayed,
					     struct softib_sa_delayed, list);
		if (d)
			softib_sa_unlink_delayed(sdev, d);
		spin_unlock(&sdev->sa_delay_lock);
		if (!d)
			break;
		cancel_delayed_work_sync(&d->dwork);
		kfree(d);
	}
}

/*
 * A GSI datagram addressed to (SM LID, QP1), from a port of this node or
 * of another (pkt->sport NULL). A standby SM's SA answers nothing: the
 * ports ask the master's, whose LID is their SM LID (sm.c).
 */
void softib_sa_recv(const struct softib_pkt *pkt)
{
	struct softib_dev *sdev = pkt->sdev;
	struct ib_sa_mad *req, *resp;

	if (!softib_sm_is_master(sdev)) {
		atomic64_inc(&sdev->sa_standby_drops);
		return;
	}
	req = (struct ib_sa_mad *)softib_pkt_mad(pkt);
	if (!req)
		return;
	resp = req + 1;
	/* an ACK of a table being sent, or a table asked for (sa_table.c) */
	if (req->mad_hdr.mgmt_class == IB_MGMT_CLASS_SUBN_ADM &&
	    softib_sa_rmpp_recv(sdev, pkt->slid, req))
		goto out_free;
	if (req->mad_hdr.mgmt_class == IB_MGMT_CLASS_SUBN_ADM &&
	    req->mad_hdr.method == IB_SA_METHOD_GET_TABLE &&
	    req->mad_hdr.base_version == IB_MGMT_BASE_VERSION &&
	    req->mad_hdr.class_version == IB_SA_CLASS_VERSION) {
		softib_sa_get_table(sdev, pkt, req, resp);
		goto out_free;
	}
	if (softib_sa_process(sdev, pkt->sport, pkt->slid, req, resp) !=
	    U16_MAX &&
	    !softib_sa_delay(sdev, pkt->sport, pkt->pkey, resp))
		softib_sm_send(sdev, softib_sm_lid, pkt->slid, 1, pkt->pkey,
			       resp);
out_free:
	kfree(req);
}

/* An SMP from the switch's LID "slid" back to the requester's QP0. */
void softib_sm_reply(const struct softib_pkt *req, u16 slid,
		     struct ib_smp *resp)
{
	softib_sm_send(req->sdev, slid, req->slid, 0, 0xffff, resp);
}

/*
 * debugfs sa_members: the SA's view of every group, one line a member:
 * MLID, MGID, the member's port GID and its JoinState bits (0x1 full
 * member, 0x2 non-member, 0x4 send-only non-member, 0x8 send-only full
 * member); a group without members (the policy's) has one line with
 * "-". What a real SM would program the switches from.
 */
int softib_sa_members_show(struct seq_file *m, struct softib_dev *sdev)
{
	struct softib_mcg_member *mem;
	struct softib_mcg *g;

	mutex_lock(&sdev->sa_lock);
	list_for_each_entry(g, &sdev->mcgs, list) {
		if (list_empty(&g->members))
			seq_printf(m, "0x%04x %pI6 - -\n", g->mlid, g->mgid.raw);
		list_for_each_entry(mem, &g->members, list)
			seq_printf(m, "0x%04x %pI6 %pI6 0x%x\n", g->mlid,
				   g->mgid.raw, mem->port_gid.raw,
				   mem->join_state);
	}
	mutex_unlock(&sdev->sa_lock);
	return 0;
}

/*
 * The SA starts empty; the partition policy (policy.c) creates the
 * broadcast groups of its "ipoib" partitions.
 */
void softib_sa_init(struct softib_dev *sdev)
{
	mutex_init(&sdev->sa_lock);
	INIT_LIST_HEAD(&sdev->mcgs);
	ida_init(&sdev->mlids);
	sdev->sa_groups = 0;
	sdev->sa_max_groups = softib_sa_max_groups;
	spin_lock_init(&sdev->sa_delay_lock);
	spin_lock_init(&sdev->sa_rate_lock);
	INIT_LIST_HEAD(&sdev->sa_delayed);
	sdev->n_sa_delayed = 0;
	sdev->sa_delay_ms = 0;
}

/*
 * Forget memberships (sm.c). Node 0: every one, when this node's SM is
 * no longer master, as a standby OpenSM keeps none; the policy's groups
 * stay, empty, for when it is master again, and the ports join at the
 * master. Node K: the ports of node K, which left the fabric (a group
 * that only they were in goes, its MLID free again), as OpenSM drops
 * the members of a port that is gone.
 */
void softib_sa_forget_members(struct softib_dev *sdev, u32 node)
{
	struct softib_mcg_member *m, *mtmp;
	struct softib_mcg *g, *tmp;
	bool changed;
	u32 k, num;

	mutex_lock(&sdev->sa_lock);
	list_for_each_entry_safe(g, tmp, &sdev->mcgs, list) {
		changed = false;
		list_for_each_entry_safe(m, mtmp, &g->members, list) {
			if (node && (!softib_wire_gid_port(&m->port_gid, &k,
							   &num) || k != node))
				continue;
			list_del(&m->list);
			kfree(m);
			changed = true;
		}
		if (list_empty(&g->members) && !g->permanent)
			softib_mcg_free(sdev, g);
		else if (changed)
			softib_mcg_program(sdev, g);
	}
	mutex_unlock(&sdev->sa_lock);
}

void softib_sa_cleanup(struct softib_dev *sdev)
{
	struct softib_mcg *g, *tmp;

	mutex_lock(&sdev->sa_lock);
	list_for_each_entry_safe(g, tmp, &sdev->mcgs, list)
		softib_mcg_free(sdev, g);
	kfree(sdev->policy_text);
	sdev->policy_text = NULL;
	mutex_unlock(&sdev->sa_lock);
	ida_destroy(&sdev->mlids);
}
