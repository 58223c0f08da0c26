/*
 * delegate.c - the forwarded (delegated) calls, driven the same way
 * through librbdlite and through the real librbd (test-delegate.sh).
 * Beside the forwarded rbd_config_pool_list it drives the native
 * rbd_config_image_list, which must answer as the real librbd in every
 * way of loading librbdlite (no forwarding involved).
 *
 * Built twice: delegate-lite (our headers, linked with librbdlite) and
 * delegate-librbd (the system's headers and librbd).  The script runs
 * delegate-librbd plainly (the reference), delegate-lite, delegate-librbd
 * with librbdlite preloaded and with the substitute librbd.so.1 first in
 * the library path; all transcripts must be equal.  Each line is one call
 * and what it returned; values that legitimately differ between runs
 * (global ids, timestamps) are reduced to their shape.
 *
 * Usage: delegate POOL PREFIX     (CEPH_CONF names the cluster)
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rados/librados.h>
#include <rbd/librbd.h>

static const char *prefix;
static int is_lite;		/* librbdlite answers, in any mode */

#define SHOW(fmt, ...) (printf(fmt "\n", __VA_ARGS__), fflush(stdout))

static char *nm(const char *what)
{
	static char buf[4][128];
	static int k;
	char *b = buf[k++ % 4];

	snprintf(b, sizeof(buf[0]), "%s-%s", prefix, what);
	return b;
}

static void done(rbd_completion_t c, void *arg)
{
	(void)c;
	(void)arg;
}

