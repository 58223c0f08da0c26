#!/usr/bin/env python3
"""pyrbd_script.py - one script of python3-rbd calls, for test-python.sh.

test-python.sh runs this script three times on one cluster: on the real
librbd, with librbdlite preloaded, and with librbdlite's drop-in
librbd.so.1 substituted; the three transcripts must be identical.

    pyrbd_script.py run PREFIX [SECTION...]
        Run the sections (default: all, in order), each in a child process
        of its own (the same interpreter and environment), and print the
        transcript on stdout.  A section works in the RBD namespace
        PREFIX-SECTION of the pool $RBDLITE_TEST_POOL (created beforehand,
        see "setup"), so that what one leaves behind (after a crash) does
        not show in another's listings.  One line per call:

            Label(args) -> result

        where the result is the normalised return value, "!Class(errno)"
        for an exception, "b<len>:<md5>" for data.  A section whose child
        dies of a signal ends with "CRASH(signal N)" appended to the line
        of the call in progress; one that exits otherwise, hangs or raises
        outside a call ends with a "!! section ..." line.  Exits 0 when
        every section ran to its end (whatever the calls returned).
    pyrbd_script.py section PREFIX SECTION
        One section, in this process (what "run" starts).
    pyrbd_script.py setup PREFIX / cleanup PREFIX
        Create the sections' namespaces / remove everything the sections
        may have left in namespaces PREFIX* (and in the pool: mirror
        peers, pool mirroring, images named PREFIX*), then the
        namespaces.  Meant for the real librbd.
    pyrbd_script.py whoami
        Print which library python's rbd module is bound to (for the
        drop-in check of test-python.sh): "librbdlite PATH" or
        "librbd PATH".
    pyrbd_script.py sections
        List the section names.
    pyrbd_script.py journal-events IMAGE
        Print the entries in the journal of image IMAGE of the pool, one
        per line, sorted (concurrent requests may be appended in any
        order); for test-journal.sh.

Normalisation (what legitimately differs between runs): the prefix
becomes "P"; image, snapshot, watcher ids, cookies, client names,
addresses, UUIDs become <tagN> numbered by first appearance (so that the
same id seen twice is still seen to be the same); timestamps become <ts>.

Environment: CEPH_CONF, RBDLITE_TEST_POOL, RBDLITE_TEST_DATA_POOL.
Threading: a section runs its calls one at a time; completion callbacks
(librbd's threads) only append to lists that the section prints after
waiting for the completion.
"""

import datetime
import hashlib
import json
import os
import struct
import random
import re
import subprocess
import sys
import tempfile
import time
import base64

import rados
import rbd

MiB = 1 << 20
SECTION_TIMEOUT = 90
# Sections whose LUKS key derivations (about a second of CPU each, by
# design) need longer on a loaded machine.
SLOW_SECTIONS = {'encryption': 300, 'encryption2': 300}


# ----------------------------------------------------------------------
# Transcript and normalisation


class V:
    """An argument whose value is volatile (an id): printed normalised."""

    def __init__(self, v):
        self.v = v


class Fail:
    """What T.c returns when the call raised."""

    def __init__(self, e):
        self.e = e

    def __bool__(self):
        return False


UUID_RE = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}')
ADDR_RE = re.compile(r'(?:v[12]:)?\d+\.\d+\.\d+\.\d+:\d+/\d+')
CLIENT_RE = re.compile(r'\bclient\.(\d+)\b')
AUTO_RE = re.compile(r'\bauto \d+\b')
DATA_RE = re.compile(r'\brbd_data\.(?:\d+\.)?([0-9a-f]{4,})')
GROUPSNAP_RE = re.compile(r'\.group\.(\d+)_([0-9a-f]+)_([0-9a-f]+)')

# Dictionary keys whose values are ids that differ from run to run.
VOLATILE_KEYS = {'id', 'image_id', 'parent_id', 'source_image_id',
                 'dest_image_id', 'global_id', 'cookie', 'addr', 'owner',
                 'instance_id', 'uuid', 'mirror_uuid', 'primary_mirror_uuid',
                 'client', 'group_snap_id', 'snap_id'}


# Dictionary keys whose values are lists in no particular order (sets).
UNORDERED_KEYS = {'mirror_peer_uuids'}


class T:
    """The transcript of one section."""

    def __init__(self, prefix, out):
        self.prefix = prefix
        self.out = out
        self.tokens = {}        # raw value -> placeholder
        self.counts = {}
        self.names = {}         # id(object) -> label

    # -- normalisation -------------------------------------------------
    def token(self, raw, _kind=None):
        """The placeholder of a volatile value: <SHAPE N>, the shape being
        what the value looks like (so that an address where librbd gives a
        cookie still shows), N counting the distinct values of that shape
        in order of first appearance."""
        if isinstance(raw, str) and raw == '':
            return ''
        key = (type(raw).__name__, raw)
        t = self.tokens.get(key)
        if t is None:
            kind = shape(raw)
            n = self.counts.get(kind, 0) + 1
            self.counts[kind] = n
            t = '<%s%d>' % (kind, n)
            self.tokens[key] = t
        return t

    def nstr(self, s):
        s = s.replace(self.prefix, 'P')
        for m in DATA_RE.finditer(s):
            self.token(m.group(1), 'id')
        s = GROUPSNAP_RE.sub(lambda m: '.group.%s_%s_%s' % (
            m.group(1), self.token(m.group(2), 'id'), self.token(m.group(3), 'id')), s)
        # Known string tokens, longest first.
        toks = sorted((k[1] for k in self.tokens
                       if k[0] == 'str' and len(k[1]) >= 6),
                      key=len, reverse=True)
        for raw in toks:
            if raw in s:
                s = s.replace(raw, self.tokens[('str', raw)])
        s = UUID_RE.sub(lambda m: self.token(m.group(0), 'uuid'), s)
        s = ADDR_RE.sub(lambda m: self.token(m.group(0), 'addr'), s)
        s = CLIENT_RE.sub(lambda m: self.token(m.group(0), 'client'), s)
        s = AUTO_RE.sub(lambda m: self.token(m.group(0), 'cookie'), s)
        return s

    def fmt(self, v, key=None):
        if isinstance(v, V):
            return self.token(v.v) if v.v is not None else 'None'
        if key in VOLATILE_KEYS and isinstance(v, (str, int)) and \
                not isinstance(v, bool):
            if isinstance(v, str):
                return self.nstr(v) if v == '' else self.token(v)
            return self.token(v)
        if isinstance(v, datetime.datetime):
            return '<ts>' if v.year > 1970 else 'epoch'
        if isinstance(v, (bytes, bytearray)):
            return 'b%d:%s' % (len(v), hashlib.md5(bytes(v)).hexdigest()[:12])
        if isinstance(v, str):
            return repr(self.nstr(v))
        if isinstance(v, dict):
            return '{' + ', '.join('%s: %s' % (k, self.fmt(v[k], k))
                                   for k in sorted(v, key=str)) + '}'
        if isinstance(v, tuple):
            return '(' + ', '.join(self.fmt(x, key) for x in v) + ')'
        if isinstance(v, list):
            items = [self.fmt(x, key) for x in v]
            if key in UNORDERED_KEYS:
                items.sort()
            return '[' + ', '.join(items) + ']'
        if isinstance(v, rados.Ioctx) or isinstance(v, rbd.Image) or \
                isinstance(v, rbd.Group) or isinstance(v, rados.Rados):
            return self.names.get(id(v), type(v).__name__)
        if isinstance(v, rbd.Completion):
            return 'Completion'
        if callable(v):
            return 'cb'
        return repr(v)

    def exc(self, e):
        en = getattr(e, 'errno', None)
        return '!%s%s' % (type(e).__name__, '(%s)' % en if en is not None else '')

    # -- recording -----------------------------------------------------
    def line(self, text):
        self.out.write(text + '\n')
        self.out.flush()

    def start(self, label, a, kw):
        args = [self.fmt(x) for x in a]
        args += ['%s=%s' % (k, self.fmt(kw[k])) for k in sorted(kw)]
        self.out.write('%s(%s) -> ' % (label, ', '.join(args)))
        self.out.flush()

    def c(self, label, fn, *a, _kind=None, _sort=False, _post=None, **kw):
        """Call fn(*a, **kw) and record it.  Returns the result (an
        iterator is drained into a list), or a Fail."""
        self.start(label, a, kw)
        ua = [x.v if isinstance(x, V) else x for x in a]
        ukw = {k: (x.v if isinstance(x, V) else x) for k, x in kw.items()}
        try:
            r = fn(*ua, **ukw)
            if r is not None and not isinstance(r, (str, bytes, bytearray, dict, list, tuple)) \
                    and hasattr(r, '__iter__') and not isinstance(r, (rbd.Image, rbd.Group)):
                r = list(r)
            if _post is not None:
                shown = _post(r)
            else:
                shown = r
            if _sort and isinstance(shown, list):
                shown = sorted(shown, key=sortkey)
            if _kind is not None and isinstance(shown, (str, int)) and shown != '':
                text = self.token(shown, _kind)
            else:
                text = self.fmt(shown)
        except Exception as e:      # pylint: disable=broad-except
            self.line(self.exc(e))
            return Fail(e)
        self.line(text)
        return r

    def note(self, label, value):
        """A line for something observed (callback results)."""
        self.line('  %s: %s' % (label, self.fmt(value)))

    def name(self, obj, label):
        self.names[id(obj)] = label
        return obj


def shape(v):
    """What kind of volatile value v is (see T.token)."""
    if isinstance(v, bool):
        return 'bool'
    if isinstance(v, int):
        return 'n'
    if not isinstance(v, str):
        return type(v).__name__
    for kind, rx in (('uuid', UUID_RE), ('addr', ADDR_RE), ('client', CLIENT_RE),
                     ('cookie', AUTO_RE)):
        if rx.fullmatch(v):
            return kind
    if re.fullmatch(r'[0-9a-f]+', v):
        return 'id'
    return 'str'


def sortkey(x):
    if isinstance(x, dict):
        return (str(x.get('name', '')), str(x.get('pool', '')),
                str(sorted((k, str(v)) for k, v in x.items()
                           if k not in VOLATILE_KEYS)))
    if isinstance(x, tuple):
        return ('', str(x[1:]) if len(x) > 1 else '', str(x))
    return (str(x), '', '')


def pat(seed, n):
    return random.Random(seed).randbytes(n)


# ----------------------------------------------------------------------
# Section context


def namespace(prefix, section):
    """The RBD namespace a section works in."""
    return '%s-%s' % (prefix, section)


class Ctx:
    """What a section works with: the transcript t, the RADOS client,
    io (its own namespace of the test pool), io0 (the pool's default
    namespace), the rbd.RBD object r; the images it opened."""

    def __init__(self, prefix, section, out):
        self.prefix = prefix
        self.ns = namespace(prefix, section)
        self.t = T(prefix, out)
        self.pool = os.environ['RBDLITE_TEST_POOL']
        self.data_pool = os.environ.get('RBDLITE_TEST_DATA_POOL') or None
        self.cluster = rados.Rados(conffile=os.environ['CEPH_CONF'])
        self.cluster.connect(timeout=30)
        self.t.name(self.cluster, 'cluster')
        self.io = self.t.name(self.cluster.open_ioctx(self.pool), 'io')
        self.io.set_namespace(self.ns)
        self.io0 = self.t.name(self.cluster.open_ioctx(self.pool), 'io0')
        self.r = rbd.RBD()
        self.images = []
        self.others = []

    def other_client(self):
        """An I/O context on the namespace from another RADOS client (one
        that a lock_break or break_lock may blocklist)."""
        c = rados.Rados(conffile=os.environ['CEPH_CONF'])
        c.connect(timeout=30)
        self.others.append(c)
        io = self.t.name(c.open_ioctx(self.pool), 'io%d' % (len(self.others) + 1))
        io.set_namespace(self.ns)
        return io

    def open(self, label, name=None, io=None, **kw):
        io = io or self.io
        img = self.t.c('Image', rbd.Image, io, name, **kw)
        if img:
            self.t.name(img, label)
            self.images.append(img)
        return img

    def close(self, img):
        if img:
            self.t.c('%s.close' % self.t.names.get(id(img), 'img'), img.close)

    def done(self):
        for img in self.images:
            try:
                img.close()
            except Exception:       # pylint: disable=broad-except
                pass
        self.io.close()
        self.io0.close()
        self.cluster.shutdown()
        for c in self.others:
            c.shutdown()


class Progress:
    """An on_progress callback that remembers how it was called."""

    def __init__(self):
        self.calls = []

    def __call__(self, offset, total):
        self.calls.append((offset, total))
        return 0

    def summary(self):
        if not self.calls:
            return 'not called'
        return 'called, last %s' % (self.calls[-1],)


def aio(x, label, fn, *a, _volatile=False, **kw):
    """An aio call with a recording callback: the call, then what the
    callback saw once the completion is complete (_volatile: the callback's
    value is an id)."""
    got = []

    def cb(comp, *rest):
        if _volatile:
            rest = [V(v) for v in rest]
        got.append((comp.get_return_value(),) + tuple(rest))

    comp = x.t.c(label, fn, *a, cb, **kw)
    if comp:
        x.t.c('  Completion.wait_for_complete_and_cb', comp.wait_for_complete_and_cb)
        x.t.c('  Completion.is_complete', comp.is_complete)
        x.t.c('  Completion.get_return_value', comp.get_return_value)
        x.t.note('callback', got)
    return comp


# ----------------------------------------------------------------------
# Sections


def s_pool_basics(x):
    """version, feature strings, pool init, stats, pool metadata and pool
    config."""
    t, r, io = x.t, x.r, x.io
    t.c('RBD.version', r.version)
    t.c('RBD.features_to_string', r.features_to_string, 61)
    t.c('RBD.features_to_string', r.features_to_string, 0)
    t.c('RBD.features_to_string', r.features_to_string, 1 << 40)
    t.c('RBD.features_from_string', r.features_from_string, 'layering,exclusive-lock')
    t.c('RBD.features_from_string', r.features_from_string, '')
    t.c('RBD.features_from_string', r.features_from_string, 'bogus')
    t.c('RBD.features_to_string', r.features_to_string, 'x')
    t.c('RBD.list', r.list, io)
    t.c('RBD.list2', r.list2, io)
    t.c('RBD.pool_stats_get', r.pool_stats_get, io)
    t.c('RBD.pool_init', r.pool_init, io, False)
    t.c('RBD.pool_init', r.pool_init, io, True)
    # pool metadata
    t.c('RBD.pool_metadata_list', r.pool_metadata_list, io)
    t.c('RBD.pool_metadata_get', r.pool_metadata_get, io, 'nokey')
    t.c('RBD.pool_metadata_set', r.pool_metadata_set, io, 'k1', 'v1')
    t.c('RBD.pool_metadata_set', r.pool_metadata_set, io, 'k2', '')
    t.c('RBD.pool_metadata_set', r.pool_metadata_set, io, 'k3', 'x' * 5000)
    t.c('RBD.pool_metadata_get', r.pool_metadata_get, io, 'k1')
    t.c('RBD.pool_metadata_get', r.pool_metadata_get, io, 'k2')
    t.c('RBD.pool_metadata_get', r.pool_metadata_get, io, 'k3')
    t.c('RBD.pool_metadata_list', r.pool_metadata_list, io)
    t.c('RBD.pool_metadata_remove', r.pool_metadata_remove, io, 'k1')
    t.c('RBD.pool_metadata_remove', r.pool_metadata_remove, io, 'k1')
    t.c('RBD.pool_metadata_remove', r.pool_metadata_remove, io, 'k2')
    t.c('RBD.pool_metadata_remove', r.pool_metadata_remove, io, 'k3')
    t.c('RBD.pool_metadata_set', r.pool_metadata_set, io, 1, 'v')
    t.c('RBD.pool_metadata_list', r.pool_metadata_list, io)
    # pool config
    t.c('RBD.config_list', r.config_list, io)
    t.c('RBD.config_get', r.config_get, io, 'rbd_cache')
    t.c('RBD.config_get', r.config_get, io, 'rbd_nosuch')
    t.c('RBD.config_set', r.config_set, io, 'rbd_cache', 'false')
    t.c('RBD.config_set', r.config_set, io, 'rbd_nosuch', 'x')
    t.c('RBD.config_set', r.config_set, io, 'rbd_cache', 'maybe')
    t.c('RBD.config_get', r.config_get, io, 'rbd_cache')
    t.c('RBD.config_list', r.config_list, io,
        _post=lambda l: [d for d in l if d['name'] == 'rbd_cache'])
    t.c('RBD.config_remove', r.config_remove, io, 'rbd_cache')
    t.c('RBD.config_remove', r.config_remove, io, 'rbd_cache')
    t.c('RBD.config_remove', r.config_remove, io, 'rbd_nosuch')
    t.c('RBD.config_get', r.config_get, io, 'rbd_cache')


