#!/usr/bin/env bash
# test-imageapi.sh - image information, metadata listing and removal,
# advisory locks, resize and remove with progress, the read and diff
# walks, rename and the aio open/close of librbdlite, judged against the
# real librbd 16.2 and the rbd CLI.
#
# Differential: for each of four layouts (default features, the image in
# a group; layering only; default features striped 1 MiB x 2; clones v2
# of a parent with data, each with a snapshot, so that shrinks copy up
# first) twin images are made, one driven by imageapi-lite (librbdlite),
# the other by imageapi-librbd (librbd), with the same modes of
# tests/cluster/imageapi.c (seed, info, meta, config, locks with a second
# process whose lock is broken and the managed lock taken by a write,
# keeplocks, iterate, resize, aio, rename, cancelshrink, remove, remove2).
# Every mode's output (return values, lengths the buffer-size protocol
# reports, every (name, value, source) of rbd_config_image_list, names
# with the image's own name masked, locker lists with clients as
# self/other, progress callbacks counted with their first and last
# arguments, cancellations, read checksums, diff extents, completion
# values) must be equal line for line; timestamps are checked for
# plausibility in the program (recent, create <= access and modify).  The
# lite build also checks its NULL- and closed-handle calls ("lite-only"
# lines, all -EINVAL; librbd would crash).  The config mode runs with
# pool overrides (`rbd config pool set`: rbd_cache false, a non-default
# rbd_mtime_update_interval, an rbd_atime_update_interval the image
# overrides again) and image overrides (`rbd config image set`:
# rbd_readahead_max_bytes 0, rbd_atime_update_interval), plus "conf_"
# keys written raw (`rbd image-meta set` refuses them) that must not be
# listed: an unknown option (image and pool) and rbd_default_order (not
# an image option); all are removed right after it (the pool's also by
# the cleanup).  Then the rbd CLI judges both
# twins alike:
#   - `rbd image-meta list` after the metadata calls;
#   - `rbd lock ls` after the lock calls (none left) and after keeplocks
#     (two shared locks keep1/keep2, tag kt, lockers and addresses masked);
#   - `rbd status` while each program holds its image open (one watcher);
#   - `rbd info` (minus names, ids, prefixes and timestamps) and
#     `rbd export | md5sum` after resize and aio; the image's flags after
#     `rbd object-map check`;
#   - `rbd ls` after rename (old name back, the temporary name gone);
#   - after a shrink cancelled by its callback: `rbd object-map check`
#     finds the same entries (the PENDING ones librbd leaves) and `rbd
#     info` the same flags;
#   - after a removal cancelled by its callback: the image waits in the
#     pool's trash with source REMOVING (read raw: `rbd trash ls` hides
#     such entries, `rbd ls` lists them), its id object gone, as librbd
#     leaves it; after remove2: no trash entry, no listing, no id object.
# RBDLITE_IMAGEAPI_SETS="def lay str cln" runs a subset.
#
# Needs CEPH_CONF, RBDLITE_TEST_POOL (fails, never skips, without them),
# rbd, rados and python3.  Prints "N passed, M failed" last; exits
# non-zero on any failure.

set -uo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

# shellcheck source=tests/cluster/testlib.sh
. "$HERE/testlib.sh"
rbdl_need_cluster CEPH_CONF RBDLITE_TEST_POOL
rbdl_need_cmds rbd rados timeout md5sum python3 diff
rbdl_twins imageapi
rbdl_need_progs "$LITE" "$REF"
rbdl_find_python || die "no python3 with the rados and rbd modules"
TMO=${RBDLITE_IMAGEAPI_TIMEOUT:-180}
rbdl_workdir imageapi
IMAGES=()
BG=()
GROUP=imgapi-grp$$

# shellcheck disable=SC2317 # runs from the EXIT trap
cleanup() {
    rbdl_kill_bg
    pool_conf rm
    c_rbd group rm "$POOL/$GROUP" >/dev/null 2>&1
    rbdl_remove_images 90 "$POOL/"
    rbdl_rm_workdir
}
rbdl_traps

