"""Round 2, continued: text that must stay inert in every output format, and runs an
audit must never leave out. Every case through the real CLI in a subprocess."""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

from ._cli import Figures, cli, drop_dac, write_run
from .fuzz import live_injections, markdown_to_html

NAMES = [
    '=HYPERLINK("http://evil.example","x")', "+cmd|' /C calc'!A0", "-2+3", "@SUM(1+1)",
    "\x1b]0;pwned\x07\x1b[2Jtitle", "ctl\x01\x08\x0bname\ufffe\uffff", "\udbff surrogate",
    "ping @octocat about #123 and GH-7", "\x9b31mred\u202eevil", "\tTAB", "<img src=x onerror=alert(1)>",
]
ERROR = {"type": "RuntimeError", "message": "=cmd|' /C calc'!A0 \x1b[2J @admin see #42 \ufffe",
         "traceback": "Traceback\n  \x1b]0;t\x07 @admin #42\n", "step": 240}
_FORMULA = tuple("=+-@\t\r\n")
_TERM = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_MENTION = re.compile(r"(?<![\w.+-])@[A-Za-z0-9]|(?<![\w&])#\d|\bGH-\d", re.IGNORECASE)


def hostile_tree(work: Path) -> Path:
    tree = work / "hostile-names"
    for i, name in enumerate(NAMES):
        write_run(tree / f"r{i}", seed=i, name=name)
    write_run(tree / "=1+1 path", seed=20)
    write_run(tree / "crashed", seed=21, name="@maintainers #9", status="crashed", error=ERROR)
    return tree


def injections(work: Path, fig: Figures) -> None:
    tree = hostile_tree(work)
    out = work / "inj-out"
    out.mkdir()
    base = ["audit", str(tree), "--workers", "1", "-q"]
    for fmt in ("csv", "junit", "md", "html", "json"):
        cli(fig, f"injection: audit {fmt}", *base, "--format", fmt, "-o", str(out / f"a.{fmt}"), allowed=(1,))
    _csv(fig, out / "a.csv")
    _junit(fig, out / "a.junit")
    _markdown(fig, "audit md", _read(out / "a.md"))
    _html(fig, "audit html", _read(out / "a.html"))
    rows = json.loads(_read(out / "a.json") or "[]")
    if len(rows) != len(NAMES) + 2:
        fig.problem("rows_lost_or_duplicated", f"injection: audit json has {len(rows)} rows")
    _terminal(fig, "audit text", cli(fig, "injection: audit text", *base, allowed=(1,)).stdout)
    for i in (4, 8):
        _terminal(fig, f"analyze r{i}", cli(fig, f"injection: analyze r{i}", "analyze", str(tree / f"r{i}"),
                                            allowed=(0, 1)).stdout)
    _terminal(fig, "compare", cli(fig, "injection: compare text", "compare", str(tree / "r4"), "--baseline",
                                  str(tree / "r8"), allowed=(0, 1)).stdout)
    _terminal(fig, "analyze crashed", cli(fig, "injection: analyze crashed", "analyze", str(tree / "crashed"),
                                               allowed=(0, 1)).stdout)
    missing = cli(fig, "injection: error line", "analyze", str(tree / "\x1b]0;pwned\x07\x1b[2Jmissing"), allowed=(2,))
    _terminal(fig, "error line", missing.stderr)
    proc = cli(fig, "injection: compare md", "compare", str(tree / "r7"), "--baseline", str(tree / "crashed"),
               "--format", "md", allowed=(0, 1))
    _markdown(fig, "compare md", proc.stdout.decode("utf-8", "replace"))
    reports = out / "reports"
    cli(fig, "injection: report", "report", str(tree / "r7"), str(tree / "crashed"), str(tree / "r6"),
        "-o", str(reports), allowed=(0, 1))  # exit 1: the crashed run's finding reaches --fail-on
    for page in sorted(reports.glob("*.md")):
        _markdown(fig, f"report {page.name}", _read(page))
    for page in sorted(reports.glob("*.html")):
        _html(fig, f"report {page.name}", _read(page))


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def _csv(fig: Figures, path: Path) -> None:
    text = _read(path)
    rows = list(csv.DictReader(io.StringIO(text)))
    if len(rows) != len(NAMES) + 2:
        fig.problem("rows_lost_or_duplicated", f"injection: csv has {len(rows)} rows")
    for row in rows:
        for key in ("run", "name", "error", "findings", "report"):
            if (row.get(key) or "").startswith(_FORMULA):
                fig.problem("injections", f"csv {key} cell is a formula: {row[key][:40]!r}")


def _junit(fig: Figures, path: Path) -> None:
    try:
        root = ET.fromstring(path.read_bytes())
    except (OSError, ET.ParseError) as exc:
        fig.problem("injections", f"junit is not well-formed XML 1.0: {exc}")
        return
    if len(root.findall("testsuite")) != len(NAMES) + 2:
        fig.problem("rows_lost_or_duplicated", "junit: a run has no testsuite")


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._code = 0

    def handle_starttag(self, tag, attrs):
        self._code += tag in ("code", "pre")

    def handle_endtag(self, tag):
        self._code -= tag in ("code", "pre") and self._code > 0

    def handle_data(self, data):
        if not self._code:  # GitHub does not link mentions inside code
            self.parts.append(data)


