"""The codes catalog: every code the tool emits, as data, one entry per code.

Four kinds of codes: ``detector`` (a registered detector's finding, documented by its docstring),
``label`` (the curve and its labels), ``compare`` (``runlens compare`` and ``audit --baseline``)
and ``pipeline`` (``runlens audit``'s rows for a run it could not read or analyse). The comparison's
and the pipeline's entries are written here as data; the detectors' and the curve's are read from
their docstrings by ``runlens.detectors.catalog.documented``, which joins all four. Every reader
takes them from there: ``runlens explain`` and docs/detectors.md (formatted by
``runlens.render.reference``), the reports' reference, and the comparison's and the audit's
findings, whose advice is the entry's "What to try".
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Mapping
from dataclasses import dataclass

#: The sections of an entry, in order ("" is the summary). The detectors' docstrings use the same.
SECTION_NAMES = ("What it detects", "Why it matters", "How it decides", "What to try", "Parameters")
CURVE = "curve"


@dataclass(frozen=True)
class Entry:
    """One code: ``kind`` is detector, label, compare or pipeline; ``sections`` maps each of
    SECTION_NAMES (and "" for the summary) to its text."""

    code: str
    severity: str
    title: str
    summary: str
    sections: Mapping[str, str]
    kind: str = "detector"


# -- written entries: the comparison's and the pipeline's codes ---------------------------------

_PARAMS_LEVEL = ("alpha: significance level of the one-sided test. min_change: smallest relative change "
                 "that counts. error_change: relative change from which it is an error, not a warning. "
                 "window, min_window: share and least number of the last shared steps compared.")

COMPARE_CODES: dict[str, dict[str, str]] = {
    "baseline_regression_loss": {
        "severity": "warning",
        "title": "The final training loss is worse than the baseline's beyond run-to-run noise.",
        "What it detects": "The run's training loss over the last window of the steps both runs "
                           "reached is higher than the baseline's over the same steps.",
        "Why it matters": "A run that ends at a higher loss than the recipe it replaces is a "
                          "regression, even when nothing crashed.",
        "How it decides": "One-sided Mann-Whitney U on the last window of shared steps (Welch's t "
                          "below 5 points a side), Cliff's delta as the effect size, and a relative "
                          "change of at least min_change that is also a share of the baseline's own "
                          "improvement. An error from error_change on.",
        "What to try": "Diff the run's config against the baseline's (learning rate, schedule, batch "
                       "size, data); rerun both with another seed if the change is close to the threshold.",
        "Parameters": _PARAMS_LEVEL,
    },
    "baseline_regression_val_loss": {
        "severity": "warning",
        "title": "The final validation loss is worse than the baseline's beyond evaluation noise.",
        "What it detects": "The validation loss of the last evaluations is higher than the baseline's.",
        "Why it matters": "Validation loss is what the model is for; a higher one is a regression "
                          "even when the training loss looks fine.",
        "How it decides": "As baseline_regression_loss, on the evaluations: a quarter of them (at "
                          "least 5) when both runs evaluated on the same steps, else each run's own "
                          "last evaluations.",
        "What to try": "Diff the configs; a changed regularization (dropout, weight decay), data "
                       "split or augmentation moves validation loss without moving training loss.",
        "Parameters": _PARAMS_LEVEL,
    },
    "baseline_slower_convergence": {
        "severity": "warning",
        "title": "The run needs many more steps than the baseline to reach the same loss.",
        "What it detects": "The step at which the smoothed loss first reaches the level where the "
                           "baseline completed a share of its improvement, against the baseline's step.",
        "Why it matters": "Slower convergence costs compute, and often hides a changed learning rate "
                          "or warmup.",
        "How it decides": "Both curves smoothed with a rolling median; slower when the run needs "
                          "slow_ratio times the baseline's steps, or never gets there.",
        "What to try": "Compare the learning rate, warmup and batch size with the baseline's config; "
                       "a changed initialization or data order also slows the start.",
        "Parameters": "fraction: share of the baseline's improvement that sets the target loss. "
                      "slow_ratio: how many times the baseline's steps counts as slower.",
    },
    "baseline_new_nonfinite": {
        "severity": "error",
        "title": "The loss or gradient norm became NaN/Inf, which the baseline never did.",
        "What it detects": "A non-finite loss, or a non-finite gradient norm on a step a loss scaler "
                           "did not skip, in the run but never in the baseline.",
        "Why it matters": "A NaN ends learning; one the baseline never had comes from the change.",
        "How it decides": "The first non-finite step of each run, over all their steps.",
        "What to try": "Look at what changed against the baseline: a higher learning rate, a removed "
                       "gradient clip, mixed precision without a loss scaler, a new layer or loss term.",
        "Parameters": "None.",
    },
    "baseline_new_spikes": {
        "severity": "warning",
        "title": "More loss spikes than the baseline, beyond chance.",
        "What it detects": "Upward loss outliers (robust z-score above spike_z against a rolling "
                           "median) counted in both runs.",
        "Why it matters": "New spikes mean the change made training less stable.",
        "How it decides": "A one-sided exact binomial test on the two counts, given each run's number "
                          "of steps.",
        "What to try": "Spikes that the baseline did not have usually come from a higher learning "
                       "rate, a smaller batch, or bad examples in new data; try gradient clipping.",
        "Parameters": "spike_z: robust z-score above which a step is a spike. alpha: significance level.",
    },
    "baseline_gradient_shift": {
        "severity": "warning",
        "title": "Some layers' gradient norms moved by orders of magnitude against the baseline.",
        "What it detects": "Per layer, the median gradient norm of the run against the baseline's.",
        "Why it matters": "A change of gradient scale in some layers changes how fast they learn.",
        "How it decides": "A shift of gradient_orders orders of magnitude or more, either way.",
        "What to try": "A change of scale in some layers' gradients points at a changed "
                       "initialization, normalization, loss scale or learning rate for those parameters.",
        "Parameters": "gradient_orders: orders of magnitude (log10) that count as a shift.",
    },
}


# Codes the pipeline itself emits (runlens.audit), not a detector. "finding" opens the title of the
# audit row's finding, which goes on with the error's message.
PIPELINE_CODES: dict[str, dict[str, str]] = {
    "unreadable_run": {
        "severity": "error",
        "title": "The run could not be read.",
        "finding": "the run could not be read",
        "What it detects": "A run that the audit found but could not load: run.json missing or not "
                           "JSON, a format_version this runlens does not know, or a log no importer reads.",
        "Why it matters": "An unreadable run is a row of the audit, never a silent omission: a CI gate "
                          "must not pass because the run it should judge is broken.",
        "How it decides": "Loading the run raised a format error; the message says which rule it broke.",
        "What to try": "Run `runlens validate RUN` to see every rule the run breaks; a run written by a "
                       "newer runlens needs a newer reader.",
        "Parameters": "None.",
    },
    "analysis_crashed": {
        "severity": "error",
        "title": "The analysis failed on this run (a bug in runlens).",
        "finding": "the analysis failed on this run",
        "What it detects": "A run that could be read but whose analysis raised an unexpected error.",
        "Why it matters": "The run was not judged; the audit says so instead of skipping it.",
        "How it decides": "Any error other than a format error while analysing the run.",
        "What to try": "This is a runlens bug: please report it with the run attached "
                       "(RUNLENS_DEBUG=1 runlens analyze RUN shows the traceback).",
        "Parameters": "None.",
    },
}
# Curve labels that are not finding codes of their own (the others are detectors' codes).
CURVE_LABELS = {
    "healthy": "The loss fell and settled; validation (if logged) followed it.",
    "insufficient_data": "Too few finite training losses to judge the curve's shape (the point "
                         "detectors still run on them).",
}



#: The written codes, comparison's and pipeline's, as one mapping (a view: an entry changed in
#: either table reads through).
_WRITTEN: ChainMap[str, dict[str, str]] = ChainMap(COMPARE_CODES, PIPELINE_CODES)


def advice(code: str) -> str:
    """The "What to try" of a comparison or pipeline ``code``, the advice of its findings."""
    return _WRITTEN[code]["What to try"]


def finding_title(code: str, message: str) -> str:
    """The title of a pipeline ``code``'s finding about the error ``message``."""
    return f"{PIPELINE_CODES[code]['finding']}: {message}"


