"""The contract every registered detector (and the curve classifier) is held to.

Documented in the fixed sections, keyword-only parameters stored verbatim,
deterministic, silent on healthy runs, and never crashing on odd data.
"""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest
from edge_runs import EDGE_RUNS
from engine_runs import HEALTHY_VARIANTS, healthy, healthy_variant, write_healthy

from runlens import analyze
from runlens.analysis import run_detector
from runlens.detectors import REGISTRY, Context
from runlens.detectors._base import DOC_SECTIONS
from runlens.detectors.catalog import documented, missing_sections
from runlens.diagnosis import CURVES

CODES = sorted(REGISTRY)
SPEC_KEYS = ["run", "name", "status", "curve", "findings", "warnings"]
# Added keys (docs/format.md, "Added keys in the analysis output"), after the spec's.
ADDED_KEYS = ["headline", "key_numbers", "verdict_step"]
FINDING_KEYS = ["code", "severity", "title", "step", "layers", "evidence", "advice"]
SPEC_CODES = {"nonfinite_loss", "nonfinite_gradient", "exploding_gradients", "vanishing_gradients",
              "dead_layers", "learning_rate_too_low", "learning_rate_too_high", "loss_spikes", "plateau",
              "weight_norm_growth", "late_loss_variance", "no_validation", "crash_oom",
              "crash_shape_mismatch", "crash_device_mismatch", "crash_dtype_mismatch", "crash_other",
              "killed"}


def assert_spec_object(obj: dict) -> None:
    assert list(obj) == SPEC_KEYS + ADDED_KEYS
    assert obj["curve"] in CURVES
    assert obj["status"] in ("finished", "crashed", "killed", "running")
    for f in obj["findings"]:
        assert list(f) == FINDING_KEYS
        assert f["severity"] in ("error", "warning", "info")
        assert f["step"] is None or isinstance(f["step"], int)
        assert all(isinstance(layer, str) for layer in f["layers"])
    assert all(isinstance(w, str) for w in obj["warnings"])
    json.dumps(obj, allow_nan=False)


@pytest.mark.parametrize("code", sorted({*CODES, "curve"}))
def test_documented_in_every_section(code):
    entry = documented().get(code)
    assert entry is not None, f"{code} has no documentation entry"
    assert missing_sections(entry) == [], f"{code}: missing {missing_sections(entry)} of {DOC_SECTIONS}"


@pytest.mark.parametrize("code", CODES)
def test_parameters_are_keyword_only_and_stored_verbatim(code):
    cls = REGISTRY[code]
    if cls.__init__ is object.__init__:
        return
    params = [p for p in inspect.signature(cls.__init__).parameters.values() if p.name != "self"]
    for p in params:
        assert p.kind is inspect.Parameter.KEYWORD_ONLY, f"{code}: parameter {p.name} is not keyword-only"
        assert p.default is not inspect.Parameter.empty, f"{code}: parameter {p.name} has no default"
        assert getattr(cls(), p.name) == p.default
        assert getattr(cls(**{p.name: p.default}), p.name) == p.default


def test_registry_codes_are_module_names():
    # A detector is its own module under runlens.detectors, directly or in one family package
    # (runlens.detectors.crash.crash_oom); a package that is a step is its own module (the curve).
    for code, cls in REGISTRY.items():
        parts = cls.__module__.split(".")
        assert parts[:2] == ["runlens", "detectors"] and len(parts) in (3, 4), cls.__module__
        assert parts[-1] == code, f"{code} is registered from {cls.__module__}"


def test_every_spec_code_has_a_detector():
    assert sorted(SPEC_CODES - set(CODES)) == []


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("variant", HEALTHY_VARIANTS)
def test_silent_on_a_healthy_run(tmp_path, variant, seed):
    diagnosis = analyze(healthy_variant(tmp_path / "h", variant, seed))
    loud = [(f.code, f.title) for f in diagnosis.findings if f.severity != "info"]
    assert loud == []
    assert diagnosis.curve.label == "healthy", diagnosis.curve.reason
    assert [o for o in diagnosis.outcomes if o.state == "crashed"] == []
    assert diagnosis.warnings == ()


def test_deterministic_byte_identical_json(tmp_path):
    path = write_healthy(tmp_path / "h", n=800, seed=3)
    first = json.dumps(analyze(path).to_dict(), indent=2)
    for _ in range(2):
        assert json.dumps(analyze(path).to_dict(), indent=2) == first


@pytest.mark.parametrize("case", sorted(EDGE_RUNS))
def test_no_detector_crashes_on_odd_runs(case):
    run = EDGE_RUNS[case]()
    diagnosis = analyze(run)
    crashed = [(o.code, o.reason) for o in diagnosis.outcomes if o.state == "crashed"]
    assert crashed == []
    assert not [w for w in diagnosis.warnings if "crashed" in w]
    assert_spec_object(diagnosis.to_dict())
    # deterministic on odd data too
    assert analyze(run).to_dict() == diagnosis.to_dict()


