// SPDX-License-Identifier: GPL-2.0
/*
 * softib: the subnet manager's partition policy, in OpenSM's
 * partitions.conf syntax, the format HPC admins already write:
 *
 *   Default=0x7fff, ipoib : ALL=full;
 *   storage=0x0001, ipoib, mtu=5 : 0x02110bff00000001=full, 0x02110bff00000002;
 *
 * A policy is parsed completely before anything changes; a syntax error
 * leaves the active policy in force. Applying a policy recomputes every
 * port's P_Key table, keeping an entry at its index while it stays (so
 * QPs bound to other indices are undisturbed), puts the default partition
 * at index 0, pre-creates the IPoIB broadcast group of every "ipoib"
 * partition and dispatches IB_EVENT_PKEY_CHANGE to ports whose table
 * changed. The switch ports cabled to them get the same tables, with
 * partition enforcement on, as OpenSM programs a switch.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ctype.h>
#include <linux/slab.h>

#include "softib.h"

#define SOFTIB_MAX_PARTITIONS	64

#define MEMBER_FULL	BIT(0)
#define MEMBER_LIMITED	BIT(1)

struct softib_partition {
	u16 pkey;		/* low 15 bits */
	bool ipoib;
	u8 mtu;
	u8 rate;
	u8 sl;
	u8 scope;
	u8 defmember;
	u8 member[SOFTIB_MAX_PORTS + 1];	/* MEMBER_* per port number */
};

struct softib_policy {
	unsigned int n;
	struct softib_partition part[SOFTIB_MAX_PARTITIONS];
};

struct softib_parser {
	const char *s;
	size_t len;
	size_t pos;
	unsigned int line;
	unsigned int col;
	char tok[64];
	unsigned int tok_line;
	unsigned int tok_col;
	const char *err;
};

static void skip_space(struct softib_parser *p)
{
	while (p->pos < p->len) {
		char c = p->s[p->pos];

		if (c == '#') {
			while (p->pos < p->len && p->s[p->pos] != '\n')
				p->pos++, p->col++;
		} else if (c == '\n') {
			p->pos++;
			p->line++;
			p->col = 1;
		} else if (isspace(c)) {
			p->pos++;
			p->col++;
		} else {
			break;
		}
	}
}

static bool is_word_char(char c)
{
	return isalnum(c) || c == '_' || c == '.' || c == '-';
}

/*
 * Read the next token into p->tok: a word, or one of = , : ;
 * An empty token means end of input.
 */
static int next_token(struct softib_parser *p)
{
	size_t n = 0;

	skip_space(p);
	p->tok_line = p->line;
	p->tok_col = p->col;
	p->tok[0] = '\0';
	if (p->pos >= p->len)
		return 0;
	if (strchr("=,:;", p->s[p->pos])) {
		p->tok[0] = p->s[p->pos++];
		p->tok[1] = '\0';
		p->col++;
		return 0;
	}
	while (p->pos < p->len && is_word_char(p->s[p->pos])) {
		if (n + 1 >= sizeof(p->tok)) {
			p->err = "word too long";
			return -EINVAL;
		}
		p->tok[n++] = p->s[p->pos++];
		p->col++;
	}
	p->tok[n] = '\0';
	if (!n) {
		p->err = "unexpected character";
		return -EINVAL;
	}
	return 0;
}

static int expect(struct softib_parser *p, const char *what, const char *err)
{
	int ret = next_token(p);

	if (ret)
		return ret;
	if (strcmp(p->tok, what)) {
		p->err = err;
		return -EINVAL;
	}
	return 0;
}

static int parse_uint(struct softib_parser *p, unsigned int max, u32 *val,
		      const char *err)
{
	int ret = next_token(p);

	if (ret)
		return ret;
	if (kstrtou32(p->tok, 0, val) || *val > max) {
		p->err = err;
		return -EINVAL;
	}
	return 0;
}

/* p->tok is "full", "limited" or "both" */
static int parse_membership(struct softib_parser *p, u8 *how)
{
	if (!strcmp(p->tok, "full")) {
		*how = MEMBER_FULL;
	} else if (!strcmp(p->tok, "limited")) {
		*how = MEMBER_LIMITED;
	} else if (!strcmp(p->tok, "both")) {
		*how = MEMBER_FULL | MEMBER_LIMITED;
	} else {
		p->err = "membership must be full, limited or both";
		return -EINVAL;
	}
	return 0;
}

