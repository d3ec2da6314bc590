"""What every subcommand shares: the run arguments, ``--fail-on``, ``--color``, detector settings.

One shape for all: a command that takes runs takes run directories, logs
of other tools and folders of runs alike (``expand_runs``); ``--fail-on``
has one default (``error``) wherever it exists; ``--set CODE.param=value``
and ``--config FILE`` set detector parameters the same way everywhere.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

import click

from runlens.diagnosis import FAIL_ON
from runlens.errors import UsageError

if TYPE_CHECKING:
    from runlens.diagnosis import Diagnosis
    from runlens.io.logruns import LogRuns
    from runlens.io.run import Run

#: a click command function, handed back with one more option
F = TypeVar("F", bound=Callable[..., Any])

FAIL_ON_DEFAULT = "error"
COLORS = ("auto", "always", "never")
SEVERITY_COLORS = {"error": "red", "warning": "yellow", "info": "cyan"}


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` for the closest choice, or ``""`` when none is close."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


# -- options -----------------------------------------------------------------

def fail_on_option(what: str = "finding") -> Callable[[F], F]:
    return click.option(
        "--fail-on", type=click.Choice(FAIL_ON), default=FAIL_ON_DEFAULT, show_default=True,
        help=f"exit with status 1 when a {what} at least this severe is present ('never': always 0)")


def verbosity_options(func: F) -> F:
    """``-q`` (the verdict line only) and ``-v`` (the evidence too), the same on every command."""
    func = click.option("-v", "--verbose", is_flag=True,
                        help="also print the evidence behind each finding, with units and thresholds")(func)
    return click.option("-q", "--quiet", is_flag=True, help="print the verdict line only")(func)


def refuse_both(quiet: bool, verbose: bool) -> None:
    if quiet and verbose:
        raise UsageError("-q and -v contradict each other; give one")


def run_counts(worsts: Iterable[str | None]) -> str:
    """``23 runs: 11 with errors, 4 with warnings, 8 clean``: what a command found, in one line."""
    worsts = list(worsts)
    n = len(worsts)
    parts = [f"{k} with {word}" for word, k in (
        ("errors", worsts.count("error")), ("warnings", worsts.count("warning")),
        ("info only", worsts.count("info"))) if k]
    clean = worsts.count(None)
    if clean or not parts:
        parts.append(f"{clean} clean")
    return f"{n} run{'s' if n != 1 else ''}: " + ", ".join(parts)


def color_option(func: F) -> F:
    return click.option(
        "--color", type=click.Choice(COLORS), default="auto", show_default=True,
        help="colour the output: auto = only on a terminal and when NO_COLOR is not set")(func)


def detector_options(func: F) -> F:
    func = click.option(
        "--config", "config_file", type=click.Path(dir_okay=False), metavar="FILE",
        help="a JSON or TOML file of detector parameters: {\"loss_spikes\": {\"z_min\": 8}}")(func)
    return click.option(
        "--set", "settings", multiple=True, metavar="CODE.PARAM=VALUE",
        help="set one detector parameter, e.g. --set loss_spikes.z_min=8 (repeatable; "
             "'runlens explain CODE' lists the parameters)")(func)


def use_color(choice: str, stream: TextIO | None = None) -> bool:
    """Whether to colour: ``always``/``never`` as said; ``auto`` on a TTY unless NO_COLOR is set."""
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    stream = stream or sys.stdout
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def paint(text: str, severity: str | None, enabled: bool) -> str:
    color = SEVERITY_COLORS.get(severity or "")
    return click.style(text, fg=color, bold=severity == "error") if enabled and color else text


# -- runs --------------------------------------------------------------------

def expand_runs(paths: Iterable[str], loose: set[str] | None = None) -> tuple[list[str], bool]:
    """The runs named by ``paths`` (runs, logs, folders of runs) and whether there are "several":
    more than one path, or a path that is a folder holding runs rather than a run itself.

    ``loose`` receives the log files found in a folder rather than named: discovery took them
    by a sniff of their head, so one may still prove unreadable (:func:`skip_loose`).
    """
    from runlens.io.discover import discover_runs
    from runlens.render.escape import term_inline

    paths = list(paths)
    runs: list[str] = []
    several = len(paths) > 1
    for path in paths:
        skipped: list[tuple[str, str]] = []
        found = discover_runs([path], skipped=skipped)
        for file, reason in skipped:
            click.echo(f"runlens: skipped {term_inline(file)}: {term_inline(reason)}", err=True)
        if not found:
            raise UsageError(f"{path}: no run found (a run is a folder holding run.json, "
                             "or a log runlens can import)")
        several = several or found != [path]
        runs.extend(found)
        if loose is not None and found != [path]:
            loose.update(f for f in found if os.path.isfile(f))
    return list(dict.fromkeys(runs)), several


def skip_loose(path: str, exc: Exception, what: str = "skipped") -> None:
    """Name a loose log found in a folder that could not be read, as discovery names what it skips."""
    from runlens.io.runmeta import one_line
    from runlens.render.escape import term_inline

    why = one_line(exc).removeprefix(f"{path}: ")
    click.echo(f"runlens: {what} {term_inline(path)}: {term_inline(why)}", err=True)


# -- several runs in one log --------------------------------------------------

_SEVERITY_ORDER = {None: 0, "info": 1, "warning": 2, "error": 3}


def judge(path: str, options: dict, detectors: list | None, columns: Mapping[str, Any] | None = None,
          ) -> tuple[Diagnosis, list[dict] | None, Run]:
    """``(diagnosis, runs_in_file, run)`` of ``path``: a run directory or a log; ``run`` is the one shown.

    A log holding several runs (a step counter that starts again, a second
    banner, appended launches) has each run judged; the diagnosis is the
    worst one's, its headline and first warning say so and list the others,
    and ``runs_in_file`` holds one entry per run (docs/format.md). With
    ``--run N`` (``options["run"]``), or a single run, ``runs_in_file`` is None.
    """
    from runlens.analysis import analyze
    from runlens.io.logruns import runs_in_log
    from runlens.io.remote import open_runs

    # The log is parsed once, here; each of its runs is built from that parse in turn below.
    with open_runs(path, columns, import_options=options or None) as runs:
        run = runs.run()
        given = run.meta.get("config")
        config = given if isinstance(given, dict) else {}
        n = runs_in_log(config) if runs.from_log and "run" not in options else 1
        if n < 2:
            return analyze(run, detectors=detectors), None, run
        # The run built to count the runs is its own index's: judged first, so that it is not built
        # again and is let go before the next run is built.
        order = runs.in_turn(run, n)
        del run
        judged: dict[int, tuple[Diagnosis | None, Exception | None]] = {}
        kept: tuple[tuple[tuple[int, bool], int], Run | None] = (((-1, False), 0), None)
        for i in order:
            diagnosis, error, one = _judge_one(runs, i, detectors)
            judged[i] = (diagnosis, error)
            # Only the worst run so far stays in memory: the report draws its charts from it. Among
            # equals the later, as the reader picks by default.
            if diagnosis is not None and (_rank(diagnosis), i) > kept[0]:
                kept = ((_rank(diagnosis), i), one)
            del one
    (_, shown), worst = kept
    first = judged[shown][0] if worst is not None else None
    if worst is None or first is None:
        raise judged[n][1] or RuntimeError("no run of the log was judged")
    entries = [_entry(i, *judged[i], i == shown) for i in range(1, n + 1)]
    return _as_worst(first, shown, n, entries, worst.meta.get("config")), entries, worst


def _rank(diagnosis: Diagnosis) -> tuple[int, bool]:
    """Worse first by the most severe finding (what the exit status follows), then by a curve
    that failed (overfitting, diverged, ...) over a healthy or undecided one."""
    failed = diagnosis.curve.label not in ("healthy", "insufficient_data")
    return _SEVERITY_ORDER[diagnosis.worst_severity], failed


def _judge_one(runs: LogRuns, index: int, detectors: list | None,
               ) -> tuple[Diagnosis | None, Exception | None, Run | None]:
    """Run ``index`` of ``runs`` judged."""
    from runlens.analysis import analyze
    from runlens.errors import RunlensError

    try:
        run = runs.run(index)
        return analyze(run, detectors=detectors), None, run
    except RunlensError as exc:  # one run of the log that cannot be read: listed, the others judged
        return None, exc, None


def _entry(index: int, diagnosis: Diagnosis | None, error: Exception | None, shown: bool) -> dict:
    if diagnosis is None:
        from runlens.io.runmeta import one_line

        return {"index": index, "steps": None, "verdict": None, "severity": None, "reported": False,
                "error": one_line(error) if error is not None else "not read"}
    n = diagnosis.key_numbers
    steps = [n.get("first_step"), n.get("last_step")] if n.get("first_step") is not None else None
    return {"index": index, "steps": steps, "verdict": diagnosis.curve.label,
            "severity": diagnosis.worst_severity, "reported": shown, "headline": diagnosis.headline}


def _as_worst(diagnosis: Diagnosis, shown: int, n: int, entries: list[dict], config: object = None,
              ) -> Diagnosis:
    """The worst run's diagnosis, its headline naming it and its first warning listing every run (which
    replaces the importer's own note that it split the source, in the run's ``config``)."""
    from runlens.io.logruns import without_split_note

    def item(e: dict) -> str:
        if "error" in e:
            return f"run {e['index']}: not read ({e['error']})"
        steps = f"steps {e['steps'][0]}..{e['steps'][1]}" if e["steps"] else "no steps"
        judged = e["verdict"] + (f", worst finding {e['severity']}" if e["severity"] else ", no findings")
        return f"run {e['index']} ({steps}{', shown' if e['reported'] else ''}): {judged}"

    note = (f"the log holds {n} runs, each judged: " + "; ".join(item(e) for e in entries)
            + "; --run N analyzes one of them")
    warnings = without_split_note(diagnosis.warnings, config)
    alike = len({(e["severity"], e["verdict"] not in ("healthy", "insufficient_data"))
                 for e in entries if "error" not in e}) == 1
    which = "the last; none is worse" if alike else "the worst"
    return dataclasses.replace(diagnosis, headline=f"Run {shown} of {n} in this log ({which}): "
                               f"{diagnosis.headline}", warnings=(note, *warnings))


# -- detector settings -------------------------------------------------------

def detector_settings(settings: Iterable[str], config_file: str | None) -> list | None:
    """Detector instances with the parameters given, or None when none were (all defaults).

    Raises :class:`UsageError` for an unknown code or parameter (with the
    closest one) and for a value the detector refuses at construction.
    """
    params = detector_params(settings, config_file)
    return None if params is None else build_detectors(params)


def detector_params(settings: Iterable[str], config_file: str | None) -> dict[str, dict[str, Any]] | None:
    """``{code: {param: value}}`` from ``--config`` then ``--set`` (the later wins), validated as
    :func:`detector_settings` does; None when none were given. Plain data: it crosses to workers."""
    params: dict[str, dict[str, Any]] = {}
    if config_file:
        for code, values in _read_config(config_file).items():
            if not isinstance(values, dict):
                raise UsageError(f"{config_file}: {code!r} must map parameter names to values")
            params.setdefault(code, {}).update(values)
    for item in settings:
        code, name, value = _parse_setting(item)
        params.setdefault(code, {})[name] = value
    if not params:
        return None
    build_detectors(params)  # refused here, in one line, before any run is read
    return params


def build_detectors(params: dict[str, dict[str, Any]]) -> list:
    """Every registered detector, those named in ``params`` built with their parameters."""
    import inspect

    from runlens.detectors import REGISTRY

    for code, values in params.items():
        if code not in REGISTRY:
            raise UsageError(f"unknown detector code {code!r}{did_you_mean(code, REGISTRY)}; "
                             "'runlens explain' lists them")
        sig = inspect.signature(REGISTRY[code].__init__)
        known = [p for p in sig.parameters if p != "self" and sig.parameters[p].kind is
                 inspect.Parameter.KEYWORD_ONLY]
        for name in values:
            if name not in known:
                listing = ", ".join(known) or "none"
                raise UsageError(f"{code} has no parameter {name!r}{did_you_mean(name, known)}; "
                                 f"its parameters: {listing}")
    out = []
    for code in sorted(REGISTRY):
        try:
            out.append(REGISTRY[code](**params.get(code, {})))
        except UsageError:
            raise
        except (TypeError, ValueError) as exc:
            raise UsageError(f"{code}: {exc}") from None
    return out


def _parse_setting(item: str) -> tuple[str, str, Any]:
    key, sep, raw = item.partition("=")
    code, dot, name = key.strip().partition(".")
    if not sep or not dot or not code or not name:
        raise UsageError(f"--set {item!r}: write CODE.PARAM=VALUE, e.g. --set loss_spikes.z_min=8")
    return code, name.strip(), _value(raw.strip())


def _value(raw: str) -> Any:
    """``8`` -> 8, ``0.5`` -> 0.5, ``true`` -> True; anything else stays a string."""
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _read_config(path: str) -> dict[str, Any]:
    from runlens.io.bounded import MAX_JSON_BYTES, read_regular

    try:  # a regular file of bounded size: never --config /dev/zero or a FIFO
        text = read_regular(path, MAX_JSON_BYTES, UsageError).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read the config file ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        if path.endswith(".toml"):
            if sys.version_info >= (3, 11):
                import tomllib
            else:  # Python 3.10: the same parser, from PyPI
                import tomli as tomllib

            data = tomllib.loads(text)
        else:
            data = json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested past the parser's limit
        kind = "TOML" if path.endswith(".toml") else "JSON"
        raise UsageError(f"{path}: not valid {kind} ({' '.join(str(exc).split())})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: must hold an object of detector codes")
    return data.get("detectors", data) if isinstance(data.get("detectors"), dict) else data
