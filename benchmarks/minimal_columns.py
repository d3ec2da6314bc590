"""How runlens holds up on logs that carry only the format's REQUIRED columns.

    python benchmarks/minimal_columns.py                    # all labeled runs, all variants
    python benchmarks/minimal_columns.py --only lrlow,dead  # runs whose name contains one of these
    python benchmarks/minimal_columns.py --variants full,minimal

Other writers of run-log format v1 may fill only what the format requires:
scalars ``step, time, loss``; layers ``step, layer, grad_norm, weight_norm``;
no events; run.json ``layers`` with empty ``module``/``kind``; layers recorded
every N steps. This benchmark takes the labeled runs (``sample_runs/*`` with
their ``expected.json``, and the generated set of ``benchmarks/accuracy.py`` in
``benchmarks/_data/accuracy/*`` with its ``label.json``, graded the way that
harness grades them), writes stripped copies into a temporary directory,
part by part (so resumed runs keep their duplicate rows), analyzes each with
``runlens.analyze`` and reports recall, precision and healthy false alarms
per finding code and variant. Nothing is regenerated: runs missing from
``benchmarks/_data/`` are simply not graded.

Variants:

- ``full``: the run as recorded (copied, so paths are comparable).
- ``layers_required``: layers keep only step, layer, grad_norm, weight_norm.
- ``layers_required_noconfig``: ``layers_required`` with run.json ``config``
  emptied: the learning rate is logged, the optimizer is not named.
- ``scalars_required``: scalars keep only step, time, loss.
- ``no_events``: the events table is removed.
- ``minimal``: all three, plus run.json ``layers[].module``/``kind`` emptied
  (``config`` is kept: hyperparameters are what a user passes to any writer).
- ``minimal_noconfig``: ``minimal`` with ``config`` emptied too (a writer that
  knows nothing about the training code).
- ``minimal_sparse``: ``minimal_noconfig`` with layers kept only at steps
  divisible by 10 and run.json ``layers`` without ``shape``/``numel``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.dont_write_bytecode = True
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from benchmarks._accuracy.publish import publish  # noqa: E402 - needs ROOT on sys.path

SAMPLES = ROOT / "sample_runs"
REPORT = ROOT / "benchmarks" / "results" / "minimal_columns.md"
VARIANTS = ("full", "layers_required", "layers_required_noconfig", "scalars_required", "no_events", "minimal",
            "minimal_noconfig", "minimal_sparse")
HEALTHY_FAMILIES = ("healthy", "no_validation", "resumed")
LOUD = ("warning", "error")
REQUIRED = {"scalars": ("step", "time", "loss"), "layers": ("step", "layer", "grad_norm", "weight_norm"),
            "evals": None, "events": None}


# -- the labeled runs -------------------------------------------------------------------------


def labeled_runs(only: list[str] | None) -> list[tuple[str, Path, dict]]:
    """(family, path, label) for every graded run; labels as benchmarks/accuracy.py grades them."""
    out = []
    for p in sorted(SAMPLES.iterdir()):
        if (p / "expected.json").is_file():
            label = json.loads((p / "expected.json").read_text())
            fam = p.name if p.name in HEALTHY_FAMILIES else "sample"
            out.append((fam, p, {**label, "curve_ok": [label["curve"]]}))
    out += _accuracy_runs()
    if only:
        out = [r for r in out if any(o in r[1].name for o in only)]
    return out


def _accuracy_runs() -> list[tuple[str, Path, dict]]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    sys.path.insert(0, str(SAMPLES))
    import accuracy as A  # noqa: PLC0415 - imports torch; only needed for the labels

    out = []
    for v in A.variants():
        stamp = A.DATA / v.name / "label.json"
        if not stamp.exists():
            continue
        label = json.loads(stamp.read_text())
        label.update(A.verify(v, label))
        A._labels_from_data(v, label)
        if label["verified"]:
            out.append((v.family, A.DATA / v.name, label))
    return out


# -- stripping --------------------------------------------------------------------------------


def strip(src: Path, dst: Path, variant: str) -> None:
    """Copy run ``src`` to ``dst`` with what ``variant`` removes taken out, part by part."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("expected.json", "label.json", "*.py"))
    minimal = variant.startswith("minimal")
    if variant.startswith(("layers_required", "scalars_required")) or minimal:
        tables = {"layers_required": ("layers",), "layers_required_noconfig": ("layers",),
                  "scalars_required": ("scalars",)}.get(variant, ("layers", "scalars"))
        for table in tables:
            for part in sorted((dst / table).glob("*.parquet")) if (dst / table).is_dir() else ():
                _keep_columns(part, REQUIRED[table], every=10 if variant == "minimal_sparse" and
                              table == "layers" else None)
    if variant == "no_events" or minimal:
        shutil.rmtree(dst / "events", ignore_errors=True)
    if minimal or variant.endswith("noconfig"):
        meta_path = dst / "run.json"
        meta = json.loads(meta_path.read_text())
        if variant != "minimal":
            meta["config"] = {}
        for e in meta.get("layers") or () if minimal else ():
            e["module"], e["kind"] = "", ""
            if variant == "minimal_sparse":
                e.pop("shape", None)
                e.pop("numel", None)
        meta_path.write_text(json.dumps(meta))


def _keep_columns(part: Path, keep: tuple[str, ...], every: int | None) -> None:
    try:
        t = pq.read_table(part)
    except (OSError, pa.ArrowException):
        return  # an unreadable part stays as it is: the loader's warning is part of the result
    t = t.select([c for c in t.column_names if c in keep])
    if every is not None and "step" in t.column_names:
        steps = t.column("step").to_numpy(zero_copy_only=False)
        t = t.filter(pa.array(steps % every == 0))
    pq.write_table(t, part)


