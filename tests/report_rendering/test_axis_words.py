"""A log counted in epochs is reported in epochs: the key numbers, the headline and the charts name
the axis the log uses (key_numbers.axis), so every number shown can be found in the file; a
recorder run keeps "step"."""

from __future__ import annotations

import json

from click.testing import CliRunner

from runlens.cli import main as cli

EPOCHS = 12


def _keras_log(path):
    """A Keras console log (written here): a progress counter i/N inside each epoch, then the summary."""
    lines = []
    for e in range(1, EPOCHS + 1):
        loss = 1.0 / e
        val = 0.5 + 0.02 * (e - 6) ** 2  # lowest at epoch 6, then rising
        lines.append(f"Epoch {e}/{EPOCHS}")
        for i in (9999, 19999):
            lines.append(f"{i}/60000 [=====>......] - ETA: 3s - loss: {loss + 0.01:.4f}")
        lines.append(f"60000/60000 [==============================] - 4s - loss: {loss:.4f} - val_loss: {val:.4f}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_epoch_log_is_reported_in_epochs(tmp_path):
    log = _keras_log(tmp_path / "nohup.out")
    r = CliRunner().invoke(cli, ["analyze", str(log), "--format", "json"])
    obj = json.loads(r.output)
    assert obj["key_numbers"]["axis"] == "epoch"
    assert obj["key_numbers"]["val_min_step"] == 6  # the file's own epoch of the lowest val_loss
    text = CliRunner().invoke(cli, ["analyze", str(log)]).output
    assert "best val loss 0.5 at epoch 6" in text and f"{EPOCHS} epochs" in text
    assert "at step" not in text.split("\n\n", 1)[0].split("curve:")[1]  # the key numbers line
    out = tmp_path / "out"
    CliRunner().invoke(cli, ["report", str(log), "-o", str(out), "--format", "both", "--fail-on", "never"])
    md = next(out.glob("*.md")).read_text()
    html = next(out.glob("*.html")).read_text()
    assert "epochs recorded" in md and "at epoch 6" in md
    assert ">epoch<" in html and "epochs recorded" in html


def test_recorder_runs_keep_steps(tmp_path):
    from pathlib import Path

    run = Path(__file__).resolve().parents[2] / "sample_runs" / "healthy"
    obj = json.loads(CliRunner().invoke(cli, ["analyze", str(run), "--format", "json"]).output)
    assert obj["key_numbers"]["axis"] == "step"
    assert "at step" in CliRunner().invoke(cli, ["analyze", str(run)]).output
