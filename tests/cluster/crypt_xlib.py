"""crypt_xlib.py - one side of test-crypt.sh's cross-library checks of LUKS
images: run by the system's python3 with the rbd module on the real
librbd, or with librbdlite preloaded.

    crypt_xlib.py POOL write NAME FORMAT ALG   create, format, write SPEC
    crypt_xlib.py POOL verify NAME FORMAT      load, read SPEC back
    crypt_xlib.py POOL snapclone NAME          snapshot s, protect, clone NAME-c
    crypt_xlib.py POOL verifyclone NAME FORMAT load the clone, read SPEC back

FORMAT: luks1 | luks2; ALG: aes128 | aes256.  SPEC: a fixed list of
writes (aligned, unaligned within and across blocks and objects,
overlapping); verify reads each written range and prints one line per
range, "ok" or what differs; exit status 1 on any difference.  Prints the
size after format and after load."""
import hashlib
import os
import sys

import rados
import rbd

MiB = 1 << 20
FMT = {'luks1': rbd.RBD_ENCRYPTION_FORMAT_LUKS1, 'luks2': rbd.RBD_ENCRYPTION_FORMAT_LUKS2}
ALG = {'aes128': rbd.RBD_ENCRYPTION_ALGORITHM_AES128, 'aes256': rbd.RBD_ENCRYPTION_ALGORITHM_AES256}
PASS = 'xlib-passphrase'


def pat(seed, n):
    out = bytearray()
    h = hashlib.sha256(str(seed).encode()).digest()
    while len(out) < n:
        out += h
        h = hashlib.sha256(h).digest()
    return bytes(out[:n])


# (offset, data): later writes overlap earlier ones on purpose
SPEC = [(0, pat(1, 64 * 1024)),
        (5000, pat(2, 700)),
        (3 * 4096 + 10, pat(3, 100)),
        (4 * MiB - 300, pat(4, 513)),
        (5 * MiB, pat(5, 2 * MiB)),
        (9 * MiB + 511, pat(6, 9000)),
        (20 * MiB, pat(7, 4096))]


def expected():
    """The written ranges with their final content."""
    img = {}
    for off, data in SPEC:
        for i, b in enumerate(data):
            img[off + i] = b
    return img


def main():
    pool, cmd, name = sys.argv[1], sys.argv[2], sys.argv[3]
    c = rados.Rados(conffile=os.environ['CEPH_CONF'])
    c.connect()
    io = c.open_ioctx(pool)
    r = rbd.RBD()
    bad = 0
    if cmd == 'write':
        r.create(io, name, 40 * MiB)
        with rbd.Image(io, name) as im:
            im.encryption_format(FMT[sys.argv[4]], PASS, ALG[sys.argv[5]])
            print('size', im.size())
            for off, data in SPEC:
                im.write(data, off)
            im.flush()
    elif cmd == 'snapclone':
        with rbd.Image(io, name) as im:
            im.create_snap('s')
            im.protect_snap('s')
        r.clone(io, name, 's', io, name + '-c', features=1)
        print('cloned')
    elif cmd in ('verify', 'verifyclone'):
        target = name + '-c' if cmd == 'verifyclone' else name
        exp = expected()
        with rbd.Image(io, target) as im:
            im.encryption_load(FMT[sys.argv[4]], PASS)
            print('size', im.size())
            for off, data in SPEC:
                got = im.read(off, len(data))
                want = bytes(exp[off + i] for i in range(len(data)))
                if got == want:
                    print('ok', off, len(data))
                else:
                    first = next(i for i in range(len(data)) if got[i:i + 1] != want[i:i + 1])
                    print('DIFFERS', off, len(data), 'first at +%d' % first)
                    bad += 1
    io.close()
    c.shutdown()
    sys.exit(1 if bad else 0)


main()
