"""``runlens import KIND SOURCE OUT_RUN``: turn another tool's log into a run directory."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

import click

from runlens.io.importers import KINDS

if TYPE_CHECKING:
    from runlens.io.importers._common import Imported


@click.command(name="import")
@click.argument("kind", type=click.Choice(sorted([*KINDS, "auto"])))
@click.argument("source", type=click.Path())
@click.argument("out_run", type=click.Path(), required=False)
@click.option("--loss-tag", help="tensorboard: the training-loss tag (default: train/loss, loss, ...)")
@click.option("--val-loss-tag", help="tensorboard: the validation-loss tag (default: val_loss, eval/loss, ...)")
@click.option("--lr-tag", help="tensorboard: the learning-rate tag (default: lr, learning_rate, ...)")
@click.option("--grad-norm-tag", help="tensorboard: the gradient-norm tag (default: grad_norm, ...)")
@click.option("--step", help="table (csv, jsonl, lightning-csv), text, markdown, wandb: the step column/field (default: a step counter, else epoch, else row)")
@click.option("--loss", help="the training-loss column/field/key")
@click.option("--val-loss", help="the validation-loss column/field/key")
@click.option("--lr", help="table (csv, jsonl, lightning-csv): the learning-rate column")
@click.option("--grad-norm", help="table (csv, jsonl, lightning-csv): the gradient-norm column")
@click.option("--conflict", type=click.Choice(["ours", "theirs"]),
              help="table (csv, jsonl, lightning-csv): a file with git merge-conflict markers: import this side only")
@click.option("--logging-steps", type=int, help="hf console logs: the Trainer's logging_steps")
@click.option("--run", type=click.IntRange(min=1),
              help="table (csv, jsonl, lightning-csv), text, hf, mlflow, wandb: a source holding several runs: import run N (default: the last)")
@click.option("--dry-run", is_flag=True, help="print what would be mapped and skipped; write nothing")
def import_cmd(kind: str, source: str, out_run: str | None, dry_run: bool, **given: Any) -> None:
    """Import SOURCE, read as KIND ('auto': chosen from the content), into the new run OUT_RUN.

    Options that KIND does not use are refused rather than ignored.

    \b
    Examples:
      runlens import auto logs/metrics.csv runs/imported
      runlens import tensorboard tb_logs/ runs/from-tb
    """
    from runlens.errors import UsageError
    from runlens.io.importers import import_run, options_of, read
    from runlens.render.escape import term_inline, term_text

    if kind == "auto":
        from runlens.io.importers.sniff import sniff

        found = sniff(source)
        if found.kind is None:
            raise UsageError(f"{source}: no importer recognises it ({found.reason})")
        kind = found.kind
    options = {k: v for k, v in given.items() if v is not None}
    takes = options_of(kind)
    unused = sorted(set(options) - set(takes))
    if unused:
        raise UsageError(f"option(s) {', '.join('--' + k.replace('_', '-') for k in unused)} not used by the "
                         f"{kind} importer; it takes: "
                         f"{', '.join('--' + k.replace('_', '-') for k in takes) or 'no options'}")
    if dry_run:
        imported = read(kind, source, **options)
        if out_run is not None:
            refuse_target(out_run)  # --dry-run exits as the import would: 2 where it would be refused
        click.echo(term_text(describe(imported, kind, source)), nl=False)  # names from the log: inert
        return
    if out_run is None:
        raise UsageError("OUT_RUN is missing: where to write the run (or pass --dry-run)")
    from runlens.io.output import new_run_target

    new_run_target(out_run)  # its folder created, or refused in one line; never inside a run
    from runlens.io.lock import output_lock

    with output_lock(out_run):  # a second import into the same run at once is refused, exit 2
        path = import_run(kind, source, out_run, **options)
    meta = json.loads((path / "run.json").read_text(encoding="utf-8"))
    warnings = meta.get("config", {}).get("import_warnings", [])
    click.echo(term_inline(f"imported {source} ({kind}) into {path}"))
    for line in warnings:
        click.echo(f"  note: {term_inline(line)}")


def refuse_target(out_run: str) -> None:
    """What the import would refuse about OUT_RUN, checked without writing anything."""
    from pathlib import Path

    from runlens.errors import UsageError

    target = Path(out_run)
    if (target / "run.json").exists():
        raise UsageError(f"{out_run} already holds a run; choose a new OUT_RUN directory")
    if target.exists() and not target.is_dir():
        raise UsageError(f"{out_run}: exists and is not a folder; give a new run directory")
    for folder in (target, *target.parents):
        if (folder / "run.json").is_file() and folder != target:
            raise UsageError(f"{out_run}: inside the run {folder}; give a folder outside any run")
        if folder.exists():
            if not os.access(folder, os.W_OK | os.X_OK):
                raise UsageError(f"{out_run}: cannot write in {folder} (permission denied)")
            break


def describe(imp: Imported, kind: str, source: str) -> str:
    """The dry-run report: each column with where it came from and how many values, then the notes."""
    roles = {role: " + ".join(v["columns"]) for role, v in (imp.config.get("import_roles") or {}).items()
             if v.get("columns")}
    names = roles or imp.config.get("import_fields") or imp.config.get("import_columns") or imp.config.get(
        "import_tags") or {}
    out = [f"{source} read as {kind}"]
    lines = imp.config.get("text_lines")
    if lines:
        out.append(f"  lines: {lines['read']} read, {lines['skipped']} skipped; runs: {lines['runs']} "
                   f"(importing run {lines['run']})")
    if imp.config.get("log_style"):
        out.append("  step from: " + ", ".join(f"{k} ({v} lines)" for k, v in imp.config["log_style"].items()))
    for table, series in (("scalars", imp.train), ("evals", imp.evals)):
        for col in sorted(series, key=lambda c: (c not in ("loss", "val_loss"), c)):
            s = series[col]
            src = names.get(col)
            origin = f" <- {src!r}" if isinstance(src, str) and src != col else ""
            span = f"steps {int(s.steps.min())}..{int(s.steps.max())}" if len(s.steps) else "no values"
            out.append(f"  {table}.{col}{origin}: {len(s.steps)} values, {span}")
    if "loss" not in imp.train:
        out.append("  no training loss: the loss column would be all null")
    out.extend(f"  note: {w}" for w in imp.warnings)
    return "\n".join(out) + "\n"
