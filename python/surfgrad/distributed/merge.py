"""Per point, the union of the lists the cluster tasks found for it: each neighbour once at its
smallest distance, the k nearest by (distance, id)."""

from __future__ import annotations

from typing import Tuple

import numpy as np


_EMPTY_KEY = np.iinfo(np.int64).max  # an empty slot's sort key: after every real entry


def _float_order_bits(d: np.ndarray) -> np.ndarray:
    """float32 → uint32 whose unsigned order is the floats' order (−0 as +0)."""
    u = (np.asarray(d, dtype=np.float32) + np.float32(0)).view(np.uint32)
    return np.where(u >> 31 == 1, ~u, u | np.uint32(0x80000000))


def _float_from_order_bits(u: np.ndarray) -> np.ndarray:
    u = u.astype(np.uint32)
    return np.where(u >> 31 == 1, u & np.uint32(0x7FFFFFFF), ~u).view(np.float32)


def merge_lists(ids: np.ndarray, idx: np.ndarray, dist: np.ndarray, n: int, k: int) -> Tuple[np.ndarray, np.ndarray]:
    """Per point (``ids``, repeated where a point has several lists): the union of its lists,
    each neighbour once at its smallest distance, the k nearest by (distance, id); −1 / inf
    where fewer than k were found.

    Each entry is one int64 key, so that rows sort by value (numpy's vectorised integer sort, no
    argsort and gathers): (id, distance) for the duplicates, then (distance, id) for the k
    nearest. In place on one [N, lists·m] array: 5× faster than three argsorts of the entries
    (1.2 s against 5.6 s for 1M points in 2 lists of 15 on two cores; 34–54 s at 10M)."""
    m = idx.shape[1]
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    occurrence = np.empty(len(ids), dtype=np.int64)
    occurrence[order] = np.arange(len(ids)) - np.searchsorted(sorted_ids, sorted_ids, side="left")
    slots = int(occurrence.max()) + 1 if len(ids) else 1
    by_id = idx.astype(np.int64)  # a copy: the caller's lists stay as they are
    empty = by_id < 0
    by_id <<= 32
    by_id |= _float_order_bits(dist)
    by_id[empty] = _EMPTY_KEY
    del empty
    keys = np.full((n, slots * m), _EMPTY_KEY, dtype=np.int64)
    keys.reshape(n, slots, m)[ids, occurrence] = by_id
    del by_id
    keys.sort(axis=1)
    # A repeated id after its first (nearest) copy is dropped; then the keys become (distance, id).
    last = keys == _EMPTY_KEY
    q = keys >> 32
    repeat = q[:, 1:] == q[:, :-1]
    keys &= 0xFFFFFFFF
    keys -= 1 << 31  # the distance's order bits, signed, so that the key's sign follows them
    keys <<= 32
    keys |= q
    del q
    keys[:, 1:][repeat] = _EMPTY_KEY
    keys[last] = _EMPTY_KEY
    del repeat, last
    keys.sort(axis=1)
    top = keys[:, :k]
    empty = top == _EMPTY_KEY
    out_i = (top & 0xFFFFFFFF).astype(np.int32)
    out_i[empty] = -1
    out_d = _float_from_order_bits((top >> 32) + (1 << 31))
    out_d[empty] = np.inf
    if out_i.shape[1] < k:
        out_i = np.pad(out_i, ((0, 0), (0, k - out_i.shape[1])), constant_values=-1)
        out_d = np.pad(out_d, ((0, 0), (0, k - out_d.shape[1])), constant_values=np.inf)
    return out_i, np.ascontiguousarray(out_d)
