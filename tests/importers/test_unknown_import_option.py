"""An option an importer does not take is refused before the source is read, in one set of words
for every kind: whether the importer parses a source once (text, hf, table, wandb) or reads it whole
(markdown, tensorboard, mlflow), the message names the option and what the importer takes."""

from __future__ import annotations

from unittest import mock

import pytest
from click.testing import CliRunner

from runlens.cli import main
from runlens.errors import ImportFailedError
from runlens.io.importers import read
from runlens.io.importers import text as text_importer
from tests.multirun_logs import healthy, write_text


@pytest.mark.parametrize("kind, takes", [
    ("text", "step, loss, val_loss, run"),
    ("hf", "logging_steps, run"),
    ("markdown", "step, loss, val_loss"),
    ("tensorboard", "loss_tag, val_loss_tag, lr_tag, grad_norm_tag"),
])
def test_the_refusal_names_the_option_and_what_the_importer_takes(tmp_path, kind, takes):
    path = write_text(tmp_path / "train.log", healthy)
    with pytest.raises(ImportFailedError) as err:
        read(kind, path, foo=1, loss_tag=None)  # an option given as None is not given
    assert str(err.value) == f"the {kind} importer does not take the option(s) 'foo'; it takes: {takes}"


def test_a_log_parsed_once_is_not_parsed_to_refuse_an_option(tmp_path):
    path = write_text(tmp_path / "train.log", healthy, healthy)
    with mock.patch.object(text_importer, "_scan", wraps=text_importer._scan) as scan:
        with pytest.raises(ImportFailedError, match="'lr'"):
            read("text", path, lr="lr", run=1)
    assert scan.call_count == 0


def test_analyze_refuses_it_in_one_line_with_status_2(tmp_path):
    path = tmp_path / "stdout.txt"
    path.write_text("***** Running training *****\n"
                    + "".join(f"{{'loss': {healthy(s)}, 'epoch': {s / 120:.3f}}}\n" for s in range(1, 121)))
    res = CliRunner().invoke(main, ["analyze", str(path), "--loss", "x"])
    assert res.exit_code == 2, res.output
    assert res.output == ("runlens: the hf importer does not take the option(s) 'loss'; "
                          "it takes: logging_steps, run\n")
