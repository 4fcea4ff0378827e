// SPDX-License-Identifier: GPL-2.0
/*
 * ipoib-ng: rtnetlink, kind "ipoib". One set of link ops for every
 * interface, parents and children, as in-tree: rtnetlink finds the ops
 * of "type ipoib" by kind and then insists that a device carries exactly
 * those ops, both to list it ("ip link show type ipoib") and to change
 * it ("ip link set ib0 type ipoib mode connected"). What differs between
 * a parent and a child is decided here, by the interface:
 *
 *  - newlink makes children only (a parent belongs to an IB port);
 *  - dellink deletes children only: on a parent it does nothing, and
 *    rtnetlink reports success, as with in-tree (dellink cannot fail);
 *  - when a network namespace is destroyed, parents go back to init_net
 *    (netns_refund) while children die with it: our pernet exit deletes
 *    them before the core moves what is left (a deleted pod must not
 *    leave its interface behind in the host).
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/rtnetlink.h>
#include <net/net_namespace.h>
#include <net/rtnetlink.h>
#include <uapi/linux/if_link.h>

#include "ipoib.h"

static const struct nla_policy ipoib_policy[IFLA_IPOIB_MAX + 1] = {
	[IFLA_IPOIB_PKEY] = { .type = NLA_U16 },
	[IFLA_IPOIB_MODE] = { .type = NLA_U16 },
	[IFLA_IPOIB_UMCAST] = { .type = NLA_U16 },
};

static int ipoib_validate(struct nlattr *tb[], struct nlattr *data[],
			  struct netlink_ext_ack *extack)
{
	if (data && data[IFLA_IPOIB_MODE] &&
	    nla_get_u16(data[IFLA_IPOIB_MODE]) > IPOIB_MODE_CONNECTED) {
		NL_SET_ERR_MSG(extack, "ipoib: mode must be datagram or connected");
		return -EINVAL;
	}
	return 0;
}

/* mode and umcast, for a new child and for changelink on any interface */
static int ipoib_nl_configure(struct net_device *dev, struct nlattr *data[])
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);

	ASSERT_RTNL();
	if (!data)
		return 0;
	if (data[IFLA_IPOIB_MODE])
		ipoib_set_mode(priv, nla_get_u16(data[IFLA_IPOIB_MODE]) ==
			       IPOIB_MODE_CONNECTED);
	if (data[IFLA_IPOIB_UMCAST])
		WRITE_ONCE(priv->umcast, !!nla_get_u16(data[IFLA_IPOIB_UMCAST]));
	return 0;
}

static int ipoib_newlink(struct net *src_net, struct net_device *dev,
			 struct nlattr *tb[], struct nlattr *data[],
			 struct netlink_ext_ack *extack)
{
	struct ipoib_dev_priv *parent;
	struct net_device *pdev;
	u16 pkey;
	int ret;

	if (!tb[IFLA_LINK]) {
		NL_SET_ERR_MSG(extack,
			       "ipoib: a child needs its parent: ip link add link ib0 ... type ipoib");
		return -EINVAL;
	}
	pdev = __dev_get_by_index(src_net, nla_get_u32(tb[IFLA_LINK]));
	if (!pdev)
		return -ENODEV;
	/* a real IPoIB parent, not anything with ARPHRD_INFINIBAND (bonds) */
	if (!ipoib_is_ours(pdev) || ipoib_priv(pdev)->parent) {
		NL_SET_ERR_MSG(extack,
			       "ipoib: the link must be an IPoIB parent (e.g. ib0), not a child or another type");
		return -EINVAL;
	}
	parent = ipoib_priv(pdev);
	/*
	 * rtnetlink checked the socket's and the target namespaces, and
	 * IFLA_LINK_NETNSID's; a parent can only be found in one of them.
	 * Asked again so that the rule stays in one place (child.c).
	 */
	ret = ipoib_may_configure(pdev, "newlink");
	if (ret) {
		NL_SET_ERR_MSG(extack, "ipoib: needs CAP_NET_ADMIN over the parent's netns");
		return ret;
	}

	pkey = parent->pkey;
	if (data && data[IFLA_IPOIB_PKEY])
		pkey = nla_get_u16(data[IFLA_IPOIB_PKEY]);
	if (!(pkey & 0x7fff)) {
		NL_SET_ERR_MSG(extack, "ipoib: P_Key 0x0000/0x8000 is invalid");
		return -EINVAL;
	}
	/* rtnetlink allocated it with ipoib_link_ops.priv_size, under rtnl */
	ipoib_rn_place(dev);
	ret = ipoib_child_create(parent, dev, pkey | 0x8000, false, extack);
	if (ret)
		return ret;
	return ipoib_nl_configure(dev, data);
}

