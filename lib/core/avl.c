/*
 * avl.c - the intrusive AVL tree (avl.h).  Heights are kept in the nodes;
 * after a link or unlink every ancestor is rebalanced with single or
 * double rotations, from the changed node up to the root.
 */
#include "config.h"

#include "avl.h"

#include <stddef.h>

typedef struct rbdl_avl_node node;

static int height(const node *n)
{
	return n ? n->height : 0;
}

static void update(node *n)
{
	int l = height(n->left), r = height(n->right);

	n->height = (l > r ? l : r) + 1;
}

/* Put c where old was under parent (the root if parent is NULL). */
static void replace_child(struct rbdl_avl *t, node *parent, node *old,
			  node *c)
{
	if (!parent)
		t->root = c;
	else if (parent->left == old)
		parent->left = c;
	else
		parent->right = c;
	if (c)
		c->parent = parent;
}

/* x's right child takes its place; returns it. */
static node *rotate_left(struct rbdl_avl *t, node *x)
{
	node *y = x->right;

	x->right = y->left;
	if (y->left)
		y->left->parent = x;
	replace_child(t, x->parent, x, y);
	y->left = x;
	x->parent = y;
	update(x);
	update(y);
	return y;
}

/* x's left child takes its place; returns it. */
static node *rotate_right(struct rbdl_avl *t, node *x)
{
	node *y = x->left;

	x->left = y->right;
	if (y->right)
		y->right->parent = x;
	replace_child(t, x->parent, x, y);
	y->right = x;
	x->parent = y;
	update(x);
	update(y);
	return y;
}

/* Restore n's balance; returns the root of its subtree. */
static node *rebalance(struct rbdl_avl *t, node *n)
{
	int bal;

	update(n);
	bal = height(n->left) - height(n->right);
	if (bal > 1) {
		if (height(n->left->left) < height(n->left->right))
			rotate_left(t, n->left);
		return rotate_right(t, n);
	}
	if (bal < -1) {
		if (height(n->right->right) < height(n->right->left))
			rotate_right(t, n->right);
		return rotate_left(t, n);
	}
	return n;
}

static void fix_up(struct rbdl_avl *t, node *n)
{
	while (n)
		n = rebalance(t, n)->parent;
}

void rbdl_avl_insert(struct rbdl_avl *t, node *n, node *parent, node **link)
{
	n->left = n->right = NULL;
	n->parent = parent;
	n->height = 1;
	*link = n;
	fix_up(t, parent);
}

void rbdl_avl_erase(struct rbdl_avl *t, node *n)
{
	node *from;

	if (n->left && n->right) {
		/* The successor s (leftmost of the right subtree) takes n's
		 * place. */
		node *s = n->right;

		while (s->left)
			s = s->left;
		if (s->parent != n) {
			node *sp = s->parent;

			sp->left = s->right;
			if (s->right)
				s->right->parent = sp;
			s->right = n->right;
			n->right->parent = s;
			from = sp;
		} else {
			from = s;
		}
		s->left = n->left;
		n->left->parent = s;
		replace_child(t, n->parent, n, s);
		s->height = n->height;
	} else {
		from = n->parent;
		replace_child(t, from, n, n->left ? n->left : n->right);
	}
	fix_up(t, from);
}
