"""Hostile and broken input: byte-level mutation of real parts and run.json,
wrong schemas, absurd metadata, and names that try to inject HTML/Markdown.

Every case goes through the real CLI (``runlens analyze --format json``) and,
when the run can be read, through both report renderers. Figures: cases
tried, tracebacks (must be 0: a clear message and exit 2, or a reading
warning), injections that reach the rendered output unescaped (must be 0).
"""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ._harness import Tally

PAYLOADS = (
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    "a|b`c`**d**<b>e</b>",
    "[click](javascript:alert(1))",
    "line\nbreak | pipe",
)
class _LiveMarkup(HTMLParser):
    """Collects markup from the payloads that a browser would act on."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.live: list[str] = []
        self._in: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img" and "onerror" in attrs:
            self.live.append("<img onerror>")
        if tag == "a" and (attrs.get("href") or "").strip().lower().startswith("javascript:"):
            self.live.append("<a href=javascript:>")
        self._in.append(tag)

    def handle_endtag(self, tag):
        if tag in self._in:
            del self._in[len(self._in) - 1 - self._in[::-1].index(tag)]

    def handle_data(self, data):
        if self._in and self._in[-1] == "script" and "alert(1)" in data:
            self.live.append("<script>alert(1)</script>")
        if self._in and self._in[-1] == "b" and data == "e":
            self.live.append("<b>e</b>")


def live_injections(html: str) -> list[str]:
    """Payload markup that is live in ``html`` (escaped text does not count)."""
    parser = _LiveMarkup()
    parser.feed(html)
    return parser.live


def markdown_to_html(md: str) -> str:
    """Render Markdown the way GitHub does: GFM tables, raw HTML allowed."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]).render(md)


@dataclass
class FuzzFigures(Tally):
    EXAMPLES = 10

    exit_0: int = 0
    exit_2: int = 0
    renders: int = 0
    unescaped: int = 0


def write_base_run(path: Path, hostile: bool = True, steps: int = 120) -> Path:
    """A small valid run written by the project's writer, hostile names included."""
    from recorders.writer import RunWriter

    names = [f"{PAYLOADS[i % len(PAYLOADS)]}.weight" if hostile else f"l{i}.weight" for i in range(4)]
    w = RunWriter(path, name=PAYLOADS[0] if hostile else "base", config={"note": PAYLOADS[1], "lr": 0.1},
                  flush_every=30, heartbeat=False, compact_on_close=False)
    w.set_layers([{"name": n, "index": i, "module": n.rsplit(".", 1)[0], "kind": PAYLOADS[2],
                   "shape": [4, 4], "numel": 16} for i, n in enumerate(names)])
    rng = np.random.default_rng(0)
    for s in range(steps):
        w.add_scalars(s, float(2.0 * np.exp(-s / 40) + 0.05 * rng.random()), lr=0.1, grad_norm=1.0)
        w.add_layers(s, names, np.full(4, 0.5, np.float32), np.full(4, 2.0, np.float32),
                     update_norm=np.full(4, 1e-3, np.float32))
        if s % 20 == 0:
            w.add_eval(s, float(2.0 * np.exp(-s / 40) + 0.1))
    w.add_event(steps - 1, "user", PAYLOADS[4], layer=names[0])
    w.close(status="crashed", error={"type": "RuntimeError", "message": PAYLOADS[0] + " CUDA out of memory",
                                     "traceback": PAYLOADS[1], "step": steps})
    return path


def _cli(run: Path):
    from click.testing import CliRunner

    from runlens.cli import main

    # --fail-on never: exit 1 would be a finding, and this campaign asks only "crash or not"
    return CliRunner().invoke(main, ["analyze", str(run), "--format", "json", "--fail-on", "never"],
                              catch_exceptions=True)


def check_case(run: Path, figures: FuzzFigures, label: str, render: bool = True) -> None:
    figures.cases += 1
    result = _cli(run)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        figures.count("tracebacks",
                      f"TRACEBACK {label}: {type(result.exception).__name__}: {str(result.exception)[:200]}")
        return
    out = result.output
    if "Traceback (most recent call last)" in out:
        figures.count("tracebacks", f"{label}: traceback printed")
        return
    if result.exit_code == 0:
        figures.exit_0 += 1
        if render:
            _render(run, figures, label)
    elif result.exit_code == 2:
        figures.exit_2 += 1
    else:
        figures.count("tracebacks", f"{label}: exit {result.exit_code}")


def _render(run: Path, figures: FuzzFigures, label: str) -> None:
    import runlens
    from runlens.render.report.html import render_html
    from runlens.render.report.markdown import render_markdown
    from runlens.report_data import build_report_data
    from runlens.signals import signals_of

    try:
        opened = runlens.load_run(str(run))
        data = build_report_data(runlens.analyze(opened), signals_of(opened))
        outputs = (render_html(data), render_markdown(data))
    except Exception as exc:  # noqa: BLE001 - any exception here is a crash for a user
        figures.count("tracebacks", f"{label}: render {type(exc).__name__}: {exc}")
        return
    figures.renders += 1
    count_unescaped(outputs[0], figures, f"{label} (html)")
    count_unescaped(markdown_to_html(outputs[1]), figures, f"{label} (md)")


def count_unescaped(html: str, figures: FuzzFigures, label: str) -> None:
    for live in live_injections(html):
        figures.count("unescaped", f"{label}: {live} is live in the rendered output")


def _parts(run: Path) -> list[Path]:
    return sorted(p for t in ("scalars", "evals", "layers", "events") if (run / t).is_dir()
                  for p in (run / t).iterdir() if p.suffix == ".parquet" and not p.name.startswith("."))