static int parse_flags(struct softib_parser *p, struct softib_partition *part)
{
	u32 v;
	int ret;

	/* after the name[=pkey]: ", flag[=value]" ... ":" */
	for (;;) {
		ret = next_token(p);
		if (ret)
			return ret;
		if (!strcmp(p->tok, ":"))
			return 0;
		if (strcmp(p->tok, ",")) {
			p->err = "expected ',' or ':' after the partition name";
			return -EINVAL;
		}
		ret = next_token(p);
		if (ret)
			return ret;
		if (!strcmp(p->tok, "ipoib")) {
			part->ipoib = true;
			continue;
		}
		if (!strcmp(p->tok, "defmember")) {
			ret = expect(p, "=", "expected '=' after defmember");
			if (!ret)
				ret = next_token(p);
			if (ret)
				return ret;
			ret = parse_membership(p, &part->defmember);
			if (ret)
				return ret;
			continue;
		}
		if (!strcmp(p->tok, "mtu")) {
			ret = expect(p, "=", "expected '=' after mtu");
			if (!ret)
				ret = parse_uint(p, IB_MTU_4096, &v,
						 "mtu must be 1..5 (256..4096 bytes)");
			if (ret)
				return ret;
			if (!v) {
				p->err = "mtu must be 1..5 (256..4096 bytes)";
				return -EINVAL;
			}
			part->mtu = v;
			continue;
		}
		if (!strcmp(p->tok, "rate")) {
			ret = expect(p, "=", "expected '=' after rate");
			if (!ret)
				ret = parse_uint(p, 63, &v,
						 "rate must be an IBA rate code (2..63)");
			if (ret)
				return ret;
			part->rate = v;
			continue;
		}
		if (!strcmp(p->tok, "sl")) {
			ret = expect(p, "=", "expected '=' after sl");
			if (!ret)
				ret = parse_uint(p, 15, &v, "sl must be 0..15");
			if (ret)
				return ret;
			part->sl = v;
			continue;
		}
		if (!strcmp(p->tok, "scope")) {
			ret = expect(p, "=", "expected '=' after scope");
			if (!ret)
				ret = parse_uint(p, 15, &v, "scope must be 0..15");
			if (ret)
				return ret;
			part->scope = v;
			continue;
		}
		p->err = "unknown flag (supported: ipoib, mtu=, rate=, sl=, scope=, defmember=)";
		return -EINVAL;
	}
}

static int parse_member(struct softib_parser *p, struct softib_dev *sdev,
			struct softib_partition *part)
{
	u8 ports[SOFTIB_MAX_PORTS + 1] = {};
	u8 how = part->defmember;
	u32 i;
	u64 guid;
	int ret;

	if (!strcmp(p->tok, "ALL") || !strcmp(p->tok, "ALL_CAS")) {
		for (i = 1; i <= sdev->nports; i++)
			ports[i] = 1;
	} else if (!strcmp(p->tok, "ALL_SWITCHES") ||
		   !strcmp(p->tok, "ALL_ROUTERS") || !strcmp(p->tok, "SELF")) {
		/* no switch or router ports, and the SM owns no port */
	} else if (!kstrtou64(p->tok, 0, &guid)) {
		/* a port GUID that is not ours names a port not on this fabric */
		if ((guid & ~0xffULL) == softib_node_guid &&
		    (guid & 0xff) >= 1 && (guid & 0xff) <= sdev->nports)
			ports[guid & 0xff] = 1;
	} else {
		p->err = "expected a port GUID, ALL, ALL_CAS, ALL_SWITCHES, ALL_ROUTERS or SELF";
		return -EINVAL;
	}

	/* optional "=full|limited|both", then ',' or ';' */
	ret = next_token(p);
	if (ret)
		return ret;
	if (!strcmp(p->tok, "=")) {
		ret = next_token(p);
		if (ret)
			return ret;
		ret = parse_membership(p, &how);
		if (!ret)
			ret = next_token(p);
		if (ret)
			return ret;
	}
	for (i = 1; i <= sdev->nports; i++)
		if (ports[i])
			part->member[i] |= how;
	return 0;
}

static int parse_partition(struct softib_parser *p, struct softib_dev *sdev,
			   struct softib_policy *pol)
{
	struct softib_partition *part;
	u32 pkey;
	int ret;

	/* p->tok holds the partition name */
	if (!strcmp(p->tok, "=") || !strcmp(p->tok, ",") ||
	    !strcmp(p->tok, ":") || !strcmp(p->tok, ";")) {
		p->err = "expected a partition name";
		return -EINVAL;
	}
	if (pol->n == SOFTIB_MAX_PARTITIONS) {
		p->err = "too many partitions (at most 64)";
		return -EINVAL;
	}
	part = &pol->part[pol->n];
	memset(part, 0, sizeof(*part));
	part->mtu = IB_MTU_2048;
	part->rate = IB_RATE_10_GBPS;
	part->scope = 2;
	part->defmember = MEMBER_LIMITED;	/* as OpenSM */

	if (!strcmp(p->tok, "Default"))
		part->pkey = 0x7fff;

