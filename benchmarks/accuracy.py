"""How often runlens is right: recall, precision and false alarms on fourteen labeled sets.

    python benchmarks/accuracy.py --set final      # generate what is missing, grade every set, write the page
    python benchmarks/accuracy.py --set third-fresh8  # the set to quote (round 9), graded once
    python benchmarks/accuracy.py --evaluate-only  # re-grade the runs already in benchmarks/_data/
    python benchmarks/accuracy.py --set heldout    # one set only (or a list: --set heldout-varied,third)
    python benchmarks/accuracy.py --set heldout-varied --generate-only   # train a new set, grade nothing
    python benchmarks/accuracy.py --only healthy,vanishing --jobs 2   # tuning families

Real PyTorch training runs, each label confirmed by its generator's own
measurements in torch (never by a runlens threshold):

- the *tuning* set (``benchmarks/_accuracy/tuning.py``): families built from
  ``sample_runs/_training.py``, the generator the detectors were developed
  against, into ``benchmarks/_data/accuracy/``;
- the *held-out* set (``benchmarks/heldout``): a generator of its own, written
  before any result on it was seen, into ``benchmarks/_data/heldout/``; it was
  looked at after its first grading, so it is now a development set;
- the *fresh held-out* set: the same generator with every seed shifted
  (``--seed-offset 1000``), into ``benchmarks/_data/heldout-fresh/``; graded
  once, then looked at: a development set since;
- the *varied held-out* set: seeds shifted by 2000 and every run redrawn at
  another length, width and layer interval (``--vary``), into
  ``benchmarks/_data/heldout-varied/``; graded once, then looked at;
- the *second varied* set (``--vary --seed-offset 3000``), into
  ``benchmarks/_data/heldout-varied2/``;
- the *third* set (``benchmarks/third``): bugs written into real training
  loops on six new architectures, each confirmed against its fixed twin,
  into ``benchmarks/_data/third/``: generated before round 4's tuning and
  graded once at its end; tuned on in round 5, a development set since;
- the *fresh third* set: the same generator with every seed shifted by 5000
  and every run redrawn at another length, width, learning rate and batch
  size (``python -m benchmarks.third --seed-shift 5000 --vary``), into
  ``benchmarks/_data/third-fresh/``: generated before round 5's detector
  changes landed, graded once at the end of round 5, looked at in round 6;
- the *second fresh third* set (``--seed-shift 7000 --vary``), into
  ``benchmarks/_data/third-fresh2/``: generated before round 6's first
  detector change landed, graded once at the end of round 6, looked at in
  round 7;
- the *third fresh third* set (``--seed-shift 11000 --vary``), into
  ``benchmarks/_data/third-fresh3/``: generated before round 7's first
  detector change was committed, graded once at 07842d8, looked at since;
- the *fourth fresh third* set (``--seed-shift 13000 --vary``), into
  ``benchmarks/_data/third-fresh4/``: recorded with ``grad_not_cleared``,
  generated before round 7's last detector change was committed, graded once
  at the end of round 7, looked at in round 8;
- the *fifth fresh third* set (``--seed-shift 17000 --vary``), into
  ``benchmarks/_data/third-fresh5/``: recorded with ``ce_grad_scale``,
  generated before round 8's last three detector changes were committed,
  graded once at 5bf5f84, looked at since;
- the *sixth fresh third* set (``--seed-shift 19000 --vary``), into
  ``benchmarks/_data/third-fresh6/``: generated after third-fresh5 was
  graded and looked at, graded once at the end of round 8 (3011230),
  looked at in round 9;
- the *seventh fresh third* set (``--seed-shift 23000 --vary``), into
  ``benchmarks/_data/third-fresh7/``: recorded with
  ``logits_in_unit_interval``, graded once at 1a22ca6, looked at since;
- the *eighth fresh third* set (``--seed-shift 29000 --vary``), into
  ``benchmarks/_data/third-fresh8/``: recorded with ``logits_sum_to_one``,
  generated from round 9's last detector commit, graded once at the end of
  round 9, the set to quote.

The page, ``benchmarks/results/accuracy.md``, names the commit it graded and
whether the tree was dirty. Scoring is ``benchmarks/_accuracy/scoring.py``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True  # keep sample_runs/*/ exactly the run directories
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from benchmarks._accuracy import evaluate, page, tuning  # noqa: E402
from benchmarks._accuracy.publish import publish  # noqa: E402

REPORT = ROOT / "benchmarks" / "results" / "accuracy.md"
SETS = ("tuning", "heldout", "heldout-fresh", "heldout-varied", "heldout-varied2", "third", "third-fresh",
        "third-fresh2", "third-fresh3", "third-fresh4", "third-fresh5", "third-fresh6", "third-fresh7", "third-fresh8")
GROUPS = {"all": SETS[:-1], "both": ("tuning", "heldout"), "final": SETS}


def _sets(text: str) -> frozenset[str]:
    names: set[str] = set()
    for name in filter(None, (t.strip() for t in text.split(","))):
        if name not in SETS and name not in GROUPS:
            raise argparse.ArgumentTypeError(f"unknown set {name!r}")
        names.update(GROUPS.get(name, (name,)))
    return frozenset(names)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default="all", type=_sets,
                        help="comma-separated sets among " + ", ".join(SETS) + "; all: every development "
                             "set (the third sets before third-fresh8 included); both: tuning and heldout; final: all and "
                             "third-fresh8")
    parser.add_argument("--only", help="tuning families (default: all): " + ", ".join(tuning.FAMILIES))
    parser.add_argument("--jobs", type=int, default=1, help="training processes for the tuning set (default 1)")
    parser.add_argument("--evaluate-only", action="store_true", help="grade the runs already generated")
    parser.add_argument("--generate-only", action="store_true",
                        help="train what is missing, grade nothing, leave the page as it is")
    parser.add_argument("--report", type=Path, default=REPORT, help=f"markdown output (default {REPORT})")
    args = parser.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    if only and only - set(tuning.FAMILIES):
        parser.error(f"unknown families: {', '.join(sorted(only - set(tuning.FAMILIES)))}")
    if args.evaluate_only and args.generate_only:
        parser.error("--evaluate-only and --generate-only exclude each other")
    t0 = time.monotonic()
    gen, grade = not args.evaluate_only, not args.generate_only
    sets = []
    if "tuning" in args.set:
        if grade:
            sets.append(evaluate.tuning_set(args.jobs, only, generate=gen))
        else:
            evaluate.generate_tuning(args.jobs, only)
    if "heldout" in args.set:
        sets.append(evaluate.heldout_set(generate=gen, grade=grade))
    for name in ("heldout-fresh", "heldout-varied", "heldout-varied2"):
        if name in args.set:
            sets.append(evaluate.heldout_set(generate=gen, name=name, grade=grade))
    for name in ("third", "third-fresh", "third-fresh2", "third-fresh3", "third-fresh4", "third-fresh5",
                 "third-fresh6", "third-fresh7", "third-fresh8"):
        if name in args.set:
            sets.append(evaluate.third_set(generate=gen, grade=grade, name=name))
    if not grade:
        print(f"generated in {time.monotonic() - t0:.0f} s; nothing graded, the page is unchanged")
        return 0
    from runlens.detectors import REGISTRY

    return publish(page.render(sets, sorted(REGISTRY), time.monotonic() - t0), args.report)


if __name__ == "__main__":
    raise SystemExit(main())
