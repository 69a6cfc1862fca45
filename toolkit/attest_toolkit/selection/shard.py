"""Deterministic sharding: the same ids give the same split on every machine, each id in one shard.

Without weights the sorted ids are dealt round-robin, so shard sizes differ by at most one. With
weights (the last report's durations) the heaviest ids are placed first, each on the lightest shard
(ties go to the shard with fewer ids, then the lower index); an id the report does not know weighs
the mean of those it does.
"""

from __future__ import annotations

import heapq

from ..errors import UsageError


def parse_shard(text: str) -> tuple[int, int]:
    """`i/N` (1-based, as Vitest and Playwright write it) into (i, N)."""
    index, sep, total = text.partition("/")
    if sep and index.strip().isdigit() and total.strip().isdigit():
        i, n = int(index), int(total)
        if 1 <= i <= n:
            return i, n
    raise UsageError(f"--shard: expected i/N with 1 <= i <= N (e.g. 1/4), got {text!r}")


def shard(ids: list[str], index: int, total: int, weights: dict[str, float] | None = None) -> list[str]:
    """The ids of shard `index` of `total` (1-based), sorted."""
    if not 1 <= index <= total:
        raise UsageError(f"--shard: expected i/N with 1 <= i <= N, got {index}/{total}")
    unique = sorted(set(ids))
    if not weights:
        return unique[index - 1 :: total]
    return sorted(_by_weight(unique, total, weights)[index - 1])


def _by_weight(ids: list[str], total: int, weights: dict[str, float]) -> list[list[str]]:
    known = [max(weights[i], 0.0) for i in ids if i in weights]
    default = sum(known) / len(known) if known else 1.0
    weight = {i: max(weights.get(i, default), 0.0) for i in ids}
    shards: list[list[str]] = [[] for _ in range(total)]
    heap = [(0.0, 0, n) for n in range(total)]
    for test in sorted(ids, key=lambda i: (-weight[i], i)):
        load, count, n = heapq.heappop(heap)
        shards[n].append(test)
        heapq.heappush(heap, (load + weight[test], count + 1, n))
    return shards
