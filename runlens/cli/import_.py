"""``runlens import KIND SOURCE OUT_RUN``: turn another tool's log into a run directory."""

from __future__ import annotations

import json

import click

from runlens.io.importers import KINDS


@click.command(name="import")
@click.argument("kind", type=click.Choice(sorted(KINDS)))
@click.argument("source", type=click.Path())
@click.argument("out_run", type=click.Path())
@click.option("--loss-tag", help="tensorboard: the training-loss tag (default: train/loss, loss, ...)")
@click.option("--val-loss-tag", help="tensorboard: the validation-loss tag (default: val_loss, eval/loss, ...)")
@click.option("--lr-tag", help="tensorboard: the learning-rate tag (default: lr, learning_rate, ...)")
@click.option("--grad-norm-tag", help="tensorboard: the gradient-norm tag (default: grad_norm, ...)")
@click.option("--step", "step_col", help="csv/lightning-csv: the step column (default: step, iteration, ...)")
@click.option("--loss", "loss_col", help="csv/lightning-csv: the training-loss column")
@click.option("--val-loss", "val_loss_col", help="csv/lightning-csv: the validation-loss column")
@click.option("--lr", "lr_col", help="csv/lightning-csv: the learning-rate column")
@click.option("--grad-norm", "grad_norm_col", help="csv/lightning-csv: the gradient-norm column")
@click.option("--conflict", type=click.Choice(["ours", "theirs"]),
              help="csv: a file with git merge-conflict markers: import this side only")
@click.option("--logging-steps", type=int, help="hf console logs: the Trainer's logging_steps")
def import_cmd(kind: str, source: str, out_run: str, loss_tag: str | None, val_loss_tag: str | None,
               lr_tag: str | None, grad_norm_tag: str | None, step_col: str | None, loss_col: str | None,
               val_loss_col: str | None, lr_col: str | None, grad_norm_col: str | None,
               conflict: str | None, logging_steps: int | None) -> None:
    """Import SOURCE, read as KIND, into the new run directory OUT_RUN.

    Options that KIND does not use are refused rather than ignored.
    """
    from runlens.errors import UsageError
    from runlens.io.importers import import_run

    by_kind = {
        "tensorboard": dict(loss_tag=loss_tag, val_loss_tag=val_loss_tag, lr_tag=lr_tag,
                            grad_norm_tag=grad_norm_tag),
        "csv": dict(step=step_col, loss=loss_col, val_loss=val_loss_col, lr=lr_col,
                    grad_norm=grad_norm_col, conflict=conflict),
        "lightning-csv": dict(step=step_col, loss=loss_col, val_loss=val_loss_col, lr=lr_col,
                              grad_norm=grad_norm_col),
        "hf": dict(logging_steps=logging_steps),
        "text": {},
    }
    options = {k: v for k, v in by_kind[kind].items() if v is not None}
    given = [loss_tag, val_loss_tag, lr_tag, grad_norm_tag, step_col, loss_col, val_loss_col, lr_col,
             grad_norm_col, conflict, logging_steps]
    if sum(v is not None for v in given) > len(options):
        raise UsageError(f"option(s) not used by the {kind} importer were given; "
                         f"it takes: {', '.join('--' + k.replace('_', '-') for k in by_kind[kind]) or 'no options'}")
    path = import_run(kind, source, out_run, **options)
    meta = json.loads((path / "run.json").read_text(encoding="utf-8"))
    warnings = meta.get("config", {}).get("import_warnings", [])
    click.echo(f"imported {source} ({kind}) into {path}")
    for line in warnings:
        click.echo(f"  note: {line}")