def s_create(x):
    """create with every option (good and bad), list/list2, per-image
    properties, rename, remove; the default namespace, format 1."""
    t, r, io = x.t, x.r, x.io
    F = rbd
    t.c('RBD.create', r.create, io, 'c1', 8 * MiB)
    t.c('RBD.create', r.create, io, 'c1', 8 * MiB)
    t.c('RBD.create', r.create, io, 'c2', 0)
    t.c('RBD.create', r.create, io, 'c3', 8 * MiB, order=20)
    t.c('RBD.create', r.create, io, 'c4', 8 * MiB, order=11)
    t.c('RBD.create', r.create, io, 'c4', 8 * MiB, order=27)
    t.c('RBD.create', r.create, io, 'c4', 8 * MiB, order=64)
    t.c('RBD.create', r.create, io, 'c5', 8 * MiB, features=F.RBD_FEATURE_LAYERING)
    t.c('RBD.create', r.create, io, 'c6', 8 * MiB, features=0)
    t.c('RBD.create', r.create, io, 'c7', 8 * MiB,
        features=F.RBD_FEATURE_LAYERING | F.RBD_FEATURE_STRIPINGV2,
        stripe_unit=65536, stripe_count=4)
    t.c('RBD.create', r.create, io, 'c8', 8 * MiB, stripe_unit=65536, stripe_count=4)
    t.c('RBD.create', r.create, io, 'c9a', 8 * MiB, stripe_unit=3000, stripe_count=4)
    t.c('RBD.create', r.create, io, 'c9b', 8 * MiB, stripe_unit=65536)
    t.c('RBD.create', r.create, io, 'c9c', 8 * MiB, stripe_count=2)
    t.c('RBD.create', r.create, io, 'c9d', 8 * MiB, features=F.RBD_FEATURE_OBJECT_MAP)
    t.c('RBD.create', r.create, io, 'c9e', 8 * MiB, features=F.RBD_FEATURE_FAST_DIFF |
        F.RBD_FEATURE_EXCLUSIVE_LOCK)
    t.c('RBD.create', r.create, io, 'c9f', 8 * MiB, features=F.RBD_FEATURE_JOURNALING)
    t.c('RBD.create', r.create, io, 'c9g', 8 * MiB, features=1 << 50)
    t.c('RBD.create', r.create, io, 'c10', 8 * MiB, data_pool=x.data_pool)
    t.c('RBD.create', r.create, io, 'c11', 8 * MiB, data_pool='nosuchpool')
    t.c('RBD.create', r.create, io, 'c12', 8 * MiB, old_format=True)
    t.c('RBD.create', r.create, io, 'c12b', 8 * MiB, old_format=True, features=1)
    t.c('RBD.create', r.create, io, 'c13', -1)
    t.c('RBD.create', r.create, io, 'c13', 1 << 64)
    t.c('RBD.create', r.create, io, 'c13', (1 << 63) + 1)
    t.c('RBD.create', r.create, io, 'c13b', 1 << 62)
    t.c('RBD.create', r.create, io, 'c13', 4097)
    t.c('RBD.create', r.create, io, 13, 4096)
    t.c('RBD.create', r.create, io, '', 4096)
    t.c('RBD.create', r.create, io, 'a/b', 4096)
    t.c('RBD.create', r.create, io, 'a@b', 4096)
    t.c('RBD.create', r.create, io, 'n' * 200, 4096)
    t.c('RBD.create', r.create, io, 'c14', 'big')
    t.c('RBD.create', r.create, 'notanioctx', 'c14', 4096)
    t.c('RBD.list', r.list, io)
    t.c('RBD.list2', r.list2, io, _sort=True)
    for n in ('c1', 'c3', 'c5', 'c6', 'c7', 'c8', 'c10', 'c12', 'c13', 'c2'):
        img = x.open(n, n, read_only=True)
        if img:
            t.c(n + '.id', img.id, _kind='id')
            t.c(n + '.stat', img.stat)
            t.c(n + '.features', img.features)
            t.c(n + '.op_features', img.op_features)
            t.c(n + '.flags', img.flags)
            t.c(n + '.old_format', img.old_format)
            t.c(n + '.stripe_unit', img.stripe_unit)
            t.c(n + '.stripe_count', img.stripe_count)
            t.c(n + '.data_pool_id', img.data_pool_id,
                _post=lambda v: 'data_pool' if v == x.cluster.pool_lookup(x.data_pool or '') else v)
            t.c(n + '.block_name_prefix', img.block_name_prefix)
            x.close(img)
    # rename, remove
    t.c('RBD.rename', r.rename, io, 'c1', 'c1r')
    t.c('RBD.rename', r.rename, io, 'c1', 'c1r')
    t.c('RBD.rename', r.rename, io, 'c3', 'c1r')
    t.c('RBD.rename', r.rename, io, 'c1r', 'c1r')
    t.c('RBD.rename', r.rename, io, 'c1r', '')
    t.c('RBD.list', r.list, io)
    for n in ('c1r', 'c2', 'c3', 'c5', 'c6', 'c7', 'c8', 'c10', 'c12', 'c13', 'c13', 'nosuch'):
        p = Progress()
        t.c('RBD.remove', r.remove, io, n, on_progress=p)
        t.note('progress', p.summary())
    for n in sorted(r.list(io)):
        t.c('RBD.remove', r.remove, io, n)
    t.c('RBD.list', r.list, io)
    # the default namespace, images named by the prefix
    n0 = x.prefix + '-def'
    t.c('RBD.create', r.create, x.io0, n0, 4 * MiB)
    t.c('RBD.list', r.list, x.io0, _post=lambda l: [n for n in l if n.startswith(x.prefix)])
    img = x.open('def', n0, io=x.io0)
    if img:
        t.c('def.write', img.write, pat(1, 4096), 0)
        t.c('def.read', img.read, 0, 4096)
        t.c('def.get_name', img.get_name)
        x.close(img)
    t.c('RBD.remove', r.remove, x.io0, n0)
    # format 1 (only outside namespaces)
    n1 = x.prefix + '-v1'
    t.c('RBD.create', r.create, x.io0, n1, 4 * MiB, old_format=True)
    img = x.open('v1', n1, io=x.io0)
    if img:
        t.c('v1.old_format', img.old_format)
        t.c('v1.stat', img.stat)
        t.c('v1.features', img.features)
        t.c('v1.write', img.write, pat(5, 4096), 4096)
        t.c('v1.read', img.read, 0, 8192)
        t.c('v1.create_snap', img.create_snap, 's')
        t.c('v1.list_snaps', img.list_snaps)
        t.c('v1.remove_snap', img.remove_snap, 's')
        x.close(img)
    img = x.open('v1r', n1, io=x.io0, read_only=True)
    if img:
        t.c('v1r.read', img.read, 0, 8192)
        x.close(img)
    t.c('RBD.remove', r.remove, x.io0, n1)


def s_open(x):
    """opening by name and id, read-only, at missing snapshots; calls on
    closed images; aio_open_image and aio_close."""
    t, r, io = x.t, x.r, x.io
    t.c('RBD.create', r.create, io, 'o1', 4 * MiB)
    t.c('Image', rbd.Image, io, 'nosuch')
    t.c('Image', rbd.Image, io)
    t.c('Image', rbd.Image, io, 'o1', image_id='abc')
    t.c('Image', rbd.Image, io, image_id='nosuchid')
    t.c('Image', rbd.Image, io, 'o1', snapshot='nosnap')
    t.c('Image', rbd.Image, io, 'o1', snapshot='nosnap', read_only=True)
    # (not Image(io, 12): the real librbd crashes, the module closing the
    # image it never opened)
    a = x.open('A', 'o1')
    if not a:
        return
    iid = t.c('A.id', a.id, _kind='id')
    b = x.open('B', image_id=V(iid) if iid else 'x')
    if b:
        t.c('B.get_name', b.get_name)
        t.c('B.id', b.id, _kind='id')
        t.c('B.write', b.write, pat(2, 512), 512)
        x.close(b)
    c = x.open('C', image_id=V(iid) if iid else 'x', read_only=True)
    if c:
        t.c('C.read', c.read, 512, 512)
        t.c('C.write', c.write, b'x', 0)
        t.c('C.discard', c.discard, 0, 512)
        t.c('C.resize', c.resize, MiB)
        t.c('C.create_snap', c.create_snap, 'ro')
        t.c('C.metadata_set', c.metadata_set, 'k', 'v')
        x.close(c)
    t.c('A.read', a.read, 0, 2048)
    t.c('A.__repr__', lambda: repr(a).replace(hex(id(a)), 'ADDR').replace(str(id(a)), 'ADDR'))
    with rbd.Image(io, 'o1') as w:
        t.name(w, 'W')
        t.c('W.size', w.size)
    t.c('W.size(after with)', w.size)
    x.close(a)
    t.c('A.close', a.close)
    # operations on a closed image
    for m, args in (('read', (0, 10)), ('write', (b'x', 0)), ('size', ()),
                    ('stat', ()), ('resize', (10,)), ('create_snap', ('s',)),
                    ('list_snaps', ()), ('flush', ()), ('discard', (0, 1)),
                    ('id', ()), ('features', ()), ('metadata_list', ()),
                    ('watchers_list', ()), ('lock_acquire', (rbd.RBD_LOCK_MODE_EXCLUSIVE,)),
                    ('diff_iterate', (0, 10, None, lambda *a: 0)), ('require_not_closed', ())):
        t.c('A(closed).' + m, getattr(a, m), *args)
    t.c('RBD.remove', r.remove, io, 'o1')
    # aio_open_image
    t.c('RBD.create', r.create, io, 'o2', 4 * MiB)
    got = []

    def oncomplete(comp, image):
        got.append((comp.get_return_value(), image is not None))
        if image is not None:
            holder.append(image)
    holder = []
    comp = t.c('RBD.aio_open_image', r.aio_open_image, oncomplete, io, name='o2')
    if comp:
        t.c('  Completion.wait_for_complete_and_cb', comp.wait_for_complete_and_cb)
        t.c('  Completion.get_return_value', comp.get_return_value)
        t.note('callback', got)
    if holder:
        img = t.name(holder[0], 'AO')
        x.images.append(img)
        t.c('AO.size', img.size)
        t.c('AO.write', img.write, pat(3, 4096), 4096)
        t.c('AO.read', img.read, 4096, 4096)
        aio(x, 'AO.aio_close', img.aio_close)
        t.c('AO(closed).size', img.size)
    got.clear()
    holder.clear()
    comp = t.c('RBD.aio_open_image', r.aio_open_image, oncomplete, io, name='nosuch')
    if comp:
        t.c('  Completion.wait_for_complete_and_cb', comp.wait_for_complete_and_cb)
        t.c('  Completion.get_return_value', comp.get_return_value)
        t.note('callback', got)
    got.clear()
    comp = t.c('RBD.aio_open_image', r.aio_open_image, oncomplete, io, name='o2',
               snapshot='nosnap', read_only=True)
    if comp:
        t.c('  Completion.wait_for_complete_and_cb', comp.wait_for_complete_and_cb)
        t.note('callback', got)
    for img in holder:
        img.close()
    t.c('RBD.remove', r.remove, io, 'o2')


def s_info(x):
    """every image property of a fresh image; snapshot limits."""
    t, r, io = x.t, x.r, x.io
    t.c('RBD.create', r.create, io, 'i1', 10 * MiB + 4096)
    a = x.open('A', 'i1')
    if not a:
        return
    t.c('A.id', a.id, _kind='id')
    for m in ('stat', 'size', 'features', 'op_features', 'flags', 'old_format',
              'overlap', 'block_name_prefix', 'data_pool_id', 'get_name',
              'stripe_unit', 'stripe_count', 'create_timestamp',
              'access_timestamp', 'modify_timestamp', 'group', 'parent_info',
              'parent_id', 'get_parent_image_spec', 'get_snap_limit',
              'list_children', 'list_children2', 'list_descendants',
              'migration_source_spec', 'is_exclusive_lock_owner',
              'lock_get_owners', 'list_lockers', 'metadata_list'):
        t.c('A.' + m, getattr(a, m))
    t.c('A.watchers_list', a.watchers_list, _post=watchers)
    t.c('A.set_snap_limit', a.set_snap_limit, 2)
    t.c('A.get_snap_limit', a.get_snap_limit)
    t.c('A.create_snap', a.create_snap, 'l1')
    t.c('A.create_snap', a.create_snap, 'l2')
    t.c('A.create_snap', a.create_snap, 'l3')
    t.c('A.set_snap_limit', a.set_snap_limit, 1)
    t.c('A.set_snap_limit', a.set_snap_limit, 0)
    t.c('A.remove_snap_limit', a.remove_snap_limit)
    t.c('A.get_snap_limit', a.get_snap_limit)
    t.c('A.create_snap', a.create_snap, 'l3')
    t.c('A.set_snap_limit', a.set_snap_limit, -1)
    t.c('A.list_snaps', a.list_snaps)
    for s in ('l1', 'l2', 'l3'):
        t.c('A.remove_snap', a.remove_snap, s)
    t.c('A.invalidate_cache', a.invalidate_cache)
    t.c('A.flush', a.flush)
    x.close(a)
    t.c('RBD.remove', r.remove, io, 'i1')


def s_io(x):
    """read/write/discard/write_zeroes in and beyond the image, bad offsets,
    fadvise flags, the aio calls, many writes in flight, I/O at a
    snapshot, sparsify."""
    t, r, io = x.t, x.r, x.io
    size = 12 * MiB
    t.c('RBD.create', r.create, io, 'd1', size)
    a = x.open('A', 'd1')
    if not a:
        return
    t.c('A.read', a.read, 0, 8192)
    t.c('A.write', a.write, pat(10, 8192), 0)
    t.c('A.write', a.write, pat(11, 3 * MiB), 4 * MiB - 4096)
    t.c('A.write', a.write, pat(12, 100), size - 100)
    t.c('A.write', a.write, pat(12, 101), size - 100)
    t.c('A.write', a.write, pat(12, 1), size)
    t.c('A.write', a.write, b'', 0)
    t.c('A.write', a.write, b'', size + 1)
    t.c('A.write', a.write, 'text', 0)
    t.c('A.write', a.write, pat(13, 10), -1)
    t.c('A.write', a.write, pat(13, 10), 1 << 64)
    t.c('A.write', a.write, pat(13, 10), 1 << 63)
    t.c('A.write', a.write, pat(14, 4096), 8 * MiB, fadvise_flags=rados.LIBRADOS_OP_FLAG_FADVISE_SEQUENTIAL)
    t.c('A.write', a.write, pat(14, 4096), 8 * MiB, fadvise_flags=0xffff)
    t.c('A.read', a.read, 0, 8192)
    t.c('A.read', a.read, 4 * MiB - 4096, 3 * MiB)
    t.c('A.read', a.read, size - 100, 100)
    t.c('A.read', a.read, size - 100, 200)
    t.c('A.read', a.read, size, 10)
    t.c('A.read', a.read, size + 4096, 10)
    t.c('A.read', a.read, 0, 0)
    t.c('A.read', a.read, -1, 10)
    t.c('A.read', a.read, 0, -1)
    t.c('A.read', a.read, 1 << 63, 10)
    t.c('A.read', a.read, 8 * MiB, 4096, fadvise_flags=rados.LIBRADOS_OP_FLAG_FADVISE_RANDOM)
    t.c('A.read', a.read, 0, size)
    t.c('A.discard', a.discard, 4096, 4096)
    t.c('A.discard', a.discard, 4 * MiB, 4 * MiB)
    t.c('A.discard', a.discard, size - 10, 100)
    t.c('A.discard', a.discard, size + 10, 100)
    t.c('A.discard', a.discard, 0, 0)
    t.c('A.read', a.read, 0, size)
    t.c('A.write_zeroes', a.write_zeroes, 100, 1000)
    t.c('A.write_zeroes', a.write_zeroes, 7 * MiB, MiB, zero_flags=rbd.RBD_WRITE_ZEROES_FLAG_THICK_PROVISION)
    t.c('A.write_zeroes', a.write_zeroes, size - 10, 100)
    t.c('A.write_zeroes', a.write_zeroes, size + 10, 100)
    t.c('A.write_zeroes', a.write_zeroes, 0, 10, zero_flags=0x100)
    t.c('A.read', a.read, 0, size)
    t.c('A.flush', a.flush)
    # aio
    aio(x, 'A.aio_write', a.aio_write, pat(20, 65536), 65536)
    aio(x, 'A.aio_read', a.aio_read, 65536, 65536)
    aio(x, 'A.aio_read', a.aio_read, size - 10, 20)
    aio(x, 'A.aio_read', a.aio_read, size + 10, 20)
    aio(x, 'A.aio_write', a.aio_write, pat(21, 20), size - 10)
    aio(x, 'A.aio_write', a.aio_write, pat(21, 20), size + 10)
    aio(x, 'A.aio_discard', a.aio_discard, 65536, 4096)
    aio(x, 'A.aio_discard', a.aio_discard, size + 10, 4096)
    aio(x, 'A.aio_write_zeroes', a.aio_write_zeroes, 65536 + 8192, 4096)
    aio(x, 'A.aio_write_zeroes', a.aio_write_zeroes, size + 10, 4096)
    aio(x, 'A.aio_flush', a.aio_flush)
    aio(x, 'A.aio_read', a.aio_read, 0, 256 * 1024, fadvise_flags=rados.LIBRADOS_OP_FLAG_FADVISE_NOCACHE)
    # Away from what is written and read below: librbd 16.2.15 has been
    # seen to apply this write (whose callback raises TypeError) late,
    # after wait_for_complete and later writes to the same range (its data
    # showed up at the snapshot read below, not in the read before it).
    c = t.c('A.aio_write', a.aio_write, pat(22, 10), 5 * MiB + 123, 'notcallable')
    if hasattr(c, 'wait_for_complete'):
        c.wait_for_complete()
    # many in flight
    comps, got = [], []
    t.start('A.aio_write x32', (), {})
    for i in range(32):
        comps.append(a.aio_write(pat(100 + i, 4096), i * 12288,
                                 lambda c, i=i: got.append((i, c.get_return_value()))))
    for c in comps:
        c.wait_for_complete_and_cb()
    t.line(t.fmt(sorted(got)))
    t.c('A.read', a.read, 0, 32 * 12288)
    # read at a snapshot after more writes
    t.c('A.create_snap', a.create_snap, 'io1')
    t.c('A.write', a.write, pat(30, 4096), 0)
    t.c('A.set_snap', a.set_snap, 'io1')
    t.c('A.read', a.read, 0, 4096)
    t.c('A.write', a.write, pat(31, 4096), 0)
    aio(x, 'A.aio_write', a.aio_write, pat(31, 4096), 0)
    t.c('A.discard', a.discard, 0, 4096)
    t.c('A.write_zeroes', a.write_zeroes, 0, 4096)
    t.c('A.size', a.size)
    t.c('A.set_snap', a.set_snap, None)
    t.c('A.read', a.read, 0, 4096)
    t.c('A.set_snap', a.set_snap, 'nosnap')
    t.c('A.read', a.read, 0, 4096)
    t.c('A.remove_snap', a.remove_snap, 'io1')
    # sparsify
    t.c('A.write', a.write, bytes(MiB), 9 * MiB)
    t.c('A.sparsify', a.sparsify, 4096)
    t.c('A.sparsify', a.sparsify, 3000)
    t.c('A.sparsify', a.sparsify, 1)
    t.c('A.sparsify', a.sparsify, 8 * MiB)
    t.c('A.sparsify', a.sparsify, 64 * MiB)
    t.c('A.read', a.read, 0, size)
    t.c('A.diff_iterate', lambda: diff(a, 0, size, None))
    x.close(a)
    t.c('RBD.remove', r.remove, io, 'd1')


def diff(img, off, length, frm, **kw):
    out = []

    def cb(o, l, e):
        out.append((o, l, e))
        return 0
    rc = img.diff_iterate(off, length, frm, cb, **kw)
    return (rc, out)