prog_of() { [[ $1 == lite ]] && echo "$LITE" || echo "$REF"; }

# pool_conf set|rm: the pool overrides of the config mode, and a raw
# "conf_" key of an unknown option in the pool's rbd_info (rm: only if
# set, errors ignored; the cleanup runs it too).
POOL_CONF=(rbd_cache=false rbd_mtime_update_interval=120 rbd_atime_update_interval=90)
RAW_UNKNOWN=metadata_conf_rbd_nosuch_option
POOL_CONF_SET=0
pool_conf() {
    local kv
    if [[ $1 == set ]]; then
        POOL_CONF_SET=1
        for kv in "${POOL_CONF[@]}"; do
            c_rbd config pool set "$POOL" "${kv%%=*}" "${kv#*=}" || return 1
        done
        rados -p "$POOL" setomapval rbd_info "$RAW_UNKNOWN" x
    elif ((POOL_CONF_SET)); then
        for kv in "${POOL_CONF[@]}"; do
            c_rbd config pool rm "$POOL" "${kv%%=*}" >/dev/null 2>&1
        done
        rados -p "$POOL" rmomapkey rbd_info "$RAW_UNKNOWN" >/dev/null 2>&1
        POOL_CONF_SET=0
    fi
}

# image_conf set|rm IMAGE: the image overrides of the config mode, and
# raw "conf_" keys librbd does not list for an image (an unknown option,
# rbd_default_order) in its header.
image_conf() {
    local id
    id=$(c_rbd info --format json "$POOL/$2" |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])') || return 1
    if [[ $1 == set ]]; then
        c_rbd config image set "$POOL/$2" rbd_readahead_max_bytes 0 &&
            c_rbd config image set "$POOL/$2" rbd_atime_update_interval 30 &&
            rados -p "$POOL" setomapval "rbd_header.$id" "$RAW_UNKNOWN" x &&
            rados -p "$POOL" setomapval "rbd_header.$id" metadata_conf_rbd_default_order 20
    else
        c_rbd config image rm "$POOL/$2" rbd_readahead_max_bytes
        c_rbd config image rm "$POOL/$2" rbd_atime_update_interval
        rados -p "$POOL" rmomapkey "rbd_header.$id" "$RAW_UNKNOWN"
        rados -p "$POOL" rmomapkey "rbd_header.$id" metadata_conf_rbd_default_order
    fi
}

# run SET SIDE MODE IMAGE [ARG]: output in $TMP/SET.MODE.SIDE
run() {
    local set=$1 side=$2 mode=$3
    shift 3
    rbdl_run_prog "$set/$side: $mode" "$TMP/$set.$mode.$side" "$TMO" \
        "$(prog_of "$side")" "$mode" "$POOL" "$@"
}

# lite_only LABEL FILE N: FILE has N lite-only lines (librbdlite's NULL-
# and closed-handle calls, which librbd would crash on), all -EINVAL.
lite_only() {
    local n bad
    n=$(grep -c '^lite-only ' "$2")
    bad=$(grep '^lite-only ' "$2" | grep -vc 'r=-22$')
    if ((n == $3 && bad == 0)); then
        pass "$1 NULL and closed handles give -EINVAL ($n calls)"
    else
        fail "$1 NULL and closed handles" "$n lite-only lines, $bad not -EINVAL"
        grep '^lite-only ' "$2" | grep -v 'r=-22$' | head -n 5 | sed 's/^/    | /'
    fi
}

# same NAME FILE_LITE FILE_REF: the outputs (lite-only lines aside) agree
same() {
    grep -v '^lite-only ' "$2" >"$2.cmp"
    if diff -u "$3" "$2.cmp" >"$TMP/diff.out" 2>&1; then
        pass "$1"
    else
        fail "$1" "librbdlite (+) and librbd (-) differ"
        head -n 30 "$TMP/diff.out" | sed 's/^/    | /'
    fi
}