	ret = next_token(p);
	if (ret)
		return ret;
	if (!strcmp(p->tok, "=")) {
		ret = parse_uint(p, 0xffff, &pkey,
				 "the P_Key must be a number 0x0001..0x7fff");
		if (ret)
			return ret;
		pkey &= 0x7fff;	/* the membership bit comes from the member list */
		if (!pkey) {
			p->err = "the P_Key must be a number 0x0001..0x7fff";
			return -EINVAL;
		}
		part->pkey = pkey;
		ret = parse_flags(p, part);
	} else if (!strcmp(p->tok, ":")) {
		ret = 0;
	} else if (!strcmp(p->tok, ",")) {
		p->pos--;	/* let parse_flags see the ',' */
		p->col--;
		ret = parse_flags(p, part);
	} else {
		p->err = "expected '=P_Key', ',' or ':' after the partition name";
		return -EINVAL;
	}
	if (ret)
		return ret;
	if (!part->pkey) {
		p->err = "partition has no P_Key (write name=0x....)";
		return -EINVAL;
	}

	/* members: [member {, member}] ; */
	ret = next_token(p);
	if (ret)
		return ret;
	while (strcmp(p->tok, ";")) {
		if (!p->tok[0]) {
			p->err = "missing ';' at the end of the partition";
			return -EINVAL;
		}
		ret = parse_member(p, sdev, part);
		if (ret)
			return ret;
		if (!strcmp(p->tok, ";"))
			break;
		if (strcmp(p->tok, ",")) {
			p->err = "expected ',' or ';' after a member";
			return -EINVAL;
		}
		ret = next_token(p);
		if (ret)
			return ret;
	}
	pol->n++;
	return 0;
}

static int softib_policy_parse(struct softib_dev *sdev, const char *text,
			       size_t len, struct softib_policy *pol)
{
	struct softib_parser p = {
		.s = text,
		.len = len,
		.line = 1,
		.col = 1,
	};
	struct softib_partition *part;
	unsigned int i;
	int ret;

	pol->n = 0;
	for (;;) {
		ret = next_token(&p);
		if (ret || !p.tok[0])
			break;
		ret = parse_partition(&p, sdev, pol);
		if (ret)
			break;
	}
	if (ret) {
		pr_err("partitions: line %u column %u: %s; the previous policy stays in force\n",
		       p.tok_line, p.tok_col, p.err);
		return ret;
	}
	/* like OpenSM (unless no_default_prtn): the default partition always exists */
	for (i = 0; i < pol->n; i++)
		if (pol->part[i].pkey == 0x7fff)
			return 0;
	if (pol->n == SOFTIB_MAX_PARTITIONS) {
		pr_err("partitions: too many partitions (at most 63 besides Default); the previous policy stays in force\n");
		return -EINVAL;
	}
	part = &pol->part[pol->n++];
	memset(part, 0, sizeof(*part));
	part->pkey = 0x7fff;
	part->mtu = IB_MTU_2048;
	part->rate = IB_RATE_10_GBPS;
	part->scope = 2;
	part->ipoib = true;
	for (i = 1; i <= sdev->nports; i++)
		part->member[i] = MEMBER_FULL;
	return 0;
}

/*
 * The new P_Key table of one port, as OpenSM (allow_both_pkeys FALSE, its
 * default) computes it: one entry per partition the port is in, full if
 * any line makes it a full member ("both" included), else limited. An
 * entry that stays keeps its index, even if its membership changes; the
 * default partition goes to index 0; new entries fill the free slots in
 * ascending P_Key order.
 */
static int softib_policy_table(struct softib_dev *sdev,
			       const struct softib_policy *pol, u32 port,
			       const u16 *old, u16 *new)
{
	u16 want[SOFTIB_MAX_PARTITIONS];
	unsigned int nwant = 0, i, j;

	for (i = 0; i < pol->n; i++) {
		const struct softib_partition *part = &pol->part[i];
		u8 how = part->member[port];
		u16 e;

		if (!how)
			continue;
		e = part->pkey | ((how & MEMBER_FULL) ? 0x8000 : 0);
		for (j = 0; j < nwant; j++)
			if ((want[j] & 0x7fff) == part->pkey)
				break;
		if (j == nwant) {
			/* insertion in ascending P_Key order */
			while (j && (want[j - 1] & 0x7fff) > part->pkey) {
				want[j] = want[j - 1];
				j--;
			}
			want[j] = e;
			nwant++;
		} else {
			want[j] |= e;
		}
	}
	if (nwant > SOFTIB_PKEY_TBL_LEN) {
		pr_err("partitions: port %u would need %u P_Keys, the table holds %u; the previous policy stays in force\n",
		       port, nwant, SOFTIB_PKEY_TBL_LEN);
		return -ENOSPC;
	}

	memset(new, 0, SOFTIB_PKEY_TBL_LEN * sizeof(*new));
	/* 1. the default partition at index 0 */
	for (j = 0; j < nwant; j++) {
		if ((want[j] & 0x7fff) == 0x7fff) {
			new[0] = want[j];
			want[j] = 0;
			break;
		}
	}
	/* 2. surviving partitions keep their index */
	for (i = 1; i < SOFTIB_PKEY_TBL_LEN; i++) {
		for (j = 0; j < nwant; j++) {
			if (want[j] && old[i] &&
			    (want[j] & 0x7fff) == (old[i] & 0x7fff)) {
				new[i] = want[j];
				want[j] = 0;
				break;
			}
		}
	}
	/* 3. new entries fill free slots, index 0 too if no default */
	for (j = 0; j < nwant; j++) {
		if (!want[j])
			continue;
		for (i = 0; i < SOFTIB_PKEY_TBL_LEN && new[i]; i++)
			;
		new[i] = want[j];
	}
	return 0;
}

