"""Run-log format v1: the names, schemas and file layout shared by every writer.

This module is the single place where the on-disk contract
(``docs/format.md``) is spelled out as code. It needs only pyarrow, so the
analysis engine and the importers reuse it without pulling in torch.
"""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa

FORMAT = "runlens-run"
FORMAT_VERSION = 1

TABLES = ("scalars", "evals", "layers", "events")

# r{rank}-{seq:08d}.parquet; a leading "." marks a part still being written.
PART_RE = re.compile(r"^r(\d+)-(\d{8,})\.parquet$")

# In the spec's order, for messages; the sets below are what code tests membership against.
EVENT_KIND_NAMES = ("nonfinite_loss", "nonfinite_grad", "grad_norm_spike", "loss_spike", "exception", "user")
EVENT_KINDS = frozenset(EVENT_KIND_NAMES)
RUN_STATUS_NAMES = ("running", "finished", "crashed")
RUN_STATUSES = frozenset(RUN_STATUS_NAMES)

# Fixed columns of each table, with the exact Arrow types of the spec.
SCALARS_FIELDS = {
    "step": pa.int64(),
    "time": pa.float64(),
    "loss": pa.float64(),
    "lr": pa.float64(),
    "grad_norm": pa.float64(),
    "epoch": pa.int64(),
    "loss_scale": pa.float64(),
    "step_skipped": pa.int64(),
}
SCALARS_REQUIRED = ("step", "time", "loss")

EVALS_FIELDS = {"step": pa.int64(), "time": pa.float64(), "val_loss": pa.float64()}
EVALS_REQUIRED = ("step", "time", "val_loss")

LAYERS_FIELDS = {
    "step": pa.int64(),
    "layer": pa.dictionary(pa.int32(), pa.string()),
    "grad_norm": pa.float32(),
    "weight_norm": pa.float32(),
    "update_norm": pa.float32(),
    "grad_abs_max": pa.float32(),
    "grad_zero_frac": pa.float32(),
    "nonfinite": pa.int32(),
}
LAYERS_REQUIRED = ("step", "layer", "grad_norm", "weight_norm")

EVENTS_FIELDS = {
    "step": pa.int64(),
    "time": pa.float64(),
    "kind": pa.string(),
    "layer": pa.string(),
    "value": pa.float64(),
    "message": pa.string(),
}
EVENTS_REQUIRED = tuple(EVENTS_FIELDS)

FIELDS = {
    "scalars": SCALARS_FIELDS,
    "evals": EVALS_FIELDS,
    "layers": LAYERS_FIELDS,
    "events": EVENTS_FIELDS,
}
REQUIRED = {
    "scalars": SCALARS_REQUIRED,
    "evals": EVALS_REQUIRED,
    "layers": LAYERS_REQUIRED,
    "events": EVENTS_REQUIRED,
}
# Tables whose extra (user) columns are allowed; they must be int64 or float64.
OPEN_TABLES = frozenset({"scalars", "evals"})

# Extra (user) columns of the open tables: int64 for ints and bools, float64 for the rest.
USER_COLUMN_TYPES = (pa.int64(), pa.float64())
# Narrower numbers another writer may leave there: readers widen them, so a validator tolerates them.
USER_COLUMN_NARROW_TYPES = (pa.int32(), pa.float32())

# Dedup key per table (events are never deduplicated).
KEYS = {"scalars": ("step",), "evals": ("step",), "layers": ("step", "layer"), "events": None}


# run.json, key by key, as (kind, nested). Kinds: "str", "int", "number", "object", "list";
# nested is an object's own key table, or a list's item as (kind, nested). A reader treats null
# (or a missing key) as unknown; a validator holds a writer to RUN_REQUIRED and RUN_PRESENT.
RUN_ERROR_FIELDS: dict[str, tuple[str, Any]] = {
    "type": ("str", None), "message": ("str", None), "traceback": ("str", None), "step": ("int", None),
}
RUN_LAYER_FIELDS: dict[str, tuple[str, Any]] = {
    "name": ("str", None), "index": ("int", None), "module": ("str", None), "kind": ("str", None),
    "shape": ("list", ("int", None)), "numel": ("int", None),
}
# An attempt whose step went back (recorders/_rewind.py): how often, how many rows, where first.
RUN_STEPS_BACK_FIELDS: dict[str, tuple[str, Any]] = {
    "times": ("int", None), "rows": ("int", None), "first_from": ("int", None), "first_to": ("int", None),
}
RUN_ATTEMPT_FIELDS: dict[str, tuple[str, Any]] = {
    "started_at": ("str", None), "first_step": ("int", None), "status": ("str", None),
    "error": ("object", RUN_ERROR_FIELDS), "steps_went_back": ("object", RUN_STEPS_BACK_FIELDS),
}
RUN_FIELDS: dict[str, tuple[str, Any]] = {
    "run_id": ("str", None), "name": ("str", None), "status": ("str", None),
    "started_at": ("str", None), "ended_at": ("str", None), "heartbeat_at": ("str", None),
    "flush_every": ("int", None), "flush_seconds": ("number", None), "host": ("str", None),
    "pid": ("int", None), "config": ("object", {}), "seed": ("int", None), "environment": ("object", {}),
    "layers": ("list", ("object", RUN_LAYER_FIELDS)), "attempts": ("list", ("object", RUN_ATTEMPT_FIELDS)),
    "error": ("object", RUN_ERROR_FIELDS),
}
# Keys every writer sets to a value of their kind, never null.
RUN_REQUIRED = ("run_id", "name", "status", "host", "pid", "config", "environment", "layers", "attempts",
                "flush_every", "flush_seconds")
# Keys every writer sets, possibly to null (unknown, not yet, or no error).
RUN_PRESENT = ("seed", "started_at", "ended_at", "heartbeat_at", "error")
RUN_TIMESTAMPS = ("started_at", "ended_at", "heartbeat_at")  # ISO-8601 with an offset, or null
RUN_ATTEMPT_REQUIRED = ("started_at", "first_step")
RUN_ENVIRONMENT_REQUIRED = ("python",)


def part_name(rank: int, seq: int) -> str:
    """Final file name of part ``seq`` written by ``rank``."""
    return f"r{rank}-{seq:08d}.parquet"


def temp_part_name(rank: int, seq: int) -> str:
    """Name a part is written under before the atomic rename."""
    return f".tmp-r{rank}-{seq:08d}.parquet"


def parse_part_name(name: str) -> tuple[int, int] | None:
    """``(rank, seq)`` of a final part name, or None for anything else."""
    m = PART_RE.match(name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def user_column_type(value: object) -> pa.DataType:
    """Arrow type of a user scalar column: int64 for ints/bools, else float64."""
    if isinstance(value, bool) or (isinstance(value, int)):
        return pa.int64()
    return pa.float64()
