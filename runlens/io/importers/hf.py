"""Hugging Face ``Trainer`` logs: ``trainer_state.json`` and the console output.

``trainer_state.json`` (written with every checkpoint) holds
``log_history``: one dict per ``on_log`` call, training entries
(``loss``, ``grad_norm``, ``learning_rate``, ``epoch``, ``step``), eval
entries (``eval_loss``, ...; with several eval datasets ``eval_<set>_loss``, kept
as ``val_loss@<set>``) and a final summary (``train_runtime``, ...).

The console output is often all a crashed job left: the same dicts printed
with ``str(dict)`` (transformers 5 prints values as ``'0.166'`` strings,
older versions as bare floats, NaN as ``nan``), among progress bars and
warnings. Those lines carry no step: the importer counts them and
multiplies by ``logging_steps`` when the caller knows it.

Steps are the log's own numbers: a ``log_history`` entry's ``step`` (the
Trainer's ``global_step``, optimizer steps done) is its step, and so is
the count of a console line's progress bar, so every step shown is one the
user finds in the file. A console line without a bar is the n-th log line:
step ``n * logging_steps`` (the Trainer logs when ``global_step`` is a
multiple of ``logging_steps``), or ``n`` when that is unknown.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from runlens.errors import ImportFailedError
from runlens.io.bounded import bounded_int, in_int64, is_int, loads_json
from runlens.io.importers._common import (
    Imported,
    Series,
    Take,
    as_float,
    column_name,
    record_runs,
    require_file,
)
from runlens.io.importers._logsignals import Watch
from runlens.io.importers._mapping import parse_mapping
from runlens.io.importers._names import Mapper

_SKIP = frozenset({"step", "epoch", "total_flos"})
_SUMMARY_KEYS = ("train_runtime", "train_loss", "train_samples_per_second")
_DICT_START = re.compile(r"\{'(?:loss|eval_loss|train_runtime|grad_norm|learning_rate)'")
_BAR_STEP = re.compile(r"(\d+)/(\d+) \[[^\]]*\]?\s*$")


class _Log:
    def __init__(self) -> None:
        self.train: dict[str, tuple[list[int], list[float]]] = {}
        self.evals: dict[str, tuple[list[int], list[float]]] = {}
        self.summary: dict[str, Any] = {}
        # The Trainer's keys (``loss``, ``learning_rate``, ``grad_norm``, ``eval_<set>_loss``, TRL's
        # ``nll_loss``, ...) take their roles by the reader's vocabulary, as every other log's names do.
        self.mapper = Mapper(None, None)

    def add(self, entry: dict[str, Any], step: int) -> None:
        if any(k in entry for k in _SUMMARY_KEYS) and "loss" not in entry:
            self.summary.update({k: v for k, v in entry.items() if _number(v) is not None})
            return
        is_eval = any(k.startswith("eval_") for k in entry)
        target = self.evals if is_eval else self.train
        if "epoch" in entry and (epoch := _number(entry["epoch"])) is not None and not is_eval:
            self._put(target, "epoch", step, math.floor(epoch))
        for key, raw in entry.items():
            value = _number(raw)
            if key in _SKIP or value is None:
                continue
            val, name = self.mapper(key)
            if is_eval and not val:  # a key of an eval dict that does not say so itself
                name = column_name(key)
            elif not is_eval and val:
                name = column_name(key)
            self._put(target, name, step, value)

    @staticmethod
    def _put(target: dict[str, tuple[list[int], list[float]]], name: str, step: int, value: float) -> None:
        steps, values = target.setdefault(name, ([], []))
        steps.append(step)
        values.append(value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return as_float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _finish(log: _Log, source: Path, kind: str, warnings: list[str], config: dict) -> Imported:
    imp = Imported(kind=kind, source=source, warnings=warnings, config=config)
    imp.train = {k: Series.from_lists(*v) for k, v in log.train.items()}
    imp.evals = {k: Series.from_lists(*v) for k, v in log.evals.items()}
    if log.summary:
        imp.config["train_summary"] = dict(log.summary)  # a copy: each run taken from one parse owns its config
    return imp


def read_state(path: Path) -> Imported:
    """Read ``trainer_state.json``: every ``log_history`` entry at its own step."""
    try:
        state = loads_json(path.read_text(encoding="utf-8"))  # nested 100,000 deep: ValueError, not exit 3
    except (OSError, ValueError) as exc:
        raise ImportFailedError(f"{path}: not a readable trainer_state.json ({exc})") from exc
    history = state.get("log_history") if isinstance(state, dict) else None
    if not isinstance(history, list):
        raise ImportFailedError(f"{path}: no 'log_history' list: not a Trainer state file")
    log, warnings, missing, beyond = _Log(), [], 0, 0
    for entry in history:
        if not isinstance(entry, dict) or not is_int(entry.get("step")):
            missing += 1
            continue
        step = bounded_int(entry["step"], "", None)
        if step is None:  # beyond int64: unknown, not an OverflowError in numpy
            beyond += 1
            continue
        log.add(entry, step)
    if missing:
        warnings.append(f"{missing} log_history entries without an integer 'step': skipped")
    if beyond:
        warnings.append(f"{beyond} log_history entries with a 'step' beyond what a 64-bit integer holds: skipped")
    keep = ("global_step", "max_steps", "num_train_epochs", "logging_steps", "eval_steps",
            "save_steps", "train_batch_size", "best_metric", "best_model_checkpoint")
    config = {"trainer_state": {k: state[k] for k in keep if k in state},
              "step_convention": "the log's own step (HF global_step)"}
    return _finish(log, path, "hf", warnings, config)


_BANNER = "***** Running training *****"  # what Trainer.train() prints at every launch


class _ConsoleRun:
    """One launch of the Trainer in a console log: its dicts, and where it lies in the file."""

    def __init__(self, first_line: int) -> None:
        self.log = _Log()
        self.first_line = self.last_line = first_line
        self.n_train = self.last = self.from_bar = 0
        self.bar: int | None = None  # the last progress-bar count seen with a training dict
        self.epoch: float | None = None
        self.ended = False  # the train_runtime summary was printed: this launch is over
        # Warnings and the final exception among the dicts, read as the text reader reads them.
        self.watch = Watch()

    def starts_again(self, entry: dict[str, Any], bar: int | None) -> bool:
        """Whether a training dict belongs to a new launch: the summary was printed, or the
        bar's count or the epoch went back (both only grow within one call of ``train()``)."""
        if not self.n_train:
            return False
        epoch = _number(entry.get("epoch"))
        return (self.ended or (bar is not None and self.bar is not None and bar < self.bar)
                or (epoch is not None and self.epoch is not None and epoch < self.epoch))

    def steps(self) -> tuple[int, int] | None:
        steps = self.log.train.get("loss") or next(iter(self.log.train.values()), ([], []))
        return (steps[0][0], steps[0][-1]) if steps[0] else None

    def describe(self, index: int) -> str:
        steps = self.steps()
        span = f"steps {steps[0]}..{steps[1]}" if steps else "no training line"
        return f"run {index} (lines {self.first_line}-{self.last_line}, {self.n_train} training dicts, {span})"


