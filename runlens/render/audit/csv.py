"""The audit as CSV: one row per run with the raw numbers, for spreadsheets and pandas."""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING

from runlens.render.audit.cells import severity
from runlens.render.escape import csv_cell
from runlens.render.names import distinct_names

if TYPE_CHECKING:
    from runlens.audit import AuditResult

FIELDS = ("run", "name", "status", "curve", "worst", "findings", "final_loss", "best_loss",
          "best_val_loss", "best_val_step", "steps", "duration_s", "report", "error", "label")


def render_audit_csv(result: AuditResult) -> str:
    """Numbers unformatted (``nan`` kept), findings as codes joined by ``;`` most severe first;
    ``label`` (last, so the earlier columns keep their places) is the name as the other audit
    formats show it, with a short path where two runs share a name; a text cell that a
    spreadsheet would evaluate (``=``, ``+``, ``-``, ``@``...) starts with ``'``."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(FIELDS)
    labels = distinct_names([(row.name, row.run) for row in result.rows])
    for row, label in zip(result.rows, labels, strict=True):
        values = {
            "run": row.run, "name": row.name, "status": row.status, "curve": row.curve,
            "worst": severity(row),
            "findings": ";".join(f["code"] for f in row.worst_findings(len(row.findings))),
            "final_loss": row.final_loss, "best_loss": row.best_loss,
            "best_val_loss": row.best_val_loss, "best_val_step": row.best_val_step,
            "steps": row.steps, "duration_s": row.duration_s, "report": row.report, "error": row.error,
            "label": label,
        }
        # Run names, paths and error texts come from the runs: none may start a formula.
        writer.writerow(["" if values[k] is None else csv_cell(values[k]) for k in FIELDS])
    return out.getvalue()
