// SPDX-License-Identifier: GPL-2.0
/*
 * ipoib-ng: pkey child interfaces. A child is a full IPoIB interface of
 * its own (QP, multicast, paths) bound to another P_Key on its parent's
 * port. Children come from sysfs (create_child/delete_child on the
 * parent, the RHEL/NetworkManager way) or from netlink ("ip link add link
 * ib0 type ipoib pkey 0x8001", the systemd-networkd and ipoib-cni way).
 *
 * Lifetime: a child holds a tracked reference on its parent and is linked
 * to it as an upper device. It is always deleted before its parent (HCA
 * removal, module unload) and deleted with its namespace (a deleted pod),
 * while parents return to init_net. The child's verbs resources are
 * released by its netdev destructor, installed only once registration and
 * linking succeeded.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/rtnetlink.h>

#include "ipoib.h"

/*
 * The one permission rule for sysfs and netlink: changing an interface
 * (creating or deleting children, mode, umcast) takes CAP_NET_ADMIN in
 * the user namespace that owns the interface's network namespace. Root
 * of a container therefore configures the interfaces in its own
 * namespace and nothing else. rtnetlink applies the same test to the
 * sending socket and the target namespaces; sysfs does not, and a file
 * opened by a privileged process may be written by anyone it hands the
 * descriptor to, so every store handler asks here about the writer.
 */
int ipoib_may_configure(struct net_device *dev, const char *what)
{
	if (ns_capable(dev_net(dev)->user_ns, CAP_NET_ADMIN))
		return 0;
	/* anyone may knock: keep the log from being a tenant's megaphone */
	if (net_ratelimit())
		netdev_info(dev, "%s: refused: needs CAP_NET_ADMIN in the user namespace owning the network namespace of %s\n",
			    what, dev->name);
	return -EPERM;
}

static void ipoib_child_destructor(struct net_device *dev)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);

	ipoib_release(priv);
	netdev_put(priv->parent->dev, &priv->parent_tracker);
}

/*
 * Set up and register "dev" as a child of "parent" on P_Key "pkey" (full
 * member bit set). Under rtnl. On error "dev" is either still
 * unregistered (the caller frees it) or already queued for destruction.
 */
int ipoib_child_create(struct ipoib_dev_priv *parent, struct net_device *dev,
		       u16 pkey, bool sysfs, struct netlink_ext_ack *extack)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);
	int ret;

	ASSERT_RTNL();
	ipoib_priv_init(priv, dev, parent->ca, parent->port);
	priv->parent = parent;
	priv->pkey = pkey;
	priv->sysfs_child = sysfs;
	SET_NETDEV_DEV(dev, parent->dev->dev.parent);
	dev->dev_port = parent->dev->dev_port;

	ret = ipoib_register(priv);
	if (ret) {
		ipoib_napi_del(priv);
		return ret;
	}
	netdev_hold(parent->dev, &priv->parent_tracker, GFP_KERNEL);
	dev->priv_destructor = ipoib_child_destructor;
	dev->needs_free_netdev = true;

	ret = netdev_upper_dev_link(parent->dev, dev, extack);
	if (ret) {
		unregister_netdevice(dev);
		return ret;
	}
	list_add_tail(&priv->child_node, &parent->children);
	return 0;
}

/*
 * Unlink a child from its parent and queue it for unregistration on
 * "head" (NULL: now). Under rtnl.
 */
void ipoib_child_unlink(struct ipoib_dev_priv *priv, struct list_head *head)
{
	ASSERT_RTNL();
	list_del_init(&priv->child_node);
	netdev_upper_dev_unlink(priv->parent->dev, priv->dev);
	unregister_netdevice_queue(priv->dev, head);
}

/* Delete every child of a parent at once, in whatever namespace. */
void ipoib_delete_children(struct ipoib_dev_priv *parent)
{
	struct ipoib_dev_priv *priv, *tmp;
	LIST_HEAD(kill);

	ASSERT_RTNL();
	list_for_each_entry_safe(priv, tmp, &parent->children, child_node)
		ipoib_child_unlink(priv, &kill);
	unregister_netdevice_many(&kill);
}

static struct ipoib_dev_priv *ipoib_find_sysfs_child(struct ipoib_dev_priv *parent,
						     u16 pkey)
{
	struct ipoib_dev_priv *priv;

	ASSERT_RTNL();
	list_for_each_entry(priv, &parent->children, child_node)
		if (priv->sysfs_child && priv->pkey == pkey)
			return priv;
	return NULL;
}

