"""Mends of a review of the console-line reader.

1. A Python literal is read in one place (:func:`runlens.io.reader.pyliteral.literal`): a dict on a
   log line, a Trainer's console dict and a printed history all read ``nan``, ``-inf``, NumPy and
   torch scalar wrappers and tuple keys the same way.
2. A line that says the loss went non-finite is read in one place (:class:`._logsignals.Watch`):
   TF's "Model diverged with loss = NaN." and a "loss = nan, skipping" warning are one event each.
3. The watch's gate is a keyword prefilter before its regex: it must pass every line the regex does.
"""

from __future__ import annotations

import math
import random

import pytest

from runlens.io.importers import _logsignals, hf, text
from runlens.io.importers._logsignals import GATE, gated
from runlens.io.importers._mapping import braced, mapping_fields, parse_mapping
from runlens.io.reader import pyliteral


def _fields(line: str) -> list[tuple[str, float]] | None:
    d = parse_mapping(line)
    return None if d is None else mapping_fields(d)


def _same(got: list[tuple[str, float]] | None, want: list[tuple[str, float]] | None) -> bool:
    if got is None or want is None:
        return got is want
    return [k for k, _ in got] == [k for k, _ in want] and all(
        (math.isnan(a) and math.isnan(b)) or a == b for (_, a), (_, b) in zip(got, want, strict=True))


NAN, INF = math.nan, math.inf

MAPPINGS = {
    # The readings the quoting regex gave, kept.
    "bare nan": ("{'loss': nan}", [("loss", NAN)]),
    "bare -inf": ("{'loss': -inf}", [("loss", -INF)]),
    "JSON NaN": ('{"loss": NaN, "step": 1}', [("loss", NAN), ("step", 1.0)]),
    "JSON -Infinity": ('{"loss": -Infinity}', [("loss", -INF)]),
    "Python NaN, -Infinity": ("{'loss': NaN, 'x': -Infinity}", [("loss", NAN), ("x", -INF)]),
    "quoted nan": ("{'loss': 'nan'}", [("loss", NAN)]),
    "nested": ("{'train': {'loss': 0.5, 'acc': 0.9}, 'step': 2}",
               [("train/loss", 0.5), ("train/acc", 0.9), ("step", 2.0)]),
    "bool and None keys": ("{True: 1, None: 2, 'loss': 0.5}", [("True", 1.0), ("None", 2.0), ("loss", 0.5)]),
    "a set value": ("{'step': 3, 'loss': 0.5, 'tags': {'a', 'b'}}", [("step", 3.0), ("loss", 0.5)]),
    "a bytes value": ("{'step': 3, 'loss': 0.5, 'b': b'x'}", [("step", 3.0), ("loss", 0.5)]),
    "trailing text": ("{'loss': 0.5} (took 2s)", None),
    "not a literal": ("{'step': 3, 'dtype': torch.float32}", None),
    # Read now: the regex left these to fail.
    "np.float64": ("{'step': 3, 'loss': np.float64(0.5)}", [("step", 3.0), ("loss", 0.5)]),
    "tensor": ("{'step': 3, 'loss': tensor(0.5)}", [("step", 3.0), ("loss", 0.5)]),
    "tensor on a device": ("{'loss': tensor(0.5, device='cuda:0')}", [("loss", 0.5)]),
    "+inf and -nan": ("{'a': +inf, 'b': -nan}", [("a", INF), ("b", NAN)]),
    "nan inside a string": ("{'step': 3, 'loss': 0.5, 'note': 'grad nan, skipped'}", [("step", 3.0), ("loss", 0.5)]),
    # A tuple key is a path of names, as a nested dict's are (it read as "('train', 'loss')").
    "tuple key": ("{('train', 'loss'): 0.5, 'step': 3}", [("train/loss", 0.5), ("step", 3.0)]),
}


@pytest.mark.parametrize("case", MAPPINGS)
def test_a_mapping_reads_as_a_python_literal(case):
    line, want = MAPPINGS[case]
    assert _same(_fields(line), want)


def test_a_dict_followed_by_text_on_a_line_is_read_from_its_braces():
    assert _fields(braced("step 3 {'loss': np.float64(0.5)} (took 2s)") or "") == [("loss", 0.5)]


def test_a_log_lines_literal_is_read_as_it_stands():
    # ``loads`` leaves a REPL's prompt lines out of a pasted session; ``literal`` (a log line's) keeps all.
    assert pyliteral.loads(">>> h.history\n{'loss': [0.5]}") == {"loss": [0.5]}
    with pytest.raises(ValueError):
        pyliteral.literal(">>> h.history\n{'loss': [0.5]}")