@pytest.mark.parametrize("code", CODES)
def test_each_detector_alone_on_a_three_step_run(code):
    run = EDGE_RUNS["3-steps"]()
    outcome, found = run_detector(REGISTRY[code](), run, Context())
    assert outcome.state in ("ran", "skipped")
    assert all(f.code == code for f in found)


def test_no_crash_code_and_no_error_on_a_finished_run_with_a_stale_error_record(tmp_path):
    cols = healthy(300, 3)
    from engine_runs import meta, write_run

    m = meta("resumed", layers=cols["layer_names"],
             attempts=[{"started_at": "2026-01-01T00:00:00Z", "first_step": 0, "status": "crashed",
                        "error": {"type": "torch.OutOfMemoryError", "message": "CUDA out of memory"}}],
             error={"type": "torch.OutOfMemoryError", "message": "CUDA out of memory", "step": 5})
    write_run(tmp_path / "r", run_meta=m, scalars=cols["scalars"], evals=cols["evals"], layers=cols["layers"])
    codes = [f.code for f in analyze(tmp_path / "r").findings]
    assert not [c for c in codes if c.startswith("crash_") or c == "killed"]


def test_a_crashing_detector_is_reported_and_the_others_go_on(tmp_path):
    from runlens.detectors import Detector

    class Broken(Detector):
        code = "broken"
        title = "broken"

        def check(self, run, ctx):
            raise ZeroDivisionError("oops")

    path = write_healthy(tmp_path / "h", n=100)
    diagnosis = analyze(path, detectors=[Broken(), "no_validation"])
    states = {o.code: o.state for o in diagnosis.outcomes}
    assert states == {"broken": "crashed", "no_validation": "ran"}
    assert diagnosis.warnings == ("detector broken crashed: ZeroDivisionError: oops",)


def test_missing_requirements_skip_with_a_reason():
    run = EDGE_RUNS["no-optional-columns"]()  # no layers table at all
    outcomes = {o.code: o for o in analyze(run).outcomes}
    for code in CODES:
        if any(r.startswith("layers") for r in REGISTRY[code].needs.requires):
            assert outcomes[code].state == "skipped" and "layers." in outcomes[code].reason
    assert all(o.reason for o in outcomes.values() if o.state == "skipped")
    assert not np.isnan(run.column("scalars", "loss")).any()


#: Codes no sample run has the fault for, and the synthetic firing tests that cover them instead.
SYNTHETIC_ONLY = {"grad_norm_spike": "tests/detectors/test_grad_norm_spike.py",
                  "unreadable_data": "tests/detectors/test_unreadable_data.py",
                  # fires on runs the writer and the recorder write in that file (a batch index as the step)
                  "steps_went_back": "tests/detectors/test_steps_went_back.py"}


def test_every_detector_fires_on_at_least_one_sample_run():
    # Measured by analysing the sample runs, not read from their expected.json.
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    runs = sorted(p.parent for p in (root / "sample_runs").glob("*/expected.json"))
    assert len(runs) >= 15
    # The training-loop bugs (issue 21) have their own recorded runs, each with a fixed twin.
    bugs = sorted(p.parent for p in (root / "tests" / "fixtures" / "bugs").glob("*/truth.json"))
    # The broken-signal verdicts (issue 20) too: tests/fixtures/verdicts, each with its twin.
    verdicts = sorted(p.parent for p in (root / "tests" / "fixtures" / "verdicts").glob("*/run.json"))
    fired = {f.code for run in runs + bugs + verdicts for f in analyze(run).findings}
    for code, where in SYNTHETIC_ONLY.items():
        assert f'"{code}"' in (root / where).read_text(), f"{code}: no firing test in {where}"
    steps = {c for c in CODES if REGISTRY[c].verdict is not None}  # publish a verdict; their findings carry other codes
    assert sorted(set(CODES) - fired - set(SYNTHETIC_ONLY) - steps) == [], "registered detectors no sample run fires"


def test_unknown_detector_code_is_a_usage_error(tmp_path):
    from runlens.errors import UsageError

    with pytest.raises(UsageError, match="unknown detector code 'nope'"):
        analyze(write_healthy(tmp_path / "h", n=50), detectors=["nope"])


def test_projection_reads_only_what_the_selected_detectors_need(tmp_path):
    from runlens.analysis import projection

    cols = projection([REGISTRY["no_validation"]()])
    assert "layers" not in cols and "val_loss" in cols["evals"] and "loss" in cols["scalars"]
    every = projection([REGISTRY[c]() for c in CODES])
    for code in CODES:
        for table in ("scalars", "evals", "layers", "events"):
            assert set(getattr(REGISTRY[code].needs, table)) <= set(every.get(table, ()))


def test_the_curve_step_runs_whichever_detectors_are_chosen(tmp_path):
    # The curve is always a registered step: chosen or not, its verdict is the diagnosis's,
    # computed from its own needs, and only its outcome stays out when it was not asked for.
    path = write_healthy(tmp_path / "h", n=600)
    alone = analyze(path, detectors=["no_validation"])
    full = analyze(path)
    assert alone.curve == full.curve and alone.curve.label == "healthy"
    assert [o.code for o in alone.outcomes] == ["no_validation"]
    assert "curve" in {o.code for o in analyze(path, detectors=["curve"]).outcomes}