def s_snaps(x):
    """snapshot
    create/list/lookup/namespaces/protection/rename/rollback/remove, by
    name and by id."""
    t, r, io = x.t, x.r, x.io
    t.c('RBD.create', r.create, io, 's1', 8 * MiB)
    a = x.open('A', 's1')
    if not a:
        return
    t.c('A.list_snaps', a.list_snaps)
    t.c('A.write', a.write, pat(40, 8192), 0)
    t.c('A.create_snap', a.create_snap, 'one')
    t.c('A.create_snap', a.create_snap, 'one')
    t.c('A.create_snap', a.create_snap, '')
    t.c('A.create_snap', a.create_snap, 'two', flags=rbd.RBD_SNAP_CREATE_SKIP_QUIESCE)
    t.c('A.create_snap', a.create_snap, 'three', flags=rbd.RBD_SNAP_CREATE_IGNORE_QUIESCE_ERROR)
    t.c('A.create_snap', a.create_snap, 'four', flags=3)
    t.c('A.create_snap', a.create_snap, 'five', flags=1 << 20)
    t.c('A.create_snap', a.create_snap, 5)
    t.c('A.list_snaps', a.list_snaps)
    snaps = t.c('A.list_snaps', a.list_snaps) or []
    ids = {s['name']: s['id'] for s in snaps}
    t.c('A.snap_exists', a.snap_exists, 'one')
    t.c('A.snap_exists', a.snap_exists, 'nosuch')
    t.c('A.snap_get_id', a.snap_get_id, 'one', _kind='id')
    t.c('A.snap_get_id', a.snap_get_id, 'nosuch')
    for n, i in sorted(ids.items()):
        t.c('A.snap_get_name', a.snap_get_name, V(i))
        t.c('A.snap_get_namespace_type', a.snap_get_namespace_type, V(i))
        t.c('A.get_snap_timestamp', a.get_snap_timestamp, V(i))
        t.c('A.snap_get_trash_namespace', a.snap_get_trash_namespace, V(i))
        t.c('A.snap_get_group_namespace', a.snap_get_group_namespace, V(i))
        t.c('A.snap_get_mirror_namespace', a.snap_get_mirror_namespace, V(i))
    # (not get_snap_timestamp: librbd 16.2.15 asserts on an unknown id)
    for m in ('snap_get_name', 'snap_get_namespace_type', 'snap_get_trash_namespace',
              'snap_get_group_namespace', 'snap_get_mirror_namespace',
              'remove_snap_by_id', 'set_snap_by_id'):
        t.c('A.' + m, getattr(a, m), 999999)
    t.c('A.snap_get_name', a.snap_get_name, -1)
    t.c('A.snap_get_name', a.snap_get_name, 'x')
    # protection
    t.c('A.is_protected_snap', a.is_protected_snap, 'one')
    t.c('A.is_protected_snap', a.is_protected_snap, 'nosuch')
    t.c('A.protect_snap', a.protect_snap, 'one')
    t.c('A.protect_snap', a.protect_snap, 'one')
    t.c('A.is_protected_snap', a.is_protected_snap, 'one')
    t.c('A.protect_snap', a.protect_snap, 'nosuch')
    t.c('A.remove_snap', a.remove_snap, 'one')
    t.c('A.remove_snap2', a.remove_snap2, 'one', 0)
    t.c('A.unprotect_snap', a.unprotect_snap, 'one')
    t.c('A.unprotect_snap', a.unprotect_snap, 'one')
    t.c('A.unprotect_snap', a.unprotect_snap, 'nosuch')
    t.c('A.protect_snap', a.protect_snap, 'two')
    t.c('A.remove_snap2', a.remove_snap2, 'two', rbd.RBD_SNAP_REMOVE_UNPROTECT)
    # rename
    t.c('A.rename_snap', a.rename_snap, 'three', 'drei')
    t.c('A.rename_snap', a.rename_snap, 'three', 'drei')
    t.c('A.rename_snap', a.rename_snap, 'drei', 'one')
    t.c('A.rename_snap', a.rename_snap, 'drei', '')
    t.c('A.list_snaps', a.list_snaps)
    # rollback
    t.c('A.write', a.write, pat(41, 8192), 0)
    t.c('A.read', a.read, 0, 8192)
    t.c('A.rollback_to_snap', a.rollback_to_snap, 'one')
    t.c('A.read', a.read, 0, 8192)
    t.c('A.rollback_to_snap', a.rollback_to_snap, 'nosuch')
    t.c('A.resize', a.resize, 4 * MiB)
    t.c('A.create_snap', a.create_snap, 'small')
    t.c('A.resize', a.resize, 8 * MiB)
    t.c('A.rollback_to_snap', a.rollback_to_snap, 'small')
    t.c('A.size', a.size)
    t.c('A.rollback_to_snap', a.rollback_to_snap, 'one')
    t.c('A.size', a.size)
    # set_snap by id
    if 'one' in ids:
        t.c('A.set_snap_by_id', a.set_snap_by_id, V(ids['one']))
        t.c('A.read', a.read, 0, 8192)
        t.c('A.size', a.size)
        t.c('A.create_snap', a.create_snap, 'atsnap')
        t.c('A.set_snap_by_id', a.set_snap_by_id, None)
        t.c('A.size', a.size)
    snaps = t.c('A.list_snaps', a.list_snaps) or []
    ids = {s['name']: s['id'] for s in snaps}
    if 'four' in ids:
        t.c('A.remove_snap_by_id', a.remove_snap_by_id, V(ids['four']))
        t.c('A.remove_snap_by_id', a.remove_snap_by_id, V(ids['four']))
    t.c('A.remove_snap2', a.remove_snap2, 'drei', rbd.RBD_SNAP_REMOVE_FORCE)
    t.c('A.remove_snap2', a.remove_snap2, 'nosuch', 0)
    t.c('A.remove_snap2', a.remove_snap2, 'small', 1 << 10)
    t.c('A.remove_snap', a.remove_snap, 'nosuch')
    t.c('A.remove_snap', a.remove_snap, '')
    t.c('A.list_snaps', a.list_snaps)
    # a second handle sees the snapshots
    b = x.open('B', 's1', snapshot='one')
    if b:
        t.c('B.read', b.read, 0, 8192)
        t.c('B.write', b.write, b'x', 0)
        t.c('B.list_snaps', b.list_snaps)
        t.c('B.set_snap', b.set_snap, None)
        t.c('B.write', b.write, pat(42, 512), 0)
        x.close(b)
    t.c('RBD.remove', r.remove, io, 's1')
    t.c('A.remove_snap', a.remove_snap, 'one')
    t.c('A.remove_snap', a.remove_snap, 'atsnap')
    x.close(a)
    t.c('RBD.remove', r.remove, io, 's1')
    t.c('RBD.remove', r.remove, io, 's1')


def s_resize(x):
    """grow, shrink (allow_shrink), bad and huge sizes, with and without
    object map (which stays valid through a shrink to 0 and a regrowth)."""
    t, r, io = x.t, x.r, x.io
    t.c('RBD.create', r.create, io, 'r1', 8 * MiB)
    t.c('RBD.create', r.create, io, 'r2', 8 * MiB, features=rbd.RBD_FEATURE_LAYERING)
    for n in ('r1', 'r2'):
        a = x.open(n, n)
        if not a:
            continue
        t.c(n + '.write', a.write, pat(50, 2 * MiB), 5 * MiB)
        t.c(n + '.resize', a.resize, 16 * MiB)
        t.c(n + '.size', a.size)
        t.c(n + '.resize', a.resize, 6 * MiB, allow_shrink=False)
        t.c(n + '.resize', a.resize, 6 * MiB)
        t.c(n + '.read', a.read, 0, 8 * MiB)
        t.c(n + '.resize', a.resize, 6 * MiB)
        t.c(n + '.resize', a.resize, 6 * MiB + 1)
        t.c(n + '.resize', a.resize, 8 * MiB)
        t.c(n + '.read', a.read, 0, 8 * MiB)
        t.c(n + '.resize', a.resize, -1)
        t.c(n + '.resize', a.resize, 1 << 64)
        t.c(n + '.resize', a.resize, 'x')
        if n == 'r1':
            t.c(n + '.resize', a.resize, 1 << 62)
            t.c(n + '.resize', a.resize, 1 << 40)
        t.c(n + '.size', a.size)
        t.c(n + '.stat', a.stat)
        t.c(n + '.resize', a.resize, 0)
        t.c(n + '.read', a.read, 0, 10)
        t.c(n + '.stat', a.stat)
        t.c(n + '.resize', a.resize, 3 * MiB + 17)
        t.c(n + '.flags', a.flags)
        t.c(n + '.write', a.write, pat(51, 100), 3 * MiB - 50)
        t.c(n + '.read', a.read, 0, 4 * MiB)
        t.c(n + '.diff_iterate', lambda: diff(a, 0, 4 * MiB, None))
        x.close(a)
        t.c('RBD.remove', r.remove, io, n)


def s_clone(x):
    """clones (options, other namespace), children and descendants, parent
    info, overlap, copy-up, flatten, clone of a clone, removing the parent
    snapshot (trash namespace)."""
    t, r, io = x.t, x.r, x.io
    t.c('RBD.create', r.create, io, 'p1', 8 * MiB)
    p = x.open('P', 'p1')
    if not p:
        return
    t.c('P.id', p.id, _kind='id')
    t.c('P.write', p.write, pat(60, 4 * MiB), 2 * MiB)
    t.c('P.create_snap', p.create_snap, 'base')
    t.c('P.write', p.write, pat(61, 4096), 2 * MiB)
    t.c('RBD.clone', r.clone, io, 'p1', 'nosnap', io, 'k0')
    t.c('RBD.clone', r.clone, io, 'nosuch', 'base', io, 'k0')
    # clone v1 needs protection; with the default (auto) format librbd uses v2
    t.c('RBD.clone', r.clone, io, 'p1', 'base', io, 'k1')
    t.c('RBD.clone', r.clone, io, 'p1', 'base', io, 'k1')
    t.c('RBD.clone', r.clone, io, 'p1', 'base', io, 'k2', features=rbd.RBD_FEATURE_LAYERING)
    t.c('RBD.clone', r.clone, io, 'p1', 'base', io, 'k3', features=0)
    t.c('RBD.clone', r.clone, io, 'p1', 'base', io, 'k4', order=20,
        stripe_unit=65536, stripe_count=2)
    t.c('RBD.clone', r.clone, io, 'p1', 'base', io, 'k5', data_pool=x.data_pool)
    t.c('RBD.clone', r.clone, io, 'p1', 'base', x.io0, x.prefix + '-k6')
    t.c('P.list_children', p.list_children)
    t.c('P.list_children2', p.list_children2, _sort=True)
    t.c('P.list_descendants', p.list_descendants, _sort=True)
    t.c('P.set_snap', p.set_snap, 'base')
    t.c('P.list_children', p.list_children)
    t.c('P.list_children2', p.list_children2, _sort=True)
    t.c('P.list_descendants', p.list_descendants, _sort=True)
    t.c('P.set_snap', p.set_snap, None)
    t.c('P.unprotect_snap', p.unprotect_snap, 'base')
    t.c('P.protect_snap', p.protect_snap, 'base')
    t.c('P.unprotect_snap', p.unprotect_snap, 'base')
    t.c('P.remove_snap', p.remove_snap, 'base')
    k = x.open('K', 'k1')
    if k:
        t.c('K.id', k.id, _kind='id')
        t.c('K.parent_info', k.parent_info)
        t.c('K.parent_id', k.parent_id)
        t.c('K.get_parent_image_spec', k.get_parent_image_spec)
        t.c('K.overlap', k.overlap)
        t.c('K.op_features', k.op_features)
        t.c('K.stat', k.stat)
        t.c('K.read', k.read, 0, 8 * MiB)
        t.c('K.write', k.write, pat(62, 4096), 3 * MiB)
        t.c('K.read', k.read, 2 * MiB, 4 * MiB)
        t.c('K.create_snap', k.create_snap, 'ks')
        t.c('K.protect_snap', k.protect_snap, 'ks')
        t.c('RBD.clone', r.clone, io, 'k1', 'ks', io, 'kk1')
        t.c('P.list_descendants', p.list_descendants, _sort=True)
        t.c('K.list_children', k.list_children)
        t.c('K.resize', k.resize, 3 * MiB)
        t.c('K.overlap', k.overlap)
        t.c('K.resize', k.resize, 8 * MiB)
        t.c('K.read', k.read, 0, 8 * MiB)
        t.c('K.diff_iterate', lambda: diff(k, 0, 8 * MiB, None))
        t.c('K.diff_iterate', lambda: diff(k, 0, 8 * MiB, None, include_parent=False))
        t.c('K.diff_iterate', lambda: diff(k, 0, 8 * MiB, None, whole_object=True))
        pr = Progress()
        t.c('K.flatten', k.flatten, on_progress=pr)
        t.note('progress', pr.summary())
        t.c('K.flatten', k.flatten)
        t.c('K.parent_info', k.parent_info)
        t.c('K.overlap', k.overlap)
        t.c('K.read', k.read, 0, 8 * MiB)
        t.c('K.set_snap', k.set_snap, 'ks')
        t.c('K.parent_info', k.parent_info)
        t.c('K.set_snap', k.set_snap, None)
        x.close(k)
    kk = x.open('KK', 'kk1', read_only=True)
    if kk:
        t.c('KK.get_parent_image_spec', kk.get_parent_image_spec)
        t.c('KK.read', kk.read, 0, 8 * MiB)
        x.close(kk)
    k3 = x.open('K3', 'k3')
    if k3:
        t.c('K3.features', k3.features)
        t.c('K3.flatten', k3.flatten)
        x.close(k3)
    k4 = x.open('K4', 'k4')
    if k4:
        t.c('K4.stat', k4.stat)
        t.c('K4.stripe_unit', k4.stripe_unit)
        t.c('K4.read', k4.read, 0, 8 * MiB)
        t.c('K4.write', k4.write, pat(63, 200000), 2 * MiB - 100000)
        t.c('K4.read', k4.read, 0, 8 * MiB)
        x.close(k4)
    # remove the parent snapshot while clones exist (clone v2: trash ns)
    t.c('P.remove_snap', p.remove_snap, 'base')
    snaps = t.c('P.list_snaps', p.list_snaps) or []
    for s in snaps:
        t.c('P.snap_get_namespace_type', p.snap_get_namespace_type, V(s['id']))
        t.c('P.snap_get_trash_namespace', p.snap_get_trash_namespace, V(s['id']))
    t.c('RBD.remove', r.remove, io, 'p1')
    for n in ('kk1', 'k1', 'k2', 'k3', 'k4', 'k5'):
        if n == 'k1':
            kx = x.open('K1', 'k1')
            if kx:
                t.c('K1.unprotect_snap', kx.unprotect_snap, 'ks')
                t.c('K1.remove_snap', kx.remove_snap, 'ks')
                x.close(kx)
        t.c('RBD.remove', r.remove, io, n)
    t.c('RBD.remove', r.remove, x.io0, x.prefix + '-k6')
    t.c('P.list_snaps', p.list_snaps)
    t.c('P.list_children2', p.list_children2)
    x.close(p)
    t.c('RBD.remove', r.remove, io, 'p1')


def s_copy(x):
    """copy and deep_copy with options, diff_iterate (from snapshots, whole
    object, callbacks that raise), rebuild_object_map."""
    t, r, io = x.t, x.r, x.io
    t.c('RBD.create', r.create, io, 'y1', 8 * MiB)
    a = x.open('A', 'y1')
    if not a:
        return
    t.c('A.write', a.write, pat(70, MiB), 0)
    t.c('A.create_snap', a.create_snap, 'c1')
    t.c('A.write', a.write, pat(71, MiB), 4 * MiB)
    t.c('A.metadata_set', a.metadata_set, 'mk', 'mv')
    t.c('A.copy', a.copy, io, 'y2')
    t.c('A.copy', a.copy, io, 'y2')
    t.c('A.copy', a.copy, io, 'y3', features=rbd.RBD_FEATURE_LAYERING, order=21)
    t.c('A.copy', a.copy, io, 'y4', stripe_unit=65536, stripe_count=8)
    t.c('A.copy', a.copy, io, 'y5', data_pool=x.data_pool)
    t.c('A.copy', a.copy, io, 'y6', order=5)
    t.c('A.copy', a.copy, x.io0, x.prefix + '-y7')
    t.c('A.deep_copy', a.deep_copy, io, 'z1')
    t.c('A.deep_copy', a.deep_copy, io, 'z1')
    t.c('A.deep_copy', a.deep_copy, io, 'z2', features=rbd.RBD_FEATURE_LAYERING, order=23)
    t.c('A.deep_copy', a.deep_copy, io, 'z3', data_pool=x.data_pool)
    t.c('A.set_snap', a.set_snap, 'c1')
    t.c('A.copy', a.copy, io, 'y8')
    t.c('A.set_snap', a.set_snap, None)
    for n in ('y2', 'y3', 'y4', 'y5', 'y8', 'z1', 'z2', 'z3'):
        b = x.open(n, n, read_only=True)
        if b:
            t.c(n + '.stat', b.stat)
            t.c(n + '.features', b.features)
            t.c(n + '.stripe_unit', b.stripe_unit)
            t.c(n + '.stripe_count', b.stripe_count)
            t.c(n + '.list_snaps', b.list_snaps)
            t.c(n + '.metadata_list', b.metadata_list)
            t.c(n + '.read', b.read, 0, 8 * MiB)
            t.c(n + '.diff_iterate', lambda: diff(b, 0, 8 * MiB, None))
            x.close(b)
        if n.startswith('z'):
            b = x.open(n + 'w', n)
            if b:
                t.c(n + '.remove_snap', b.remove_snap, 'c1')
                x.close(b)
        t.c('RBD.remove', r.remove, io, n)
    t.c('RBD.remove', r.remove, x.io0, x.prefix + '-y7')
    # diff_iterate
    t.c('A.write', a.write, pat(72, 4096), 6 * MiB)
    t.c('A.discard', a.discard, 0, 4096)
    t.c('A.create_snap', a.create_snap, 'c2')
    t.c('A.write', a.write, pat(73, 4096), 7 * MiB)
    for frm in (None, 'c1', 'c2', 'nosuch'):
        for kw in ({}, {'whole_object': True}):
            t.c('A.diff_iterate', lambda: diff(a, 0, 8 * MiB, frm, **kw))
    t.c('A.diff_iterate', lambda: diff(a, 4096, 6 * MiB, 'c1'))
    t.c('A.diff_iterate', lambda: diff(a, 0, 16 * MiB, None))
    t.c('A.diff_iterate', lambda: diff(a, 10 * MiB, MiB, None))
    t.c('A.diff_iterate', lambda: diff(a, 0, 0, None))

    def boom(o, l, e):
        raise ValueError('stop')
    t.c('A.diff_iterate(cb raises)', a.diff_iterate, 0, 8 * MiB, None, boom)
    t.c('A.diff_iterate(cb not callable)', a.diff_iterate, 0, 8 * MiB, None, 5)
    t.c('A.set_snap', a.set_snap, 'c2')
    t.c('A.diff_iterate', lambda: diff(a, 0, 8 * MiB, 'c1'))
    t.c('A.diff_iterate', lambda: diff(a, 0, 8 * MiB, None))
    t.c('A.set_snap', a.set_snap, None)
    # rebuild_object_map
    t.c('A.rebuild_object_map', a.rebuild_object_map)
    t.c('A.flags', a.flags)
    t.c('RBD.create', r.create, io, 'y9', 4 * MiB, features=rbd.RBD_FEATURE_LAYERING)
    b = x.open('Y9', 'y9')
    if b:
        t.c('Y9.rebuild_object_map', b.rebuild_object_map)
        x.close(b)
    t.c('RBD.remove', r.remove, io, 'y9')
    for s in ('c1', 'c2'):
        t.c('A.remove_snap', a.remove_snap, s)
    x.close(a)
    t.c('RBD.remove', r.remove, io, 'y1')


def s_features(x):
    """update_features through every feature, on and off, legal or not."""
    t, r, io = x.t, x.r, x.io
    F = rbd
    t.c('RBD.create', r.create, io, 'f1', 8 * MiB)
    a = x.open('A', 'f1')
    if not a:
        return
    t.c('A.write', a.write, pat(80, 4096), MiB)
    steps = ((F.RBD_FEATURE_LAYERING, False), (F.RBD_FEATURE_LAYERING, True),
             (F.RBD_FEATURE_STRIPINGV2, True), (F.RBD_FEATURE_DATA_POOL, True),
             (F.RBD_FEATURE_EXCLUSIVE_LOCK, False),
             (F.RBD_FEATURE_FAST_DIFF, False), (F.RBD_FEATURE_FAST_DIFF, False),
             (F.RBD_FEATURE_OBJECT_MAP, False), (F.RBD_FEATURE_EXCLUSIVE_LOCK, False),
             (F.RBD_FEATURE_DEEP_FLATTEN, True), (F.RBD_FEATURE_OBJECT_MAP, True),
             (F.RBD_FEATURE_EXCLUSIVE_LOCK, True), (F.RBD_FEATURE_OBJECT_MAP, True),
             (F.RBD_FEATURE_FAST_DIFF, True), (F.RBD_FEATURE_JOURNALING, True),
             (F.RBD_FEATURE_JOURNALING, False), (0, True), (0, False),
             (1 << 40, True), (F.RBD_FEATURE_OBJECT_MAP | F.RBD_FEATURE_FAST_DIFF, False),
             (F.RBD_FEATURE_OBJECT_MAP | F.RBD_FEATURE_FAST_DIFF, True),
             (F.RBD_FEATURE_DEEP_FLATTEN, False), (F.RBD_FEATURE_DEEP_FLATTEN, False))
    for feat, on in steps:
        t.c('A.update_features', a.update_features, feat, on)
        t.c('A.features', a.features)
        t.c('A.flags', a.flags)
    t.c('A.update_features', a.update_features, 'x', True)
    t.c('A.write', a.write, pat(81, 4096), 2 * MiB)
    t.c('A.read', a.read, MiB, 2 * MiB)
    t.c('A.diff_iterate', lambda: diff(a, 0, 8 * MiB, None))
    x.close(a)
    b = x.open('B', 'f1', read_only=True)
    if b:
        t.c('B.update_features', b.update_features, F.RBD_FEATURE_OBJECT_MAP, False)
        x.close(b)
    t.c('RBD.remove', r.remove, io, 'f1')


