"""The executable half of the detector contract.

- Each detector run alone, on a run loaded with only its declared data and the
  steps it depends on, gives the same result as in the full analysis, on every
  sample run.
- On null series (pure noise, trend+noise, step, random walk) each detector's
  false-alarm rate over 100 seeds stays at the documented level.
- Parameters are checked at construction with scikit-learn's message template.
- Dependencies are declared, ordered, and a cycle is refused at registration.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import pytest
from null_series import FAMILIES, null_run
from scipy import stats

from runlens import analyze
from runlens.analysis import _with_dependencies, projection
from runlens.detectors import REGISTRY, Detector
from runlens.detectors._base import dependency_order, register
from runlens.errors import UsageError
from runlens.io.loader import load_run

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted(p for p in (ROOT / "sample_runs").iterdir() if (p / "expected.json").is_file())
CODES = sorted(REGISTRY)
SEEDS = 100
#: The documented false-alarm level of every detector on null series (docs/design.md).
FALSE_ALARM_LEVEL = 0.05


def _key(f):
    d = f.to_dict()
    return (d["code"], d["severity"], d["step"], tuple(d["layers"]), d["title"])


@pytest.mark.parametrize("sample", SAMPLES, ids=[p.name for p in SAMPLES])
def test_each_detector_alone_gives_the_full_analysis_result(sample):
    full = analyze(sample)
    states = {o.code: o.state for o in full.outcomes}
    for code in CODES:
        det = REGISTRY[code]()
        alone_run = load_run(sample, columns=projection(_with_dependencies([det])))
        alone = analyze(alone_run, detectors=[code])
        want = sorted(_key(f) for f in full.findings if f.code == code)
        got = sorted(_key(f) for f in alone.findings if f.code == code)
        assert got == want, f"{code} alone on {sample.name}"
        assert [o.state for o in alone.outcomes] == [states[code]], f"{code} alone on {sample.name}"


@pytest.fixture(scope="module")
def null_findings():
    fired: dict[tuple[str, str], int] = {}
    for family in FAMILIES:
        for seed in range(SEEDS):
            d = analyze(null_run(family, seed))
            assert not [o for o in d.outcomes if o.state == "crashed"], (family, seed)
            for code in {f.code for f in d.findings if f.severity != "info"}:
                fired[(code, family)] = fired.get((code, family), 0) + 1
    return fired


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("code", CODES)
def test_false_alarm_rate_on_null_series(null_findings, code, family):
    k = null_findings.get((code, family), 0)
    # Reject the documented level only when k firings in 100 would be that unlikely under it.
    p = stats.binom.sf(k - 1, SEEDS, FALSE_ALARM_LEVEL) if k else 1.0
    assert p >= 1e-3, f"{code} fired on {k}/{SEEDS} {family} null runs (level {FALSE_ALARM_LEVEL:.0%})"


def test_the_null_series_are_not_all_silent_by_construction():
    # The same generator with a real fault must be seen: a 1000x gradient spike and a final explosion.
    run = null_run("noise", 0)
    gn = run.scalars.column("grad_norm").to_numpy().copy()
    gn[120] *= 1000
    spiked = run.scalars.set_column(run.scalars.column_names.index("grad_norm"), "grad_norm", [gn])
    codes = {f.code for f in analyze(dataclasses.replace(run, path="s", scalars=spiked)).findings}
    assert "grad_norm_spike" in codes


def _params(cls):
    if cls.__init__ is object.__init__:
        return []
    return [p for p in inspect.signature(cls.__init__).parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


@pytest.mark.parametrize("code", CODES)
def test_every_parameter_is_constrained_and_documented_as_an_item(code):
    cls = REGISTRY[code]
    doc = cls.doc_sections()["Parameters"]
    for p in _params(cls):
        assert p.name in cls.constraints, f"{code}: parameter {p.name} has no constraint"
        assert re.search(rf"(^|\n|[.;]\s)\s*{p.name}\s*[:(]", doc), f"{code}: {p.name} not documented as an item"


@pytest.mark.parametrize("code", [c for c in CODES if _params(REGISTRY[c])])
def test_a_bad_parameter_is_a_usage_error_at_construction(code):
    cls = REGISTRY[code]
    name = _params(cls)[0].name
    pattern = rf"^The '{name}' parameter of {cls.__name__} must be .+\. Got 'nope' instead\.$"
    with pytest.raises(UsageError, match=pattern):
        cls(**{name: "nope"})
    cls()  # the defaults are valid


def test_the_template_names_the_bound():
    with pytest.raises(UsageError, match=r"^The 'tail' parameter of ExplodingGradients must be an int >= 1\. "
                                         r"Got 0 instead\.$"):
        REGISTRY["exploding_gradients"](tail=0)


def test_declared_dependencies_run_first():
    order = dependency_order(CODES)
    for code in CODES:
        for dep in REGISTRY[code].depends:
            if dep in REGISTRY:
                assert order.index(dep) < order.index(code), (dep, code)


def test_a_dependency_cycle_is_refused_at_registration():
    class A(Detector):
        """A.

        What it detects:
            x
        Why it matters:
            x
        How it decides:
            x
        What to try:
            x
        Parameters:
            None.
        """
        code, title, depends = "zz_cycle_a", "a", ("zz_cycle_b",)

        def check(self, run, ctx):
            return []

    class B(A):
        code, title, depends = "zz_cycle_b", "b", ("zz_cycle_a",)

    register(A)
    try:
        with pytest.raises(TypeError, match="dependency cycle zz_cycle_b -> zz_cycle_a -> zz_cycle_b"):
            register(B)
        assert "zz_cycle_b" not in REGISTRY
    finally:
        REGISTRY.pop("zz_cycle_a", None)


def test_advice_is_the_doc_what_to_try_section():
    for code in CODES:
        cls = REGISTRY[code]
        words = " ".join(cls.doc_sections()["What to try"].replace("``", "").split())
        assert cls.advice_text() == words and words


def test_skip_needs_a_reason():
    from runlens.detectors import Skip
    with pytest.raises(TypeError):
        Skip("")


def test_an_unregistered_detector_instance_runs_after_its_dependencies(tmp_path):
    from engine_runs import write_healthy

    seen = []

    class Reader(Detector):
        code, title, depends = "aaa_reader", "reader", ("curve",)

        def check(self, run, ctx):
            seen.append(ctx.curve)
            return []

    d = analyze(write_healthy(tmp_path / "h", n=300), detectors=[Reader()])
    assert seen == [d.curve] and seen[0] is not None
    assert [o.code for o in d.outcomes] == ["aaa_reader"]
