"""Benchmark: lines per second and peak memory of the generic text-log reader.

    .venv/bin/python benchmarks/text_reader.py [--lines 1000000] [--rounds 3] [--base DIR --base-name REV]

Three generated logs of ``--lines`` lines each (cached under
``benchmarks/_data/text_reader/``, git-ignored):

- ``llmc``: llm.c lines (``s:N trl:X lr:Y norm:Z``), the dialect the
  previous, fixed-pattern reader also read, so the two are compared;
- ``mmengine``: mmengine/xtuner lines with a timestamp and logger prefix
  and ten fields each (the slowest dialect: the longest lines);
- ``keras``: Keras console output, ``Epoch e/N`` headers and per-batch
  progress lines with three in four lines of noise (warnings, blank lines).

Each measurement runs in its own subprocess (so peak RSS is that reader's
alone) and the readers are interleaved round by round; the table gives
medians. ``floor`` is a bare ``readline`` loop over the same file: the cost
of reading the bytes at all. The previous reader is the one at git
commit ``db762a2`` (before this change), kept as ``_old_text.py`` beside the data.
``--base DIR`` adds the reader of another checkout (a folder holding its ``runlens``
package, e.g. ``git archive REV runlens recorders | tar -x -C DIR``) as a ``base`` row
beside ``new`` in every round, for a change's before and after on one noisy machine.
Results go to ``benchmarks/results/text_reader.md``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "_data" / "text_reader"
RESULTS = ROOT / "benchmarks" / "results" / "text_reader.md"

_CHILD = r"""
import json, resource, sys, time
which, path = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3] if which == "base" else {root!r})
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if which in ("new", "base"):
    from runlens.io.importers import text
    t0 = time.perf_counter(); imp = text.read(path); dt = time.perf_counter() - t0
    rows = len(imp.train["loss"].steps) if "loss" in imp.train else 0
elif which == "old":
    import importlib.util
    spec = importlib.util.spec_from_file_location("old_text", {old!r})
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    t0 = time.perf_counter(); imp = mod.read(path); dt = time.perf_counter() - t0
    rows = len(imp.train["loss"].steps) if "loss" in imp.train else 0
else:
    t0 = time.perf_counter(); n = 0
    with open(path, encoding="utf-8", errors="replace") as f:
        while f.readline(1 << 20):
            n += 1
    dt = time.perf_counter() - t0; rows = 0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"seconds": dt, "rows": rows, "peak_kib": peak, "base_kib": base}}))