static int softib_policy_apply(struct softib_dev *sdev,
			       const struct softib_policy *pol)
{
	u16 (*tables)[SOFTIB_PKEY_TBL_LEN];
	bool changed[SOFTIB_MAX_PORTS + 1] = {};
	struct softib_mcg *g, *tmp;
	unsigned long flags;
	unsigned int i;
	u32 port;
	int ret = 0;

	tables = kcalloc(sdev->nports + 1, sizeof(*tables), GFP_KERNEL);
	if (!tables)
		return -ENOMEM;

	lockdep_assert_held(&sdev->sa_lock);
	for (port = 1; port <= sdev->nports; port++) {
		ret = softib_policy_table(sdev, pol, port,
					  softib_port(sdev, port)->pkeys,
					  tables[port]);
		if (ret)
			goto out_free;
	}

	/* Nothing fails from here on: the new policy takes effect. */
	list_for_each_entry(g, &sdev->mcgs, list)
		g->permanent = false;
	for (i = 0; i < pol->n; i++) {
		const struct softib_partition *part = &pol->part[i];
		union ib_gid mgid = { .raw = {
			0xff, 0x10 | part->scope, 0x40, 0x1b,
			(part->pkey | 0x8000) >> 8, part->pkey & 0xff, 0, 0,
			0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff } };
		bool found = false;

		if (!part->ipoib)
			continue;
		list_for_each_entry(g, &sdev->mcgs, list) {
			if (!memcmp(&g->mgid, &mgid, sizeof(mgid))) {
				g->permanent = true;
				found = true;
				break;
			}
		}
		if (!found)
			softib_mcg_create(sdev, &mgid, 0x0000000b,
					  part->pkey | 0x8000, part->mtu,
					  part->rate, part->sl, 0, 0, 0, true);
	}
	list_for_each_entry_safe(g, tmp, &sdev->mcgs, list)
		if (!g->permanent && list_empty(&g->members))
			softib_mcg_free(sdev, g);

	for (port = 1; port <= sdev->nports; port++) {
		struct softib_port *pp = softib_port(sdev, port);

		/* the switch port at the other end first (switch.c) */
		softib_switch_sm_pkeys(sdev, port, tables[port]);
		spin_lock_irqsave(&pp->lock, flags);
		changed[port] = memcmp(pp->pkeys, tables[port],
				       sizeof(pp->pkeys)) != 0;
		for (i = 0; i < SOFTIB_PKEY_TBL_LEN; i++)
			WRITE_ONCE(pp->pkeys[i], tables[port][i]);
		spin_unlock_irqrestore(&pp->lock, flags);
	}
	for (port = 1; port <= sdev->nports; port++)
		if (changed[port])
			softib_port_event(softib_port(sdev, port),
					  IB_EVENT_PKEY_CHANGE);
out_free:
	kfree(tables);
	return ret;
}

/* Parse and apply a whole policy text; on error the old one stays. */
int softib_policy_set(struct softib_dev *sdev, const char *text, size_t len)
{
	struct softib_policy *pol;
	char *copy;
	int ret;

	if (len > SOFTIB_POLICY_MAX)
		return -EFBIG;
	pol = kzalloc(sizeof(*pol), GFP_KERNEL);
	copy = kmemdup_nul(text, len, GFP_KERNEL);
	if (!pol || !copy) {
		ret = -ENOMEM;
		goto out_free;
	}
	ret = softib_policy_parse(sdev, copy, len, pol);
	if (ret)
		goto out_free;

	mutex_lock(&sdev->sa_lock);
	ret = softib_policy_apply(sdev, pol);
	if (!ret)
		swap(sdev->policy_text, copy);
	mutex_unlock(&sdev->sa_lock);
out_free:
	kfree(copy);
	kfree(pol);
	return ret;
}

