"""Of several tables under different headers in one paste, the one a run is read from."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from runlens.io.reader.table import Table


def with_signal(tables: dict[Any, Table], label: Callable[[Any], str]) -> Table:
    """Of tables under different headers (two or more), the one holding a training signal (the most
    rows among them); the others are named, by ``label`` of their header, in its notes."""
    # Imported here: roles brings scipy, which a paste of one table never needs.
    from runlens.io.reader.roles import infer

    def signal(t: Table) -> bool:
        return any(p.role in ("loss", "grad_norm") or p.role.startswith("val_loss") for p in infer(t).picks)

    header = max(tables, key=lambda h: (signal(tables[h]), tables[h].n))
    table = tables[header]
    others = [f"{tables[h].n} rows under ({label(h)[:80]})" for h in tables if h != header]
    table.notes.append("rows under another header: not read: " + "; ".join(others)[:500])
    return table
