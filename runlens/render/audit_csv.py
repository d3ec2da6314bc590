"""The audit as CSV: one row per run with the raw numbers, for spreadsheets and pandas."""

from __future__ import annotations

import csv
import io
from typing import Any

from runlens.render.audit_cells import severity
from runlens.render.escape import csv_cell

FIELDS = ("run", "name", "status", "curve", "worst", "findings", "final_loss", "best_loss",
          "best_val_loss", "best_val_step", "steps", "duration_s", "report", "error")


def render_audit_csv(result: Any) -> str:
    """Numbers unformatted (``nan`` kept), findings as codes joined by ``;`` most severe first;
    a text cell that a spreadsheet would evaluate (``=``, ``+``, ``-``, ``@``...) starts with ``'``."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(FIELDS)
    for row in result.rows:
        values = {
            "run": row.run, "name": row.name, "status": row.status, "curve": row.curve,
            "worst": severity(row),
            "findings": ";".join(f["code"] for f in row.worst_findings(len(row.findings))),
            "final_loss": row.final_loss, "best_loss": row.best_loss,
            "best_val_loss": row.best_val_loss, "best_val_step": row.best_val_step,
            "steps": row.steps, "duration_s": row.duration_s, "report": row.report, "error": row.error,
        }
        # Run names, paths and error texts come from the runs: none may start a formula.
        writer.writerow(["" if values[k] is None else csv_cell(values[k]) for k in FIELDS])
    return out.getvalue()