# mode SET MODE ARGS_LITE... -- ARGS_REF...: run both sides, compare
mode() {
    local set=$1 m=$2 a=() b=() cur=a x
    shift 2
    for x in "$@"; do
        if [[ $x == -- ]]; then cur=b; continue; fi
        if [[ $cur == a ]]; then a+=("$x"); else b+=("$x"); fi
    done
    run "$set" lite "$m" "${a[@]}"
    run "$set" ref "$m" "${b[@]}"
    same "$set: $m output equal to librbd's" "$TMP/$set.$m.lite" "$TMP/$set.$m.ref"
}

# cli_same NAME CMD_LITE -- CMD_REF (each run through c_rbd, then masked
# by the python filter named in FILTER)
FILTER=plain
filter() {
    if [[ $FILTER == md5 ]]; then
        md5sum
        return
    fi
    python3 -c '
import json, re, sys
kind = sys.argv[1]
text = sys.stdin.read()
if kind == "plain":
    print(text, end="")
    sys.exit(0)
v = json.loads(text or "null")
if kind == "info":
    for k in ("name", "id", "block_name_prefix", "create_timestamp",
              "access_timestamp", "modify_timestamp"):
        v.pop(k, None)
elif kind == "locks":
    # rbd lock ls: a list (or an object keyed by lock id) of lockers
    items = v if isinstance(v, list) else [dict(id=k, **x) for k, x in v.items()]
    out = []
    for x in items:
        x = dict(x)
        x["locker"] = "client" if re.match(r"client\.\d+$", x.get("locker", "")) else x.get("locker")
        a = x.get("address", "")
        x["address"] = "addr" if re.match(r"(v[12]:)?[0-9.]+:\d+/\d+$", a) else a
        out.append(x)
    v = sorted(out, key=lambda x: x.get("id", ""))
elif kind == "status":
    w = v.get("watchers", [])
    v = {"watchers": len(w),
         "addresses_ok": all(re.match(r"[0-9.]+:\d+/\d+$", x.get("address", "")) for x in w)}
print(json.dumps(v, sort_keys=True))
' "$FILTER"
}

cli_same() {
    local name=$1 a=() b=() cur=a x
    shift
    for x in "$@"; do
        if [[ $x == -- ]]; then cur=b; continue; fi
        if [[ $cur == a ]]; then a+=("$x"); else b+=("$x"); fi
    done
    c_rbd "${a[@]}" 2>"$TMP/cli.err" | filter >"$TMP/cli.lite"
    c_rbd "${b[@]}" 2>>"$TMP/cli.err" | filter >"$TMP/cli.ref"
    if [[ ! -s $TMP/cli.lite ]]; then
        fail "$name" "no output from rbd ${a[*]}"
        show_log "$TMP/cli.err"
    elif diff -u "$TMP/cli.ref" "$TMP/cli.lite" >"$TMP/diff.out"; then
        pass "$name"
    else
        fail "$name" "the twins differ (librbdlite +, librbd -)"
        head -n 20 "$TMP/diff.out" | sed 's/^/    | /'
    fi
}

# expect NAME FILE PATTERN: FILE has a line matching PATTERN (grep -E)
expect() {
    if grep -Eq -- "$3" "$2"; then pass "$1"; else fail "$1" "no line matching /$3/ in ${2##*/}"; fi
}

# trash_removing NAME: the pool's rbd_trash holds NAME with source REMOVING
# (3), read raw: `rbd trash ls` does not show such entries.
trash_removing() {
    "$PY" - "$POOL" "$1" <<'EOF'
import sys
import rados
c = rados.Rados(conffile="")
c.connect()
io = c.open_ioctx(sys.argv[1])
found = False
try:
    with rados.ReadOpCtx() as op:
        it, _ = io.get_omap_vals(op, "", "", 10000)
        io.operate_read_op(op, "rbd_trash")
        for k, v in it:
            # TrashImageSpec: u8 v, u8 compat, u32 len, u8 source, string name
            n = int.from_bytes(v[7:11], "little")
            if v[6] == 3 and v[11:11 + n].decode() == sys.argv[2]:
                found = True
except rados.ObjectNotFound:
    pass
c.shutdown()
sys.exit(0 if found else 1)
EOF
}

