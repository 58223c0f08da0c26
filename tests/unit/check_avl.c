/*
 * check_avl.c - unit tests for lib/core/avl.c, the intrusive AVL tree.
 *
 * A random sequence of inserts and erases (duplicates of a key included)
 * is mirrored in a plain array; after every step the tree must hold the
 * array's keys in order, with consistent parent links, correct heights
 * and every node balanced (|height(left) - height(right)| <= 1), and a
 * predecessor search must agree with a linear scan of the array.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/avl.h"

#define N 2000

struct item {
	struct rbdl_avl_node node;
	uint64_t key;
	int in;
};

#define ITEM(n) ((struct item *)((char *)(n) - offsetof(struct item, node)))

static void insert(struct rbdl_avl *t, struct item *it)
{
	struct rbdl_avl_node **link = &t->root, *parent = NULL;

	/* Equal keys go right: insertion order among them is kept. */
	while (*link) {
		parent = *link;
		link = it->key < ITEM(parent)->key ? &parent->left
						   : &parent->right;
	}
	rbdl_avl_insert(t, &it->node, parent, link);
}

/* The item with the greatest key < k, or NULL. */
static struct item *pred(const struct rbdl_avl *t, uint64_t k)
{
	struct rbdl_avl_node *n = t->root, *best = NULL;

	while (n) {
		if (ITEM(n)->key < k) {
			best = n;
			n = n->right;
		} else {
			n = n->left;
		}
	}
	return best ? ITEM(best) : NULL;
}

/* Check the subtree at n; returns its height.  Appends keys in order. */
static int check_tree(const struct rbdl_avl_node *n,
		      const struct rbdl_avl_node *parent, uint64_t *keys,
		      size_t *nk)
{
	int l, r;

	if (!n)
		return 0;
	ck_assert_ptr_eq(n->parent, parent);
	l = check_tree(n->left, n, keys, nk);
	keys[(*nk)++] = ITEM(n)->key;
	r = check_tree(n->right, n, keys, nk);
	ck_assert_int_le(abs(l - r), 1);
	ck_assert_int_eq(n->height, (l > r ? l : r) + 1);
	return n->height;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void verify(const struct rbdl_avl *t, struct item *items)
{
	static uint64_t got[N], want[N];
	size_t ng = 0, nw = 0;

	for (int i = 0; i < N; i++)
		if (items[i].in)
			want[nw++] = items[i].key;
	qsort(want, nw, sizeof(*want), cmp_u64);
	check_tree(t->root, NULL, got, &ng);
	ck_assert_uint_eq(ng, nw);
	ck_assert(memcmp(got, want, nw * sizeof(*got)) == 0);
}

START_TEST(test_empty)
{
	struct rbdl_avl t = { NULL };
	struct item a = { .key = 5 };

	ck_assert_ptr_null(pred(&t, 10));
	insert(&t, &a);
	ck_assert_ptr_eq(t.root, &a.node);
	ck_assert_int_eq(a.node.height, 1);
	ck_assert_ptr_eq(pred(&t, 10), &a);
	ck_assert_ptr_null(pred(&t, 5));
	rbdl_avl_erase(&t, &a.node);
	ck_assert_ptr_null(t.root);
}
END_TEST

START_TEST(test_ascending)
{
	static struct item items[N];
	struct rbdl_avl t = { NULL };

	/* Sorted inserts are the worst case of an unbalanced tree. */
	for (int i = 0; i < N; i++) {
		items[i].key = (uint64_t)i;
		items[i].in = 1;
		insert(&t, &items[i]);
	}
	verify(&t, items);
	ck_assert_int_le(t.root->height, 16);	/* 1.44 log2(2000) */
	for (int i = 0; i < N; i += 2) {
		rbdl_avl_erase(&t, &items[i].node);
		items[i].in = 0;
	}
	verify(&t, items);
}
END_TEST

START_TEST(test_random)
{
	static struct item items[N];
	struct rbdl_avl t = { NULL };
	uint64_t seed = 42;

	memset(items, 0, sizeof(items));
	for (int step = 0; step < 20000; step++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		int i = (int)((seed >> 33) % N);

		if (items[i].in) {
			rbdl_avl_erase(&t, &items[i].node);
			items[i].in = 0;
		} else {
			/* Few distinct keys: duplicates are common. */
			items[i].key = (seed >> 13) % 512;
			items[i].in = 1;
			insert(&t, &items[i]);
		}
		if (step % 97 == 0 || step > 19900)
			verify(&t, items);
		/* Predecessor search against a linear scan. */
		uint64_t k = (seed >> 23) % 520, best = 0;
		int found = 0;

		for (int j = 0; j < N; j++)
			if (items[j].in && items[j].key < k &&
			    (!found || items[j].key > best)) {
				best = items[j].key;
				found = 1;
			}
		struct item *p = pred(&t, k);

		ck_assert_int_eq(p != NULL, found);
		if (p)
			ck_assert_uint_eq(p->key, best);
	}
}
END_TEST

static Suite *avl_suite(void)
{
	Suite *s = suite_create("AVL");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_ascending);
	tcase_add_test(tc, test_random);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(avl_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