"""


def _llmc(i: int) -> str:
    return f"s:{i} trl:{3 + 1 / (i + 1):.4f} lr:0.000600 norm:{0.3 + (i % 7) / 100:.2f}\n"


def _mmengine(i: int) -> str:
    return (f"10/30 22:{(i // 60) % 60:02d}:{i % 60:02d} - mmengine - INFO - Epoch(train) [1][{i + 1}/1000000]  "
            f"lr: 1.9870e-04  eta: 2:46:39  time: 2.8906  data_time: 0.0042  memory: 10762  "
            f"loss: {2 + 1 / (i + 1):.4f}  grad_norm: 3.0608\n")


def _keras(i: int) -> str:
    k = i % 4
    if k == 0:
        e = i // 40_000 + 1
        return f"Epoch {e}/25\n" if i % 40_000 == 0 else f"{(i // 4) % 10_000 * 32 + 32}/320000 [====>....] - ETA: 9s - loss: {1 / (1 + i):.4f} - accuracy: 0.81\n"
    if k == 1:
        return "WARNING:tensorflow:From /opt/lib/python3.6/site-packages/keras/backend.py:422: deprecated\n"
    return "\n"


def generate(name: str, lines: int) -> Path:
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / f"{name}-{lines}.log"
    if path.exists():
        return path
    make = {"llmc": _llmc, "mmengine": _mmengine, "keras": _keras}[name]
    with open(path, "w") as f:
        for start in range(0, lines, 10_000):
            f.write("".join(make(i) for i in range(start, min(start + 10_000, lines))))
    return path


def old_reader() -> Path:
    """The fixed-pattern reader this change replaced, from git, for the side-by-side row."""
    path = DATA / "_old_text.py"
    if not path.exists():
        src = subprocess.run(["git", "show", "db762a2:runlens/io/importers/text.py"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
        DATA.mkdir(parents=True, exist_ok=True)
        path.write_text(src)
    return path


def measure(which: str, path: Path, old: Path, base: str | None = None) -> dict:
    code = _CHILD.format(root=str(ROOT), old=str(old))
    extra = [base] if which == "base" and base else []
    out = subprocess.run([sys.executable, "-c", code, which, str(path), *extra], capture_output=True, text=True,
                         check=True, env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--base", help="a checkout folder whose reader is measured beside this one (row `base`)")
    ap.add_argument("--base-name", help="what to call it on the page (a commit); default: the folder")
    args = ap.parse_args()
    old = old_reader()
    b = ("base",) if args.base else ()
    cases = [("llmc", ("floor", "old", *b, "new")), ("mmengine", ("floor", *b, "new")), ("keras", ("floor", *b, "new"))]
    paths = {name: generate(name, args.lines) for name, _ in cases}
    got: dict[tuple[str, str], list[dict]] = {}
    for r in range(args.rounds):
        for name, readers in cases:
            for which in readers:  # interleaved: every reader once per round
                got.setdefault((name, which), []).append(measure(which, paths[name], old, args.base))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    rows = []
    for (name, which), runs in got.items():
        sec = statistics.median(x["seconds"] for x in runs)
        peak = statistics.median(x["peak_kib"] for x in runs) / 1024
        base = statistics.median(x["base_kib"] for x in runs) / 1024
        rows.append((name, which, sec, args.lines / sec, peak, peak - base, runs[0]["rows"]))
    write(rows, args, got)


def write(rows, args, got) -> None:
    floor = {name: sec for name, which, sec, *_ in rows if which == "floor"}
    new = {name: sec for name, which, sec, *_ in rows if which == "new"}
    lines = [
        "# Text-log reader throughput", "",
        f"`benchmarks/text_reader.py --lines {args.lines} --rounds {args.rounds}"
        f"{' --base ' + (args.base_name or args.base) if args.base else ''}`; "
        f"{platform.python_implementation()} {platform.python_version()}, {platform.machine()}, "
        "2 shared cores. Medians of interleaved rounds, each reader in its own subprocess.", "",
        "| log | reader | seconds | lines/s | x floor | peak RSS (MiB) | above interpreter (MiB) | loss rows |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, which, sec, lps, peak, above, n in rows:
        lines.append(f"| {name} | {which} | {sec:.2f} | {lps:,.0f} | {sec / floor[name]:.1f} | {peak:.0f} | "
                     f"{above:.0f} | {n:,} |")
    lines += ["", "`floor`: a bare `readline` loop (reading and decoding the bytes, nothing else). "
              "`old`: the fixed-pattern reader this change replaced (it read llm.c lines only of these). "
              "Memory above the interpreter grows with the values kept (16 bytes each in `array`s), "
              "not with the file: the text is never held."]
    if "llmc" in new:
        old_sec = next(sec for name, which, sec, *_ in rows if name == "llmc" and which == "old")
        lines.append(f"\nOn llm.c lines the generic reader takes {new['llmc'] / old_sec:.2f}x the time of "
                     "the previous fixed-pattern one.")
    if args.base:
        lines += ["", f"`base`: the reader at {args.base_name or args.base}, measured in the same rounds. "
                  "new / base, the median of each round's ratio (rounds in seconds):", ""]
        for name in new:
            ratios = [n["seconds"] / b["seconds"] for n, b in zip(got[(name, "new")], got[(name, "base")], strict=True)]
            each = ", ".join(f"{n['seconds']:.2f}/{b['seconds']:.2f}"
                             for n, b in zip(got[(name, "new")], got[(name, "base")], strict=True))
            lines.append(f"- {name}: {statistics.median(ratios):.2f} ({each})")
    RESULTS.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