#: The most lines one printed dict is taken to span when a paste wrapped it.
_WRAP_LINES = 40


def _unwrapped(lines: list[str]) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` with each dict that a paste broke over lines joined again: its lines
    before the one that closes it all as long as each other (an issue's text hard-wrapped at a
    fixed width, cutting numbers: ``'rewards/chosen': 1.19`` / ``4046974182129``) are joined as
    they were cut, other broken lines (a dict pretty-printed over lines) with a space."""
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _DICT_START.search(line)
        if m is None or "}" in line[m.start():]:
            yield i + 1, line
            i += 1
            continue
        end = next((j for j in range(i + 1, min(len(lines), i + _WRAP_LINES)) if "}" in lines[j]), None)
        if end is None or any(_DICT_START.search(ln) for ln in lines[i + 1:end + 1]):
            yield i + 1, line
            i += 1
            continue
        part = lines[i:end + 1]
        cut = len({len(ln) for ln in part[:-1]}) == 1 and len(part[0]) >= 40
        yield i + 1, ("" if cut else " ").join(part if cut else [ln.strip() for ln in part])
        i = end + 1


def _scan_console(text: str, every: int) -> tuple[list[_ConsoleRun], int, int]:
    """The launches of a console log (a repeated banner, a bar or epoch that went back, a dict
    after the summary start a new one), and the counts of unparsable and out-of-range dicts."""
    runs, bad, beyond = [_ConsoleRun(1)], 0, 0
    for number, raw_line in _unwrapped(text.splitlines()):
        if _BANNER in raw_line and runs[-1].n_train:
            runs.append(_ConsoleRun(number))
        for piece in raw_line.split("\r"):
            m = _DICT_START.search(piece)
            if m is None:
                runs[-1].watch.see(piece, runs[-1].last if runs[-1].n_train else None)
                continue
            end = piece.rfind("}")
            if end < m.start():  # found with find/rfind: ``{'loss'.*}`` would search quadratically
                continue
            entry = parse_mapping(piece[m.start():end + 1])
            if entry is None:
                bad += 1
                continue
            bar_m = _BAR_STEP.search(piece[max(0, m.start() - 256): m.start()])  # a bar is short: bounded search
            bar = int(bar_m.group(1)) if bar_m else None
            cur = runs[-1]
            if "loss" in entry or ("grad_norm" in entry and "eval_loss" not in entry):
                if cur.starts_again(entry, bar):
                    cur = _ConsoleRun(number)
                    runs.append(cur)
                cur.n_train += 1
                cur.watch.trained()
                cur.epoch = _number(entry.get("epoch"))
                if bar is not None:
                    cur.last, cur.bar, cur.from_bar = bar, bar, cur.from_bar + 1
                else:
                    cur.last = cur.n_train * every
            elif any(k in entry for k in _SUMMARY_KEYS):
                cur.ended = True
            cur.last_line = number
            if not in_int64(cur.last):  # a progress bar of 10**20 steps: unknown, not an OverflowError
                beyond += 1
                continue
            cur.log.add(entry, cur.last)
    return [r for r in runs if r.n_train or r.log.evals or r.log.summary], bad, beyond


def read_console(path: Path, *, logging_steps: int | None = None, run: int | None = None) -> Imported:
    """Read the dicts a Trainer printed; steps from the progress bar, else counted.

    Launches appended to one file (a second ``***** Running training *****``,
    a progress bar or epoch that starts again, dicts after the final summary)
    are told apart: the last is read unless ``run`` (1-based) picks another,
    and the warnings list them all, as the text reader does.
    """
    return parse_console(path, logging_steps=logging_steps)(run)


def parse_console(path: Path, *, logging_steps: int | None = None) -> Take:
    """The console log read once: ``take(run)`` is :func:`read_console` with ``run``."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ImportFailedError(f"{path}: cannot read ({exc})") from exc
    runs, bad, beyond = _scan_console(text, logging_steps or 1)
    del text  # the launches hold the numbers; the text is not kept while they are taken
    if not any(r.n_train or r.log.evals for r in runs):
        raise ImportFailedError(f"{path}: no Trainer log lines ({{'loss': ...}} or {{'eval_loss': ...}}) found")
    return functools.partial(_take_console, path, runs, bad, beyond, logging_steps)


def _take_console(path: Path, runs: list[_ConsoleRun], bad: int, beyond: int, logging_steps: int | None,
                  run: int | None) -> Imported:
    listed = "; ".join(r.describe(i) for i, r in enumerate(runs, 1))
    chosen = len(runs) if run is None else run
    if not 1 <= chosen <= len(runs):
        raise ImportFailedError(f"{path}: --run {run}: the log holds {len(runs)} run(s): {listed}")
    warnings = []
    config: dict[str, Any] = {"step_convention": "the log's own step (the progress bar's count, else line n * "
                                                  "logging_steps)"}
    if len(runs) > 1:
        warnings.append(f"the log holds {len(runs)} runs (a second '{_BANNER}', or the progress bar or epoch "
                        f"started again): {listed}; imported run {chosen} "
                        f"({'the last' if run is None else 'as asked'}); pick another with --run N")
        record_runs(config, [(f"lines {r.first_line}-{r.last_line}", r.steps()) for r in runs], chosen,
                    warnings[-1])
    cur = runs[chosen - 1]
    if bad:
        warnings.append(f"{bad} log dicts that could not be parsed: skipped")
    if beyond:
        warnings.append(f"{beyond} log dicts at a step beyond what a 64-bit integer holds: skipped")
    if cur.from_bar < cur.n_train:
        how = (f"logging_steps={logging_steps}" if logging_steps else
               "logging_steps unknown: step = index of the log line (to fix: runlens import hf LOG OUT_RUN "
               "--logging-steps N, then analyze OUT_RUN)")
        warnings.append(f"console lines carry no step; {how}; eval lines take the step of the log line before")
    if logging_steps:
        config["logging_steps"] = logging_steps
    imp = _finish(cur.log, path, "hf", warnings, config)
    imp.events, imp.error = cur.watch.all_events(), cur.watch.error
    return imp


def read(source: str | Path, *, logging_steps: int | None = None, run: int | None = None) -> Imported:
    """A ``trainer_state.json``, a checkpoint/output folder holding one, or a console log
    (``run`` picks one of the launches appended to it; a state file holds one run)."""
    return parse_runs(source, logging_steps=logging_steps)(run)


def parse_runs(source: str | Path, *, logging_steps: int | None = None) -> Take:
    """The source read once: ``take(run)`` is :func:`read` with ``run``."""
    path = Path(source)
    if path.is_dir():
        found = sorted(path.rglob("trainer_state.json"), key=lambda p: _checkpoint_number(p))
        if not found:
            raise ImportFailedError(f"{path}: no trainer_state.json below this folder")
        path = found[-1]
    require_file(path, "hf")
    with open(path, "rb") as f:
        first = f.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    if path.suffix == ".json" or re.match(rb'\{\s*"', first):
        return functools.partial(_take_state, path)  # a trainer_state.json, whatever its name
    return parse_console(path, logging_steps=logging_steps)


def _take_state(path: Path, run: int | None) -> Imported:
    # Read when taken, after the run is checked: a state file holds one run, so it is taken once.
    if run not in (None, 1):
        raise ImportFailedError(f"{path}: --run {run}: a trainer_state.json holds one run")
    return read_state(path)


def _checkpoint_number(path: Path) -> tuple[int, float]:
    """The last checkpoint holds the longest history; folder numbers order them, mtime breaks ties."""
    m = re.search(r"checkpoint-(\d+)", str(path))
    return (int(m.group(1)) if m else 1 << 62, path.stat().st_mtime)