def part_mutations(rng: random.Random):
    """(name, function(bytes) -> bytes) byte-level damage to a part."""
    def truncate(b):
        return b[: rng.randrange(len(b))]

    def flip(b):
        b = bytearray(b)
        for _ in range(rng.randint(1, 16)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)

    return [("zero-byte", lambda b: b""), ("truncated", truncate), ("random-bytes",
            lambda b: rng.randbytes(len(b))), ("bytes-flipped", flip), ("magic-only", lambda b: b"PAR1")]


def wrong_schema_tables():
    return [
        ("step-as-string", pa.table({"step": ["0", "1"], "time": [0.0, 1.0], "loss": [1.0, 0.5]})),
        ("loss-as-string", pa.table({"step": pa.array([0, 1], pa.int64()), "time": [0.0, 1.0], "loss": ["a", "b"]})),
        ("no-step", pa.table({"time": [0.0], "loss": [1.0]})),
        ("nested-column", pa.table({"step": pa.array([0], pa.int64()), "time": [0.0], "loss": [1.0],
                                    "extra": pa.array([[1, 2]])})),
        ("empty-table", pa.table({"step": pa.array([], pa.int64())})),
        ("layer-as-int", pa.table({"step": pa.array([0], pa.int64()), "layer": [7], "grad_norm": [1.0],
                                   "weight_norm": [1.0]})),
    ]


def meta_mutations(rng: random.Random, meta: dict):
    yield "invalid-json", b"{\"format\": \"runlens-run\", "
    yield "deeply-nested", json.dumps({**meta, "config": {"x": "PLACEHOLDER"}}).replace(
        '"PLACEHOLDER"', "[" * 100_000 + "]" * 100_000).encode()
    yield "huge", json.dumps({**meta, "config": {"blob": "x" * 30_000_000}}).encode()
    yield "future-version", json.dumps({**meta, "format_version": 2}).encode()
    yield "not-an-object", b"[1, 2, 3]"
    yield "null", b"null"
    yield "utf16", json.dumps(meta).encode("utf-16")
    yield "binary", rng.randbytes(512)
    for key, value in [("layers", "x"), ("status", 5), ("attempts", {}), ("name", 12),
                       ("heartbeat_at", "garbage"), ("pid", "x"), ("flush_seconds", "x"),
                       ("layers", [{"name": None}, 3, {"name": "a", "index": "z"}]),
                       ("error", "boom"), ("config", [1]), ("status", "running")]:
        yield f"{key}={value!r}"[:40], json.dumps({**meta, key: value}).encode()


def campaign(workdir: Path, seed: int = 0, rounds: int = 2) -> FuzzFigures:
    rng = random.Random(seed)
    figures = FuzzFigures()
    base = write_base_run(workdir / "base run ✓ <b>")
    check_case(base, figures, "base")
    meta = json.loads((base / "run.json").read_text())
    parts = _parts(base)
    for r in range(rounds):
        # one part of each table per round: the damage, not the part count, is what varies
        chosen = {p.parent.name: p for p in rng.sample(parts, len(parts))}
        for part_index, part in enumerate(sorted(chosen.values())):
            for name, mutate in part_mutations(rng):
                case = workdir / f"p{r}-{part_index}-{name}"
                shutil.copytree(base, case)
                target = case / part.relative_to(base)
                target.write_bytes(mutate(part.read_bytes()))
                # rendering every damaged copy adds nothing over rendering a sample of them
                check_case(case, figures, f"{part.parent.name}/{part.name} {name}",
                           render=rng.random() < 0.15)
                shutil.rmtree(case)
    for name, table in wrong_schema_tables():
        for folder in ("scalars", "layers", "evals", "events"):
            case = workdir / f"schema-{name}-{folder}"
            shutil.copytree(base, case)
            # hand-made on purpose: a part of the wrong schema, which no writer of well-formed runs makes
            pq.write_table(table, case / folder / "r0-00009999.parquet")
            check_case(case, figures, f"{folder} {name}")
            shutil.rmtree(case)
    for name, payload in meta_mutations(rng, meta):
        case = workdir / "meta-case"
        shutil.copytree(base, case)
        (case / "run.json").write_bytes(payload)
        check_case(case, figures, f"run.json {name}")
        shutil.rmtree(case)
    return figures


def audit_tree_case(workdir: Path, figures: FuzzFigures) -> None:
    """An audit tree with a symlink loop, spaces, unicode and hostile names."""
    from click.testing import CliRunner

    from runlens.cli import main

    tree = workdir / "audit tree"
    write_base_run(tree / "ünïcødé runs" / "run one", hostile=False)
    write_base_run(tree / "hostile" / "<img src=x onerror=alert(1)>")
    (tree / "empty dir").mkdir(parents=True)
    (tree / "hostile" / "loop").symlink_to(tree, target_is_directory=True)
    (tree / "self").symlink_to(tree / "self", target_is_directory=True)  # dangling self-loop
    for fmt in ("json", "md", "html", "text", "csv", "junit"):
        figures.cases += 1
        result = CliRunner().invoke(main, ["audit", str(tree), "--format", fmt, "--quiet", "--workers", "1"],
                                    catch_exceptions=True)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            figures.count("tracebacks", f"audit {fmt}: {type(result.exception).__name__}: {result.exception}")
            continue
        if result.exit_code not in (0, 1):
            figures.count("tracebacks", f"audit {fmt}: exit {result.exit_code}: {result.output[-200:]}")
            continue
        figures.exit_0 += 1
        if fmt in ("md", "html"):
            figures.renders += 1
            html = markdown_to_html(result.output) if fmt == "md" else result.output
            count_unescaped(html, figures, f"audit {fmt}")