int main(int argc, char **argv)
{
	rados_t cl;
	rados_ioctx_t io;
	rbd_image_t img;
	int r;

	if (argc != 3) {
		fprintf(stderr, "usage: delegate POOL PREFIX\n");
		return 2;
	}
	prefix = argv[2];
	is_lite = dlsym(RTLD_DEFAULT, "rbdlite_is_librbdlite") != NULL;
	if (rados_create(&cl, NULL) < 0 || rados_conf_read_file(cl, NULL) < 0 ||
	    rados_connect(cl) < 0 || rados_ioctx_create(cl, argv[1], &io) < 0) {
		fprintf(stderr, "delegate: cannot reach the cluster\n");
		return 2;
	}

	/* ---- namespaces ---- */
	r = rbd_namespace_create(io, nm("ns"));
	SHOW("namespace_create %d", r);
	r = rbd_namespace_create(io, nm("ns"));
	SHOW("namespace_create again %d", r);
	{
		char buf[4096];
		size_t sz = sizeof(buf);
		int found = 0;

		r = rbd_namespace_list(io, buf, &sz);
		for (char *p = buf; r >= 0 && p < buf + sz && *p; p += strlen(p) + 1)
			found += !strcmp(p, nm("ns"));
		SHOW("namespace_list %s found=%d", r >= 0 ? "ok" : "err", found);
		sz = 1;
		r = rbd_namespace_list(io, buf, &sz);
		SHOW("namespace_list small %d", r);
	}
	r = rbd_namespace_remove(io, nm("ns"));
	SHOW("namespace_remove %d", r);
	r = rbd_namespace_remove(io, nm("ns"));
	SHOW("namespace_remove again %d", r);

	/* ---- pool metadata ---- */
	{
		char val[64];
		size_t vl = sizeof(val);

		r = rbd_pool_metadata_set(io, nm("key"), "v1");
		SHOW("pool_metadata_set %d", r);
		r = rbd_pool_metadata_get(io, nm("key"), val, &vl);
		SHOW("pool_metadata_get %d '%s' %zu", r, r >= 0 ? val : "", vl);
		r = rbd_pool_metadata_remove(io, nm("key"));
		SHOW("pool_metadata_remove %d", r);
		vl = sizeof(val);
		r = rbd_pool_metadata_get(io, nm("key"), val, &vl);
		SHOW("pool_metadata_get gone %d", r);
	}

	/* ---- trash ---- */
	{
		int order = 22;
		rbd_trash_image_info_t ti;
		char id[64] = "";
		size_t n = 0;

		r = rbd_create(io, nm("trash"), 1 << 22, &order);
		SHOW("create %d", r);
		r = rbd_trash_move(io, nm("trash"), 0);
		SHOW("trash_move %d", r);
		r = rbd_trash_list(io, NULL, &n);
		SHOW("trash_list size %d", r == -ERANGE ? -ERANGE : (r < 0 ? r : 0));
		if (n) {
			rbd_trash_image_info_t *v = calloc(n + 4, sizeof(*v));

			n += 4;
			r = rbd_trash_list(io, v, &n);
			for (int i = 0; i < r; i++)
				if (!strcmp(v[i].name, nm("trash")))
					snprintf(id, sizeof(id), "%s", v[i].id);
			SHOW("trash_list found=%d", id[0] != 0);
			if (r > 0)
				rbd_trash_list_cleanup(v, (size_t)r);
			free(v);
		}
		r = rbd_trash_get(io, id, &ti);
		SHOW("trash_get %d name-ok=%d source=%d", r,
		     r == 0 && !strcmp(ti.name, nm("trash")), r == 0 ? (int)ti.source : -1);
		if (r == 0)
			rbd_trash_get_cleanup(&ti);
		r = rbd_trash_restore(io, id, "");
		SHOW("trash_restore %d", r);
		r = rbd_trash_get(io, id, &ti);
		SHOW("trash_get restored %d", r);
		r = rbd_trash_move(io, nm("trash"), 0);
		SHOW("trash_move again %d", r);
		r = rbd_trash_remove(io, id, false);
		SHOW("trash_remove %d", r);
		r = rbd_trash_remove(io, "no-such-id", false);
		SHOW("trash_remove missing %d", r);
	}

	/* ---- groups ---- */
	{
		char buf[4096];
		size_t sz = sizeof(buf);
		int order = 22;

		r = rbd_group_create(io, nm("grp"));
		SHOW("group_create %d", r);
		r = rbd_group_list(io, buf, &sz);
		SHOW("group_list %s", r >= 0 ? "ok" : "err");
		r = rbd_create(io, nm("gimg"), 1 << 22, &order);
		SHOW("create %d", r);
		r = rbd_group_image_add(io, nm("grp"), io, nm("gimg"));
		SHOW("group_image_add %d", r);
		r = rbd_group_snap_create(io, nm("grp"), "gs1");
		SHOW("group_snap_create %d", r);
		r = rbd_open(io, nm("gimg"), &img, NULL);
		SHOW("open %d", r);
		if (r == 0) {
			rbd_group_info_t gi;

			r = rbd_get_group(img, &gi, sizeof(gi));
			SHOW("get_group %d name-ok=%d", r, r == 0 && !strcmp(gi.name, nm("grp")));
			if (r == 0)
				rbd_group_info_cleanup(&gi, sizeof(gi));
			rbd_close(img);
		}
		r = rbd_group_snap_remove(io, nm("grp"), "gs1");
		SHOW("group_snap_remove %d", r);
		r = rbd_group_image_remove(io, nm("grp"), io, nm("gimg"));
		SHOW("group_image_remove %d", r);
		r = rbd_group_remove(io, nm("grp"));
		SHOW("group_remove %d", r);
		r = rbd_remove(io, nm("gimg"));
		SHOW("remove %d", r);
	}

	/* ---- mirroring, pool and one image (snapshot mode, single site) ---- */
	{
		rbd_mirror_mode_t mode = 99;
		rbd_mirror_image_info_t mi;
		rbd_mirror_image_mode_t imode = 99;
		rbd_completion_t c;
		uint64_t snap_id = 0;
		int order = 22;
		char buf[4096];

		r = rbd_mirror_mode_set(io, RBD_MIRROR_MODE_IMAGE);
		SHOW("mirror_mode_set %d", r);
		r = rbd_mirror_mode_get(io, &mode);
		SHOW("mirror_mode_get %d %d", r, (int)mode);
		r = rbd_create(io, nm("mir"), 1 << 23, &order);
		SHOW("create %d", r);
		r = rbd_open(io, nm("mir"), &img, NULL);
		SHOW("open %d", r);
		memset(buf, 0x5a, sizeof(buf));
		/* Our handle takes the exclusive lock for this write; the
		 * forwarded calls below need it too. */
		SHOW("write %zd", rbd_write(img, 0, sizeof(buf), buf));
		r = rbd_mirror_image_enable2(img, RBD_MIRROR_IMAGE_MODE_SNAPSHOT);
		SHOW("mirror_image_enable2 %d", r);
		SHOW("write after enable %zd", rbd_write(img, 4096, sizeof(buf), buf));
		r = rbd_mirror_image_get_info(img, &mi, sizeof(mi));
		SHOW("mirror_image_get_info %d state=%d primary=%d gid=%zu", r,
		     r == 0 ? (int)mi.state : -1, r == 0 ? mi.primary : -1,
		     r == 0 ? strlen(mi.global_id) : 0);
		if (r == 0)
			rbd_mirror_image_get_info_cleanup(&mi);
		r = rbd_aio_create_completion(NULL, done, &c);
		r = rbd_aio_mirror_image_get_mode(img, &imode, c);
		SHOW("aio_mirror_image_get_mode %d", r);
		rbd_aio_wait_for_complete(c);
		SHOW("  -> %zd mode=%d", rbd_aio_get_return_value(c), (int)imode);
		rbd_aio_release(c);
		r = rbd_mirror_image_create_snapshot(img, &snap_id);
		SHOW("mirror_image_create_snapshot %d id-set=%d", r, snap_id != 0);
		SHOW("write after snapshot %zd", rbd_write(img, 8192, sizeof(buf), buf));
		{
			int max = 16;
			rbd_snap_info_t si[16];

			r = rbd_snap_list(img, si, &max);
			SHOW("snap_list %d", r);
			if (r >= 0)
				rbd_snap_list_end(si);
		}
		r = rbd_mirror_image_disable(img, false);
		SHOW("mirror_image_disable %d", r);
		rbd_close(img);
		/* The real librbd crashes on NULL and closed handles;
		 * librbdlite must refuse them (a line only on failure). */
		if (is_lite) {
			r = rbd_mirror_image_get_info(NULL, &mi, sizeof(mi));
			if (r != -EINVAL)
				SHOW("BAD: mirror_image_get_info(NULL) %d", r);
			r = rbd_mirror_image_get_info(img, &mi, sizeof(mi));
			if (r != -EINVAL)
				SHOW("BAD: mirror_image_get_info(closed) %d", r);
		}
		r = rbd_remove(io, nm("mir"));
		SHOW("remove %d", r);
		r = rbd_mirror_mode_set(io, RBD_MIRROR_MODE_DISABLED);
		SHOW("mirror_mode_set disabled %d", r);
	}

	/* ---- configuration lists ---- */
	{
		rbd_config_option_t opts[256];
		int n = 256, order = 22;

		r = rbd_config_pool_list(io, opts, &n);
		SHOW("config_pool_list %d n>0=%d", r, n > 0);
		if (r >= 0)
			rbd_config_pool_list_cleanup(opts, n);
		r = rbd_create(io, nm("cfg"), 1 << 22, &order);
		r = rbd_open(io, nm("cfg"), &img, NULL);
		SHOW("open %d", r);
		{
			rbd_image_watcher_t w[8];
			size_t nw = 8;

			r = rbd_watchers_list(img, w, &nw);
			SHOW("watchers_list %d n=%zu", r, nw);
			if (r == 0)
				rbd_watchers_list_cleanup(w, nw);
		}
		r = rbd_metadata_set(img, "conf_rbd_cache", "false");
		SHOW("metadata_set %d", r);
		/* Native in librbdlite: the count (-ERANGE below it), the
		 * image override's value and source, as the real librbd's. */
		n = 1;
		r = rbd_config_image_list(img, opts, &n);
		SHOW("config_image_list(max=1) %d n=%d", r, n);
		n = 256;
		r = rbd_config_image_list(img, opts, &n);
		{
			const char *val = "(none)";
			int src = -1;

			for (int i = 0; r >= 0 && i < n; i++)
				if (!strcmp(opts[i].name, "rbd_cache")) {
					val = opts[i].value;
					src = (int)opts[i].source;
				}
			SHOW("config_image_list %d n=%d rbd_cache=%s source=%d",
			     r, n, val, src);
		}
		if (r >= 0)
			rbd_config_image_list_cleanup(opts, n);
		rbd_close(img);
		/* The real librbd crashes on NULL and closed handles;
		 * librbdlite must refuse them (a line only on failure). */
		if (is_lite) {
			n = 256;
			r = rbd_config_image_list(NULL, opts, &n);
			if (r != -EINVAL)
				SHOW("BAD: config_image_list(NULL) %d", r);
			r = rbd_config_image_list(img, opts, &n);
			if (r != -EINVAL)
				SHOW("BAD: config_image_list(closed) %d", r);
		}
		rbd_remove(io, nm("cfg"));
	}

	/* ---- migration, with librbdlite's own options object ---- */
	{
		rbd_image_options_t o;
		rbd_image_migration_status_t st;
		int order = 22;

		r = rbd_create(io, nm("msrc"), 1 << 22, &order);
		SHOW("create %d", r);
		rbd_image_options_create(&o);
		rbd_image_options_set_uint64(o, RBD_IMAGE_OPTION_ORDER, 23);
		r = rbd_migration_prepare(io, nm("msrc"), io, nm("mdst"), o);
		SHOW("migration_prepare %d", r);
		rbd_image_options_destroy(o);
		r = rbd_migration_status(io, nm("mdst"), &st, sizeof(st));
		SHOW("migration_status %d state=%d", r, r == 0 ? (int)st.state : -1);
		if (r == 0)
			rbd_migration_status_cleanup(&st);
		r = rbd_migration_execute(io, nm("mdst"));
		SHOW("migration_execute %d", r);
		r = rbd_migration_commit(io, nm("mdst"));
		SHOW("migration_commit %d", r);
		r = rbd_open(io, nm("mdst"), &img, NULL);
		SHOW("open migrated %d", r);
		if (r == 0) {
			rbd_image_info_t info;

			r = rbd_stat(img, &info, sizeof(info));
			SHOW("stat %d order=%d", r, info.order);
			rbd_close(img);
		}
		r = rbd_remove(io, nm("mdst"));
		SHOW("remove %d", r);
	}

	rados_ioctx_destroy(io);
	rados_shutdown(cl);
	return 0;
}
