"""Layer depth for the loader: run.json's order of layers as a per-row rank.

The layers table is keyed by ``(step, layer)`` and sorted by step, then
depth; depth is run.json's ``index`` (listing order breaks ties), and names
run.json does not list sort after the listed ones, by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def layer_depth(data: pa.Table, step: np.ndarray,
                 order: Mapping[str, int]) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """A per-row depth rank (run.json order, unknown names after); rows without a name dropped."""
    chunks = [c if pa.types.is_dictionary(c.type) else pc.cast(c, pa.string()).dictionary_encode()
              for c in data.column("layer").chunks]
    names = set().union(*(c.dictionary.to_pylist() for c in chunks))
    rank_of = _depth_ranks(names, order)
    depth = np.concatenate([_chunk_depth(c, rank_of) for c in chunks])
    if np.any(depth < 0):
        keep = depth >= 0
        return data.filter(pa.array(keep)), step[keep], depth[keep]
    return data, step, depth


def _chunk_depth(chunk: pa.DictionaryArray, rank_of: Mapping[str, int]) -> np.ndarray:
    lut = np.array([rank_of.get(n, -1) if n is not None else -1 for n in chunk.dictionary.to_pylist()]
                   or [-1], dtype=np.int32)
    codes = chunk.indices.to_numpy(zero_copy_only=False)
    if not chunk.null_count:
        return lut[codes]
    null = chunk.is_null().to_numpy(zero_copy_only=False)
    return np.where(null, -1, lut[np.where(null, 0, codes).astype(np.int64)])


def layer_order(meta: Mapping[str, Any]) -> dict[str, int]:
    """Depth rank of each run.json layer (by ``index``, then listing order)."""
    entries = [e for e in meta.get("layers") or () if isinstance(e, Mapping)
               and isinstance(e.get("name"), str)]
    def index(e: Mapping[str, Any]) -> int:
        i = e.get("index")
        return i if isinstance(i, int) and not isinstance(i, bool) else 1 << 62
    ranked = sorted(enumerate(entries), key=lambda pair: (index(pair[1]), pair[0]))
    order: dict[str, int] = {}
    for _, e in ranked:
        order.setdefault(e["name"], len(order))
    return order


def _depth_ranks(names: Iterable[str | None], order: Mapping[str, int]) -> dict[str, int]:
    # Names run.json does not list sort after the listed ones, by name, so the order is stable.
    ranks = dict(order)
    for n in sorted(n for n in names if n is not None and n not in ranks):
        ranks[n] = len(ranks)
    return ranks
