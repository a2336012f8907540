# SPDX-License-Identifier: MIT
# One rank of `make bench`'s all_reduce test, started by torchrun on each of
# the three nodes (bench/mesh.sh). Gloo over the interface GLOO_SOCKET_IFNAME
# names. Each rank adds rank + 1, and every element must hold the sum.
#
#   big:   AR_BIG_BYTES (64 MiB) of float32 per rank, AR_BIG_ITERS timed
#          all_reduces after a warm-up one (timed apart: big_first_s);
#          seconds each.
#   small: AR_SMALL_BYTES (64 KiB) per rank, AR_SMALL_BATCHES batches of
#          AR_SMALL_ITERS back-to-back all_reduces after a warm-up batch;
#          seconds per all_reduce in each batch.
#
# Every timed step starts after a barrier, so all ranks start together; the
# time taken is the slowest rank's (an all_reduce of the ranks' times with
# MAX). Rank 0 writes one JSON object to AR_OUT:
#   {"world": 3, "big_bytes": N, "big_s": [...], "big_first_s": S, "small_bytes": N,
#    "small_s": [...], "ok": true}
import datetime
import json
import os
import time

import torch
import torch.distributed as dist


def env_int(name, default):
    return int(os.environ.get(name, default))


def slowest(secs):
    t = torch.tensor([secs], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def timed(op):
    dist.barrier()
    t0 = time.perf_counter()
    op()
    return slowest(time.perf_counter() - t0)


def main():
    # A rank that dies must not hold the others for Gloo's default 30 min.
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=env_int("AR_PG_TIMEOUT", 120)))
    rank, world = dist.get_rank(), dist.get_world_size()
    want = world * (world + 1) / 2
    big_n = max(1, env_int("AR_BIG_BYTES", 64 << 20) // 4)
    small_n = max(1, env_int("AR_SMALL_BYTES", 64 << 10) // 4)
    big_iters = env_int("AR_BIG_ITERS", 3)
    small_batches = env_int("AR_SMALL_BATCHES", 5)
    small_iters = env_int("AR_SMALL_ITERS", 100)
    ok = True

    big = torch.empty(big_n, dtype=torch.float32)
    big_s = []
    for i in range(big_iters + 1):
        big.fill_(float(rank + 1))
        secs = timed(lambda: dist.all_reduce(big))
        ok = ok and bool((big == want).all())
        if i == 0:              # the warm-up: kept apart, as a job's first
            big_first = secs
        else:
            big_s.append(secs)
    del big

    small = torch.full((small_n,), float(rank + 1))
    dist.all_reduce(small)
    ok = ok and bool((small == want).all())
    # Zeros from here on: the sum stays exact however many rounds run.
    small.zero_()

    def batch():
        for _ in range(small_iters):
            dist.all_reduce(small)

    small_s = []
    for i in range(small_batches + 1):
        secs = timed(batch)
        if i > 0:
            small_s.append(secs / small_iters)
    ok = ok and bool((small == 0).all())

    flag = torch.tensor([0 if ok else 1])
    dist.all_reduce(flag)
    ok = flag.item() == 0
    if rank == 0:
        out = {"world": world, "big_bytes": 4 * big_n, "big_s": big_s, "big_first_s": big_first,
               "small_bytes": 4 * small_n, "small_s": small_s, "ok": ok,
               "ifname": os.environ.get("GLOO_SOCKET_IFNAME")}
        with open(os.environ["AR_OUT"] + ".tmp", "w") as f:
            json.dump(out, f)
        os.rename(os.environ["AR_OUT"] + ".tmp", os.environ["AR_OUT"])
    dist.barrier()
    dist.destroy_process_group()
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