def _markdown(fig: Figures, label: str, md: str) -> None:
    html = markdown_to_html(md)
    _html(fig, label, html)
    text = _Text()
    text.feed(html)
    for hit in _MENTION.finditer(" ".join(text.parts)):
        fig.problem("injections", f"{label}: {hit.group()!r} would notify or link on GitHub")


def _html(fig: Figures, label: str, html: str) -> None:
    if not html:
        fig.problem("rows_lost_or_duplicated", f"{label}: nothing was written")
    for live in live_injections(html):
        fig.problem("injections", f"{label}: {live} is live")


def _terminal(fig: Figures, label: str, out: bytes) -> None:
    text = out.decode("utf-8", "replace")
    bad = sorted(set(_TERM.findall(text)) | ({"\u202e"} & set(text)))
    if bad:
        fig.problem("injections", f"terminal {label}: control characters {bad!r} reach the terminal")


# -- silent omission --------------------------------------------------------------

def omission(work: Path, fig: Figures) -> None:
    """Two readable runs, one run folder and one run.json nobody may read: four rows."""
    prefix = drop_dac()
    if prefix is None:
        fig.skipped.append("unreadable runs: root without setpriv cannot be made to obey permissions")
        return
    tree = work / "locked-tree"
    for name in ("ok-1", "ok-2", "locked-dir", "locked-json"):
        write_run(tree / name, seed=len(name))
    (tree / "locked-dir").chmod(0o000)
    (tree / "locked-json" / "run.json").chmod(0o000)
    try:
        proc = cli(fig, "omission: audit json", "audit", str(tree), "--format", "json", "--workers", "1", "-q",
                   allowed=(1,), prefix=prefix)
        text = cli(fig, "omission: audit text", "audit", str(tree), "--workers", "1", allowed=(1,),
                   prefix=prefix)
    finally:
        (tree / "locked-dir").chmod(0o755)
        (tree / "locked-json" / "run.json").chmod(0o644)
    try:
        rows = json.loads(proc.stdout)
    except ValueError:
        rows = []
    unreadable = [r["run"] for r in rows if any(f["code"] == "unreadable_run" for f in r["findings"])]
    if len(rows) != 4 or len(unreadable) != 2:
        fig.problem("rows_lost_or_duplicated", f"omission: {len(rows)} rows, {len(unreadable)} unreadable of 4/2")
    if b"4 runs: 2 unreadable" not in text.stdout + text.stderr:
        fig.problem("rows_lost_or_duplicated", "omission: the summary does not count the unreadable runs")


# -- integers too big for the machine, in logs of other tools ---------------------

_BIG = 99999999999999999999  # > 2**64: no 64-bit integer, signed or not, holds it


def imported_text_steps(work: Path, fig: Figures) -> None:
    """A console log, a JSON-lines file and a trainer_state.json with a step beyond int64: the
    importer skips that line with a note naming 64 bits and imports the rest (never exit 3)."""
    good = [(s, 2.0 / (s + 1)) for s in range(60)]
    sources = {
        "text": ("big-steps.log", "".join(f"step {s} loss {v:.4f}\n" for s, v in good) + f"step {_BIG} loss 0.1\n"),
        "jsonl": ("big-steps.jsonl", "".join(json.dumps({"step": s, "loss": v}) + "\n" for s, v in good)
                  + f'{{"step": {_BIG}, "loss": 0.1}}\n{{"step": 1e300, "loss": 0.1}}\n'),
        "hf": ("trainer_state.json", json.dumps({"global_step": _BIG, "log_history": [
            *({"step": s + 1, "loss": v} for s, v in good), {"step": _BIG, "loss": 0.1}]})),
    }
    for kind, (name, text) in sources.items():
        src = work / kind / name
        src.parent.mkdir(parents=True, exist_ok=True)
        src.write_text(text)
        out = work / f"imported-{kind}"
        proc = cli(fig, f"numbers: import {kind}", "import", kind, str(src), str(out), allowed=(0,))
        if proc.returncode == 0 and b"64-bit" not in proc.stdout:
            fig.problem("rows_lost_or_duplicated", f"numbers: import {kind}: the skipped line is not reported")
        if proc.returncode == 0:
            rows = _json(fig, f"numbers: analyze {kind}",
                         cli(fig, f"numbers: analyze {kind}", "analyze", str(out), "--format", "json",
                             allowed=(0, 1)).stdout)
            if rows is not None and rows.get("curve") == "insufficient_data":
                fig.problem("rows_lost_or_duplicated", f"numbers: import {kind}: the good lines were lost")


def _json(fig: Figures, label: str, out: bytes):
    try:
        return json.loads(out)
    except ValueError:
        fig.problem("tracebacks", f"{label}: stdout is not JSON: {out[:80]!r}")
        return None
