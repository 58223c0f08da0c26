#!/usr/bin/env bash
# deps.sh [--check] [GROUP...] - install the Debian 12 packages librbdlite needs.
#
# Groups (default: all of them):
#   build    autoconf automake libtool pkg-config make gcc check
#            libjemalloc-dev librados-dev libcryptsetup-dev libssl-dev
#   cluster  ceph-mon ceph-osd ceph-mgr ceph-common uuid-runtime python3 procps
#            (tests/cluster/cluster.sh: a throwaway test cluster)
#   judges   librbd-dev librbd1 python3-rbd fio qemu-utils qemu-block-extra
#            (the reference librbd and its clients, to compare against)
#   consumers
#            libvirt-daemon libvirt-daemon-driver-storage-rbd libvirt-clients
#            tgt tgt-rbd rbd-fuse fuse3 tcmu-runner
#            (unmodified librbd consumers run on librbdlite: libvirtd's rbd
#            storage backend and virsh, tgtd's rbd backing store, rbd-fuse
#            (libfuse2; fuse3 brings fusermount3), tcmu-runner's rbd
#            handler; qemu-block-extra also has the iSCSI initiator qemu-io
#            uses against tgtd)
#   tools    valgrind python3 gdb (gdb: the stacks of a hung fault-test writer)
#
# Does nothing (and needs no network) when every package is installed.
# Otherwise, as root: `apt-get update` once, then
# `apt-get install -y --no-install-recommends` of just the missing packages.
# --check only reports what is missing (exit 1 if anything is).
#
# Package scripts are not allowed to start services during the install
# (a temporary /usr/sbin/policy-rc.d, unless one exists already): the test
# clusters use their own config, ports and directories and need no system
# Ceph daemon; --no-install-recommends also keeps the manager's optional
# modules (dashboard, ...) out.

set -euo pipefail

PROG=${0##*/}

declare -A PKG_GROUPS=(
    [build]="autoconf automake libtool pkg-config make gcc check libjemalloc-dev librados-dev libcryptsetup-dev libssl-dev"
    [cluster]="ceph-mon ceph-osd ceph-mgr ceph-common uuid-runtime python3 procps"
    [judges]="librbd-dev librbd1 python3-rbd fio qemu-utils qemu-block-extra"
    [consumers]="libvirt-daemon libvirt-daemon-driver-storage-rbd libvirt-clients tgt tgt-rbd rbd-fuse fuse3 tcmu-runner"
    [tools]="valgrind python3 gdb"
)
ALL_GROUPS=(build cluster judges consumers tools)

log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { log "error: $*"; exit 1; }

usage() {
    echo "usage: $PROG [--check] [GROUP...]   (groups: ${ALL_GROUPS[*]}; default all)" >&2
    exit 2
}

installed() { # installed PKG: dpkg says PKG is installed
    local status
    status=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || return 1
    [[ $status == *"ok installed"* ]]
}

check_only=0
groups=()
for arg in "$@"; do
    case $arg in
    --check) check_only=1 ;;
    -h | --help) usage ;;
    -*) usage ;;
    *)
        [[ -n ${PKG_GROUPS[$arg]:-} ]] || die "unknown group '$arg' (groups: ${ALL_GROUPS[*]})"
        groups+=("$arg")
        ;;
    esac
done
((${#groups[@]})) || groups=("${ALL_GROUPS[@]}")

command -v dpkg-query >/dev/null || die "dpkg-query not found: this script is for Debian (12)"

# Wanted packages, in order, without duplicates.
declare -A seen=()
wanted=()
for g in "${groups[@]}"; do
    read -ra pkgs <<<"${PKG_GROUPS[$g]}"
    for p in "${pkgs[@]}"; do
        [[ -z ${seen[$p]:-} ]] || continue
        seen[$p]=1
        wanted+=("$p")
    done
done

missing=()
for p in "${wanted[@]}"; do
    installed "$p" || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
    log "all ${#wanted[@]} packages for '${groups[*]}' are installed"
    exit 0
fi
if ((check_only)); then
    log "missing: ${missing[*]}"
    exit 1
fi
if ((EUID != 0)); then
    die "missing packages: ${missing[*]}
  Installing them needs root; run:  sudo $0 ${groups[*]}"
fi

# Keep package scripts from starting services (ceph-crash, ceph-*.target)
# while we install, unless the machine already has a policy of its own.
POLICY=/usr/sbin/policy-rc.d
made_policy=0
cleanup() {
    if ((made_policy)); then rm -f -- "$POLICY"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if [[ ! -e $POLICY ]]; then
    printf '#!/bin/sh\n# temporary, from librbdlite %s: start no services\nexit 101\n' "$PROG" >"$POLICY"
    chmod 755 "$POLICY"
    made_policy=1
fi

log "installing: ${missing[*]}"
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"

still=()
for p in "${missing[@]}"; do
    installed "$p" || still+=("$p")
done
((${#still[@]} == 0)) || die "still not installed after apt-get: ${still[*]}"

# Ceph daemons that are not ours would not disturb the test clusters (other
# ports, config and directories), but say so if any are running.
if command -v pgrep >/dev/null; then
    if others=$(pgrep -a -x 'ceph-(mon|osd|mgr|mds|crash)' 2>/dev/null); then
        log "note: Ceph processes are running (system ones do not disturb the test clusters):"
        printf '%s\n' "$others" >&2
    fi
fi
log "done"
