/*
 * avl.h - an intrusive AVL tree: balanced, O(log n) insert, erase and
 * search, no allocation (the node is embedded in its owner's object).
 *
 * The tree knows no keys.  As with the kernel's rbtree, the caller walks
 * from t->root with its own comparison to find where a node goes (the
 * parent and the child pointer to fill), then links it with
 * rbdl_avl_insert; searches are the caller's own walks.
 *
 * Threading: none; the owner serializes every access (a mutex).
 * Ownership: nodes belong to their objects; the tree only links them.
 */
#ifndef RBDL_CORE_AVL_H
#define RBDL_CORE_AVL_H

struct rbdl_avl_node {
	struct rbdl_avl_node *left, *right, *parent;
	int height;		/* of the subtree; a leaf is 1 */
};

struct rbdl_avl {
	struct rbdl_avl_node *root;
};

/* Link n at *link, a NULL child pointer of parent (or &t->root for an
 * empty tree, parent NULL), and rebalance. */
void rbdl_avl_insert(struct rbdl_avl *t, struct rbdl_avl_node *n,
		     struct rbdl_avl_node *parent,
		     struct rbdl_avl_node **link);

/* Unlink n (a node of t) and rebalance. */
void rbdl_avl_erase(struct rbdl_avl *t, struct rbdl_avl_node *n);

#endif /* RBDL_CORE_AVL_H */
