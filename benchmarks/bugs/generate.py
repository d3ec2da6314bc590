"""Generate the training-loop-bug fixture runs (issue 21): one command.

    .venv/bin/python -m benchmarks.bugs.generate            # every case into tests/fixtures/bugs/
    .venv/bin/python -m benchmarks.bugs.generate --only data_not_shuffled --out /tmp/bugs

Each case in :mod:`benchmarks.bugs.cases` trains a small real model on
synthetic data (CPU seconds) twice: with the bug, and fixed. The bug is
measured in torch during training by the criterion stated up front in
``CRITERIA`` (:mod:`benchmarks.bugs._cases`); a buggy run whose criterion
does not hold, or a fixed twin whose criterion holds, is refused (not
written, exit status 1). Each run goes to ``<out>/<bug>-<model>[-fixed]/``
with a ``truth.json``: the bug, whether it is present, the criterion, the
measured figures and whether the recorder's run.json lists
(``params_without_grad``, ``params_outside_optimizer``) agreed with the
loop's own measurement (a disagreement refuses the run too). The healthy
controls of :mod:`benchmarks.bugs.controls` (alarming shapes, no bug) go to
``<out>/control-<kind>-<model>/`` and must have learned.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

import torch

from benchmarks.bugs._cases import CRITERIA
from benchmarks.bugs._loop import train
from benchmarks.bugs.cases import CASES
from benchmarks.bugs.controls import CONTROL_CRITERION, CONTROLS

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "fixtures" / "bugs"
SEED = [0]  # --seed: the models' initialization and the batch order (the data sets keep their own seeds)


def generate_one(bug: str, model: str, fixed: bool, out: Path) -> tuple[bool, dict]:
    """Train one bug case into ``out/<bug>-<model>[-fixed]``; (accepted, truth)."""
    torch.manual_seed(SEED[0])  # the model's initialization
    name = f"{bug}-{model}" + ("-fixed" if fixed else "")
    return _write(name, CASES[(bug, model)](fixed), out, {"bug": bug, "model": model, "fixed": fixed,
                                                          "criterion": CRITERIA[bug],
                                                          "expected_code": None if fixed else bug}, not fixed)


def generate_control(kind: str, model: str, out: Path) -> tuple[bool, dict]:
    """Train one healthy control into ``out/control-<kind>-<model>``; (accepted, truth)."""
    torch.manual_seed(SEED[0])
    return _write(f"control-{kind}-{model}", CONTROLS[(kind, model)](True), out,
                  {"bug": None, "control": kind, "model": model, "fixed": True, "criterion": CONTROL_CRITERION,
                   "expected_code": None}, True)


def _write(name: str, case, out: Path, record: dict, want: bool) -> tuple[bool, dict]:
    """Train ``case``; keep the run only when its criterion comes out ``want`` and the recorder agrees."""
    loop, truth = case
    loop.seed = SEED[0]
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / name
        measured = train(run, loop)
        holds, figures = truth(measured, loop)
        key = "learned" if record["bug"] is None else "bug_present"
        record = {**record, key: holds, "measured": _plain(figures), "steps": measured["steps"],
                  "recorder_agrees": measured.get("recorder_agrees")}
        if holds != want or measured.get("recorder_agrees") is False:
            return False, record  # the truth not measured as stated, or the recorder's lists disagree
        dest = out / name
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(run, dest)
        (dest / "truth.json").write_text(json.dumps(record, indent=1) + "\n")
    return True, record


def _plain(v):
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return float(v) if hasattr(v, "item") and not isinstance(v, (bool, int, str)) else v


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--only", nargs="*", help="bug codes or control kinds to generate, or 'controls' (default: all)")
    ap.add_argument("--seed", type=int, default=0, help="initialization and batch-order seed (default 0: the fixtures)")
    args = ap.parse_args(argv)
    SEED[0] = args.seed
    torch.set_num_threads(1)
    jobs = [(f"{b}-{m}{'-fixed' if f else ''}", lambda b=b, m=m, f=f: generate_one(b, m, f, args.out))
            for (b, m) in CASES if not args.only or b in args.only for f in (False, True)]
    jobs += [(f"control-{c}-{m}", lambda c=c, m=m: generate_control(c, m, args.out))
             for (c, m) in CONTROLS if not args.only or c in args.only or "controls" in args.only]
    refused = 0
    for name, job in jobs:
        ok, rec = job()
        print(f"{'ok     ' if ok else 'REFUSED'} {name}: {json.dumps(rec['measured'])[:160]}")
        refused += not ok
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
