"""The format's part-merging rules as a public module: what the analysis engine reads runs with.

The loader and ``runlens validate`` apply the same rules as the recorder's
compaction (which parts a merged part replaces, the union of columns, the
last row per key); the one implementation lives in :mod:`recorders._merge`,
and this module is the name readers outside the recorder import it by, so
the engine depends on no private recorder module.
"""

from __future__ import annotations

from recorders._merge import (
    MAX_PART_ROWS,
    REPLACES_KEY,
    TooManyRows,
    concat,
    decode_bounded,
    in_key_order,
    last_per_key,
    open_input,
    open_output,
    part_replaces,
    read_part,
    replaced_parts,
    unify_types,
)

__all__ = ["MAX_PART_ROWS", "REPLACES_KEY", "TooManyRows", "concat", "decode_bounded", "in_key_order",
           "last_per_key", "open_input", "open_output", "part_replaces", "read_part", "replaced_parts",
           "unify_types"]