c_rbd group create "$POOL/$GROUP" >"$TMP/group.log" 2>&1 ||
    { show_log "$TMP/group.log"; die "rbd group create failed"; }

# mkclone NAME: a clone of the parent's snapshot p1 (added to IMAGES).
PARENT=ia$$-parent
mkclone() {
    IMAGES+=("$1")
    c_rbd clone "$POOL/$PARENT@p1" "$POOL/$1" >"$TMP/clone-$1.log" 2>&1 ||
        { show_log "$TMP/clone-$1.log"; die "rbd clone $PARENT@p1 $1 failed"; }
}

for set in ${RBDLITE_IMAGEAPI_SETS:-def lay str cln}; do
    case $set in
    def) opts=() ;;
    lay) opts=(--image-feature layering) ;;
    str) opts=(--stripe-unit 1M --stripe-count 2) ;;
    cln)
        # Clones (v2) of a parent with data, each with a snapshot, so
        # that a shrink copies up first (progress of that phase too).
        rbdl_mkimage "$PARENT" 40M
        run parent ref seed "$PARENT"
        if ! c_rbd snap create "$POOL/$PARENT@p1" >/dev/null 2>&1 ||
            ! c_rbd snap protect "$POOL/$PARENT@p1" >/dev/null 2>&1; then
            die "cannot snapshot and protect $PARENT@p1"
        fi
        ;;
    esac
    base=ia$$-$set
    # Twin names of equal length (lengths are compared).
    for side in l r; do
        if [[ $set == cln ]]; then
            mkclone "$base-$side"
            c_rbd snap create "$POOL/$base-$side@cs1" >/dev/null 2>&1 ||
                die "cannot snapshot $base-$side"
            rbdl_mkimage "$base-$side-dst" 1M
            mkclone "$base-$side-rm"
            continue
        fi
        rbdl_mkimage "$base-$side" 40M "${opts[@]}"
        rbdl_mkimage "$base-$side-dst" 1M
        rbdl_mkimage "$base-$side-rm" 20M "${opts[@]}"
        if [[ $set == def ]]; then
            c_rbd group image add "$POOL/$GROUP" "$POOL/$base-$side" >"$TMP/group.log" 2>&1 ||
                { show_log "$TMP/group.log"; die "rbd group image add failed"; }
        fi
    done
    L=$base-l R=$base-r

    mode "$set" seed "$L" -- "$R"
    mode "$set" info "$L" -- "$R"
    lite_only "$set:" "$TMP/$set.info.lite" 18
    expect "$set: timestamps plausible" "$TMP/$set.info.lite" '^timestamps plausible=1$'
    if [[ $set == def ]]; then
        expect "$set: rbd_get_group names the group" "$TMP/$set.info.lite" \
            "^get_group r=0 name=$GROUP pool_is_ours=1"
    else
        expect "$set: rbd_get_group: no group" "$TMP/$set.info.lite" \
            '^get_group r=0 name= pool_is_ours=0 pool=-1$'
    fi

    for i in "$L" "$R"; do c_rbd snap create "$POOL/$i@s1" >/dev/null 2>&1; done
    mode "$set" meta "$L" s1 -- "$R" s1
    FILTER=plain cli_same "$set: rbd image-meta list" image-meta list --format json "$POOL/$L" -- \
        image-meta list --format json "$POOL/$R"
    expect "$set: metadata left as removed" "$TMP/cli.lite" '"alpha": ?"1".*"gamma"'
    for i in "$L" "$R"; do c_rbd snap rm "$POOL/$i@s1" >/dev/null 2>&1; done

    # rbd_config_image_list over the client's, the pool's and the image's
    # settings.
    pool_conf set >"$TMP/conf.log" 2>&1 || { show_log "$TMP/conf.log"; die "rbd config pool set failed"; }
    for i in "$L" "$R"; do
        image_conf set "$i" >"$TMP/conf.log" 2>&1 ||
            { show_log "$TMP/conf.log"; die "cannot set the overrides of $i"; }
    done
    mode "$set" config "$L" -- "$R"
    pool_conf rm
    for i in "$L" "$R"; do image_conf rm "$i" >/dev/null 2>&1; done
    f=$TMP/$set.config.lite
    for want in 'rw rbd_cache=false source=1' 'rw rbd_mtime_update_interval=120 source=1' \
        'rw rbd_atime_update_interval=30 source=2' 'rw rbd_readahead_max_bytes=0 source=2' \
        'rw rbd_request_timed_out_seconds=30 source=0' \
        'set rbd_cache=true source=2' 'removed rbd_cache=false source=1' \
        'ro rbd_readahead_max_bytes=0 source=2'; do
        expect "$set: config lists '$want'" "$f" "^$want\$"
    done
    if grep -q 'rbd_nosuch\|rbd_default_order\|rbd_mirror_' "$f"; then
        fail "$set: config lists unknown or excluded options" "$(grep -m1 'rbd_nosuch\|rbd_default_order\|rbd_mirror_' "$f")"
    else
        pass "$set: config lists no unknown or excluded option"
    fi
    # -ERANGE with the count below it, the count itself fills.
    n=$(grep -c '^rw rbd_' "$f")
    if grep -qx "rw config_image_list(max=0) r=-34 n=$n" "$f" &&
        grep -qx "rw config_image_list(max=$((n - 1))) r=-34 n=$n" "$f" &&
        grep -qx "rw config_image_list(max=$n) r=0 n=$n" "$f" && ((n > 50)); then
        pass "$set: config buffer-size protocol (-ERANGE and the count, $n options)"
    else
        fail "$set: config buffer-size protocol" "no -ERANGE with count $n"
    fi
    lite_only "$set: config:" "$f" 4

    mode "$set" locks "$L" -- "$R"
    expect "$set: a lock of another process broken" "$TMP/$set.locks.lite" '^break_lock r=0$'
    FILTER=locks cli_same "$set: rbd lock ls (none left)" lock ls --format json "$POOL/$L" -- \
        lock ls --format json "$POOL/$R"
    mode "$set" keeplocks "$L" -- "$R"
    FILTER=locks cli_same "$set: rbd lock ls (two shared locks)" lock ls --format json "$POOL/$L" -- \
        lock ls --format json "$POOL/$R"
    expect "$set: rbd lock ls lists keep1 and keep2" "$TMP/cli.lite" '"keep1".*"keep2"'
    # Release them for what follows (writes need the managed lock).
    for i in "$L" "$R"; do
        c_rbd lock ls --format json "$POOL/$i" 2>/dev/null | python3 -c '
