"""runlens: why did this training run go wrong?

The public API::

    import runlens

    run = runlens.load_run("runs/exp1")       # a Run: metadata + Arrow tables
    diagnosis = runlens.analyze(run)          # a Diagnosis: plain values, no tables
    diagnosis.summary()                       # one line: status, curve, findings
    diagnosis.to_dict()                       # the JSON object of docs/format.md
    runlens.report(diagnosis, "out/", run=run)  # the HTML and Markdown post-mortem

Attributes are imported on first use, so ``import runlens`` stays light
(no scipy, no detectors) until an analysis actually runs.
"""

# Ctrl-C is held from the first line: even loading runlens._interrupt reads files, time a Ctrl-C
# could land in. `_signal` is the C module (nothing to read); install() then acts on a held one.
import _signal as _sig  # type: ignore[import-not-found]  # typeshed has no stub for the C module

_held: list[int] = []
_was = _sig.getsignal(_sig.SIGINT)
if _was is _sig.default_int_handler:
    _sig.signal(_sig.SIGINT, lambda signum, frame: _held.append(signum))

from runlens import _interrupt  # noqa: E402

_interrupt.install(_was, _held)  # before any other import: `runlens` answers Ctrl-C in one line from here on

import importlib as _importlib  # noqa: E402
import os as _os  # noqa: E402
import typing as _typing  # noqa: E402

__version__ = "0.1.0"

if _typing.TYPE_CHECKING:
    import os
    from collections.abc import Iterable
    from pathlib import Path

    from runlens.analysis import analyze
    from runlens.diagnosis import CurveVerdict, DetectorOutcome, Diagnosis, Finding
    from runlens.errors import (
        ImportFailedError,
        RunFormatError,
        RunlensError,
        UnsupportedVersionError,
        UsageError,
    )
    from runlens.io.loader import load_run
    from runlens.io.run import LayerMatrix, Run

# public name -> module that defines it
_EXPORTS = {
    "CurveVerdict": "runlens.diagnosis",
    "DetectorOutcome": "runlens.diagnosis",
    "Diagnosis": "runlens.diagnosis",
    "Finding": "runlens.diagnosis",
    "ImportFailedError": "runlens.errors",
    "LayerMatrix": "runlens.io.run",
    "Run": "runlens.io.run",
    "RunFormatError": "runlens.errors",
    "RunlensError": "runlens.errors",
    "UnsupportedVersionError": "runlens.errors",
    "UsageError": "runlens.errors",
    "analyze": "runlens.analysis",
    "load_run": "runlens.io.loader",
}

__all__ = [
    "CurveVerdict",
    "DetectorOutcome",
    "Diagnosis",
    "Finding",
    "ImportFailedError",
    "LayerMatrix",
    "Run",
    "RunFormatError",
    "RunlensError",
    "UnsupportedVersionError",
    "UsageError",
    "analyze",
    "load_run",
    "report",
]


# The annotations are strings: `from __future__ import annotations` would put `annotations` in the namespace.
def report(diagnosis: "Diagnosis | Run | str | os.PathLike[str]", out_dir: "str | os.PathLike[str]", *,
           formats: "Iterable[str]" = ("html", "md"), docs_url: str = "", run: "Run | None" = None,
           ) -> "list[Path]":
    """Write the HTML and/or Markdown report of ``diagnosis`` into ``out_dir``; returns the paths.

    ``diagnosis`` is a :class:`Diagnosis`, a :class:`Run` or the path of a
    run (a path is read with every column, as ``runlens report`` does). The
    charts are drawn from the run's signals: ``run`` is the Run a Diagnosis
    was made from; without it the run is read again from ``diagnosis.path``.
    Files are named by the one rule of ``runlens report``: ``<name>-<8 hex
    digits of the path>``. ``docs_url`` adds links to the online reference
    (it is always embedded).
    """
    from runlens.analysis import analyze as _analyze
    from runlens.io.loader import load_run as _load_run
    from runlens.io.output import write_reports
    from runlens.io.run import Run as _Run
    from runlens.report_data import build_report_data
    from runlens.signals import signals_of

    if isinstance(diagnosis, (str, _os.PathLike, _Run)):
        run = diagnosis if isinstance(diagnosis, _Run) else _load_run(diagnosis)
        diagnosis = _analyze(run)
    elif run is None:
        run = _load_run(diagnosis.path)
    data = build_report_data(diagnosis, signals_of(run))
    return write_reports(data, out_dir, formats, docs_base=docs_url)


def __getattr__(name: str) -> _typing.Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'runlens' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*__all__, "__version__"])
