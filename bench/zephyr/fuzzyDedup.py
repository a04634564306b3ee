"""The fuzzy-dedup benchmark's plain Python implementation (numpy allowed) of the same algorithm as
zephyr's dedupFuzzy: MinHash over lower-cased word 5-grams with 128 permutations
h_i(x) = mix((a_i*x + b_i) mod 2^32), LSH with the same bands and rows, buckets joined as stars
from their smallest id, connected components (union-find, in one process), first record kept.

    python3 fuzzyDedup.py INPUT_DIR BANDS ROWS   → one JSON line: seconds, records, kept, maxRssMB
"""
import glob
import gzip
import json
import resource
import sys
import time
import zlib

import numpy as np

NGRAM = 5
PERMS = 128
BATCH = 2048


def shingles(text):
    ws = text.lower().split()
    if not ws:
        return []
    if len(ws) < NGRAM:
        return [zlib.crc32(" ".join(ws).encode())]
    return [zlib.crc32(" ".join(ws[i : i + NGRAM]).encode()) for i in range(len(ws) - NGRAM + 1)]


def main():
    inp, bands, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    t0 = time.perf_counter()
    c0 = time.process_time()
    rng = np.random.default_rng(1)
    a = (rng.integers(0, 2**32, PERMS, dtype=np.uint64) | 1).astype(np.uint32)
    b = rng.integers(0, 2**32, PERMS, dtype=np.uint64).astype(np.uint32)
    mult = rng.integers(1, 2**63, rows, dtype=np.uint64) | np.uint64(1)
    keys_parts, id_parts = [], []
    batch_sh, batch_off, batch_ids = [], [], []
    n = 0

    def flush():
        if not batch_ids:
            return
        x = np.fromiter(batch_sh, dtype=np.uint32, count=len(batch_sh))
        with np.errstate(over="ignore"):
            v = x[:, None] * a[None, :] + b[None, :]
            v ^= v >> np.uint32(15)
            v *= np.uint32(0x2C1B3C6D)
            v ^= v >> np.uint32(12)
        sig = np.minimum.reduceat(v, np.asarray(batch_off), axis=0).astype(np.uint64)
        k = np.empty((len(batch_ids), bands), dtype=np.uint64)
        with np.errstate(over="ignore"):
            for j in range(bands):
                k[:, j] = (sig[:, j * rows : (j + 1) * rows] * mult[None, :]).sum(axis=1) ^ np.uint64(j << 56)
        keys_parts.append(k)
        id_parts.append(np.asarray(batch_ids, dtype=np.int64))
        batch_sh.clear()
        batch_off.clear()
        batch_ids.clear()

    for f in sorted(glob.glob(f"{inp}/*.jsonl.gz")):
        with gzip.open(f, "rt", encoding="utf8") as fh:
            for line in fh:
                d = json.loads(line)
                sh = shingles(d["text"])
                idx = n
                n += 1
                if not sh:
                    continue
                batch_off.append(len(batch_sh))
                batch_sh.extend(sh)
                batch_ids.append(idx)
                if len(batch_ids) >= BATCH:
                    flush()
    flush()
    keys = np.concatenate(keys_parts) if keys_parts else np.empty((0, bands), dtype=np.uint64)
    ids = np.concatenate(id_parts) if id_parts else np.empty(0, dtype=np.int64)

    # Candidate edges: per band, stars from the smallest id of every bucket.
    us, vs = [], []
    for j in range(bands):
        order = np.argsort(keys[:, j], kind="stable")
        sk = keys[order, j]
        start = np.ones(len(sk), dtype=bool)
        start[1:] = sk[1:] != sk[:-1]
        run_start = np.maximum.accumulate(np.where(start, np.arange(len(sk)), 0))
        m = ~start
        us.append(ids[order[run_start[m]]])
        vs.append(ids[order[m]])
    u = np.concatenate(us) if us else np.empty(0, dtype=np.int64)
    v = np.concatenate(vs) if vs else np.empty(0, dtype=np.int64)

    parent = {}

    def find(x):
        root = x
        while parent.get(root, root) != root:
            root = parent[root]
        while parent.get(x, x) != root:
            parent[x], x = root, parent[x]
        return root

    for x, y in zip(u.tolist(), v.tolist()):
        rx, ry = find(x), find(y)
        if rx != ry:
            if rx < ry:
                parent[ry] = rx
            else:
                parent[rx] = ry
    removed = sum(1 for x in parent if find(x) != x)
    seconds = time.perf_counter() - t0
    cpu = time.process_time() - c0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "records": n, "kept": n - removed, "removed": removed, "cpu": cpu, "maxRssMB": rss}))


main()