/*
 * Parse a P_Key written to create_child/delete_child. Both the value the
 * subnet manager uses (0x0001) and the one Linux shows (0x8001) name the
 * same full-member P_Key.
 */
static int ipoib_parse_pkey(struct net_device *dev, const char *what,
			    const char *buf, u16 *pkey)
{
	int v;

	/* decimal, 0x hex or 0 octal, like in-tree's "%i" */
	if (kstrtoint(buf, 0, &v) || v <= 0 || v > 0xffff || v == 0x8000) {
		netdev_info(dev, "%s: write a P_Key 0x0001-0x7fff or 0x8001-0xffff, e.g. 0x8001\n",
			    what);
		return -EINVAL;
	}
	*pkey = v | 0x8000;
	return 0;
}

static ssize_t create_child_store(struct device *d,
				  struct device_attribute *attr,
				  const char *buf, size_t count)
{
	struct net_device *pdev = to_net_dev(d);
	struct ipoib_dev_priv *parent = ipoib_priv(pdev);
	char name[IFNAMSIZ];
	struct net_device *dev;
	u16 pkey;
	int ret;

	ret = ipoib_may_configure(pdev, "create_child");
	if (ret)
		return ret;
	ret = ipoib_parse_pkey(pdev, "create_child", buf, &pkey);
	if (ret)
		return ret;
	/* kernfs holds this file active: never sleep on rtnl here */
	if (!rtnl_trylock())
		return restart_syscall();

	snprintf(name, sizeof(name), "%.10s.%04x", pdev->name, pkey);
	if (pkey == parent->pkey || ipoib_find_sysfs_child(parent, pkey)) {
		netdev_info(pdev, "create_child: P_Key 0x%04x is already in use on %s (%s)\n",
			    pkey, pdev->name,
			    pkey == parent->pkey ? "the parent" : name);
		ret = -ENOTUNIQ;
		goto out_unlock;
	}

	dev = ipoib_alloc_netdev(parent->ca, parent->port, name);
	if (!dev) {
		ret = -ENOMEM;
		goto out_unlock;
	}
	dev->rtnl_link_ops = &ipoib_link_ops;
	/* unlike in-tree, the child lives where its parent lives */
	dev_net_set(dev, dev_net(pdev));
	ret = ipoib_child_create(parent, dev, pkey, true, NULL);
	/*
	 * As rtnetlink does after a failed newlink: never registered, it
	 * is freed now; failed part way (a NETDEV_REGISTER notifier said
	 * no, and register_netdevice() unregistered it), free_netdev()
	 * leaves it to netdev_run_todo() at rtnl_unlock(); after a failed
	 * upper link it is already due to be freed there.
	 */
	if (ret)
		free_netdev(dev);
out_unlock:
	rtnl_unlock();
	return ret ?: count;
}
DEVICE_ATTR_WO(create_child);

static ssize_t delete_child_store(struct device *d,
				  struct device_attribute *attr,
				  const char *buf, size_t count)
{
	struct net_device *pdev = to_net_dev(d);
	struct ipoib_dev_priv *priv;
	u16 pkey;
	int ret;

	ret = ipoib_may_configure(pdev, "delete_child");
	if (ret)
		return ret;
	ret = ipoib_parse_pkey(pdev, "delete_child", buf, &pkey);
	if (ret)
		return ret;
	if (!rtnl_trylock())
		return restart_syscall();
	priv = ipoib_find_sysfs_child(ipoib_priv(pdev), pkey);
	if (priv) {
		/*
		 * A child may have been moved to another netns: deleting it
		 * takes the right over its netns too, as netlink's dellink
		 * (which judges the child's netns only) does.
		 */
		ret = ipoib_may_configure(priv->dev, "delete_child");
		if (!ret)
			/* synchronous: gone when write() returns */
			ipoib_child_unlink(priv, NULL);
	} else {
		netdev_info(pdev, "delete_child: no child with P_Key 0x%04x was created through create_child\n",
			    pkey);
		ret = -ENODEV;
	}
	rtnl_unlock();
	return ret ?: count;
}
DEVICE_ATTR_WO(delete_child);

static ssize_t parent_show(struct device *d, struct device_attribute *attr,
			   char *buf)
{
	struct ipoib_dev_priv *priv = ipoib_priv(to_net_dev(d));

	return sysfs_emit(buf, "%s\n", priv->parent->dev->name);
}
DEVICE_ATTR_RO(parent);
