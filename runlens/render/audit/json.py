"""The audit as JSON: the list of the spec's per-run analysis objects, worst first."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runlens.audit import AuditResult


def render_audit_json(result: AuditResult) -> str:
    """Exactly the spec's objects (``run``, ``name``, ``status``, ``curve``, ``findings``, ``warnings``)."""
    return json.dumps(result.to_list(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