def s_metadata(x):
    """image metadata and image config (conf_ keys), on read-write and read-
    only handles."""
    t, r, io = x.t, x.r, x.io
    t.c('RBD.create', r.create, io, 'm1', 4 * MiB)
    a = x.open('A', 'm1')
    if not a:
        return
    t.c('A.metadata_list', a.metadata_list)
    t.c('A.metadata_get', a.metadata_get, 'nokey')
    t.c('A.metadata_set', a.metadata_set, 'k1', 'v1')
    t.c('A.metadata_set', a.metadata_set, 'k1', 'v1b')
    t.c('A.metadata_set', a.metadata_set, 'k2', '')
    t.c('A.metadata_set', a.metadata_set, '', 'v')
    t.c('A.metadata_set', a.metadata_set, 'big', 'b' * 70000)
    for i in range(70):
        a.metadata_set('many%03d' % i, str(i))
    t.c('A.metadata_get', a.metadata_get, 'k1')
    t.c('A.metadata_get', a.metadata_get, 'k2')
    t.c('A.metadata_get', a.metadata_get, 'big')
    t.c('A.metadata_list', a.metadata_list)
    t.c('A.metadata_remove', a.metadata_remove, 'k1')
    t.c('A.metadata_remove', a.metadata_remove, 'k1')
    t.c('A.metadata_get', a.metadata_get, 'k1')
    t.c('A.metadata_set', a.metadata_set, 5, 'v')
    t.c('A.metadata_set', a.metadata_set, 'k', 5)
    # image config (conf_ metadata)
    t.c('A.config_get', a.config_get, 'rbd_cache')
    t.c('A.config_get', a.config_get, 'nosuch')
    t.c('A.config_set', a.config_set, 'rbd_cache', 'false')
    t.c('A.config_set', a.config_set, 'rbd_nosuch', 'false')
    t.c('A.config_set', a.config_set, 'rbd_qos_iops_limit', 'many')
    t.c('A.config_set', a.config_set, 'rbd_qos_iops_limit', '1000')
    t.c('A.config_get', a.config_get, 'rbd_cache')
    t.c('A.config_get', a.config_get, 'rbd_qos_iops_limit')
    t.c('A.metadata_get', a.metadata_get, 'conf_rbd_cache')
    t.c('A.config_list', a.config_list)
    t.c('A.metadata_list', a.metadata_list, _post=lambda l: [p for p in l if p[0].startswith('conf_')])
    t.c('A.config_remove', a.config_remove, 'rbd_cache')
    t.c('A.config_remove', a.config_remove, 'rbd_cache')
    t.c('A.config_remove', a.config_remove, 'rbd_nosuch')
    t.c('A.config_remove', a.config_remove, 'rbd_qos_iops_limit')
    t.c('A.config_get', a.config_get, 'rbd_cache')
    t.c('A.metadata_set', a.metadata_set, 'conf_rbd_cache', 'false')
    t.c('A.config_get', a.config_get, 'rbd_cache')
    t.c('A.metadata_remove', a.metadata_remove, 'conf_rbd_cache')
    b = x.open('B', 'm1', read_only=True)
    if b:
        t.c('B.metadata_get', b.metadata_get, 'k2')
        t.c('B.metadata_set', b.metadata_set, 'k3', 'v')
        t.c('B.metadata_remove', b.metadata_remove, 'k2')
        t.c('B.config_set', b.config_set, 'rbd_cache', 'true')
        x.close(b)
    x.close(a)
    t.c('RBD.remove', r.remove, io, 'm1')


def s_locks(x):
    """the exclusive lock (acquire, release, owners, break across clients)
    and advisory locks (exclusive, shared, break_lock); watchers."""
    t, r, io = x.t, x.r, x.io
    EX, SH = rbd.RBD_LOCK_MODE_EXCLUSIVE, rbd.RBD_LOCK_MODE_SHARED
    t.c('RBD.create', r.create, io, 'l1', 4 * MiB)
    t.c('RBD.create', r.create, io, 'l2', 4 * MiB, features=rbd.RBD_FEATURE_LAYERING)
    a = x.open('A', 'l1')
    b = x.open('B', 'l1', io=x.other_client())
    if not a or not b:
        return
    t.c('A.watchers_list', a.watchers_list, _post=watchers)
    t.c('A.is_exclusive_lock_owner', a.is_exclusive_lock_owner)
    t.c('A.lock_get_owners', a.lock_get_owners)
    t.c('A.write', a.write, pat(90, 4096), 0)
    t.c('A.is_exclusive_lock_owner', a.is_exclusive_lock_owner)
    t.c('B.is_exclusive_lock_owner', b.is_exclusive_lock_owner)
    t.c('A.lock_get_owners', a.lock_get_owners)
    t.c('A.list_lockers', a.list_lockers)
    t.c('B.write', b.write, pat(91, 4096), 4096)
    t.c('B.is_exclusive_lock_owner', b.is_exclusive_lock_owner)
    t.c('A.is_exclusive_lock_owner', a.is_exclusive_lock_owner)
    t.c('A.read', a.read, 0, 8192)
    t.c('A.lock_release', a.lock_release)
    t.c('B.lock_release', b.lock_release)
    t.c('A.lock_acquire', a.lock_acquire, EX)
    t.c('A.lock_acquire', a.lock_acquire, EX)
    t.c('A.is_exclusive_lock_owner', a.is_exclusive_lock_owner)
    t.c('B.write', b.write, pat(92, 4096), 0)
    t.c('B.lock_acquire', b.lock_acquire, EX)
    t.c('A.lock_get_owners', a.lock_get_owners)
    t.c('A.lock_acquire', a.lock_acquire, SH)
    t.c('A.lock_acquire', a.lock_acquire, 7)
    t.c('A.lock_release', a.lock_release)
    t.c('A.lock_release', a.lock_release)
    t.c('A.lock_break', a.lock_break, SH, 'nobody')
    t.c('A.lock_break', a.lock_break, EX, 'nobody')
    t.c('B.lock_acquire', b.lock_acquire, EX)
    ow = t.c('A.lock_get_owners', a.lock_get_owners) or []
    if ow:
        t.c('A.lock_break', a.lock_break, EX, ow[0]['owner'])
        t.c('A.lock_get_owners', a.lock_get_owners)
        t.c('B.is_exclusive_lock_owner', b.is_exclusive_lock_owner)
        t.c('B.write', b.write, pat(93, 4096), 0)
    t.c('A.watchers_list', a.watchers_list, _post=watchers)
    x.close(b)
    t.c('A.watchers_list', a.watchers_list, _post=watchers)
    x.close(a)
    # A lock taken by the application and broken: its client learns it
    # is blocklisted, the breaker takes the lock, and the close of the
    # broken handle finds its lock gone (librbd prints nothing there).
    e = x.open('E', 'l1', io=x.other_client())
    d = x.open('D', 'l1')
    if e and d:
        t.c('E.lock_acquire', e.lock_acquire, EX)
        t.c('D.lock_acquire', d.lock_acquire, EX)
        ow = t.c('D.lock_get_owners', d.lock_get_owners) or []
        if ow:
            t.c('D.lock_break', d.lock_break, EX, ow[0]['owner'])
        t.c('E.is_exclusive_lock_owner', e.is_exclusive_lock_owner)
        t.c('E.wait_for_latest_osdmap', x.others[-1].wait_for_latest_osdmap)
        t.c('E.write', e.write, pat(94, 4096), 0)
        t.c('D.lock_acquire', d.lock_acquire, EX)
    x.close(e)
    x.close(d)
    # advisory locks
    c = x.open('C', 'l2')
    d = x.open('D', 'l2', io=x.other_client())
    if not c or not d:
        return
    t.c('C.list_lockers', c.list_lockers)
    t.c('C.lock_exclusive', c.lock_exclusive, 'ck1')
    t.c('C.lock_exclusive', c.lock_exclusive, 'ck1')
    t.c('C.lock_exclusive', c.lock_exclusive, 'ck2')
    t.c('D.lock_exclusive', d.lock_exclusive, 'ck1')
    t.c('D.lock_shared', d.lock_shared, 'ck3', 'tag')
    t.c('C.list_lockers', c.list_lockers)
    t.c('D.unlock', d.unlock, 'ck1')
    t.c('C.unlock', c.unlock, 'ck1')
    t.c('C.unlock', c.unlock, 'ck1')
    t.c('C.lock_shared', c.lock_shared, 'sh1', 'tagA')
    t.c('D.lock_shared', d.lock_shared, 'sh2', 'tagA')
    t.c('D.lock_shared', d.lock_shared, 'sh3', 'tagB')
    t.c('D.lock_exclusive', d.lock_exclusive, 'ex')
    lk = t.c('C.list_lockers', c.list_lockers, _post=lambda v: sortlockers(v))
    if lk and lk.get('lockers'):
        for client, cookie, _addr in sorted(lk['lockers'], key=lambda l: l[1]):
            if cookie == 'sh2':
                t.c('C.break_lock', c.break_lock, client, cookie)
                t.c('C.break_lock', c.break_lock, client, cookie)
    t.c('C.break_lock', c.break_lock, 'client.1', 'sh1')
    t.c('C.list_lockers', c.list_lockers, _post=lambda v: sortlockers(v))
    t.c('C.unlock', c.unlock, 'sh1')
    t.c('C.list_lockers', c.list_lockers)
    t.c('C.lock_exclusive', c.lock_exclusive, '')
    t.c('C.list_lockers', c.list_lockers)
    t.c('C.unlock', c.unlock, '')
    t.c('C.lock_acquire', c.lock_acquire, EX)
    t.c('C.is_exclusive_lock_owner', c.is_exclusive_lock_owner)
    t.c('C.lock_get_owners', c.lock_get_owners)
    t.c('C.lock_release', c.lock_release)
    t.c('C.watchers_list', c.watchers_list, _post=watchers)
    x.close(d)
    x.close(c)
    t.c('RBD.remove', r.remove, io, 'l1')
    t.c('RBD.remove', r.remove, io, 'l2')


def watchers(v):
    """Watchers: how many, from how many addresses and clients (the order
    and the cookies are the OSD's)."""
    if not isinstance(v, list):
        return v
    return {'watchers': len(v), 'addrs': len(set(w.get('addr') for w in v)),
            'clients': len(set(w.get('id') for w in v))}


def sortlockers(v):
    if isinstance(v, dict) and 'lockers' in v:
        v = dict(v)
        v['lockers'] = sorted(v['lockers'], key=lambda l: l[1])
    return v


def s_trash(x):
    """trash move (delays), list, get, restore, remove, purge."""
    t, r, io = x.t, x.r, x.io
    t.c('RBD.trash_list', r.trash_list, io)
    t.c('RBD.create', r.create, io, 't1', 4 * MiB)
    t.c('RBD.create', r.create, io, 't2', 4 * MiB)
    t.c('RBD.create', r.create, io, 't3', 4 * MiB)
    a = x.open('A', 't1')
    if a:
        t.c('A.id', a.id, _kind='id')
        t.c('A.write', a.write, pat(95, 4096), 0)
        t.c('RBD.trash_move', r.trash_move, io, 't1')
        x.close(a)
    for n in ('t2', 't3'):
        b = x.open(n, n, read_only=True)
        if b:
            t.c(n + '.id', b.id, _kind='id')
            x.close(b)
    t.c('RBD.trash_move', r.trash_move, io, 't1')
    t.c('RBD.trash_move', r.trash_move, io, 't1', 0)
    t.c('RBD.trash_move', r.trash_move, io, 't2', delay=3600)
    t.c('RBD.trash_move', r.trash_move, io, 't3', delay=0)
    t.c('RBD.trash_move', r.trash_move, io, 'nosuch')
    t.c('RBD.trash_move', r.trash_move, io, 't1', -5)
    t.c('RBD.list', r.list, io)
    tl = t.c('RBD.trash_list', r.trash_list, io, _sort=True) or []
    ids = {e['name']: e['id'] for e in tl}
    for n in ('t1', 't2', 't3'):
        if n in ids:
            t.c('RBD.trash_get', r.trash_get, io, ids[n])
    t.c('RBD.trash_get', r.trash_get, io, 'nosuchid')
    t.c('RBD.trash_restore', r.trash_restore, io, 'nosuchid', 'x')
    t.c('RBD.pool_stats_get', r.pool_stats_get, io)
    if 't1' in ids:
        t.c('RBD.trash_restore', r.trash_restore, io, ids['t1'], 't1r')
        t.c('RBD.trash_restore', r.trash_restore, io, ids['t1'], 't1r')
        b = x.open('R', 't1r')
        if b:
            t.c('R.id', b.id)
            t.c('R.read', b.read, 0, 4096)
            x.close(b)
        t.c('RBD.trash_move', r.trash_move, io, 't1r')
    if 't2' in ids:
        t.c('RBD.trash_remove', r.trash_remove, io, ids['t2'])
        t.c('RBD.trash_restore', r.trash_restore, io, ids['t2'], '')
        t.c('RBD.list', r.list, io)
        t.c('RBD.trash_move', r.trash_move, io, 't2', delay=3600)
    t.c('RBD.trash_remove', r.trash_remove, io, 'nosuchid')
    t.c('RBD.trash_purge', r.trash_purge, io)
    t.c('RBD.trash_list', r.trash_list, io, _sort=True)
    tl = t.c('RBD.trash_list', r.trash_list, io, _sort=True) or []
    ids = {e['name']: e['id'] for e in tl}
    t.c('RBD.trash_purge', r.trash_purge, io, expire_ts=datetime.datetime.now() + datetime.timedelta(days=1))
    t.c('RBD.trash_list', r.trash_list, io, _sort=True)
    t.c('RBD.create', r.create, io, 't4', 4 * MiB)
    t.c('RBD.trash_move', r.trash_move, io, 't4')
    t.c('RBD.trash_purge', r.trash_purge, io, threshold=0.5)
    t.c('RBD.trash_purge', r.trash_purge, io, threshold=2.0)
    t.c('RBD.trash_purge', r.trash_purge, io, expire_ts='x')
    tl = t.c('RBD.trash_list', r.trash_list, io, _sort=True) or []
    for e in tl:
        pr = Progress()
        t.c('RBD.trash_remove', r.trash_remove, io, e['id'], force=True, on_progress=pr)
    t.c('RBD.trash_list', r.trash_list, io)
    t.c('RBD.pool_stats_get', r.pool_stats_get, io)


def s_groups(x):
    """groups: create, rename, remove; images in groups, group snapshots,
    rollback."""
    t, r, io = x.t, x.r, x.io
    t.c('RBD.group_list', r.group_list, io)
    t.c('RBD.group_create', r.group_create, io, 'g1')
    t.c('RBD.group_create', r.group_create, io, 'g1')
    t.c('RBD.group_create', r.group_create, io, 'g2')
    t.c('RBD.group_create', r.group_create, io, '')
    t.c('RBD.group_list', r.group_list, io, _sort=True)
    t.c('RBD.group_rename', r.group_rename, io, 'g2', 'g3')
    t.c('RBD.group_rename', r.group_rename, io, 'g2', 'g3')
    t.c('RBD.group_rename', r.group_rename, io, 'g3', 'g1')
    t.c('RBD.group_list', r.group_list, io, _sort=True)
    t.c('RBD.create', r.create, io, 'gi1', 4 * MiB)
    t.c('RBD.create', r.create, io, 'gi2', 4 * MiB)
    g = t.c('Group', rbd.Group, io, 'g1')
    t.c('Group', rbd.Group, io, 'nosuch')
    if not g:
        return
    t.name(g, 'G')
    t.c('G.list_images', g.list_images)
    t.c('G.add_image', g.add_image, io, 'gi1')
    t.c('G.add_image', g.add_image, io, 'gi1')
    t.c('G.add_image', g.add_image, io, 'gi2')
    t.c('G.add_image', g.add_image, io, 'nosuch')
    t.c('G.list_images', g.list_images, _sort=True)
    a = x.open('A', 'gi1')
    if a:
        t.c('A.group', a.group)
        t.c('A.op_features', a.op_features)
        t.c('A.write', a.write, pat(110, 4096), 0)
    t.c('G.list_snaps', g.list_snaps)
    t.c('G.create_snap', g.create_snap, 'gs1')
    t.c('G.create_snap', g.create_snap, 'gs1')
    t.c('G.create_snap', g.create_snap, 'gs2', flags=rbd.RBD_SNAP_CREATE_SKIP_QUIESCE)
    t.c('G.list_snaps', g.list_snaps, _sort=True)
    if a:
        t.c('A.write', a.write, pat(111, 4096), 0)
        snaps = t.c('A.list_snaps', a.list_snaps) or []
        for s in snaps:
            t.c('A.snap_get_namespace_type', a.snap_get_namespace_type, V(s['id']))
            t.c('A.snap_get_group_namespace', a.snap_get_group_namespace, V(s['id']))
        x.close(a)
    t.c('G.rename_snap', g.rename_snap, 'gs2', 'gs3')
    t.c('G.rename_snap', g.rename_snap, 'gs2', 'gs3')
    t.c('G.rollback_to_snap', g.rollback_to_snap, 'gs1')
    t.c('G.rollback_to_snap', g.rollback_to_snap, 'nosuch')
    b = x.open('B', 'gi1', read_only=True)
    if b:
        t.c('B.read', b.read, 0, 4096)
        x.close(b)
    t.c('RBD.remove', r.remove, io, 'gi1')
    t.c('RBD.group_remove', r.group_remove, io, 'nosuch')
    t.c('G.remove_snap', g.remove_snap, 'gs1')
    t.c('G.remove_snap', g.remove_snap, 'gs1')
    t.c('G.list_snaps', g.list_snaps)
    t.c('G.remove_image', g.remove_image, io, 'gi2')
    t.c('G.remove_image', g.remove_image, io, 'gi2')
    t.c('G.list_images', g.list_images)
    t.c('RBD.group_remove', r.group_remove, io, 'g1')
    t.c('RBD.group_remove', r.group_remove, io, 'g3')
    t.c('RBD.group_remove', r.group_remove, io, 'g3')
    t.c('RBD.group_list', r.group_list, io)
    t.c('G.list_images', g.list_images)
    b = x.open('B2', 'gi1')
    if b:
        t.c('B2.group', b.group)
        t.c('B2.list_snaps', b.list_snaps)
        x.close(b)
    t.c('RBD.remove', r.remove, io, 'gi1')
    t.c('RBD.remove', r.remove, io, 'gi2')