def _log(tmp_path, lines: list[str], name: str = "train.log"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("wrap", ["np.float64({})", "{}"])
def test_dict_lines_with_numpy_scalars_read_like_plain_ones(tmp_path, wrap):
    lines = [f"{{'step': {s}, 'loss': {wrap.format(round(3 - s / 100, 3))}, 'lr': 0.001}}" for s in range(10, 310, 10)]
    imp = text.read(_log(tmp_path, lines))
    assert list(imp.train["loss"].steps) == list(range(10, 310, 10))
    assert imp.train["loss"].values[0] == pytest.approx(2.9)


@pytest.mark.parametrize("grad", ["tensor({}, device='cuda:0')", "{}"])
def test_trainer_dicts_with_a_tensor_grad_norm_are_read(tmp_path, grad):
    lines = ["***** Running training *****"] + [
        f"{{'loss': {2.5 - i / 10:.2f}, 'grad_norm': {grad.format(1.5)}, 'learning_rate': 5e-05, 'epoch': {i / 10}}}"
        for i in range(1, 6)]
    imp = hf.read(_log(tmp_path, lines))
    assert list(imp.train["loss"].values) == pytest.approx([2.4, 2.3, 2.2, 2.1, 2.0])
    assert not any("could not be parsed" in w for w in imp.warnings)


def test_a_printed_history_with_tuple_keys_is_a_literal():
    assert pyliteral.loads("{('train', 'loss'): [0.9, 0.7], ('val', 'loss'): [1.0, nan]}") == {
        "train/loss": [0.9, 0.7], "val/loss": [1.0, pytest.approx(NAN, nan_ok=True)]}


# 2. One rule for a line that says the loss went non-finite.

_STEPS = [f"step {s} loss {3 - s / 1000:.4f} lr 0.001" for s in range(10, 110, 10)]


@pytest.mark.parametrize("said", [
    "Model diverged with loss = NaN.",  # TF's Estimator: no consequence named, no digit
    "[2019-01-01 10:00:00] Model diverged with loss = NaN.",  # digits, but no step
    "WARNING: loss = nan, skipping batch",  # a consequence: the warning rule
    "WARNING 12:00:01 loss = nan, skipping batch",
])
def test_a_line_saying_the_loss_went_nonfinite_is_one_event(tmp_path, said):
    imp = text.read(_log(tmp_path, _STEPS + [said] + _STEPS[-1:]))
    assert [(e[0], e[1]) for e in imp.events] == [(100, "nonfinite_loss")]


@pytest.mark.parametrize("line", [
    "Model converged with loss = 0.012.",  # a finite loss
    "step 110 loss = nan lr 0.001",  # a line with a step: its value is the record, not an event
    "The loss is nanoscale.",
])
def test_a_line_that_states_no_nonfinite_loss_is_no_event(tmp_path, line):
    assert text.read(_log(tmp_path, _STEPS + [line])).events == []


def test_the_watch_reads_a_stated_loss_only_on_a_line_with_no_step():
    w = _logsignals.Watch()
    assert not w.see("Model diverged with loss = NaN.", 7)
    assert w.see("Model diverged with loss = NaN.", 7, stepless=True)
    assert [(e[0], e[1]) for e in w.events] == [(7, "nonfinite_loss")]


# 3. The watch's gate, found sooner.

def test_the_gate_finds_what_its_regex_finds():
    rng = random.Random(7)
    # The gate's words in any case, and the letters a case-insensitive regex folds onto them from
    # outside ASCII (long s, Kelvin sign, dotted and dotless i).
    alphabet = list("skipoverflwerrrxcptninvalid SKIPOVERFLOWERROREXCEPTIONINVALID:=0.5") + ["ſ", "\u212a", "İ", "ı"]
    words = ["skip", "Overflow", "ERROR", "exception", "inValid", "ſkip", "s\u212aip", "İnvalid", "ınvalid"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        if rng.random() < 0.3:
            at = rng.randint(0, len(text))
            text = text[:at] + rng.choice(words) + text[at:]
        assert gated(text) == (GATE.search(text) is not None), text


@pytest.mark.parametrize("best", ["Early stopping, best iteration is: \t ", "Early stopping, best iteration is: 0"])
def test_the_best_round_line_is_found_with_trailing_blanks_and_only_when_it_ends_in_a_colon(tmp_path, best):
    rounds = [f"[{i}]\ttraining's binary_logloss: {0.66 - 0.04 * i:.2f}\tvalid_1's binary_logloss: {0.67 - 0.03 * i:.2f}"
              for i in range(6)]
    imp = text.read(_log(tmp_path, rounds + [best, rounds[0]]))
    # Announced, the best round's line again is a recorded point; unannounced, a restart.
    assert imp.config["text_lines"]["runs"] == (1 if best.rstrip().endswith(":") else 2)
