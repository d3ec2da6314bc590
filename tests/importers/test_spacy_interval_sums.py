"""Round 17, from the development pastes' two spaCy tables (a healthy run called unstable, another given a
false spike): spaCy's training loop empties its loss sums at every evaluation, so each row's ``LOSS
<component>`` sums the steps since the row before, and its first row (step 0) one step. Divided by those
steps, the rows are one loss on one scale. Silent twin: a ``#`` column beside a loss named otherwise
keeps its values.
"""

from __future__ import annotations

from runlens import analyze
from runlens.io.loader import load_runs
from runlens.signals import Signals

HEAD = ["E    #       LOSS TOK2VEC  LOSS NER  ENTS_F  ENTS_P  ENTS_R  SCORE ",
        "---  ------  ------------  --------  ------  ------  ------  ------"]
ROWS = [(0, 0, 0.00, 40.00), (0, 200, 35.61, 2179.62), (0, 400, 34.21, 1725.56), (0, 600, 29.87, 1391.03),
        (0, 800, 27.34, 1162.48), (0, 1000, 21.25, 964.80), (1, 1200, 18.65, 762.79), (1, 1400, 17.02, 610.74),
        (1, 1600, 17.35, 536.86), (1, 1800, 13.49, 443.77), (1, 2000, 14.44, 392.05), (1, 2200, 12.87, 335.21)]


def _write(tmp_path, rows, head=HEAD):
    lines = ["ℹ Pipeline: ['tok2vec', 'ner']", *head]
    lines += [f"{e:>3}  {s:>6}  {a:>12.2f}  {b:>8.2f}   85.00   85.00   85.00    0.85" for e, s, a, b in rows]
    path = tmp_path / "spacy.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_spacy_losses_are_per_step_means_of_their_interval(tmp_path):
    path = _write(tmp_path, ROWS)
    loss = Signals(load_runs(path).run()).loss
    assert list(loss.steps) == [r[1] for r in ROWS]
    assert abs(loss.values[0] - 40.0) < 1e-9 and abs(loss.values[1] - (35.61 + 2179.62) / 200) < 1e-9
    d = analyze(load_runs(path).run())
    assert d.curve.label != "unstable" and "loss_spikes" not in {f.code for f in d.findings}


def test_silent_twin_a_count_column_beside_another_loss_keeps_its_values(tmp_path):
    head = ["E    #       loss", "---  ------  ------"]
    lines = ["ℹ run", *head] + [f"{e:>3}  {s:>6}  {b:>8.2f}" for e, s, _, b in ROWS]
    path = tmp_path / "other.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    loss = Signals(load_runs(path).run()).loss
    assert loss.values.tolist() == [r[3] for r in ROWS]