def s_namespaces(x):
    """namespace create, exists, list, remove (busy and empty)."""
    t, r, io0 = x.t, x.r, x.io0
    n1, n2 = x.prefix + '+ns1', x.prefix + '+ns2'
    t.c('RBD.namespace_exists', r.namespace_exists, io0, x.ns)
    t.c('RBD.namespace_exists', r.namespace_exists, io0, n1)
    t.c('RBD.namespace_create', r.namespace_create, io0, n1)
    t.c('RBD.namespace_create', r.namespace_create, io0, n1)
    t.c('RBD.namespace_create', r.namespace_create, io0, n2)
    t.c('RBD.namespace_create', r.namespace_create, io0, '')
    t.c('RBD.namespace_exists', r.namespace_exists, io0, n1)
    t.c('RBD.namespace_list', r.namespace_list, io0,
        _post=lambda l: sorted(n for n in l if n.startswith(x.prefix + '+') or n == x.ns))
    io1 = t.name(x.cluster.open_ioctx(x.pool), 'io_ns1')
    io1.set_namespace(n1)
    t.c('RBD.list', r.list, io1)
    t.c('RBD.create', r.create, io1, 'n1', 4 * MiB)
    t.c('RBD.namespace_remove', r.namespace_remove, io0, n1)
    t.c('RBD.pool_stats_get', r.pool_stats_get, io1)
    t.c('RBD.remove', r.remove, io1, 'n1')
    t.c('RBD.namespace_remove', r.namespace_remove, io0, n1)
    t.c('RBD.namespace_remove', r.namespace_remove, io0, n1)
    t.c('RBD.namespace_remove', r.namespace_remove, io0, n2)
    t.c('RBD.namespace_exists', r.namespace_exists, io0, n1)
    t.c('RBD.list', r.list, io1)
    t.c('RBD.create', r.create, io1, 'n2', 4 * MiB)
    io1.close()


def s_mirror(x):
    """mirroring on one cluster: site name, pool and namespace modes, peers,
    bootstrap tokens, snapshot- and journal-based image mirroring, status
    lists."""
    t, r, io, io0 = x.t, x.r, x.io, x.io0
    M = rbd
    t.c('RBD.mirror_mode_get', r.mirror_mode_get, io)
    t.c('RBD.mirror_uuid_get', r.mirror_uuid_get, io)
    t.c('RBD.mirror_site_name_get', r.mirror_site_name_get, x.cluster)
    t.c('RBD.mirror_site_name_set', r.mirror_site_name_set, x.cluster, x.prefix + '-site')
    t.c('RBD.mirror_site_name_get', r.mirror_site_name_get, x.cluster)
    t.c('RBD.mirror_site_name_set', r.mirror_site_name_set, x.cluster, '')
    t.c('RBD.mirror_site_name_get', r.mirror_site_name_get, x.cluster,
        _post=lambda s: 'fsid' if s == x.cluster.get_fsid() else s)
    t.c('RBD.mirror_mode_set', r.mirror_mode_set, io, 99)
    t.c('RBD.create', r.create, io, 'mi1', 32 * MiB)
    t.c('RBD.create', r.create, io, 'mi2', 32 * MiB,
        features=M.RBD_FEATURE_LAYERING | M.RBD_FEATURE_EXCLUSIVE_LOCK | M.RBD_FEATURE_JOURNALING)
    a = x.open('A', 'mi1')
    if a:
        t.c('A.id', a.id, _kind='id')
        t.c('A.mirror_image_get_info', a.mirror_image_get_info)
        t.c('A.mirror_image_get_mode', a.mirror_image_get_mode)
        t.c('A.mirror_image_enable', a.mirror_image_enable, M.RBD_MIRROR_IMAGE_MODE_SNAPSHOT)
    # pool-level mirroring (image mode) on the default namespace, then ours
    t.c('RBD.mirror_mode_set', r.mirror_mode_set, io0, M.RBD_MIRROR_MODE_IMAGE)
    t.c('RBD.mirror_mode_set', r.mirror_mode_set, io, M.RBD_MIRROR_MODE_IMAGE)
    t.c('RBD.mirror_mode_get', r.mirror_mode_get, io)
    t.c('RBD.mirror_uuid_get', r.mirror_uuid_get, io)
    t.c('RBD.mirror_peer_bootstrap_create', r.mirror_peer_bootstrap_create, io,
        _post=decode_token)
    t.c('RBD.mirror_peer_bootstrap_import', r.mirror_peer_bootstrap_import, io,
        M.RBD_MIRROR_PEER_DIRECTION_RX, 'bm90IGEgdG9rZW4=')
    uuid = t.c('RBD.mirror_peer_add', r.mirror_peer_add, io0, x.prefix + '-peer', 'client.admin')
    t.c('RBD.mirror_peer_add', r.mirror_peer_add, io0, x.prefix + '-peer', 'client.admin')
    t.c('RBD.mirror_peer_list', r.mirror_peer_list, io0,
        _post=lambda l: [p for p in l if p.get('site_name', '').startswith(x.prefix)])
    if uuid:
        t.c('RBD.mirror_peer_get_attributes', r.mirror_peer_get_attributes, io0, uuid)
        t.c('RBD.mirror_peer_set_attributes', r.mirror_peer_set_attributes, io0, uuid,
            {M.RBD_MIRROR_PEER_ATTRIBUTE_NAME_MON_HOST: '127.0.0.1:1',
             M.RBD_MIRROR_PEER_ATTRIBUTE_NAME_KEY: 'AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=='})
        t.c('RBD.mirror_peer_get_attributes', r.mirror_peer_get_attributes, io0, uuid)
        t.c('RBD.mirror_peer_set_client', r.mirror_peer_set_client, io0, uuid, 'client.other')
        t.c('RBD.mirror_peer_set_name', r.mirror_peer_set_name, io0, uuid, x.prefix + '-peer2')
        t.c('RBD.mirror_peer_set_cluster', r.mirror_peer_set_cluster, io0, uuid, x.prefix + '-peer3')
        t.c('RBD.mirror_peer_list', r.mirror_peer_list, io0,
            _post=lambda l: [p for p in l if p.get('site_name', '').startswith(x.prefix)])
    t.c('RBD.mirror_peer_get_attributes', r.mirror_peer_get_attributes, io0, 'nosuch')
    t.c('RBD.mirror_peer_set_client', r.mirror_peer_set_client, io0, 'nosuch', 'client.x')
    # removal of snapshot-mirrored images: their mirror snapshots do not
    # refuse it; a demoted one is refused (until promoted again)
    f = M.RBD_FEATURE_LAYERING | M.RBD_FEATURE_EXCLUSIVE_LOCK
    for n in ('mi3', 'mi4'):
        t.c('RBD.create', r.create, io, n, 8 * MiB, features=f)
        m = x.open('M', n)
        if not m:
            continue
        t.c('M.mirror_image_enable', m.mirror_image_enable, M.RBD_MIRROR_IMAGE_MODE_SNAPSHOT)
        if n == 'mi4':
            t.c('M.mirror_image_demote', m.mirror_image_demote)
        t.c('M.list_snaps', lambda: [s['namespace'] for s in m.list_snaps()])
        x.close(m)
        t.c('RBD.remove', r.remove, io, n)
        if n == 'mi4':
            m = x.open('M', n)
            if m:
                t.c('M.mirror_image_promote', m.mirror_image_promote, False)
                x.close(m)
            t.c('RBD.remove', r.remove, io, n)
    t.c('RBD.list', r.list, io)
    if a:
        t.c('A.mirror_image_enable', a.mirror_image_enable, M.RBD_MIRROR_IMAGE_MODE_SNAPSHOT)
        t.c('A.mirror_image_enable', a.mirror_image_enable, M.RBD_MIRROR_IMAGE_MODE_SNAPSHOT)
        t.c('A.mirror_image_get_info', a.mirror_image_get_info)
        t.c('A.mirror_image_get_mode', a.mirror_image_get_mode)
        t.c('A.mirror_image_get_status', a.mirror_image_get_status)
        t.c('A.mirror_image_get_instance_id', a.mirror_image_get_instance_id)
        t.c('A.write', a.write, pat(120, 4096), 0)
        t.c('A.mirror_image_create_snapshot', a.mirror_image_create_snapshot, _kind='id')
        t.c('A.mirror_image_create_snapshot', a.mirror_image_create_snapshot,
            flags=rbd.RBD_SNAP_CREATE_SKIP_QUIESCE, _kind='id')
        aio(x, 'A.aio_mirror_image_get_info', a.aio_mirror_image_get_info)
        aio(x, 'A.aio_mirror_image_get_mode', a.aio_mirror_image_get_mode)
        aio(x, 'A.aio_mirror_image_create_snapshot', a.aio_mirror_image_create_snapshot, 0,
            _volatile=True)
        snaps = t.c('A.list_snaps', a.list_snaps) or []
        for s in snaps:
            t.c('A.snap_get_namespace_type', a.snap_get_namespace_type, V(s['id']))
            t.c('A.snap_get_mirror_namespace', a.snap_get_mirror_namespace, V(s['id']))
        t.c('RBD.mirror_image_info_list', r.mirror_image_info_list, io)
        t.c('RBD.mirror_image_info_list', r.mirror_image_info_list, io,
            mode_filter=M.RBD_MIRROR_IMAGE_MODE_JOURNAL)
        t.c('RBD.mirror_image_status_list', r.mirror_image_status_list, io)
        t.c('RBD.mirror_image_status_summary', r.mirror_image_status_summary, io)
        t.c('RBD.mirror_image_instance_id_list', r.mirror_image_instance_id_list, io)
        t.c('A.mirror_image_resync', a.mirror_image_resync)
        t.c('A.mirror_image_demote', a.mirror_image_demote)
        t.c('A.mirror_image_get_info', a.mirror_image_get_info)
        t.c('A.write', a.write, b'x' * 512, 0)
        t.c('A.mirror_image_demote', a.mirror_image_demote)
        t.c('A.mirror_image_promote', a.mirror_image_promote, False)
        t.c('A.mirror_image_promote', a.mirror_image_promote, False)
        t.c('A.mirror_image_get_info', a.mirror_image_get_info)
        t.c('A.write', a.write, b'y' * 512, 0)
        t.c('A.read', a.read, 0, 4096)
        t.c('RBD.mirror_mode_set', r.mirror_mode_set, io, M.RBD_MIRROR_MODE_DISABLED)
        t.c('A.mirror_image_disable', a.mirror_image_disable, False)
        t.c('A.mirror_image_disable', a.mirror_image_disable, False)
        t.c('A.mirror_image_get_info', a.mirror_image_get_info)
        t.c('A.list_snaps', a.list_snaps)
        x.close(a)
    b = x.open('B', 'mi2')
    if b:
        t.c('B.mirror_image_enable', b.mirror_image_enable)
        t.c('B.mirror_image_get_mode', b.mirror_image_get_mode)
        t.c('B.mirror_image_get_info', b.mirror_image_get_info)
        t.c('B.write', b.write, pat(121, 8192), 0)
        t.c('B.read', b.read, 0, 8192)
        t.c('B.mirror_image_create_snapshot', b.mirror_image_create_snapshot, _kind='id')
        t.c('B.mirror_image_disable', b.mirror_image_disable, True)
        x.close(b)
    t.c('RBD.mirror_mode_set', r.mirror_mode_set, io, M.RBD_MIRROR_MODE_POOL)
    t.c('RBD.mirror_image_info_list', r.mirror_image_info_list, io)
    t.c('RBD.mirror_mode_set', r.mirror_mode_set, io, M.RBD_MIRROR_MODE_DISABLED)
    if uuid:
        t.c('RBD.mirror_peer_remove', r.mirror_peer_remove, io0, uuid)
        t.c('RBD.mirror_peer_remove', r.mirror_peer_remove, io0, uuid)
    t.c('RBD.mirror_mode_get', r.mirror_mode_get, io)
    t.c('RBD.remove', r.remove, io, 'mi1')
    t.c('RBD.remove', r.remove, io, 'mi2')


# librbd's journal event types (librbd/journal/Types.h)
JOURNAL_EVENTS = ['AioDiscard', 'AioWrite', 'AioFlush', 'OpFinish', 'SnapCreate',
                  'SnapRemove', 'SnapRename', 'SnapProtect', 'SnapUnprotect',
                  'SnapRollback', 'Rename', 'Resize', 'Flatten', 'DemotePromote',
                  'SnapLimit', 'UpdateFeatures', 'MetadataSet', 'MetadataRemove',
                  'AioWriteSame', 'AioCompareAndWrite']
JOURNAL_IO = {0, 1, 18, 19}
JOURNAL_PREAMBLE = 0x3141592653589793


def journal_events(io, image_id, merge=True):
    """The events in image image_id's journal (data objects in io's
    namespace), in append order (tag, then entry): the type and, for I/O
    events, offset and length (entry ids and tags are left out: which
    client appended is not compared)."""
    pool = io.get_pool_id()
    prefix = 'journal_data.%d.%s.' % (pool, image_id)
    entries = []
    for o in io.list_objects():
        if not o.key.startswith(prefix):
            continue
        size, _ = io.stat(o.key)
        buf = io.read(o.key, size)
        pos = 0
        while pos + 33 <= len(buf):
            pre, ver, etid, ttid, dlen = struct.unpack_from('<QBQQI', buf, pos)
            if pre != JOURNAL_PREAMBLE or ver != 1:
                entries.append((1 << 64, 0, 'bad entry in %s at %d' % (o.key[len(prefix) - 1:], pos)))
                break
            data = buf[pos + 29:pos + 29 + dlen]
            pos += 29 + dlen + 4
            etype, = struct.unpack_from('<I', data, 6)
            name = JOURNAL_EVENTS[etype] if etype < len(JOURNAL_EVENTS) else str(etype)
            if etype in JOURNAL_IO:
                name = (name,) + struct.unpack_from('<QQ', data, 10)
            entries.append((ttid, etid, name))
    entries.sort()
    if not merge:
        return ['%s(%d,%d)' % e[2] if isinstance(e[2], tuple) else e[2] for e in entries]
    # a long write is split into entries of rbd_journal_max_payload_bytes:
    # contiguous runs of one type are shown as one, with their count
    out = []
    for _, _, ev in entries:
        if isinstance(ev, tuple) and out and isinstance(out[-1], list) and \
                out[-1][0] == ev[0] and out[-1][1] + out[-1][2] == ev[1]:
            out[-1][2] += ev[2]
            out[-1][3] += 1
        elif isinstance(ev, tuple):
            out.append(list(ev) + [1])
        else:
            out.append(ev)
    return ['%s(%d,%d)%s' % (e[0], e[1], e[2], '' if e[3] == 1 else ' x%d' % e[3])
            if isinstance(e, list) else e for e in out]


def s_journal(x):
    """a journaled image (librbdlite runs its I/O and changes on the
    system's librbd): I/O, snapshots, resize, metadata, features, locks,
    a journaled clone flattened, clones, copies and deep copies of a
    journaled image, rename; then the events in the journals and what a
    fresh open reads."""
    t, r, io = x.t, x.r, x.io
    JF = (rbd.RBD_FEATURE_LAYERING | rbd.RBD_FEATURE_EXCLUSIVE_LOCK |
          rbd.RBD_FEATURE_OBJECT_MAP | rbd.RBD_FEATURE_FAST_DIFF |
          rbd.RBD_FEATURE_DEEP_FLATTEN | rbd.RBD_FEATURE_JOURNALING)
    t.c('RBD.create', r.create, io, 'j1', 8 * MiB, features=JF)
    ids = {}
    a = x.open('J', 'j1')
    if a:
        ids['j1'] = a.id()
        t.c('J.features', a.features)
        t.c('J.is_exclusive_lock_owner', a.is_exclusive_lock_owner)
        t.c('J.write', a.write, pat(200, 8192), 4096)
        t.c('J.is_exclusive_lock_owner', a.is_exclusive_lock_owner)
        t.c('J.write', a.write, b'', 0)
        t.c('J.read', a.read, 0, 16384)
        aio(x, 'J.aio_write', a.aio_write, pat(201, 4096), MiB)
        aio(x, 'J.aio_read', a.aio_read, MiB, 4096)
        aio(x, 'J.aio_write_zeroes', a.aio_write_zeroes, MiB + 512, 1024)
        aio(x, 'J.aio_discard', a.aio_discard, 4 * MiB, 4 * MiB)
        aio(x, 'J.aio_flush', a.aio_flush)
        t.c('J.write', a.write, pat(202, 4096), 8 * MiB - 2048)
        t.c('J.write_zeroes', a.write_zeroes, 8192, 4096)
        t.c('J.discard', a.discard, 0, 4 * MiB)
        t.c('J.write', a.write, pat(203, 3 * MiB), 512)
        t.c('J.flush', a.flush)
        t.c('J.invalidate_cache', a.invalidate_cache)
        t.c('J.read', a.read, 0, 8 * MiB)
        t.c('J.diff_iterate', lambda: diff(a, 0, 8 * MiB, None))
        t.c('J.create_snap', a.create_snap, 's1')
        t.c('J.create_snap', a.create_snap, 's1')
        t.c('J.write', a.write, pat(204, 4096), 0)
        t.c('J.diff_iterate', lambda: diff(a, 0, 8 * MiB, 's1'))
        t.c('J.protect_snap', a.protect_snap, 's1')
        t.c('J.rename_snap', a.rename_snap, 's1', 's2')
        t.c('J.set_snap_limit', a.set_snap_limit, 5)
        t.c('J.get_snap_limit', a.get_snap_limit)
        t.c('J.remove_snap_limit', a.remove_snap_limit)
        t.c('J.list_snaps', a.list_snaps)
        t.c('J.resize', a.resize, 16 * MiB)
        t.c('J.resize', a.resize, 12 * MiB, allow_shrink=False)
        t.c('J.resize', a.resize, 12 * MiB)
        t.c('J.size', a.size)
        t.c('J.metadata_set', a.metadata_set, 'k1', 'v1')
        t.c('J.metadata_remove', a.metadata_remove, 'k1')
        t.c('J.metadata_remove', a.metadata_remove, 'k1')
        t.c('J.metadata_list', a.metadata_list)
        t.c('J.update_features', a.update_features, rbd.RBD_FEATURE_FAST_DIFF, False)
        t.c('J.update_features', a.update_features, rbd.RBD_FEATURE_FAST_DIFF, True)
        t.c('J.features', a.features)
        t.c('J.flags', a.flags)
        t.c('J.rebuild_object_map', a.rebuild_object_map)
        t.c('J.sparsify', a.sparsify, 4096)
        t.c('J.lock_release', a.lock_release)
        t.c('J.is_exclusive_lock_owner', a.is_exclusive_lock_owner)
        t.c('J.lock_acquire', a.lock_acquire, rbd.RBD_LOCK_MODE_EXCLUSIVE)
        t.c('J.is_exclusive_lock_owner', a.is_exclusive_lock_owner)
        t.c('J.lock_get_owners', a.lock_get_owners, _sort=True)
        t.c('J.lock_release', a.lock_release)
        t.c('J.set_snap', a.set_snap, 's2')
        t.c('J.write', a.write, b'z' * 512, 0)
        t.c('J.resize', a.resize, 4 * MiB)
        t.c('J.is_protected_snap', a.is_protected_snap, 's2')
        t.c('J.read', a.read, 0, 8 * MiB)
        t.c('J.set_snap', a.set_snap, None)
        t.c('J.read', a.read, 0, 12 * MiB)
        t.c('RBD.clone', r.clone, io, 'j1', 's2', io, 'jc', features=JF)
        c = x.open('JC', 'jc')
        if c:
            ids['jc'] = c.id()
            t.c('JC.write', c.write, pat(205, 8192), 2 * MiB - 4096)
            t.c('JC.read', c.read, 0, 4 * MiB)
            t.c('JC.flatten', c.flatten)
            t.c('JC.parent_info', c.parent_info)
            t.c('JC.read', c.read, 0, 8 * MiB)
            x.close(c)
        t.c('RBD.clone', r.clone, io, 'j1', 's2', io, 'jc2')
        t.c('J.copy', a.copy, io, 'jcp')
        t.c('J.copy', a.copy, io, 'jcp2', features=JF & ~rbd.RBD_FEATURE_JOURNALING)
        t.c('J.deep_copy', a.deep_copy, io, 'jdc')
        t.c('RBD.remove', r.remove, io, 'jc2')
        t.c('J.unprotect_snap', a.unprotect_snap, 's2')
        t.c('J.rollback_to_snap', a.rollback_to_snap, 's2')
        t.c('J.read', a.read, 0, 12 * MiB)
        t.c('J.remove_snap', a.remove_snap, 's2')
        t.c('J.list_snaps', a.list_snaps)
        x.close(a)
    # Two opens of one image in one process: the first has a real handle
    # (journaling was on) when the second takes the lock and changes the
    # header; the first's synchronous write, queued behind the refresh,
    # needs the lock back from the second (librbdlite once waited for it
    # on the thread that answers lock requests).
    t.c('RBD.create', r.create, io, 'jd', 8 * MiB, features=JF)
    a = x.open('JD', 'jd')
    if a:
        t.c('JD.write', a.write, pat(206, 4096), 0)
        t.c('JD.update_features', a.update_features, rbd.RBD_FEATURE_JOURNALING, False)
        b = x.open('JD2', 'jd')
        if b:
            t.c('JD2.write', b.write, pat(207, 4096), 4096)
            t.c('JD2.create_snap', b.create_snap, 'd1')
            t.c('JD.write', a.write, pat(208, 4096), 8192)
            t.c('JD.read', a.read, 0, 12288)
            t.c('JD2.remove_snap', b.remove_snap, 'd1')
            x.close(b)
        x.close(a)
    t.c('RBD.remove', r.remove, io, 'jd')
    t.c('RBD.rename', r.rename, io, 'j1', 'j2')
    for n, label in (('j2', 'j1'), ('jc', 'jc'), ('jcp', 'jcp'), ('jcp2', None),
                     ('jdc', 'jdc')):
        b = x.open('R', n, read_only=True)
        if b and label:
            t.c('journal %s' % label, journal_events, io, V(ids.get(label) or b.id()))
        if b:
            t.c('R.list_snaps', b.list_snaps)
            t.c('R.features', b.features)
            t.c('R.size', b.size)
            t.c('R.read', b.read, 0, b.size())
            x.close(b)
        if n == 'jdc':
            d = x.open('D', n)
            if d:
                t.c('D.unprotect_snap', d.unprotect_snap, 's2')
                t.c('D.remove_snap', d.remove_snap, 's2')
                x.close(d)
        t.c('RBD.remove', r.remove, io, n)


