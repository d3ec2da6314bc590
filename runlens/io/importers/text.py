"""Plain-text training logs, one line per logged step, in the styles people actually print.

Recognised (each line on its own; other lines are ignored and counted):

- llm.c / modded-nanogpt: ``s:120 trl:3.91 lr:0.0006 norm:0.41`` and ``s:250 tel:3.87`` (val),
  also ``step:120/5100 train_loss:3.91 ...`` and ``step:250/5100 val_loss:3.87``;
- Megatron-LM / DeepSpeed: ``iteration 7000/ 159576 | ... | learning rate: 6.0E-05 |
  lm loss: 6.44E+00 | loss scale: 2048.0 | grad norm: 982.2 | ...`` and
  ``validation loss at iteration 7000 | lm loss value: 7.17E+00 | ...``;
- PyTorch ``word_language_model``: ``| epoch 1 | 200/ 2983 batches | lr 20.00 | ... | loss 9.09 |``
  and ``| end of epoch 1 | ... | valid loss 5.61 |`` (step = batches seen so far);
- the generic ``step 120/5000 | loss 3.91 | lr 6e-4 | norm 0.41`` (``|`` or ``,`` separated).

Excerpts pasted from several runs (training chronicles) may repeat steps:
the last value of a step wins and the import says so.
"""

from __future__ import annotations

import re
from pathlib import Path

from runlens.errors import ImportFailedError
from runlens.io.importers._common import Imported, Series

_NUM = r"([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf|NaN|Inf))"
_LLMC_TRAIN = re.compile(rf"^s:(\d+) trl:{_NUM}(?: lr:{_NUM})?(?: norm:{_NUM})?")
_LLMC_VAL = re.compile(rf"^s:(\d+) tel:{_NUM}")
_MEG_TRAIN = re.compile(r"iteration\s+(\d+)\s*/\s*\d+\s*\|(.*)")
_MEG_VAL = re.compile(rf"validation loss at iteration\s+(\d+)\s*\|\s*lm loss value:\s*{_NUM}")
_WLM_TRAIN = re.compile(r"\|\s*epoch\s+(\d+)\s*\|\s*(\d+)\s*/\s*(\d+) batches\s*\|(.*)")
_WLM_VAL = re.compile(rf"\|\s*end of epoch\s+(\d+)\s*\|.*valid loss\s+{_NUM}")
_GENERIC = re.compile(r"^\s*step[\s:]+(\d+)(?:\s*/\s*\d+)?\s*[|,]?(.*)$", re.IGNORECASE)
_FIELD = re.compile(rf"([A-Za-z][A-Za-z _/-]*?)\s*[:=]?\s+{_NUM}(?=\s*(?:\||,|$|\s[A-Za-z]))")

_ALIASES = {
    "loss": "loss", "lm loss": "loss", "train loss": "loss", "train_loss": "loss", "trl": "loss",
    "val loss": "val_loss", "val_loss": "val_loss", "valid loss": "val_loss", "eval loss": "val_loss",
    "lr": "lr", "learning rate": "lr", "learning_rate": "lr",
    "norm": "grad_norm", "grad norm": "grad_norm", "grad_norm": "grad_norm", "gnorm": "grad_norm",
    "loss scale": "loss_scale", "loss_scale": "loss_scale",
    "number of skipped iterations": "skipped_iterations", "number of nan iterations": "nan_iterations",
    "ppl": "ppl", "ms/batch": "ms_per_batch", "elapsed time per iteration (ms)": "ms_per_step",
    "consumed samples": "consumed_samples", "global batch size": "global_batch_size",
}


class _Acc:
    def __init__(self) -> None:
        self.train: dict[str, tuple[list[int], list[float]]] = {}
        self.evals: dict[str, tuple[list[int], list[float]]] = {}
        self.styles: set[str] = set()

    def put(self, evals: bool, name: str, step: int, value: str | float | None) -> None:
        if value is None:
            return
        steps, values = (self.evals if evals else self.train).setdefault(name, ([], []))
        steps.append(step)
        values.append(float(value))

    def fields(self, step: int, text: str, *, evals: bool = False) -> None:
        for m in _FIELD.finditer(text):
            name = _ALIASES.get(m.group(1).strip().lower())
            if name is not None:
                if evals and name == "loss":
                    name = "val_loss"
                self.put(evals or name == "val_loss", name, step, m.group(2))


def _parse_line(acc: _Acc, line: str, wlm_last: list[int]) -> bool:
    if m := _LLMC_TRAIN.match(line):
        step = int(m.group(1))
        acc.put(False, "loss", step, m.group(2))
        acc.put(False, "lr", step, m.group(3))
        acc.put(False, "grad_norm", step, m.group(4))
        acc.styles.add("llm.c")
    elif m := _LLMC_VAL.match(line):
        acc.put(True, "val_loss", int(m.group(1)), m.group(2))
        acc.styles.add("llm.c")
    elif m := _MEG_VAL.search(line):
        acc.put(True, "val_loss", int(m.group(1)), m.group(2))
        acc.styles.add("megatron")
    elif m := _MEG_TRAIN.search(line):
        acc.fields(int(m.group(1)), m.group(2))
        acc.styles.add("megatron")
    elif m := _WLM_TRAIN.search(line):
        epoch, batch, per_epoch = int(m.group(1)), int(m.group(2)), int(m.group(3))
        step = (epoch - 1) * per_epoch + batch - 1
        acc.fields(step, m.group(4))
        acc.put(False, "epoch", step, epoch - 1)
        wlm_last[0] = epoch * per_epoch - 1
        acc.styles.add("word_language_model")
    elif m := _WLM_VAL.search(line):
        acc.put(True, "val_loss", wlm_last[0], m.group(2))
        acc.styles.add("word_language_model")
    elif m := _GENERIC.match(line):
        before = sum(len(v[0]) for v in acc.train.values()) + sum(len(v[0]) for v in acc.evals.values())
        acc.fields(int(m.group(1)), m.group(2))
        after = sum(len(v[0]) for v in acc.train.values()) + sum(len(v[0]) for v in acc.evals.values())
        if after == before:
            return False
        acc.styles.add("step-lines")
    else:
        return False
    return True


def read(source: str | Path) -> Imported:
    """Read a text log in one of the styles above."""
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ImportFailedError(f"{path}: cannot read ({exc})") from exc
    acc, wlm_last, ignored = _Acc(), [0], 0
    for line in text.splitlines():
        if not _parse_line(acc, line.strip(), wlm_last):
            ignored += line.strip() != ""
    if not acc.styles:
        raise ImportFailedError(f"{path}: no training-log lines in a known style "
                                "(llm.c 's:N trl:X', Megatron 'iteration N/M |', "
                                "word_language_model '| epoch', 'step N | loss X')")
    imp = Imported(kind="text", source=path)
    imp.train = {k: Series.from_lists(*v) for k, v in acc.train.items()}
    imp.evals = {k: Series.from_lists(*v) for k, v in acc.evals.items()}
    imp.config["log_style"] = sorted(acc.styles)
    if ignored:
        imp.warnings.append(f"{ignored} lines in no known log style: ignored")
    return imp