import json, sys
v = json.load(sys.stdin)
items = v if isinstance(v, list) else [dict(id=k, **x) for k, x in v.items()]
for x in items:
    print(x["id"], x["locker"])' | while read -r id locker; do
            c_rbd lock rm "$POOL/$i" "$id" "$locker" >/dev/null 2>&1
        done
    done

    # rbd status while each program holds its image open.
    for side in lite ref; do
        rm -f "$TMP/go-$side"
        timeout -k 5 120 "$(prog_of $side)" hold "$POOL" "$base-${side:0:1}" "$TMP/go-$side" \
            >"$TMP/$set.hold.$side" 2>&1 &
        BG+=($!)
    done
    for _ in $(seq 300); do
        grep -q holding "$TMP/$set.hold.lite" 2>/dev/null &&
            grep -q holding "$TMP/$set.hold.ref" 2>/dev/null && break
        sleep 0.1
    done
    FILTER=status cli_same "$set: rbd status while open (one watcher)" status --format json "$POOL/$L" -- \
        status --format json "$POOL/$R"
    expect "$set: rbd status shows one watcher" "$TMP/cli.lite" '"watchers": 1'
    touch "$TMP/go-lite" "$TMP/go-ref"
    wait "${BG[@]}" 2>/dev/null
    BG=()
    same "$set: hold output equal" "$TMP/$set.hold.lite" "$TMP/$set.hold.ref"

    mode "$set" iterate "$L" -- "$R"
    mode "$set" resize "$L" -- "$R"
    expect "$set: a cancelled shrink returns the callback's value" "$TMP/$set.resize.lite" \
        '^resize2 shrink cancelled r=-42 calls=3 '
    FILTER=info cli_same "$set: rbd info after resize" info --format json "$POOL/$L" -- \
        info --format json "$POOL/$R"
    FILTER=md5 cli_same "$set: rbd export after resize" export --no-progress "$POOL/$L" - -- \
        export --no-progress "$POOL/$R" -
    mode "$set" aio "$L" -- "$R"
    expect "$set: aio open of a missing image" "$TMP/$set.aio.lite" \
        '^aio_open missing rval=-2 cb_calls=1 image=NULL'
    FILTER=md5 cli_same "$set: rbd export after aio writes" export --no-progress "$POOL/$L" - -- \
        export --no-progress "$POOL/$R" -
    if [[ $set != lay ]]; then
        for i in "$L" "$R"; do c_rbd object-map check "$POOL/$i" >/dev/null 2>&1; done
    fi
    FILTER=info cli_same "$set: rbd info (flags) after object-map check" info --format json "$POOL/$L" -- \
        info --format json "$POOL/$R"

    mode "$set" rename "$L" "$L-dst" -- "$R" "$R-dst"
    c_rbd ls "$POOL" >"$TMP/ls.out" 2>&1
    if grep -qx -- "$L" "$TMP/ls.out" && ! grep -qx -- "$L-renamed" "$TMP/ls.out" &&
        grep -qx -- "$L-dst" "$TMP/ls.out"; then
        pass "$set: rbd ls after rename and back"
    else
        fail "$set: rbd ls after rename and back"
    fi

    # A shrink cancelled by its callback leaves the image as librbd's:
    # same size and data, and the object map says what librbd's does.
    mode "$set" cancelshrink "$L" 4,2 -- "$R" 4,2
    if [[ $set != lay ]]; then
        for i in "$L" "$R"; do
            c_rbd object-map check "$POOL/$i" 2>&1 |
                grep -o 'object rbd_data[^ ]* marked as .*' |
                sed 's/rbd_data\.[0-9a-f]*\.//' | sort >"$TMP/omcheck.$i"
        done
        if diff -u "$TMP/omcheck.$R" "$TMP/omcheck.$L" >"$TMP/diff.out"; then
            pass "$set: rbd object-map check after a cancelled shrink ($(wc -l <"$TMP/omcheck.$L") findings)"
        else
            fail "$set: rbd object-map check after a cancelled shrink" "the twins differ"
            head -n 20 "$TMP/diff.out" | sed 's/^/    | /'
        fi
        FILTER=info cli_same "$set: rbd info (flags) after the cancelled shrink" info --format json "$POOL/$L" -- \
            info --format json "$POOL/$R"
    fi

    mode "$set" seed "$L-rm" -- "$R-rm"
    mode "$set" remove "$L-rm" -- "$R-rm"
    # librbd moved the image to the trash (source REMOVING) before the
    # trim: no id object, a trash entry that `rbd ls` lists (an image
    # being removed) and `rbd trash ls` hides.
    for i in "$L-rm" "$R-rm"; do
        if trash_removing "$i" && c_rbd ls "$POOL" | grep -qx -- "$i" &&
            ! rados -p "$POOL" stat "rbd_id.$i" >/dev/null 2>&1 &&
            ! c_rbd trash ls --all "$POOL" | grep -q -- " $i\$"; then
            pass "$set: $i waits in the trash (removing) after the cancel"
        else
            fail "$set: $i after the cancel" "not in the trash as removing as librbd leaves it"
        fi
    done
    mode "$set" remove2 "$L-rm" -- "$R-rm"
    for i in "$L-rm" "$R-rm"; do
        if ! trash_removing "$i" &&
            ! c_rbd ls "$POOL" | grep -qx -- "$i" &&
            ! rados -p "$POOL" stat "rbd_id.$i" >/dev/null 2>&1; then
            pass "$set: $i removed (no listing, no trash entry, no id object)"
        else
            fail "$set: $i removed" "still listed, in the trash or its id object left"
        fi
    done
done

rbdl_summary