def s_mirror_cleanup(x):
    """Pool mirroring back off (after the mirror section, on its own so that
    a crash there cannot leave the pool in image mode for the next run)."""
    t, r, io0 = x.t, x.r, x.io0
    t.c('RBD.mirror_mode_set', r.mirror_mode_set, x.io, rbd.RBD_MIRROR_MODE_DISABLED)
    t.c('RBD.mirror_mode_set', r.mirror_mode_set, io0, rbd.RBD_MIRROR_MODE_DISABLED)
    t.c('RBD.mirror_mode_get', r.mirror_mode_get, io0)


def decode_token(tok):
    try:
        d = json.loads(base64.b64decode(tok))
    except Exception:           # pylint: disable=broad-except
        return 'undecodable token %r' % tok
    return {k: ('<set>' if k in ('key', 'fsid') and d[k] else d[k]) for k in d}


def s_migration(x):
    """migration prepare, status, execute, commit; prepare then abort; import
    from a spec."""
    t, r, io = x.t, x.r, x.io
    t.c('RBD.create', r.create, io, 'ms1', 8 * MiB)
    a = x.open('A', 'ms1')
    if not a:
        return
    t.c('A.id', a.id, _kind='id')
    t.c('A.write', a.write, pat(130, 2 * MiB), MiB)
    t.c('A.create_snap', a.create_snap, 'm1')
    t.c('A.write', a.write, pat(131, 4096), 0)
    x.close(a)
    t.c('RBD.migration_status', r.migration_status, io, 'ms1')
    t.c('RBD.migration_prepare', r.migration_prepare, io, 'nosuch', io, 'md1')
    t.c('RBD.migration_prepare', r.migration_prepare, io, 'ms1', io, 'md1',
        order=21, data_pool=x.data_pool)
    t.c('RBD.migration_prepare', r.migration_prepare, io, 'ms1', io, 'md1')
    t.c('RBD.list', r.list, io)
    t.c('RBD.migration_status', r.migration_status, io, 'md1')
    t.c('RBD.migration_status', r.migration_status, io, 'ms1')
    d = x.open('D', 'md1')
    if d:
        t.c('D.id', d.id, _kind='id')
        t.c('D.features', d.features)
        t.c('D.op_features', d.op_features)
        t.c('D.migration_source_spec', d.migration_source_spec,
            _post=lambda s: json.loads(s) if isinstance(s, str) else s)
        t.c('D.read', d.read, 0, 4 * MiB)
        t.c('D.list_snaps', d.list_snaps)
        t.c('D.stat', d.stat)
        x.close(d)
    pr = Progress()
    t.c('RBD.migration_execute', r.migration_execute, io, 'md1', on_progress=pr)
    t.note('progress', pr.summary())
    t.c('RBD.migration_status', r.migration_status, io, 'md1')
    t.c('RBD.migration_execute', r.migration_execute, io, 'md1')
    pr = Progress()
    t.c('RBD.migration_commit', r.migration_commit, io, 'md1', on_progress=pr)
    t.c('RBD.migration_status', r.migration_status, io, 'md1')
    t.c('RBD.migration_commit', r.migration_commit, io, 'md1')
    t.c('RBD.list', r.list, io)
    d = x.open('D2', 'md1')
    if d:
        t.c('D2.id', d.id, _kind='id')
        t.c('D2.stat', d.stat)
        t.c('D2.features', d.features)
        t.c('D2.list_snaps', d.list_snaps)
        t.c('D2.read', d.read, 0, 4 * MiB)
        t.c('D2.set_snap', d.set_snap, 'm1')
        t.c('D2.read', d.read, 0, 4 * MiB)
        t.c('D2.set_snap', d.set_snap, None)
        t.c('D2.remove_snap', d.remove_snap, 'm1')
        x.close(d)
    # prepare then abort
    t.c('RBD.create', r.create, io, 'ms2', 4 * MiB)
    b = x.open('B', 'ms2')
    if b:
        t.c('B.write', b.write, pat(132, 4096), 4096)
        x.close(b)
    t.c('RBD.migration_prepare', r.migration_prepare, io, 'ms2', io, 'md2',
        features=rbd.RBD_FEATURE_LAYERING)
    t.c('RBD.migration_abort', r.migration_abort, io, 'nosuch')
    b = x.open('B2', 'ms2', read_only=True)
    if b:
        t.c('B2.read', b.read, 0, 8192)
        t.c('B2.write', b.write, b'x', 0)
        x.close(b)
    t.c('Image(rw, migration source)', rbd.Image, io, 'ms2')
    d = x.open('D3', 'md2')
    if d:
        t.c('D3.read', d.read, 0, 8192)
        t.c('D3.write', d.write, pat(133, 512), 0)
        x.close(d)
    pr = Progress()
    t.c('RBD.migration_abort', r.migration_abort, io, 'md2', on_progress=pr)
    t.c('RBD.migration_status', r.migration_status, io, 'ms2')
    t.c('RBD.list', r.list, io)
    b = x.open('B3', 'ms2')
    if b:
        t.c('B3.read', b.read, 0, 8192)
        x.close(b)
    # import from a raw file spec (needs a file the OSD cannot see: librbd
    # opens it itself)
    spec = json.dumps({'type': 'raw', 'stream': {'type': 'file', 'file_path': '/nonexistent/x'}})
    t.c('RBD.migration_prepare_import', r.migration_prepare_import, spec, io, 'mi1')
    t.c('RBD.migration_prepare_import', r.migration_prepare_import, 'not json', io, 'mi1')
    t.c('RBD.remove', r.remove, io, 'md1')
    t.c('RBD.remove', r.remove, io, 'ms2')
    t.c('RBD.remove', r.remove, io, 'mi1')
    t.c('RBD.list', r.list, io)


def s_encryption(x):
    """LUKS format and load (key derivation is slow: a few of each): errors,
    sizes, aligned and unaligned I/O through the data area, read-only
    opens, images too small for the header (encryption2 goes on)."""
    t, r, io = x.t, x.r, x.io
    E = rbd
    L1, L2 = E.RBD_ENCRYPTION_FORMAT_LUKS1, E.RBD_ENCRYPTION_FORMAT_LUKS2
    A128, A256 = E.RBD_ENCRYPTION_ALGORITHM_AES128, E.RBD_ENCRYPTION_ALGORITHM_AES256
    t.c('RBD.create', r.create, io, 'e1', 32 * MiB)
    t.c('RBD.create', r.create, io, 'e3', 1 * MiB)
    a = x.open('A', 'e1')
    if a:
        t.c('A.encryption_load', a.encryption_load, L1, 'pw')
        t.c('A.encryption_format', a.encryption_format, 7, 'pw')
        t.c('A.encryption_format', a.encryption_format, L1, 'pw', 9)
        t.c('A.encryption_format', a.encryption_format, L1, 'pw')
        t.c('A.encryption_load', a.encryption_load, L1, 'pw')
        t.c('A.size', a.size)
        t.c('A.stat', a.stat)
        t.c('A.write', a.write, pat(140, 4096), 0)
        t.c('A.read', a.read, 0, 4096)
        t.c('A.write', a.write, pat(141, 4096), 28 * MiB - 4096)
        t.c('A.write', a.write, pat(141, 4096), 28 * MiB)
        # unaligned: within a sector, across sectors, across objects
        t.c('A.write', a.write, pat(142, 100), 7000)
        t.c('A.write', a.write, pat(143, 1500), 8000)
        t.c('A.write', a.write, pat(144, 9000), 4 * MiB - 4000)
        # (only written sectors: librbd decrypts a never-written sector
        # of an existing object into noise, librbdlite reads zeros)
        t.c('A.read', a.read, 7000, 100)
        t.c('A.read', a.read, 8000, 1500)
        t.c('A.read', a.read, 4 * MiB - 4000, 9000)
        t.c('A.read', a.read, 28 * MiB - 100, 200)
        t.c('A.flush', a.flush)
        x.close(a)
    a = x.open('A2', 'e1')
    if a:
        t.c('A2.size', a.size)
        t.c('A2.encryption_load', a.encryption_load, L2, 'pw')
        t.c('A2.encryption_load', a.encryption_load, 7, 'pw')
        t.c('A2.encryption_load', a.encryption_load, L1, 'wrong')
        t.c('A2.encryption_load', a.encryption_load, L1, 'pw')
        t.c('A2.encryption_load', a.encryption_load, L1, 'pw')
        t.c('A2.size', a.size)
        t.c('A2.read', a.read, 0, 4096)
        t.c('A2.read', a.read, 28 * MiB - 4096, 4096)
        t.c('A2.read', a.read, 7000, 100)
        t.c('A2.read', a.read, 8000, 1500)
        t.c('A2.read', a.read, 4 * MiB - 4000, 9000)
        x.close(a)
    a = x.open('A3', 'e1', read_only=True)
    if a:
        t.c('A3.size', a.size)
        t.c('A3.read', a.read, 0, 4096, _post=len)
        t.c('A3.encryption_format', a.encryption_format, L2, 'pw')
        t.c('A3.encryption_load', a.encryption_load, L1, 'pw')
        t.c('A3.read', a.read, 0, 4096)
        t.c('A3.write', a.write, pat(145, 512), 0)
        x.close(a)
    a = x.open('C', 'e3')
    if a:
        t.c('C.encryption_format', a.encryption_format, L1, 'pw')
        t.c('C.encryption_format', a.encryption_format, L2, 'pw')
        t.c('C.size', a.size)
        x.close(a)
    t.c('RBD.remove', r.remove, io, 'e1')
    t.c('RBD.remove', r.remove, io, 'e3')


def s_encryption2(x):
    """LUKS2 with AES-256 on an image that held data: I/O through the data
    area, discard and write-zeroes, a snapshot, a clone of the encrypted
    image and the snapshot opened and loaded, then a reformat to LUKS1."""
    t, r, io = x.t, x.r, x.io
    E = rbd
    L1, L2 = E.RBD_ENCRYPTION_FORMAT_LUKS1, E.RBD_ENCRYPTION_FORMAT_LUKS2
    A256 = E.RBD_ENCRYPTION_ALGORITHM_AES256
    t.c('RBD.create', r.create, io, 'e2', 64 * MiB)
    a = x.open('B', 'e2')
    if a:
        t.c('B.write', a.write, pat(146, 8192), 0)
        t.c('B.encryption_format', a.encryption_format, L2, 'pw', A256)
        t.c('B.size', a.size)
        t.c('B.read', a.read, 0, 4096)
        t.c('B.write', a.write, pat(147, 8 * MiB), 0)
        t.c('B.write', a.write, pat(148, 512), 8192 + 512)
        t.c('B.write', a.write, pat(149, 3), 12 * MiB + 4095)
        t.c('B.read', a.read, 8192, 4096)
        t.c('B.read', a.read, 12 * MiB + 4094, 6)
        t.c('B.discard', a.discard, 0, 4 * MiB)
        t.c('B.read', a.read, 0, 8)
        t.c('B.read', a.read, 4 * MiB, 4096)
        t.c('B.write_zeroes', a.write_zeroes, 4 * MiB, 8192)
        t.c('B.read', a.read, 4 * MiB, 8192)
        t.c('B.create_snap', a.create_snap, 's1')
        t.c('B.write', a.write, pat(150, 4096), 4 * MiB + 8192)
        t.c('B.protect_snap', a.protect_snap, 's1')
        t.c('B.read', a.read, 4 * MiB + 8192, 4096)
        t.c('B.write', a.write, pat(151, 10), 48 * MiB - 5)
        t.c('B.write', a.write, pat(151, 10), 48 * MiB)
        # extents in data-area offsets, the header left out
        t.c('B.diff_iterate', lambda: diff(a, 0, a.size(), None))
        t.c('B.diff_iterate', lambda: diff(a, 0, a.size(), 's1'))
        t.c('B.diff_iterate', lambda: diff(a, 0, a.size(), None, whole_object=True))
        t.c('B.diff_iterate', lambda: diff(a, 4 * MiB, 8192, None))
        t.c('B.diff_iterate', lambda: diff(a, 48 * MiB, 1, None))
        # copies through the loaded handle: rbd_copy writes the decrypted
        # data area and fails past its end; sparsify works on the stored
        # objects and the data reads the same afterwards
        t.c('B.copy', a.copy, io, 'e2cp')
        t.c('B.deep_copy', a.deep_copy, io, 'e2dc')
        t.c('B.sparsify', a.sparsify, 4096)
        t.c('B.read', a.read, 0, 8192)
        t.c('B.read', a.read, 4 * MiB, 16384)
        t.c('B.read', a.read, 8 * MiB - 4096, 8192)
        t.c('B.read', a.read, 12 * MiB + 4094, 6)
        t.c('B.read', a.read, 48 * MiB - 8, 16)
        # back to the snapshot's data
        t.c('B.rollback_to_snap', a.rollback_to_snap, 's1')
        t.c('B.read', a.read, 4 * MiB, 16384)
        t.c('B.read', a.read, 48 * MiB - 8, 16)
        x.close(a)
    for n in ('e2cp', 'e2dc'):
        a = x.open('CP', n)
        if a:
            if n == 'e2dc':
                # librbd 16.2.15 deep-copies the decrypted data area (its
                # header gone), librbdlite the stored image (loadable)
                t.c('CP.encryption_load', a.encryption_load, L2, 'pw')
            t.c('CP.size', a.size)
            t.c('CP.read', a.read, 4 * MiB + 8192, 4096)
            t.c('CP.read', a.read, 8 * MiB - 4096, 8192)
            t.c('CP.read', a.read, 16 * MiB + 4096, 4096)
            x.close(a)
        t.c('RBD.remove', r.remove, io, n)
    t.c('RBD.clone', r.clone, io, 'e2', 's1', io, 'e2c', features=1)
    a = x.open('BC', 'e2c')
    if a:
        t.c('BC.size', a.size)
        t.c('BC.encryption_format', a.encryption_format, L2, 'pw')
        t.c('BC.encryption_load', a.encryption_load, L2, 'pw')
        t.c('BC.size', a.size)
        t.c('BC.read', a.read, 4 * MiB + 8192, 4096)
        t.c('BC.read', a.read, 4 * MiB, 4096)
        t.c('BC.write', a.write, pat(152, 1000), 4 * MiB + 9000)
        t.c('BC.read', a.read, 4 * MiB + 8192, 4096)
        t.c('BC.read', a.read, 5 * MiB, 4096)
        # resize (sizes of the data area), then flatten: the parent's
        # blocks copied up through the key
        t.c('BC.resize', a.resize, 56 * MiB)
        t.c('BC.size', a.size)
        t.c('BC.read', a.read, 48 * MiB - 8, 4096)
        t.c('BC.write', a.write, pat(154, 4096), 52 * MiB)
        t.c('BC.resize', a.resize, 40 * MiB + 100)
        t.c('BC.size', a.size)
        t.c('BC.read', a.read, 40 * MiB - 4096, 8192)
        t.c('BC.flatten', a.flatten)
        t.c('BC.read', a.read, 0, 8192)
        t.c('BC.read', a.read, 4 * MiB, 16384)
        t.c('BC.read', a.read, 12 * MiB + 4094, 6)
        t.c('BC.parent_info', a.parent_info)
        t.c('BC.diff_iterate', lambda: diff(a, 0, a.size(), None))
        x.close(a)
    a = x.open('BS', 'e2', snapshot='s1')
    if a:
        t.c('BS.encryption_format', a.encryption_format, L2, 'pw')
        t.c('BS.encryption_load', a.encryption_load, L2, 'pw')
        t.c('BS.size', a.size)
        t.c('BS.read', a.read, 4 * MiB + 8192, 4096)
        x.close(a)
    t.c('RBD.remove', r.remove, io, 'e2c')
    a = x.open('B2', 'e2')
    if a:
        t.c('B2.unprotect_snap', a.unprotect_snap, 's1')
        t.c('B2.remove_snap', a.remove_snap, 's1')
        t.c('B2.encryption_load', a.encryption_load, L2, 'pw')
        # a reformat replaces the key: the old data no longer decrypts
        t.c('B2.encryption_format', a.encryption_format, L1, 'pw2')
        t.c('B2.size', a.size)
        t.c('B2.write', a.write, pat(153, 4096), 0)
        t.c('B2.read', a.read, 0, 4096)
        x.close(a)
    a = x.open('B3', 'e2')
    if a:
        t.c('B3.encryption_load', a.encryption_load, L2, 'pw')
        t.c('B3.encryption_load', a.encryption_load, L1, 'pw2')
        t.c('B3.read', a.read, 0, 4096)
        x.close(a)
    t.c('RBD.remove', r.remove, io, 'e2')


def s_flags(x):
    """the flags of a view: a handle moved to a snapshot keeps reporting the
    snapshot's flags across a refresh, while HEAD's change."""
    t, r, io = x.t, x.r, x.io
    t.c('RBD.create', r.create, io, 'f1', 8 * MiB)
    a = x.open('A', 'f1')
    b = x.open('B', 'f1')
    if not a or not b:
        return
    t.c('A.write', a.write, pat(60, 4096), 0)
    t.c('A.create_snap', a.create_snap, 's1')
    t.c('A.set_snap', a.set_snap, 's1')
    t.c('A.flags', a.flags)
    # HEAD's object map flagged invalid (as a failed map update would),
    # then a header change that makes A refresh.
    hdr = 'rbd_header.' + a.id()
    t.c('set_flags(HEAD, OBJECT_MAP_INVALID)',
        lambda: io.execute(hdr, 'rbd', 'set_flags',
                           struct.pack('<QQQ', rbd.RBD_FLAG_OBJECT_MAP_INVALID,
                                       rbd.RBD_FLAG_OBJECT_MAP_INVALID,
                                       0xfffffffffffffffe)),
        _post=lambda v: None)
    t.c('B.resize', b.resize, 16 * MiB)
    t.c('B.flags', b.flags)
    t.c('A.size', a.size)
    t.c('A.flags', a.flags)
    t.c('A.set_snap', a.set_snap, None)
    t.c('A.flags', a.flags)
    t.c('A.rebuild_object_map', a.rebuild_object_map)
    t.c('A.flags', a.flags)
    t.c('A.remove_snap', a.remove_snap, 's1')
    x.close(b)
    x.close(a)
    t.c('RBD.remove', r.remove, io, 'f1')