# -- grading ----------------------------------------------------------------------------------


def diagnose(path: Path) -> dict:
    import runlens

    try:
        d = runlens.analyze(path)
    except Exception as exc:  # an engine crash is a result too
        return {"curve": "error", "status": "error", "findings": [], "skipped": {},
                "error": f"{type(exc).__name__}: {exc}"}
    out = d.to_dict()
    out["skipped"] = {o.code: o.reason for o in d.outcomes if o.state != "ran"}
    return out


def grade(runs: list[tuple[str, Path, dict]], variants: tuple[str, ...]) -> dict:
    per_code: dict[str, dict[str, Counter]] = {v: defaultdict(Counter) for v in variants}
    alarms: dict[str, list] = {v: [] for v in variants}
    curve_ok: Counter = Counter()
    misses: dict[str, list] = {v: [] for v in variants}
    healthy = 0
    with tempfile.TemporaryDirectory(prefix="runlens-minimal-") as tmp:
        for i, (fam, src, label) in enumerate(runs):
            healthy += fam in HEALTHY_FAMILIES
            for variant in variants:
                dst = Path(tmp) / f"{i:03d}-{variant}" / src.name
                strip(src, dst, variant)
                got = diagnose(dst)
                shutil.rmtree(dst.parent)
                found = {f["code"]: f for f in got["findings"]}
                for code in label["must_include"]:
                    per_code[variant][code]["tp" if code in found else "fn"] += 1
                for code in label["must_not_include"]:
                    per_code[variant][code]["fp" if code in found else "tn"] += 1
                curve_ok[variant] += got["curve"] in label["curve_ok"] if label["curve"] else 1
                missing = [c for c in label["must_include"] if c not in found]
                unwanted = [c for c in label["must_not_include"] if c in found]
                if fam in HEALTHY_FAMILIES and any(f["severity"] in LOUD for f in got["findings"]):
                    alarms[variant].append(src.name)
                if missing or unwanted or got.get("error"):
                    why = [f"{c}: skipped ({got['skipped'][c]})" for c in missing if c in got["skipped"]]
                    misses[variant].append((src.name, missing, unwanted, got["curve"], why, got.get("error")))
            print(f"[{i + 1}/{len(runs)}] {src.name}", flush=True)
    return {"per_code": per_code, "alarms": alarms, "misses": misses, "healthy": healthy,
            "curve_ok": curve_ok, "runs": len(runs)}


def render(result: dict, variants: tuple[str, ...], elapsed: float) -> str:
    codes = sorted({c for v in variants for c in result["per_code"][v]})
    pc_ = result["per_code"]
    lines = ["# runlens on logs with only the required columns", "",
             "Generated by `python benchmarks/minimal_columns.py` (see its docstring for the variants). "
             "Labeled runs: `sample_runs/*` and the generated set of `benchmarks/accuracy.py` "
             "(`benchmarks/_data/accuracy/`, graded as that harness grades them). Each run is copied with "
             "the variant's columns removed and analyzed with `runlens.analyze`.", "",
             f"- graded at {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; runs: {result['runs']}; "
             f"analysis time for all variants: {elapsed:.0f} s", "",
             "Variants: " + "; ".join(f"`{v}`" for v in variants) + ".", "",
             "## Recall per finding code (TP/labeled)", "",
             "| code | " + " | ".join(variants) + " |", "|---|" + "---:|" * len(variants)]
    for code in codes:
        cells = []
        for v in variants:
            c = pc_[v][code]
            n = c["tp"] + c["fn"]
            cells.append(f"{c['tp'] / n:.2f} ({c['tp']}/{n})" if n else "n/a")
        lines.append(f"| `{code}` | " + " | ".join(cells) + " |")
    lines += ["", "## False positives per finding code (FP; precision)", "",
              "| code | " + " | ".join(variants) + " |", "|---|" + "---:|" * len(variants)]
    for code in codes:
        cells = []
        for v in variants:
            c = pc_[v][code]
            prec = f"{c['tp'] / (c['tp'] + c['fp']):.2f}" if c["tp"] + c["fp"] else "n/a"
            cells.append(f"{c['fp']} ({prec})")
        lines.append(f"| `{code}` | " + " | ".join(cells) + " |")
    lines += ["", "## Healthy runs with a warning or error, and curve accuracy", "",
              "| variant | healthy false alarms | curve right |", "|---|---:|---:|"]
    for v in variants:
        lines.append(f"| {v} | {len(result['alarms'][v])}/{result['healthy']} | "
                     f"{result['curve_ok'][v]}/{result['runs']} |")
    lines += ["", "## Misses per variant", ""]
    for v in variants:
        lines += [f"### {v}", ""]
        if not result["misses"][v]:
            lines += ["none", ""]
            continue
        lines += ["| run | missing | false alarm | curve | why |", "|---|---|---|---|---|"]
        for name, missing, unwanted, curve, why, err in result["misses"][v]:
            lines.append(f"| `{name}` | {', '.join(missing) or '-'} | {', '.join(unwanted) or '-'} | {curve} | "
                         f"{'; '.join(why) + (err or '') or '-'} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated substrings of run names")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, of: " + ", ".join(VARIANTS))
    parser.add_argument("--report", type=Path, default=REPORT)
    args = parser.parse_args(argv)
    variants = tuple(args.variants.split(","))
    if set(variants) - set(VARIANTS):
        parser.error(f"unknown variants: {', '.join(sorted(set(variants) - set(VARIANTS)))}")
    runs = labeled_runs(args.only.split(",") if args.only else None)
    t0 = time.monotonic()
    result = grade(runs, variants)
    return publish(render(result, variants, time.monotonic() - t0), args.report)


if __name__ == "__main__":
    raise SystemExit(main())
