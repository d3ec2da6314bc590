"""Diagnoses built by hand for the report tests.

The reports read a ReportData: a Diagnosis (plain values) and what the run's
signals show. These tests build the run (``runlens.testing.build_run``) and the
diagnosis directly (no analysis involved) and control exactly what the run holds: spikes, a NaN, a
crash, hostile layer names, thousands of layers.
"""

from __future__ import annotations

import numpy as np
from markdown_it import MarkdownIt

from runlens.analysis import facts_of
from runlens.diagnosis import CurveVerdict, Diagnosis, Finding
from runlens.io.run import Run
from runlens.report_data import ReportData, build_report_data
from runlens.signals import signals_of
from runlens.testing import build_run

# GitHub's dialect minus linkify (which needs an extra package): tables and
# strikethrough are what matter for cells.
MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])


def table_rows(text: str) -> list[list[str]]:
    """Every table row of a Markdown text as its cells' inline source."""
    rows, row = [], None
    for tok in MD.parse(text):
        if tok.type == "tr_open":
            row = []
        elif tok.type == "tr_close":
            rows.append(row)
            row = None
        elif tok.type == "inline" and row is not None:
            row.append(tok.content)
    return rows


HOSTILE = "<img src=x onerror=alert(1)>"
HOSTILE_NAMES = (HOSTILE, "a|b`c`|d", "line\nbreak **bold** [x](http://evil.example)", "<script>alert(2)</script>")


def layer_names(n_layers: int, hostile: bool) -> list[str]:
    names = [f"blocks.{i}.linear.weight" for i in range(n_layers)]
    if hostile:
        for i, name in enumerate(HOSTILE_NAMES[: n_layers]):
            names[i] = name
    return names


def make_run(*, steps: int = 600, n_layers: int = 6, hostile: bool = False, nan_at: int | None = None,
             spikes: tuple[int, ...] = (), crash: bool = False, layers_every: int = 10, seed: int = 0,
             name: str = "demo-run", status: str | None = None) -> Run:
    rng = np.random.default_rng(seed)
    step = np.arange(steps, dtype=np.int64)
    loss = 2.5 * np.exp(-step / (steps / 4)) + 0.3 + 0.02 * rng.standard_normal(steps)
    for s in spikes:
        loss[s] += 3.0
    if nan_at is not None:
        loss[nan_at:] = np.nan
    grad = 1.0 + 0.1 * rng.standard_normal(steps)
    if nan_at is not None:
        grad[nan_at:] = np.inf
    names = layer_names(n_layers, hostile)
    lsteps = step[::layers_every]
    depth = np.arange(n_layers)
    g = np.outer(np.ones(len(lsteps)), 10.0 ** (-(n_layers - 1 - depth) * 4.0 / max(n_layers - 1, 1)))
    w = np.outer(1.0 + lsteps / steps, np.ones(n_layers)) * (1 + depth)
    error = None
    if crash:
        error = {"type": "RuntimeError", "step": steps,
                 "message": f"mat1 and mat2 shapes cannot be multiplied (64x{HOSTILE})",
                 "traceback": 'Traceback (most recent call last):\n  File "train.py", line 3\n```\n</details>\nRuntimeError: boom'}
    meta = {
        "format": "runlens-run", "format_version": 1, "run_id": "run-" + name, "name": name,
        "status": "crashed" if crash else "finished", "seed": 1234,
        "config": {"lr": 1e-3, "optimizer": "AdamW", "note": HOSTILE if hostile else "plain", "layers_every": layers_every},
        "environment": {"python": "3.11.2", "torch": "2.13.0", "device": "cpu"},
        "layers": [{"name": n, "index": i, "module": n.rsplit(".", 1)[0], "kind": "Linear", "shape": [4, 4], "numel": 16}
                   for i, n in enumerate(names)],
        "attempts": [{"started_at": "2026-01-01T00:00:00+00:00", "first_step": 0}],
        "error": error,
    }
    vstep = step[::50]
    return build_run(loss=loss, steps=step, lr=np.minimum(1e-3, 1e-3 * (step + 1) / 50), grad_norm=grad,
                     val_loss=loss[::50] + 0.1 + 0.0005 * vstep, val_steps=vstep,
                     layers={"grad_norm": g, "weight_norm": w, "update_norm": w * 1e-3}, layer_names=names,
                     layer_steps=lsteps, t0=1.7e9, step_time=0.1, name=name, path=f"/runs/{name}",
                     status=status or meta["status"], meta=meta,
                     warnings=("part r0-00000003.parquet could not be read",))


def diagnosis_of(run: Run, **verdicts) -> Diagnosis:
    """A Diagnosis of ``run`` with the given ``curve``, ``findings`` (and any other field), its run
    facts and key numbers as ``analyze`` takes them."""
    return Diagnosis(**{**facts_of(run), **verdicts})


def report_of(run: Run, **verdicts) -> ReportData:
    """The report data of :func:`diagnosis_of` ``(run, **verdicts)``, the step ``runlens report`` takes."""
    return build_report_data(diagnosis_of(run, **verdicts), signals_of(run))


def analyzed(path) -> ReportData:
    """The report data of the run at ``path``: read with every column, analyzed, then reported."""
    from runlens.analysis import analyze
    from runlens.io.loader import load_run

    run = load_run(path)
    return build_report_data(analyze(run), signals_of(run))


def make_report(run: Run, *, hostile: bool = False) -> ReportData:
    names = run.layer_names()
    findings = [
        Finding("vanishing_gradients", "warning", "gradient norm falls 1e4x from loss to input",
                step=None, layers=tuple(names[:3]),
                evidence={"test": "Spearman", "rho": -0.98, "p": 1e-5, "ratio": 1e-4}, advice="Add residual connections."),
        Finding("no_validation", "info", "validation is sparse", advice="Log val loss more often."),
    ]
    loss = run.column("scalars", "loss")
    if loss is not None and not np.isfinite(loss).all():
        first = int(run.steps()[np.argmin(np.isfinite(loss))])
        findings.insert(0, Finding("nonfinite_loss", "error", f"loss became NaN at step {first}", step=first,
                                   evidence={"first_step": first}, advice="Lower the learning rate."))
    if run.error:
        findings.insert(0, Finding("crash_shape_mismatch", "error", "shape mismatch " + (HOSTILE if hostile else ""),
                                   step=run.error["step"], evidence={"type": run.error["type"]},
                                   advice="Check the input shape."))
    findings.append(Finding("loss_spikes", "warning", "2 loss spikes", step=100, evidence={"steps": [100, 300], "z": 12.5},
                            advice="Clip gradients."))
    warnings = ("detector late_loss_variance crashed: " + (HOSTILE if hostile else "boom"),)
    return report_of(run, curve=CurveVerdict("unstable", "loss spikes repeatedly", {"spikes": 2}),
                     findings=tuple(findings), warnings=(*run.warnings, *warnings))