def s_snapgone(x):
    """a handle whose snapshot is removed (by itself or another handle):
    librbd's refresh finds it gone, and from then on reads, writes,
    rollback, flags, overlap and diff fail with ImageNotFound and the
    size is 0, also when a snapshot of the same name comes back, until
    set_snap moves the handle; a handle opened at a snapshot, or moved
    to it, may remove it; a clone's handle too (the snapshot's parent
    overlap goes with it)."""
    t, r, io = x.t, x.r, x.io
    t.c('RBD.create', r.create, io, 'g1', 8 * MiB)
    w = x.open('W', 'g1')
    if not w:
        return
    t.c('W.write', w.write, pat(70, 4096), 0)
    for s in ('s', 't', 'u', 'v'):
        t.c('W.create_snap', w.create_snap, s)
    x.close(w)
    a = x.open('A', 'g1', snapshot='s')
    if not a:
        return
    t.c('A.read', a.read, 0, 4096)
    t.c('A.remove_snap(own)', a.remove_snap, 's')
    t.c('A.read', a.read, 0, 4096)
    t.c('A.size', a.size)
    t.c('A.flags', a.flags)
    t.c('A.set_snap(None)', a.set_snap, None)
    t.c('A.read', a.read, 0, 4096)
    t.c('A.set_snap', a.set_snap, 't')
    b = x.open('B', 'g1')
    if not b:
        return
    t.c('B.remove_snap', b.remove_snap, 't')

    def settled(img):
        # librbd refreshes on the header notification: wait for it.
        deadline = time.time() + 20
        while img.size() != 0 and time.time() < deadline:
            time.sleep(0.1)
        return img.size()
    t.c('A.size(settled)', lambda: settled(a))
    t.c('A.read', a.read, 0, 4096)
    t.c('A.stat.size', lambda: a.stat()['size'])
    t.c('A.flags', a.flags)
    t.c('A.overlap', a.overlap)
    t.c('A.diff_iterate', a.diff_iterate, 0, 4096, None, lambda *_: None)
    t.c('A.write', a.write, pat(71, 512), 0)
    t.c('A.rollback_to_snap', a.rollback_to_snap, 'u')
    t.c('B.create_snap(same name)', b.create_snap, 't')
    t.c('A.read', a.read, 0, 4096)
    t.c('A.list_snaps', lambda: [s['name'] for s in a.list_snaps()])
    t.c('A.set_snap', a.set_snap, 'u')
    t.c('A.read', a.read, 0, 4096)
    t.c('A.remove_snap(own, moved there)', a.remove_snap, 'u')
    t.c('A.read', a.read, 0, 4096)
    t.c('A.set_snap(None)', a.set_snap, None)
    t.c('A.read', a.read, 0, 4096)
    t.c('B.list_snaps', lambda: [s['name'] for s in b.list_snaps()])
    for s in ('t', 'v'):
        t.c('B.remove_snap', b.remove_snap, s)
    x.close(b)
    x.close(a)
    t.c('RBD.remove', r.remove, io, 'g1')
    # A clone's handle: the parent overlap of its snapshot goes with the
    # snapshot, and the handle comes back to HEAD.
    t.c('RBD.create', r.create, io, 'gp', 8 * MiB, features=1)
    p = x.open('P', 'gp')
    if not p:
        return
    t.c('P.write', p.write, pat(72, 4096), 0)
    t.c('P.create_snap', p.create_snap, 'ps')
    t.c('P.protect_snap', p.protect_snap, 'ps')
    t.c('RBD.clone', r.clone, io, 'gp', 'ps', io, 'gc', features=1)
    c = x.open('C', 'gc')
    if not c:
        return
    for s in ('cs', 'ct'):
        t.c('C.create_snap', c.create_snap, s)
    t.c('C.set_snap', c.set_snap, 'cs')
    t.c('C.read', c.read, 0, 4096)
    t.c('C.remove_snap(own)', c.remove_snap, 'cs')
    t.c('C.read', c.read, 0, 4096)
    t.c('C.size', c.size)
    t.c('C.overlap', c.overlap)
    t.c('C.set_snap(None)', c.set_snap, None)
    t.c('C.read', c.read, 0, 4096)
    t.c('C.size', c.size)
    t.c('C.set_snap', c.set_snap, 'ct')
    d = x.open('D', 'gc')
    if not d:
        return
    t.c('D.remove_snap', d.remove_snap, 'ct')
    x.close(d)

    t.c('C.size(settled)', lambda: settled(c))
    t.c('C.set_snap(None)', c.set_snap, None)
    t.c('C.read', c.read, 0, 4096)
    t.c('C.write', c.write, pat(73, 512), 0)
    t.c('C.read', c.read, 0, 4096)
    x.close(c)
    t.c('RBD.remove', r.remove, io, 'gc')
    t.c('P.unprotect_snap', p.unprotect_snap, 'ps')
    t.c('P.remove_snap', p.remove_snap, 'ps')
    x.close(p)
    t.c('RBD.remove', r.remove, io, 'gp')


def s_lockpolicy(x):
    """the application managing the exclusive lock: after lock_acquire
    (and lock_release) a handle no longer takes the lock for its writes
    (ReadOnlyImage), and while it holds it a peer's write is refused; a
    rollback from a handle that does not own the lock while another does
    is refused, not taken over."""
    t, r, io = x.t, x.r, x.io
    f = rbd.RBD_FEATURE_LAYERING | rbd.RBD_FEATURE_EXCLUSIVE_LOCK
    t.c('RBD.create', r.create, io, 'k1', 8 * MiB, features=f)
    a = x.open('A', 'k1')
    if not a:
        return
    t.c('A.lock_acquire', a.lock_acquire, rbd.RBD_LOCK_MODE_EXCLUSIVE)
    t.c('A.write', a.write, pat(80, 4096), 0)
    t.c('A.lock_release', a.lock_release)
    t.c('A.write', a.write, pat(81, 4096), 0)
    t.c('A.is_exclusive_lock_owner', a.is_exclusive_lock_owner)
    t.c('A.lock_acquire', a.lock_acquire, rbd.RBD_LOCK_MODE_EXCLUSIVE)
    b = x.open('B', 'k1')
    if not b:
        return
    t.c('B.write', b.write, pat(82, 4096), 4096)
    t.c('A.is_exclusive_lock_owner', a.is_exclusive_lock_owner)
    t.c('B.is_exclusive_lock_owner', b.is_exclusive_lock_owner)
    t.c('A.read', a.read, 0, 8192)
    x.close(b)
    x.close(a)
    t.c('RBD.create', r.create, io, 'k2', 8 * MiB, features=f)
    w = x.open('W', 'k2')
    if not w:
        return
    t.c('W.write', w.write, pat(83, 4096), 0)
    t.c('W.create_snap', w.create_snap, 's')
    x.close(w)
    c = x.open('C', 'k2')
    d = x.open('D', 'k2')
    if not c or not d:
        return
    t.c('D.write', d.write, pat(84, 4096), 0)
    t.c('C.rollback_to_snap', c.rollback_to_snap, 's')
    t.c('D.is_exclusive_lock_owner', d.is_exclusive_lock_owner)
    t.c('C.read', c.read, 0, 4096)
    x.close(d)
    t.c('C.rollback_to_snap', c.rollback_to_snap, 's')
    t.c('C.read', c.read, 0, 4096)
    t.c('C.remove_snap', c.remove_snap, 's')
    x.close(c)
    t.c('RBD.remove', r.remove, io, 'k1')
    t.c('RBD.remove', r.remove, io, 'k2')


def child_detach_raw(io, parent_id, snap_id, child_id, ns):
    """cls rbd child_detach on the parent's header: the snapshot loses
    a child without the child knowing (as a crashed removal leaves it)."""
    def enc(s):
        b = s.encode()
        return struct.pack('<I', len(b)) + b
    spec = struct.pack('<q', io.get_pool_id()) + enc(child_id) + enc(ns)
    body = struct.pack('<BBI', 2, 1, len(spec)) + spec
    return io.execute('rbd_header.' + parent_id, 'rbd', 'child_detach',
                      struct.pack('<Q', snap_id) + body)[0]


def s_removal(x):
    """what removals and snapshot removals take with them: the last clone
    v2 child of a snapshot in the trash removes it (child removed or
    flattened); rbd_remove prunes trash snapshots without children (one
    with a child attached refuses it, ImageHasSnapshots); a snapshot
    removal detaches children whose pool was deleted, and list_children2
    and list_descendants report what is left."""
    t, r, io = x.t, x.r, x.io
    x.cluster.conf_set('rbd_default_clone_format', '2')
    f = rbd.RBD_FEATURE_LAYERING

    def snaps(img):
        return [(s['namespace'], s['name'] if s['namespace'] == 0 else '')
                for s in img.list_snaps()]
    t.c('RBD.create', r.create, io, 'p1', 8 * MiB, features=f)
    p = x.open('P', 'p1')
    if not p:
        return
    t.c('P.create_snap', p.create_snap, 's')
    for c in ('c1', 'c2', 'c3'):
        t.c('RBD.clone', r.clone, io, 'p1', 's', io, c, features=f)
    t.c('P.remove_snap', p.remove_snap, 's')
    t.c('P.snaps', snaps, p)
    t.c('RBD.remove(c1)', r.remove, io, 'c1')
    t.c('P.snaps', snaps, p)
    c = x.open('C2', 'c2')
    if c:
        t.c('C2.flatten', c.flatten)
        x.close(c)
    t.c('P.snaps', snaps, p)
    t.c('RBD.remove(c3: the last child)', r.remove, io, 'c3')
    t.c('P.snaps', snaps, p)
    t.c('P.create_snap', p.create_snap, 't')
    t.c('RBD.clone', r.clone, io, 'p1', 't', io, 'c4', features=f)
    t.c('P.remove_snap', p.remove_snap, 't')
    c = x.open('C4', 'c4')
    if c:
        t.c('C4.flatten(the last child)', c.flatten)
        x.close(c)
    t.c('P.snaps', snaps, p)
    t.c('P.create_snap', p.create_snap, 'u')
    t.c('P.create_snap', p.create_snap, 'v')
    t.c('RBD.clone', r.clone, io, 'p1', 'u', io, 'c5', features=f)
    t.c('P.remove_snap', p.remove_snap, 'u')
    t.c('P.remove_snap', p.remove_snap, 'v')
    x.close(p)
    t.c('RBD.remove(trash snapshot with a child)', r.remove, io, 'p1')
    p = x.open('P', 'p1')
    if not p:
        return
    t.c('P.snaps', snaps, p)
    sid = ([s['id'] for s in p.list_snaps()] or [0])[0]
    pid = p.id()
    x.close(p)
    c = x.open('C5', 'c5')
    cid = c.id() if c else ''
    x.close(c)
    t.c('child_detach(raw)', child_detach_raw, io, V(pid), V(sid), V(cid), x.ns)
    t.c('RBD.remove(trash snapshot, no child)', r.remove, io, 'p1')
    t.c('RBD.remove(c5)', r.remove, io, 'c5')
    t.c('RBD.remove(c2)', r.remove, io, 'c2')

    # children in a pool that is deleted
    pools = ['%s-rm%d' % (x.prefix, i) for i in (1, 2)]
    for pn in pools:
        t.c('Rados.create_pool', x.cluster.create_pool, V(pn))
    ios = [x.cluster.open_ioctx(pn) for pn in pools]
    for i in ios:
        t.c('RBD.pool_init', r.pool_init, i, True)
    label = {pools[0]: 'POOL1', pools[1]: 'POOL2'}

    def kids(l):
        return sorted((label.get(k['pool'], k['pool']), k['image'], k['trash'])
                      for k in l)
    t.c('RBD.create', r.create, ios[0], 'par', 4 * MiB, features=f)
    p = x.open('P', 'par', io=ios[0])
    if not p:
        return
    t.c('P.create_snap', p.create_snap, 'snap1')
    t.c('P.create_snap', p.create_snap, 'snap2')
    t.c('RBD.clone', r.clone, ios[0], 'par', 'snap1', ios[1], 'child1', features=f)
    t.c('RBD.clone', r.clone, ios[0], 'par', 'snap2', ios[0], 'child2', features=f)
    t.c('RBD.clone', r.clone, ios[0], 'par', 'snap2', ios[1], 'child3', features=f)
    t.c('P.list_children2', p.list_children2, _post=kids)
    ios[1].close()
    t.c('Rados.delete_pool', x.cluster.delete_pool, V(pools[1]))
    x.cluster.wait_for_latest_osdmap()
    for step in ('snap1', 'child2', 'snap2'):
        t.c('P.list_children2', p.list_children2, _post=kids)
        t.c('P.list_descendants', p.list_descendants, _post=kids)
        if step == 'child2':
            t.c('RBD.remove', r.remove, ios[0], 'child2')
        else:
            t.c('P.remove_snap', p.remove_snap, step)
        t.c('P.snaps', snaps, p)
    t.c('P.list_children2', p.list_children2, _post=kids)
    x.close(p)
    t.c('RBD.remove', r.remove, ios[0], 'par')
    ios[0].close()
    t.c('Rados.delete_pool', x.cluster.delete_pool, V(pools[0]))


def s_format1(x):
    """format 1 images: refused without RBD_FORCE_ALLOW_V1
    (InvalidArgument), made (by the system's librbd under librbdlite),
    listed, opened and removed with it."""
    t, r, io0 = x.t, x.r, x.io0
    x.cluster.conf_set('rbd_default_format', '1')
    name = x.prefix + '-f1'
    os.environ.pop('RBD_FORCE_ALLOW_V1', None)
    # old_format: rbd_create, whose format is rbd_default_format's
    t.c('RBD.create', r.create, io0, V(name), 4 * MiB, old_format=True)
    os.environ['RBD_FORCE_ALLOW_V1'] = '1'
    t.c('RBD.create', r.create, io0, V(name), 4 * MiB, old_format=True)
    t.c('RBD.create(again)', r.create, io0, V(name), 4 * MiB, old_format=True)
    t.c('RBD.list', lambda: [n for n in r.list(io0) if n == name])
    a = x.open('A', V(name), io=io0)
    if a:
        whole_image_calls(x, a, 'A')
        x.close(a)
    a = x.open('A2', V(name), io=io0, snapshot='s1')
    if a:
        t.c('A2.read', a.read, 0, 8192)
        t.c('A2.write', a.write, b'x' * 512, 0)
        x.close(a)
    a = x.open('A3', V(name), io=io0)
    if a:
        t.c('A3.remove_snap', a.remove_snap, 's1')
        x.close(a)
    t.c('RBD.rename', r.rename, io0, V(name), V(name + 'r'))
    t.c('RBD.list', lambda: [n for n in r.list(io0) if n.startswith(name)])
    t.c('RBD.trash_move', r.trash_move, io0, V(name + 'r'), 0)
    t.c('RBD.remove', r.remove, io0, V(name + 'r'))
    t.c('RBD.list', lambda: [n for n in r.list(io0) if n.startswith(name)])


def whole_image_calls(x, a, n):
    """The everyday calls on an image the system's librbd serves whole
    under librbdlite (format 1, an import's destination)."""
    t = x.t
    t.c(n + '.old_format', a.old_format)
    t.c(n + '.size', a.size)
    t.c(n + '.stat', a.stat, _post=lambda d: {k: v for k, v in d.items()
                                          if k != 'block_name_prefix'})
    t.c(n + '.features', a.features)
    t.c(n + '.write', a.write, pat(130, 8192), 0)
    t.c(n + '.read', a.read, 0, 8192)
    t.c(n + '.discard', a.discard, 4096, 4096)
    t.c(n + '.read', a.read, 0, 8192)
    aio(x, n + '.aio_write', a.aio_write, pat(131, 4096), 4096)
    aio(x, n + '.aio_read', a.aio_read, 0, 8192)
    aio(x, n + '.aio_flush', a.aio_flush)
    t.c(n + '.flush', a.flush)
    t.c(n + '.create_snap', a.create_snap, 's1')
    t.c(n + '.list_snaps', lambda: [s['name'] for s in a.list_snaps()])
    t.c(n + '.write', a.write, pat(132, 4096), 0)
    t.c(n + '.resize', a.resize, 8 * MiB)
    t.c(n + '.size', a.size)
    t.c(n + '.diff_iterate', lambda: (lambda l: (a.diff_iterate(
        0, 8 * MiB, 's1', lambda *e: l.append(e)), l)[1])([]))
    t.c(n + '.metadata_set', a.metadata_set, 'k', 'v')
    t.c(n + '.metadata_get', a.metadata_get, 'k')
    t.c(n + '.lock_exclusive', a.lock_exclusive, 'c1')
    t.c(n + '.list_lockers', a.list_lockers, _post=lambda l: l and l.get('tag'))
    t.c(n + '.unlock', a.unlock, 'c1')
    t.c(n + '.get_name', a.get_name, _kind='name')


def s_migimport(x):
    """a migration from an import source spec (native, at a snapshot of
    an image of ours): its destination opens, reads through to the
    source, takes writes, and executes and commits (the system's librbd
    serves it under librbdlite until it is executed)."""
    t, r, io = x.t, x.r, x.io
    t.c('RBD.create', r.create, io, 'src', 8 * MiB)
    a = x.open('S', 'src')
    if not a:
        return
    t.c('S.write', a.write, pat(140, 8192), 0)
    t.c('S.create_snap', a.create_snap, 's')
    x.close(a)
    spec = json.dumps({'type': 'native', 'pool_name': x.pool,
                       'pool_namespace': x.ns, 'image_name': 'src',
                       'snap_name': 's'})
    t.c('RBD.migration_prepare_import', r.migration_prepare_import, V(spec), io, 'dst')
    d = x.open('D', 'dst')
    if d:
        t.c('D.read', d.read, 0, 8192)
        t.c('D.write', d.write, pat(141, 512), 4096)
        t.c('D.read', d.read, 0, 8192)
        aio(x, 'D.aio_read', d.aio_read, 0, 8192)
        t.c('D.size', d.size)
        t.c('D.list_snaps', lambda: [s['name'] for s in d.list_snaps()])
        x.close(d)
    t.c('RBD.migration_status', r.migration_status, io, 'dst', _post=lambda m: m['state'])
    t.c('RBD.migration_execute', r.migration_execute, io, 'dst')
    t.c('RBD.migration_commit', r.migration_commit, io, 'dst')
    d = x.open('D2', 'dst')
    if d:
        t.c('D2.read', d.read, 0, 8192)
        t.c('D2.list_snaps', lambda: [s['name'] for s in d.list_snaps()])
        for s in d.list_snaps():
            t.c('D2.remove_snap', d.remove_snap, s['name'])
        x.close(d)
    t.c('RBD.remove', r.remove, io, 'dst')
    a = x.open('S2', 'src')
    if a:
        t.c('S2.remove_snap', a.remove_snap, 's')
        x.close(a)
    t.c('RBD.remove', r.remove, io, 'src')


