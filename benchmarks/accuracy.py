"""How often runlens is right: recall, precision and false alarms on labeled sets.

    python benchmarks/accuracy.py --set final      # generate what is missing, grade every set, write the page
    python benchmarks/accuracy.py --set third-fresh29  # the set to quote (round 29), graded once
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
- the *fresh third* sets: the same generator with every seed shifted and
  every run redrawn at another length, width, learning rate and batch size
  (``python -m benchmarks.third --seed-shift N --vary``), one per entry of
  ``benchmarks/_accuracy/draws.py``, each into ``benchmarks/_data/<set>/``:
  each is graded once before any of it is looked at, and all but the set to
  quote have been looked at since (the table and the page say when).

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

from benchmarks._accuracy import draws, evaluate, page, tuning  # noqa: E402
from benchmarks._accuracy.publish import publish  # noqa: E402

REPORT = ROOT / "benchmarks" / "results" / "accuracy.md"
THIRD_SETS = ("third", *draws.names())
SETS = ("tuning", "heldout", "heldout-fresh", "heldout-varied", "heldout-varied2", *THIRD_SETS)
GROUPS = {"all": tuple(s for s in SETS if s != draws.QUOTE), "both": ("tuning", "heldout"), "final": SETS}


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
                             f"set (every set but {draws.QUOTE}); both: tuning and heldout; final: all and "
                             f"{draws.QUOTE}")
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
    for name in THIRD_SETS:
        if name in args.set:
            sets.append(evaluate.third_set(generate=gen, grade=grade, name=name))
    if not grade:
        print(f"generated in {time.monotonic() - t0:.0f} s; nothing graded, the page is unchanged")
        return 0
    from runlens.detectors import REGISTRY

    return publish(page.render(sets, sorted(REGISTRY), time.monotonic() - t0), args.report)


if __name__ == "__main__":
    raise SystemExit(main())