static int ipoib_changelink(struct net_device *dev, struct nlattr *tb[],
			    struct nlattr *data[],
			    struct netlink_ext_ack *extack)
{
	/* the P_Key of an interface never changes; mode and umcast may */
	return ipoib_nl_configure(dev, data);
}

static void ipoib_dellink(struct net_device *dev, struct list_head *head)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);

	ASSERT_RTNL();
	if (!priv->parent) {
		netdev_info(dev, "not deleted: %s is port %u of %s and goes with it (rmmod ib_ipoib, or delete its children instead)\n",
			    dev->name, priv->port, dev_name(&priv->ca->dev));
		return;
	}
	ipoib_child_unlink(priv, head);
}

static size_t ipoib_get_size(const struct net_device *dev)
{
	return nla_total_size(2) +	/* IFLA_IPOIB_PKEY */
	       nla_total_size(2) +	/* IFLA_IPOIB_MODE */
	       nla_total_size(2);	/* IFLA_IPOIB_UMCAST */
}

static int ipoib_fill_info(struct sk_buff *skb, const struct net_device *dev)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);

	if (nla_put_u16(skb, IFLA_IPOIB_PKEY, priv->pkey) ||
	    nla_put_u16(skb, IFLA_IPOIB_MODE, READ_ONCE(priv->cm_mode) ?
			IPOIB_MODE_CONNECTED : IPOIB_MODE_DATAGRAM) ||
	    nla_put_u16(skb, IFLA_IPOIB_UMCAST, READ_ONCE(priv->umcast)))
		return -EMSGSIZE;
	return 0;
}

struct rtnl_link_ops ipoib_link_ops __read_mostly = {
	.kind = IPOIB_LINK_KIND,
	/* for parents; children never reach the refund (ipoib_net_exit) */
	.netns_refund = true,
	/* a bare rdma_netdev, then ours; grows for providers (rn.c) */
	.priv_size = ALIGN(sizeof(struct rdma_netdev), NETDEV_ALIGN) +
		     sizeof(struct ipoib_dev_priv),
	.setup = ipoib_setup,
	.get_num_tx_queues = ipoib_rn_num_txqs,
	.get_num_rx_queues = ipoib_rn_num_rxqs,
	.maxtype = IFLA_IPOIB_MAX,
	.policy = ipoib_policy,
	.validate = ipoib_validate,
	.newlink = ipoib_newlink,
	.changelink = ipoib_changelink,
	.dellink = ipoib_dellink,
	.get_size = ipoib_get_size,
	.fill_info = ipoib_fill_info,
};

/*
 * Delete our children in namespaces being destroyed. Our pernet
 * operations were registered after the core's, so they run before the
 * core pushes the namespace's refundable devices to init_net (see
 * COMPAT_NET_EXIT_RTNL). The children are unregistered here and now, not
 * queued on the core's list: by the time that list is processed, the
 * core would have moved them already.
 */
static void ipoib_net_delete_children(struct list_head *net_list)
{
	struct net_device *dev;
	struct net *net;
	LIST_HEAD(kill);

	ASSERT_RTNL();
	list_for_each_entry(net, net_list, exit_list)
		for_each_netdev(net, dev)
			if (ipoib_is_ours(dev) && ipoib_priv(dev)->parent)
				ipoib_child_unlink(ipoib_priv(dev), &kill);
	unregister_netdevice_many(&kill);
}

#ifdef COMPAT_NET_EXIT_RTNL
static void ipoib_net_exit(struct list_head *net_list,
			   struct list_head *dev_kill_list)
{
	ipoib_net_delete_children(net_list);
}
#else
static void ipoib_net_exit(struct list_head *net_list)
{
	rtnl_lock();
	ipoib_net_delete_children(net_list);
	rtnl_unlock();
}
#endif

static struct pernet_operations ipoib_net_ops = {
#ifdef COMPAT_NET_EXIT_RTNL
	.exit_batch_rtnl = ipoib_net_exit,
#else
	.exit_batch = ipoib_net_exit,
#endif
};

int ipoib_netlink_init(void)
{
	int ret;

	ret = register_pernet_device(&ipoib_net_ops);
	if (ret)
		return ret;
	ret = rtnl_link_register(&ipoib_link_ops);
	if (ret)
		goto err_unregister_pernet;
	return 0;

err_unregister_pernet:
	unregister_pernet_device(&ipoib_net_ops);
	return ret;
}

void ipoib_netlink_exit(void)
{
	rtnl_link_unregister(&ipoib_link_ops);
	unregister_pernet_device(&ipoib_net_ops);
}