def severity(code: str) -> str:
    """The severity of a comparison or pipeline ``code``."""
    return _WRITTEN[code]["severity"]


def written_entries() -> dict[str, Entry]:
    """The entries written here (the comparison's and the pipeline's codes), by code."""
    out = {}
    for kind, table in (("compare", COMPARE_CODES), ("pipeline", PIPELINE_CODES)):
        for code, doc in table.items():
            sections = {"": doc["title"], **{k: v for k, v in doc.items() if k in SECTION_NAMES}}
            out[code] = Entry(code, doc["severity"], doc["title"].rstrip("."), doc["title"], sections, kind)
    return out


def label_entry(label: str, meaning: str, curve: Entry | None) -> Entry:
    """The entry of a curve label that is no detector's code (``healthy``, ``insufficient_data``)."""
    sections = {"": f"Curve label: {meaning}", "What it detects": meaning,
                "Why it matters": "The curve label frames every finding; see `runlens explain curve`.",
                "How it decides": (curve.sections.get("How it decides", "") if curve else "")
                or "See `runlens explain curve`.",
                "What to try": "Nothing for the curve itself; read the findings, if any."
                if label == "healthy" else "Record more steps (or a longer run) before judging its shape.",
                "Parameters": "See `runlens explain curve`."}
    return Entry(label, "label", f"Curve label {label}", meaning, sections, "label")


def missing_sections(entry: Entry) -> list[str]:
    return [s for s in ("", *SECTION_NAMES) if not entry.sections.get(s)]