def s_final(x):
    """what the section left in its namespace (nothing)."""
    t, r, io = x.t, x.r, x.io
    t.c('RBD.list', r.list, io)
    t.c('RBD.trash_list', r.trash_list, io)
    t.c('RBD.group_list', r.group_list, io)
    t.c('RBD.pool_stats_get', r.pool_stats_get, io)
    t.c('RBD.pool_metadata_list', r.pool_metadata_list, io)


def s_aio_buffers(x):
    """aio_write keeps no reference to the bytes it was given: 32 writes
    each made from a bytes object dropped as the call returns (and the
    memory reused at once), where the library keeps the write past the
    call: a fresh open (the exclusive lock not owned yet), fresh objects
    under the object map, a clone's copy-up, a journaled image's first
    writes; then 16 overlapping writes in flight at once.  Every range must
    hold its own write's data (the overlapped ones: each block one of the
    writes covering it)."""
    t, r, io = x.t, x.r, x.io
    JF = (rbd.RBD_FEATURE_LAYERING | rbd.RBD_FEATURE_EXCLUSIVE_LOCK |
          rbd.RBD_FEATURE_JOURNALING)
    n, ln = 32, 65536

    def burst(img, label, base, seed):
        comps, got, junk = [], [], []
        t.start('%s.aio_write x%d (bytes dropped)' % (label, n), (), {})
        for i in range(n):
            comps.append(img.aio_write(pat(seed + i, ln), base + i * 2 * ln,
                                       lambda c, i=i: got.append((i, c.get_return_value()))))
            junk.append(b'\xee' * ln)
        for c in comps:
            c.wait_for_complete_and_cb()
        t.line(t.fmt(sorted(got)))
        back = [img.read(base + i * 2 * ln, ln) for i in range(n)]
        t.note('%s ranges holding their write' % label,
               sum(back[i] == pat(seed + i, ln) for i in range(n)))

    # 128 KiB objects: each write of a burst is to an object of its own
    t.c('RBD.create', r.create, io, 'b1', 16 * MiB, order=17)
    a = x.open('B1', 'b1')
    if a:
        burst(a, 'B1 fresh open', 0, 300)
        burst(a, 'B1 fresh objects', 4 * MiB, 400)
        # overlapping, all in flight at once
        comps = []
        t.start('B1.aio_write x16 overlapping (bytes dropped)', (), {})
        for i in range(16):
            comps.append(a.aio_write(pat(500 + i, ln), 4096 * i, lambda c: None))
        for c in comps:
            c.wait_for_complete_and_cb()
        t.line(t.fmt([c.get_return_value() for c in comps]))
        # The order in which overlapping writes in flight land is not
        # defined (librbd's varies); each 4 KiB block must hold the data
        # of one of the writes that cover it, never bytes no write used.
        data = a.read(0, 15 * 4096 + ln)
        wrote = [pat(500 + i, ln) for i in range(16)]

        def block_ok(b):
            blk = data[b * 4096:(b + 1) * 4096]
            return any(blk == wrote[i][(b - i) * 4096:(b - i + 1) * 4096]
                       for i in range(16) if i <= b < i + ln // 4096)
        t.note('B1 overlapped: every block holds one covering write',
               all(block_ok(b) for b in range(len(data) // 4096)))
        x.close(a)
    t.c('RBD.create', r.create, io, 'bp', 8 * MiB, order=17)
    p = x.open('BP', 'bp')
    if p:
        t.c('BP.write', p.write, pat(600, 8 * MiB), 0)
        t.c('BP.create_snap', p.create_snap, 's')
        t.c('BP.protect_snap', p.protect_snap, 's')
        x.close(p)
        t.c('RBD.clone', r.clone, io, 'bp', 's', io, 'bc')
        c = x.open('BC', 'bc')
        if c:
            # partial objects: each write copies its object up first
            burst(c, 'BC copy-up', 4096, 700)
            x.close(c)
        t.c('RBD.remove', r.remove, io, 'bc')
        p = x.open('BP2', 'bp')
        if p:
            t.c('BP2.unprotect_snap', p.unprotect_snap, 's')
            t.c('BP2.remove_snap', p.remove_snap, 's')
            x.close(p)
    t.c('RBD.create', r.create, io, 'bj', 8 * MiB, features=JF)
    j = x.open('BJ', 'bj')
    if j:
        burst(j, 'BJ journaled', 0, 800)
        x.close(j)
    for name in ('b1', 'bp', 'bj'):
        t.c('RBD.remove', r.remove, io, name)


def s_snapview(x):
    """the calls on a read-write handle moved to a snapshot (set_snap) and
    on read-only opens: what librbd refuses there and with which errno
    (no managed lock: the lock calls give InvalidArgument; a flatten of
    an image without parent InvalidArgument, of a clone ReadOnlyImage),
    what it allows (snapshot removal, also on a journaled image, whose
    changes run on the system's librbd: the handle's own snapshot is
    gone for its next read), and the handle back at HEAD."""
    t, r, io = x.t, x.r, x.io
    JF = (rbd.RBD_FEATURE_LAYERING | rbd.RBD_FEATURE_EXCLUSIVE_LOCK |
          rbd.RBD_FEATURE_OBJECT_MAP | rbd.RBD_FEATURE_FAST_DIFF |
          rbd.RBD_FEATURE_DEEP_FLATTEN | rbd.RBD_FEATURE_JOURNALING)
    for name, feats in (('v1', None), ('v2', rbd.RBD_FEATURE_LAYERING),
                        ('vj', JF)):
        t.c('RBD.create', r.create, io, name, 8 * MiB, features=feats)
        a = x.open('A', name)
        if not a:
            continue
        t.c('A.write', a.write, pat(80, 4096), 0)
        for s in ('s1', 's2', 's3', 's4'):
            t.c('A.create_snap', a.create_snap, s)
        t.c('A.write', a.write, pat(81, 4096), 0)
        t.c('A.set_snap', a.set_snap, 's1')
        t.c('A.is_exclusive_lock_owner', a.is_exclusive_lock_owner)
        t.c('A.lock_get_owners', lambda: list(a.lock_get_owners()))
        t.c('A.lock_acquire', a.lock_acquire, rbd.RBD_LOCK_MODE_EXCLUSIVE)
        t.c('A.lock_release', a.lock_release)
        t.c('A.lock_break', a.lock_break, rbd.RBD_LOCK_MODE_EXCLUSIVE, 'x')
        t.c('A.flatten', a.flatten)
        t.c('A.metadata_set', a.metadata_set, 'k', 'v')
        t.c('A.resize', a.resize, 16 * MiB)
        t.c('A.rollback_to_snap', a.rollback_to_snap, 's2')
        t.c('A.update_features', a.update_features,
            rbd.RBD_FEATURE_FAST_DIFF, False)
        t.c('A.write', a.write, pat(82, 512), 0)
        t.c('A.remove_snap', a.remove_snap, 's2')
        t.c('A.remove_snap2', a.remove_snap2, 's3', 0)
        sid = [s['id'] for s in a.list_snaps() if s['name'] == 's4']
        t.c('A.remove_snap_by_id(s4)',
            lambda: a.remove_snap_by_id(sid[0] if sid else 0))
        t.c('A.read', a.read, 0, 4096)
        t.c('A.list_snaps', lambda: [s['name'] for s in a.list_snaps()])
        t.c('A.remove_snap(own)', a.remove_snap, 's1')
        t.c('A.read', a.read, 0, 4096)
        t.c('A.size', a.size)
        t.c('A.set_snap(None)', a.set_snap, None)
        t.c('A.write', a.write, pat(83, 512), 0)
        t.c('A.is_exclusive_lock_owner', a.is_exclusive_lock_owner)
        t.c('A.read', a.read, 0, 4096)
        t.c('A.list_snaps', lambda: [s['name'] for s in a.list_snaps()])
        x.close(a)
        b = x.open('B', name, read_only=True)
        if b:
            t.c('B.lock_acquire', b.lock_acquire, rbd.RBD_LOCK_MODE_EXCLUSIVE)
            t.c('B.lock_release', b.lock_release)
            t.c('B.lock_get_owners', lambda: list(b.lock_get_owners()))
            t.c('B.lock_break', b.lock_break, rbd.RBD_LOCK_MODE_EXCLUSIVE, 'x')
            t.c('B.flatten', b.flatten)
            x.close(b)
    # A clone moved to a snapshot: its flatten is refused as read-only.
    p = x.open('P', 'v2')
    if p:
        t.c('P.create_snap', p.create_snap, 'ps')
        t.c('P.protect_snap', p.protect_snap, 'ps')
        t.c('RBD.clone', r.clone, io, 'v2', 'ps', io, 'vc',
            features=rbd.RBD_FEATURE_LAYERING)
        c = x.open('C', 'vc')
        if c:
            t.c('C.create_snap', c.create_snap, 'cs')
            t.c('C.set_snap', c.set_snap, 'cs')
            t.c('C.flatten', c.flatten)
            t.c('C.set_snap(None)', c.set_snap, None)
            t.c('C.remove_snap', c.remove_snap, 'cs')
            x.close(c)
        t.c('RBD.remove', r.remove, io, 'vc')
        t.c('P.unprotect_snap', p.unprotect_snap, 'ps')
        t.c('P.remove_snap', p.remove_snap, 'ps')
        x.close(p)
    for name in ('v1', 'v2', 'vj'):
        t.c('RBD.remove', r.remove, io, name)


SECTIONS = [
    ('pool_basics', s_pool_basics),
    ('create', s_create),
    ('open', s_open),
    ('info', s_info),
    ('io', s_io),
    ('aio_buffers', s_aio_buffers),
    ('snaps', s_snaps),
    ('resize', s_resize),
    ('clone', s_clone),
    ('copy', s_copy),
    ('features', s_features),
    ('flags', s_flags),
    ('snapgone', s_snapgone),
    ('snapview', s_snapview),
    ('lockpolicy', s_lockpolicy),
    ('removal', s_removal),
    ('format1', s_format1),
    ('migimport', s_migimport),
    ('metadata', s_metadata),
    ('locks', s_locks),
    ('trash', s_trash),
    ('groups', s_groups),
    ('namespaces', s_namespaces),
    ('mirror', s_mirror),
    ('mirror_cleanup', s_mirror_cleanup),
    ('journal', s_journal),
    ('migration', s_migration),
    ('encryption', s_encryption),
    ('encryption2', s_encryption2),
    ('final', s_final),
]


# ----------------------------------------------------------------------
# Drivers


def run_section(prefix, name):
    fn = dict(SECTIONS)[name]
    # PYRBD_ABORT_ONCE=SECTION:FILE aborts SECTION the first time (while
    # FILE does not exist): how test-python.sh's rerun of a reference
    # section that crashed inside librbd is exercised.
    once = os.environ.get('PYRBD_ABORT_ONCE', '').split(':', 1)
    if len(once) == 2 and once[0] == name and not os.path.exists(once[1]):
        open(once[1], 'w').close()
        os.abort()
    x = Ctx(prefix, name, sys.stdout)
    try:
        fn(x)
    finally:
        x.done()


# Sections that spend their time in CPU-bound key derivation, and touch
# nothing another section looks at: started first, alongside the others.
BACKGROUND = {'encryption', 'encryption2'}


def start_section(prefix, name):
    """Start section name in a child process; output to temporary files."""
    out = tempfile.TemporaryFile()
    err = tempfile.TemporaryFile()
    cmd = [sys.executable, os.path.abspath(__file__), 'section', prefix, name]
    return (subprocess.Popen(cmd, stdout=out, stderr=err), out, err, time.time(),
            SLOW_SECTIONS.get(name, SECTION_TIMEOUT))


def finish_section(child):
    """Wait for a child of start_section(): (stdout, stderr, status), the
    status 'timeout' after SECTION_TIMEOUT seconds, or the section's
    SLOW_SECTIONS limit (then it is killed)."""
    p, out, err, t0, limit = child
    try:
        rc = p.wait(timeout=max(1, limit - (time.time() - t0)))
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        rc = 'timeout'
    res = []
    for f in (out, err):
        f.seek(0)
        res.append(f.read().decode(errors='replace'))
        f.close()
    return res[0], res[1], rc


def run(prefix, names):
    ok = True
    bg = {n: start_section(prefix, n) for n in names if n in BACKGROUND}
    for name in names:
        print('== section %s' % name, flush=True)
        child = bg.get(name) or start_section(prefix, name)
        out, err, rc = finish_section(child)
        sys.stdout.write(out)
        if os.environ.get('PYRBD_TIMES'):
            sys.stderr.write('pyrbd_script: time: section %s: %.1fs\n' % (name, time.time() - child[3]))
        partial = out != '' and not out.endswith('\n')
        if rc == 0:
            continue
        ok = False
        last = out.rstrip('\n').split('\n')[-1] if out else '(no call)'
        if rc == 'timeout':
            what = 'TIMEOUT(%ds)' % child[4]
        elif rc < 0:
            what = 'CRASH(signal %d)' % -rc
        else:
            what = 'EXIT(%s)' % rc
        if partial:
            sys.stdout.write(what + '\n')
        sys.stdout.write('!! section %s: %s%s\n' % (name, what, '' if partial else ' after the last call'))
        sys.stdout.flush()
        sys.stderr.write('pyrbd_script: section %s: %s in or after: %s\n' % (name, what, last))
        tail = [l for l in err.split('\n') if l.strip()][-8:]
        for l in tail:
            sys.stderr.write('    | %s\n' % l)
    return ok


def whoami():
    """Print which file the process' librbd.so.1 (the library python's rbd
    module was linked with) is, whether it is librbdlite, and whether
    librbdlite is in the global scope (preloaded)."""
    import ctypes

    class DlInfo(ctypes.Structure):
        _fields_ = [('dli_fname', ctypes.c_char_p), ('dli_fbase', ctypes.c_void_p),
                    ('dli_sname', ctypes.c_char_p), ('dli_saddr', ctypes.c_void_p)]

    libc = ctypes.CDLL(None)
    try:
        lib = ctypes.CDLL('librbd.so.1', mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError:
        print('librbd.so.1 not loaded')
        return
    info = DlInfo()
    addr = ctypes.cast(lib.rbd_open, ctypes.c_void_p)
    path = '?'
    if libc.dladdr(addr, ctypes.byref(info)):
        path = os.path.realpath(info.dli_fname.decode())
    print('librbd.so.1=%s lite=%s global-lite=%s' %
          (path, 'yes' if hasattr(lib, 'rbdlite_is_librbdlite') else 'no',
           'yes' if hasattr(libc, 'rbdlite_is_librbdlite') else 'no'))


def cleanup(prefix):
    """Remove everything a run may have left: best effort, real librbd."""
    c = rados.Rados(conffile=os.environ['CEPH_CONF'])
    c.connect(timeout=30)
    pool = os.environ['RBDLITE_TEST_POOL']
    r = rbd.RBD()
    left = []
    io0 = c.open_ioctx(pool)
    deadline = time.time() + 60

    def ignore(f, *a, **kw):
        try:
            return f(*a, **kw)
        except Exception:       # pylint: disable=broad-except
            return None

    # mirror peers of this prefix, pool mirroring off
    for p in ignore(lambda: list(r.mirror_peer_list(io0))) or []:
        if p.get('site_name', '').startswith(prefix) or p.get('cluster_name', '').startswith(prefix):
            ignore(r.mirror_peer_remove, io0, p['uuid'])
    nss = [n for n in (ignore(lambda: list(r.namespace_list(io0))) or []) if n.startswith(prefix)]
    ios = []
    for ns in [''] + nss:
        io = c.open_ioctx(pool)
        io.set_namespace(ns)
        ios.append((ns, io))
    for ns, io in ios:
        for g in ignore(lambda: list(r.group_list(io))) or []:
            if ns or g.startswith(prefix):
                ignore(r.group_remove, io, g)
    while True:
        busy = False
        for ns, io in ios:
            names = [n for n in (ignore(r.list, io) or []) if ns or n.startswith(prefix)]
            for n in names:
                ignore(r.migration_abort, io, n)
                try:
                    with rbd.Image(io, n) as img:
                        ignore(img.mirror_image_disable, True)
                        for s in ignore(lambda: list(img.list_snaps())) or []:
                            ignore(img.remove_snap2, s['name'], rbd.RBD_SNAP_REMOVE_UNPROTECT |
                                   rbd.RBD_SNAP_REMOVE_FORCE)
                except Exception:   # pylint: disable=broad-except
                    pass
                try:
                    r.remove(io, n)
                except Exception:   # pylint: disable=broad-except
                    busy = True
            for e in ignore(lambda: list(r.trash_list(io))) or []:
                if ns or e['name'].startswith(prefix):
                    try:
                        r.trash_remove(io, e['id'], force=True)
                    except Exception:   # pylint: disable=broad-except
                        busy = True
        if not busy or time.time() > deadline:
            break
        time.sleep(3)
    for ns, io in ios:
        if ns:
            ignore(r.mirror_mode_set, io, rbd.RBD_MIRROR_MODE_DISABLED)
            if ignore(r.namespace_remove, io0, ns) is None and ignore(r.namespace_exists, io0, ns):
                left.append(ns)
    ignore(r.mirror_mode_set, io0, rbd.RBD_MIRROR_MODE_DISABLED)
    for n in ignore(r.list, io0) or []:
        if n.startswith(prefix):
            left.append(n)
    for _, io in ios:
        io.close()
    io0.close()
    c.shutdown()
    if left:
        print('pyrbd_script cleanup: left behind: %s' % ' '.join(left), file=sys.stderr)
        return False
    return True


def setup(prefix):
    c = rados.Rados(conffile=os.environ['CEPH_CONF'])
    c.connect(timeout=30)
    io0 = c.open_ioctx(os.environ['RBDLITE_TEST_POOL'])
    for name, _ in SECTIONS:
        rbd.RBD().namespace_create(io0, namespace(prefix, name))
    # The mirror section leaves the pool's default namespace in image
    # mirroring mode (and so with a mirror uuid); put it there now, so
    # that every run starts from the same pool, the first one included,
    # whatever the cluster did before.
    if rbd.RBD().mirror_mode_get(io0) == rbd.RBD_MIRROR_MODE_DISABLED:
        rbd.RBD().mirror_mode_set(io0, rbd.RBD_MIRROR_MODE_IMAGE)
    io0.close()
    c.shutdown()


def main(argv):
    if len(argv) >= 2 and argv[1] == 'sections':
        print(' '.join(n for n, _ in SECTIONS))
        return 0
    if len(argv) >= 2 and argv[1] == 'whoami':
        whoami()
        return 0
    if len(argv) == 3 and argv[1] == 'journal-events':
        c = rados.Rados(conffile=os.environ['CEPH_CONF'])
        c.connect(timeout=30)
        io = c.open_ioctx(os.environ['RBDLITE_TEST_POOL'])
        with rbd.Image(io, argv[2], read_only=True) as img:
            image_id = img.id()
        for ev in sorted(journal_events(io, image_id, merge=False)):
            print(ev)
        io.close()
        c.shutdown()
        return 0
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    cmd, prefix = argv[1], argv[2]
    if cmd == 'run':
        names = argv[3:] or [n for n, _ in SECTIONS]
        bad = [n for n in names if n not in dict(SECTIONS)]
        if bad:
            sys.stderr.write('unknown section(s): %s\n' % ' '.join(bad))
            return 2
        return 0 if run(prefix, names) else 1
    if cmd == 'section' and len(argv) == 4:
        run_section(prefix, argv[3])
        return 0
    if cmd == 'setup':
        setup(prefix)
        return 0
    if cmd == 'cleanup':
        return 0 if cleanup(prefix) else 1
    sys.stderr.write(__doc__)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
