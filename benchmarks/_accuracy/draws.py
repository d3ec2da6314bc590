"""Every fresh draw of the third generator, in the order drawn: the one table a new draw is added to.

A draw is ``python -m benchmarks.third --seed-shift N --vary`` into ``benchmarks/_data/<name>/``. Its entry
holds what the benchmark needs (seed shift, data folder, the window its ``draw.json`` must show) and what
the page says of it (its role line, its generator note, its sentence in "Which set is which");
``benchmarks/accuracy.py``'s sets and groups and ``evaluate.third_set`` are read from here. :data:`QUOTE`
names the set to quote: the one draw graded once with nothing of it seen before.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "_data"


@dataclass(frozen=True)
class Draw:
    name: str
    seed_shift: int
    #: (start, end) of its training as ``draw.json`` has them, to the minute: a retrained set no longer
    #: matches, and its role line then says so.
    drawn: tuple[str, str]
    #: The page's role line; ``{drawn}`` becomes the window the runs were trained in.
    role: str
    #: Its entry under the page's "Held-out generator changes and new sets".
    note: str
    #: Its sentence in the page's "Which set is which" paragraph.
    which: str
    vary: bool = True

    @property
    def data(self) -> Path:
        return DATA / self.name


DRAWS: tuple[Draw, ...] = (
    Draw(
        "third-fresh", 5000, ("2026-12-02 01:01", "2026-12-02 01:33"),
        role="the third generator with every seed shifted by 5000 and every run redrawn (`--seed-shift "
             "5000 --vary`), generated at {drawn} UTC before round 5's detector changes landed, graded "
             "once at the end of round 5 (20a7d7f), then looked at in round 6: a development set since",
        note="`third-fresh` (round 5): the third generator (`benchmarks/third`) with every seed shifted by 5000 and "
             "every run redrawn at a length x0.6-1.8 (log-uniform), a hidden width x0.5, 1, 1.5 or 2, a learning "
             "rate x0.5-2 (log-uniform) and a batch size of 32, 64 or 128 (a small batch the catalog names, 4 or "
             "16 under accumulation, kept or doubled), drawn from each run's own shifted seed "
             "(`benchmarks/third/catalog.py: redraw`, `python -m benchmarks.third --seed-shift 5000 --vary`). The "
             "bugs, criteria and labels are the catalog's; each label is confirmed against the run's fixed twin as "
             "before. The draw was fixed in commit fc9315b (01:01:06 UTC) and trained from 2026-12-02 01:01:08 to "
             "01:33:00 UTC (`draw.json`), before the first detector commit of round 5 (13c434d, 01:01:41); "
             "training runs no runlens code, so nothing committed during it could shape it. Nothing of it was "
             "diagnosed before its one grading; only the generator's own confirmations were read: 43 runs, 33 "
             "confirmed, 10 not (eval_missing 0/2, reduction_sum 0/2, target_leak 0/2, labels_shuffled 1/2, "
             "accum_unscaled 1/2, healthy 13/15; every other bug 2/2), so the codes of the three bugs with none "
             "confirmed are not graded on it. Graded once at 20a7d7f; looked at in round 6 (its healthy runs' "
             "false alarms were read, and nothing was changed because of them): a development set since.",
        which="*third-fresh* (round 5) is the third generator with every seed "
              "shifted by 5000 and every run redrawn at another length, width, learning rate and batch size, "
              "generated before round 5's detector changes landed and graded once at the end of round 5 "
              "(20a7d7f; those figures are in that round's closing note and the page's history), then looked "
              "at in round 6: a development set since.",
    ),
    Draw(
        "third-fresh2", 7000, ("2026-12-02 04:13", "2026-12-02 05:09"),
        role="the third generator with every seed shifted by 7000 and every run redrawn (`--seed-shift "
             "7000 --vary`), generated at {drawn} UTC before round 6's first detector change landed, "
             "graded once at the end of round 6 (0eade29), then looked at in round 7: a development set "
             "since",
        note="`third-fresh2` (round 6): the same generator and redraw with every seed shifted by 7000 "
             "(`python -m benchmarks.third --seed-shift 7000 --vary`), trained from the committed tree at 9349085, "
             "from 2026-12-02 04:13:52 to 05:09:27 UTC (`draw.json`), before round 6's first detector commit (f75813c, "
             "`steps_went_back`); training runs no runlens code. Nothing of it was diagnosed before its one "
             "grading; only the generator's own confirmations were read (in its log): 43 runs, 35 confirmed, 8 not "
             "(eval_missing 0/2, target_leak 0/2, reduction_sum 1/2, accum_unscaled 1/2, healthy 13/15; every other "
             "bug 2/2), so the codes of the two bugs with none confirmed are not graded on it. Graded once at "
             "0eade29; looked at in round 7 (its misses were read and detectors changed): a development set since.",
        which="*third-fresh2* (round 6) is another such draw (seeds "
              "shifted by 7000), trained before round 6's first detector change landed, graded once at the end "
              "of round 6 (0eade29; figures in that round's closing note), then looked at in round 7: a "
              "development set since.",
    ),
    # Not 9000: a draw at 9000 was started first and discarded unfinished, because a scan of a development
    # statistic read four of its runs while it was filling.
    Draw(
        "third-fresh3", 11000, ("2026-12-02 07:23", "2026-12-02 07:30"),
        role="the third generator with every seed shifted by 11000 and every run redrawn (`--seed-shift "
             "11000 --vary`), generated at {drawn} UTC from 35fc23b before round 7's first detector "
             "change was committed, graded once at 07842d8 (round 7), then looked at: a development set "
             "since",
        note="`third-fresh3` (round 7): the same generator and redraw with every seed shifted by 11000 "
             "(`python -m benchmarks.third --seed-shift 11000 --vary`), trained from the committed tree at 35fc23b "
             "from 2026-12-02 07:23:32 to 07:30:05 UTC (`draw.json`), before round 7's first detector commit; "
             "training runs no runlens code, and no run of it carries the recorder column round 7 added "
             "(`grad_not_cleared`): it was recorded by 35fc23b's recorder. A draw at seed shift 9000 was started a "
             "minute before and discarded unfinished, because a scan of a development statistic (the first layer's "
             "gradient swings) was run over the data folder while it was filling and printed four of its runs "
             "(softmax-sepconv, sum-sepconv, nozero-resreg, raw-moe). "
             "Nothing of third-fresh3 was diagnosed before its one grading; the generator's log was not read beyond "
             "its last line. Graded once at 07842d8 (curve 0.86, recall 0.81, fault's code first 0.83, healthy runs "
             "with a warning or error 3/12); its misses were read and `late_loss_variance` changed: a development set "
             "since.",
        which="*third-fresh3* (round 7) is another such draw (seeds shifted by 11000), "
              "trained before round 7's first detector change was committed, graded once at 07842d8 and looked "
              "at since.",
    ),
    # A second draw in round 7: third-fresh3 was recorded before the recorder wrote `grad_not_cleared`.
    Draw(
        "third-fresh4", 13000, ("2026-12-02 08:52", "2026-12-02 08:58"),
        role="the third generator with every seed shifted by 13000 and every run redrawn (`--seed-shift "
             "13000 --vary`), generated at {drawn} UTC from d7e0c50 by the recorder with "
             "`grad_not_cleared`, before round 7's last detector change was committed, graded once at "
             "the end of round 7 (0022a2e), then looked at in round 8: a development set since",
        note="`third-fresh4` (round 7, second half): the same generator and redraw with every seed shifted by 13000 "
             "(`python -m benchmarks.third --seed-shift 13000 --vary`), trained from the committed tree at d7e0c50 "
             "(`draw.json` has the times) into a folder outside the repository, before the round's last detector commit "
             "(`late_loss_variance`); training runs no runlens engine code. Its runs were recorded by the recorder with "
             "`grad_not_cleared`, so the recorder's reading of a missing `zero_grad` is graded on it. Nothing of it was "
             "diagnosed, and its generator log was not read, before its one grading. Graded once at 0022a2e (curve "
             "0.87, recall 0.86, fault's code first 0.83, healthy runs with a warning or error 0/12); its misses were "
             "read in round 8: a development set since.",
        which="*third-fresh4* (round 7, second half; seeds shifted by 13000) was trained before that "
              "round's last detector change, by the recorder that writes `grad_not_cleared`, graded once at "
              "0022a2e and looked at in round 8.",
    ),
    Draw(
        "third-fresh5", 17000, ("2026-12-02 11:33", "2026-12-02 11:47"),
        role="the third generator with every seed shifted by 17000 and every run redrawn (`--seed-shift "
             "17000 --vary`), generated at {drawn} UTC from ee3f4ff by the recorder with "
             "`ce_grad_scale`, before round 8's last three detector changes were committed, graded once "
             "at 5bf5f84 (round 8), then looked at: a development set since",
        note="`third-fresh5` (round 8): the same generator and redraw with every seed shifted by 17000 (`python -m "
             "benchmarks.third --seed-shift 17000 --vary`), trained from the committed tree at ee3f4ff (`draw.json` has "
             "the times) into a folder outside the repository, before the round's last two detector commits "
             "(`plateau`, c98399f; the held-out stall's half bar, e607b35); training runs no runlens engine code. Its runs were recorded by the recorder with "
             "`ce_grad_scale` and `backward_passes`, so the recorder's reading of a loss not divided by the "
             "accumulation count is graded on it. Nothing of it was diagnosed before its one grading; while it "
             "trained, the only lines of its generator log read were the last two on screen, cut to 60 characters "
             "(two labels, no diagnosis). Graded once at 5bf5f84 (curve 0.95, recall 0.95, fault's code first 0.92, "
             "healthy runs with a warning or error 0/11); its misses were read (`sum-moe`: a saturated-gate reading "
             "under huge steps; `leak-sepconv`: a near-certainty reading tried and dropped, it fired on the bug set's "
             "healthy twins) and `inputs_not_normalized` changed: a development set since.",
        which="*third-fresh5* (round 8; seeds shifted by 17000), recorded by "
              "the recorder that writes `ce_grad_scale`, was graded once at 5bf5f84 and looked at since.",
    ),
    # A second draw in round 8: third-fresh5 had been graded and looked at.
    Draw(
        "third-fresh6", 19000, ("2026-12-02 11:54", "2026-12-02 12:03"),
        role="the third generator with every seed shifted by 19000 and every run redrawn (`--seed-shift "
             "19000 --vary`), generated at {drawn} UTC from 2d75eb3 by the recorder with "
             "`ce_grad_scale`, after third-fresh5's misses were read and after round 8's last detector "
             "change, graded once at the end of round 8 (3011230), then looked at in round 9: a "
             "development set since",
        note="`third-fresh6` (round 8, second draw): the same generator and redraw with every seed shifted by 19000 "
             "(`python -m benchmarks.third --seed-shift 19000 --vary`), trained from the committed tree at 2d75eb3 "
             "(`draw.json` has the times) into a folder outside the repository, after third-fresh5's grading and "
             "after the round's last detector commit (2d75eb3 is that commit): no engine change came after it. The "
             "recorder then changed only to catch its own hooks' errors (3205b03). Nothing of it was diagnosed, and "
             "its generator log was not read, before its one grading at 3011230 (curve 0.95, recall 0.95, fault's "
             "code first 0.96, healthy runs with a warning or error 0/12). Its misses were read in round 9 (a "
             "softmax run stopped short of the softmax floor led to the recorder's reading of the logits' gradient): "
             "a development set since.",
        which="*third-fresh6* (round 8; seeds shifted by 19000) was trained after that, graded once at 3011230 "
              "and looked at in round 9.",
    ),
    Draw(
        "third-fresh7", 23000, ("2026-12-02 14:35", "2026-12-02 14:59"),
        role="the third generator with every seed shifted by 23000 and every run redrawn (`--seed-shift "
             "23000 --vary`), generated at {drawn} UTC from c25b09c by the recorder with "
             "`logits_in_unit_interval`, before round 9's last detector change, graded once at 1a22ca6 "
             "(round 9), then looked at: a development set since",
        note="`third-fresh7` (round 9): the same generator and redraw with every seed shifted by 23000 (`python -m "
             "benchmarks.third --seed-shift 23000 --vary`), trained from the committed tree at c25b09c (`draw.json` "
             "has the times) into a folder outside the repository, by the recorder that writes "
             "`logits_in_unit_interval` and carries the logits readings in the step's one transfer. c25b09c is the "
             "round's last detector commit at the time. Nothing of it was diagnosed, and its generator log was not "
             "read, before its one grading at 1a22ca6 (curve 0.90, recall 0.95, fault's code first 0.92, healthy "
             "runs with a warning or error 1/12). Its misses were then read (the outputs-in-[0, 1] reading fired on a "
             "labels-shuffled run whose logits collapsed into [0, 1], which led to `logits_sum_to_one`): a development "
             "set since.",
        which="*third-fresh7* (round 9; seeds shifted by 23000) was graded once at "
              "1a22ca6 and looked at since.",
    ),
    # A second draw in round 9: third-fresh7 had been graded and looked at, and the recorder had gained
    # `logits_sum_to_one`.
    Draw(
        "third-fresh8", 29000, ("2026-12-02 15:09", "2026-12-02 15:25"),
        role="the third generator with every seed shifted by 29000 and every run redrawn (`--seed-shift "
             "29000 --vary`), generated at {drawn} UTC from 5255a80 by the recorder with "
             "`logits_sum_to_one`, after third-fresh7's misses were read and after round 9's last detector "
             "change, graded once at the end of round 9 (19c5ee2), then looked at in round 10: a development "
             "set since",
        note="`third-fresh8` (round 9, second draw): the same generator and redraw with every seed shifted by 29000 "
             "(`python -m benchmarks.third --seed-shift 29000 --vary`), trained from the committed tree at 5255a80 "
             "(`draw.json` has the times) into a folder outside the repository, by the recorder that writes "
             "`logits_sum_to_one`. 5255a80 is the round's last detector commit: no engine change came after it. "
             "Nothing of it was diagnosed, and its generator log was not read, before its one grading at 19c5ee2 "
             "(curve 0.91, recall 0.95, fault's code first 0.96, healthy runs with a warning or error 0/12). Its "
             "misses were read in round 10, before that round's detector change (a0b73c9): a development set "
             "since.",
        which="*third-fresh8* (round 9; seeds shifted by 29000) was trained from round 9's last detector "
              "commit, graded once at 19c5ee2 and looked at in round 10: a development set since.",
    ),
    # Drawn after round 10's detector change (a0b73c9: a zero first-layer gradient counts as a swing), so
    # that change is graded on runs nobody had read.
    Draw(
        "third-fresh9", 31000, ("2026-12-02 17:47", "2026-12-02 17:54"),
        role="the third generator with every seed shifted by 31000 and every run redrawn (`--seed-shift "
             "31000 --vary`), generated at {drawn} UTC from a0b73c9 by the recorder with "
             "`logits_sum_to_one`, after third-fresh8's misses were read and after round 10's detector "
             "change, graded once at the end of round 10 (f170af1), then looked at in round 11: a development "
             "set since",
        note="`third-fresh9` (round 10): the same generator and redraw with every seed shifted by 31000 (`python -m "
             "benchmarks.third --seed-shift 31000 --vary`), trained from the committed tree at a0b73c9 (`draw.json` "
             "has the times) into a folder outside the repository, by the recorder that writes "
             "`logits_sum_to_one`, after third-fresh8's misses were read. a0b73c9 is round 10's detector commit "
             "(`inputs_not_normalized`: a first-layer gradient of exactly 0 counts as a swing). Nothing of it was "
             "diagnosed before its one grading. Of its generator log, its last two lines were printed once by "
             "mistake while it trained: one healthy run (`accum-sepconv`) confirmed, with its validation "
             "measurements. The curve-label rule changed during the draw (478a32b: a loss that rose is not graded "
             "as underfitting); its labels were recomputed from the saved measurements under that rule before "
             "the grading, and the closing note gives its figures under both rules. Graded once at f170af1 (curve "
             "0.94, recall 1.00, fault's code first 0.96, healthy runs with a warning or error 2/9); its misses "
             "were read in round 11 (two loss_spikes warnings on healthy runs, a labels-shuffled run called "
             "healthy, a summed-loss run called a leak), which led to that round's detector changes: a "
             "development set since.",
        which="*third-fresh9* (round 10; seeds shifted by 31000) was trained from a0b73c9, round 10's detector "
              "commit, graded once at f170af1 and looked at in round 11: a development set since.",
    ),
    # Drawn after round 11's detector changes (the spike tail bound, the held-out loss at chance, the leak's
    # chance guard), so they are graded on runs nobody had read.
    Draw(
        "third-fresh10", 37000, ("2026-12-02 21:25", "2026-12-02 21:33"),
        role="the third generator with every seed shifted by 37000 and every run redrawn (`--seed-shift "
             "37000 --vary`), generated at {drawn} UTC from c01f65c by the recorder with "
             "`logits_sum_to_one`, after third-fresh9's misses were read and after round 11's detector "
             "changes, graded once at 34f31d8 (round 12), then looked at: a development set since",
        note="`third-fresh10` (round 11): the same generator and redraw with every seed shifted by 37000 (`python -m "
             "benchmarks.third --seed-shift 37000 --vary`), trained from the committed tree at c01f65c (`draw.json` "
             "has the times) into a folder outside the repository, by the recorder that writes "
             "`logits_sum_to_one`, after third-fresh9's misses were read. c01f65c is round 11's last detector "
             "commit but one: the review mend bff26cb (the softmax and raw-input detectors compute the same "
             "readings once; no result changes) came after it, and after that only importer, CLI and test "
             "commits (151d874, 223a1eb, a7cf327, 113d835), which change no detector. Nothing of it was diagnosed before its one "
             "grading. Of its generator log, one line cut to 60 characters was printed once by mistake while it "
             "trained: one bug run (`subset-tagger`) confirmed. Graded once at 34f31d8 (curve 0.95, recall 0.95 "
             "with validation_leak missed on its one confirmed leak run, fault's code first 0.96, healthy runs "
             "with a warning or error 1/11: a late unfreeze called unstable); that miss was read and led to "
             "round 12's detector change (df1cd6c): a development set since.",
        which="*third-fresh10* (round 11; seeds shifted by 37000) was trained from c01f65c, graded once at "
              "34f31d8 and looked at in round 12: a development set since.",
    ),
    # Drawn after round 12's detector change (df1cd6c: a loss still falling through its last third is
    # progress, not spread), so it is graded on runs nobody had read.
    Draw(
        "third-fresh11", 41000, ("2026-12-03 02:59", "2026-12-03 03:06"),
        role="the third generator with every seed shifted by 41000 and every run redrawn (`--seed-shift "
             "41000 --vary`), generated at {drawn} UTC from df1cd6c by the recorder with "
             "`logits_sum_to_one`, after third-fresh10's misses were read and after round 12's detector "
             "change, graded once at 8bb07e3 (round 12), then looked at: a development set since",
        note="`third-fresh11` (round 12): the same generator and redraw with every seed shifted by 41000 (`python -m "
             "benchmarks.third --seed-shift 41000 --vary`), trained from the committed tree at df1cd6c (`draw.json` "
             "has the times) into a folder outside the repository, by the recorder that writes "
             "`logits_sum_to_one`, after third-fresh10's misses were read. df1cd6c is round 12's detector commit "
             "(the curve's late spread read around a still-falling late trend); the commits after it change no "
             "detector. Nothing of it was diagnosed, and none of its generator log read, before its one grading. "
             "Graded once at 8bb07e3 (curve 1.00, recall 1.00, fault's code first 1.00, healthy runs with a "
             "warning or error 1/10: a plateau warning on a run with cosine warm restarts); that miss was read "
             "and led to round 12's second detector change (165360a): a development set since.",
        which="*third-fresh11* (round 12; seeds shifted by 41000) was trained from df1cd6c, graded once at "
              "8bb07e3 and looked at in round 12: a development set since.",
    ),
    # Drawn after round 12's second detector change (165360a: a plateau left at a restored rate is
    # information), so both of that round's changes are graded on runs nobody had read.
    Draw(
        "third-fresh12", 43000, ("2026-12-03 03:19", "2026-12-03 03:23"),
        role="the third generator with every seed shifted by 43000 and every run redrawn (`--seed-shift "
             "43000 --vary`), generated at {drawn} UTC from 165360a by the recorder with "
             "`logits_sum_to_one`, after third-fresh11's misses were read and after round 12's detector "
             "changes, graded once at the end of round 12 (63ef41a), then re-graded in round 13: a development "
             "set since",
        note="`third-fresh12` (round 12): the same generator and redraw with every seed shifted by 43000 (`python -m "
             "benchmarks.third --seed-shift 43000 --vary`), trained from the committed tree at 165360a (`draw.json` "
             "has the times) into a folder outside the repository, by the recorder that writes "
             "`logits_sum_to_one`, after third-fresh11's misses were read. 165360a is round 12's last detector "
             "commit; the commits after it change no detector. Nothing of it was diagnosed, and none of its "
             "generator log read, before its one grading.",
        which="*third-fresh12* (round 12; seeds shifted by 43000) was trained from 165360a, graded once at "
              "63ef41a and re-graded in round 13: a development set since.",
    ),
    # Drawn after round 13's detector changes (1e2777d: validation_leak's near-certain reading;
    # 3499b6b: a guessed ln K needs more than a nearby level, and the verdicts of loss-only logs).
    Draw(
        "third-fresh13", 47000, ("2026-12-03 06:30", "2026-12-03 06:54"),
        role="the third generator with every seed shifted by 47000 and every run redrawn (`--seed-shift "
             "47000 --vary`), generated at {drawn} UTC from e17f924 by the recorder with "
             "`logits_sum_to_one`, after round 13's detector changes, graded once at the end of round 13 "
             "(78e9d18), then re-graded in round 14: a development set since",
        note="`third-fresh13` (round 13): the same generator and redraw with every seed shifted by 47000 (`python -m "
             "benchmarks.third --seed-shift 47000 --vary`), trained from the committed tree at e17f924 (`draw.json` "
             "has the times) into a folder outside the repository, by the recorder that writes "
             "`logits_sum_to_one`. e17f924 holds round 13's detector changes (1e2777d, 3499b6b); the commits "
             "after it change the readers of foreign logs, not a detector. Nothing of it was diagnosed, and none "
             "of its generator log read, before its one grading.",
        which="*third-fresh13* (round 13; seeds shifted by 47000) was trained from e17f924, graded once at "
              "78e9d18 and re-graded in round 14: a development set since.",
    ),
    # Drawn at the start of round 14, from 225647c, before any of that round's detector changes was
    # written: its runs were trained by nobody's reading of them, and test those changes as unseen runs.
    Draw(
        "third-fresh14", 50000, ("2026-12-03 08:25", "2026-12-03 08:51"),
        role="the third generator with every seed shifted by 50000 and every run redrawn (`--seed-shift "
             "50000 --vary`), generated at {drawn} UTC from 225647c by the recorder with "
             "`logits_sum_to_one`, before round 14's detector changes were written, graded once at the end "
             "of round 14 (9465847), then re-graded in round 15: a development set since",
        note="`third-fresh14` (round 14): the same generator and redraw with every seed shifted by 50000 (`python -m "
             "benchmarks.third --seed-shift 50000 --vary`), trained from the committed tree at 225647c (`draw.json` "
             "has the times) into a folder outside the repository, by the recorder that writes "
             "`logits_sum_to_one`, while round 14's detector changes were being written (the generator does "
             "not use the engine). Nothing of it was diagnosed before its one grading.",
        which="*third-fresh14* (round 14; seeds shifted by 50000) was trained from 225647c, graded once at "
              "9465847 and re-graded in round 15: a development set since.",
    ),
    # Drawn in round 15 from af73769, after most of that round's detector changes (short pastes,
    # gradient readings) and before its last ones; nothing of it read before its one grading.
    Draw(
        "third-fresh15", 53000, ("2026-12-03 12:01", "2026-12-03 12:13"),
        role="the third generator with every seed shifted by 53000 and every run redrawn (`--seed-shift "
             "53000 --vary`), generated at {drawn} UTC from af73769 by the recorder with "
             "`logits_sum_to_one`, during round 15, graded once at the end of round 15 (a820757), then "
             "re-graded in round 16: a development set since",
        note="`third-fresh15` (round 15): the same generator and redraw with every seed shifted by 53000 (`python -m "
             "benchmarks.third --seed-shift 53000 --vary`), trained from the committed tree at af73769 (`draw.json` "
             "has the times) into a folder outside the repository, by the recorder that writes "
             "`logits_sum_to_one`, after most of round 15's detector changes (the generator does not use the "
             "engine). Nothing of it was diagnosed, and none of its generator log read, before its one grading.",
        which="*third-fresh15* (round 15; seeds shifted by 53000) was trained from af73769, graded once at "
              "a820757 and re-graded in round 16: a development set since.",
    ),
    # Drawn in round 16 from 4a66171, after that round's first detector commit (short verdicts, the
    # chance level's spread, learning_rate_too_low's largest module); nothing of it read before its
    # one grading.
    Draw(
        "third-fresh16", 59000, ("2026-12-03 14:43", "2026-12-03 14:51"),
        role="the third generator with every seed shifted by 59000 and every run redrawn (`--seed-shift "
             "59000 --vary`), generated at {drawn} UTC from 4a66171 by the recorder with "
             "`logits_sum_to_one`, during round 16, graded once at the end of round 16 (4b3a7ea), then "
             "re-graded in round 17: a development set since",
        note="`third-fresh16` (round 16): the same generator and redraw with every seed shifted by 59000 (`python -m "
             "benchmarks.third --seed-shift 59000 --vary`), trained from the committed tree at 4a66171 (`draw.json` "
             "has the times) into a folder outside the repository, by the recorder that writes "
             "`logits_sum_to_one`, after round 16's first detector commit (the generator does not use the "
             "engine). Nothing of it was diagnosed, and none of its generator log read, before its one grading.",
        which="*third-fresh16* (round 16; seeds shifted by 59000) was trained from 4a66171, graded once at "
              "4b3a7ea and re-graded in round 17: a development set since.",
    ),
    # Drawn in round 17 from 1fbbc23, the end of round 16, before any of round 17's engine changes was
    # committed (the generator does not use the engine); nothing of it diagnosed before its one grading.
    Draw(
        "third-fresh17", 61000, ("2026-12-03 17:24", "2026-12-03 17:31"),
        role="the third generator with every seed shifted by 61000 and every run redrawn (`--seed-shift "
             "61000 --vary`), generated at {drawn} UTC from 1fbbc23 by the recorder with "
             "`logits_sum_to_one`, during round 17, graded once at the end of round 17 (e6c2836), then "
             "looked at in round 18: a development set since",
        note="`third-fresh17` (round 17): the same generator and redraw with every seed shifted by 61000 (`python -m "
             "benchmarks.third --seed-shift 61000 --vary`), trained from the committed tree at 1fbbc23 (`draw.json` "
             "has the times) into a folder outside the repository, by the recorder that writes "
             "`logits_sum_to_one`, before round 17's first engine commit (the generator does not use the "
             "engine). Nothing of it was diagnosed before its one grading; the last lines of its generator log "
             "(the generator's own confirmations, no diagnosis) were seen once, checking that the draw had ended.",
        which="*third-fresh17* (round 17; seeds shifted by 61000) was trained from 1fbbc23, graded once at "
              "e6c2836 (curve 0.90, recall 1.00, fault's code first 0.96, healthy runs with a warning 1/13) and "
              "looked at in round 18: a development set since. The runs graded here were retrained from "
              "daed158 (the generator and the recorder unchanged since 1fbbc23) in round 18, the data being "
              "on another machine; their `draw.json` says when.",
    ),
    # Drawn in round 18 from daed158, the end of round 17, before any of round 18's engine changes was
    # committed (the generator does not use the engine); nothing of it diagnosed before its one grading.
    Draw(
        "third-fresh18", 67000, ("2026-12-04 15:46", "2026-12-04 15:50"),
        role="the third generator with every seed shifted by 67000 and every run redrawn (`--seed-shift "
             "67000 --vary`), generated at {drawn} UTC from daed158 by the recorder with "
             "`logits_sum_to_one`, during round 18, graded once at the end of round 18 (73512f4), then looked "
             "at in round 19: a development set since",
        note="`third-fresh18` (round 18): the same generator and redraw with every seed shifted by 67000 (`python -m "
             "benchmarks.third --seed-shift 67000 --vary`), trained from the committed tree at daed158 (`draw.json` "
             "has the times) into a folder outside the repository, by the recorder that writes "
             "`logits_sum_to_one`, before round 18's first engine commit (the generator does not use the "
             "engine). Nothing of it was diagnosed before its one grading. Two glimpses, no diagnosis: the last "
             "three lines of its generator log (two runs' own confirmations) were seen once while checking "
             "whether the draw had ended, and the list of run names in its `draw.json` (the catalog's "
             "bug-and-architecture names, the same in every draw) was printed once while reading its times.",
        which="*third-fresh18* (round 18; seeds shifted by 67000) was trained from daed158, graded once at "
              "73512f4 (curve 1.00, recall 0.95, fault's code first 0.95, healthy runs with a warning 2/12) and "
              "looked at in round 19: a development set since.",
    ),
    # Drawn in round 19 from 85e7385 (a CLI commit: Ctrl-C handling), before any of round 19's engine
    # changes was committed (the generator does not use the engine); nothing of it diagnosed before its
    # one grading.
    Draw(
        "third-fresh19", 71000, ("2026-12-04 18:31", "2026-12-04 18:35"),
        role="the third generator with every seed shifted by 71000 and every run redrawn (`--seed-shift "
             "71000 --vary`), generated at {drawn} UTC from 85e7385 by the recorder with "
             "`logits_sum_to_one`, during round 19, graded once at the end of round 19 (13abcc1), then looked "
             "at in round 20: a development set since",
        note="`third-fresh19` (round 19): the same generator and redraw with every seed shifted by 71000 (`python -m "
             "benchmarks.third --seed-shift 71000 --vary`), trained from the committed tree at 85e7385 (`draw.json` "
             "has the times) into a folder outside the repository, by the recorder that writes "
             "`logits_sum_to_one`, before round 19's first engine commit (4d946ff; the generator does not use the "
             "engine). Nothing of it was diagnosed before its one grading. Its folder was renamed by mistake "
             "while it trained: the runs written before and after stayed whole, but the one in training at that "
             "moment (`unfreeze-sepconv`) was split between the two folders, so it alone was trained again at "
             "18:36 UTC with `--only unfreeze-sepconv` (same seed shift and redraw, each run seeded by its own "
             "shifted seed: the same run), its `draw.json` kept beside the draw's as "
             "`draw_unfreeze-sepconv.json`. Two glimpses, no diagnosis: the last three lines of its generator "
             "log (two runs' own confirmations) were seen once while checking whether the draw had ended, and "
             "the names of the runs in each folder (the catalog's names, the same in every draw) were listed "
             "to mend the split.",
        which="*third-fresh19* (round 19; seeds shifted by 71000) was trained from 85e7385, graded once at "
              "13abcc1 (curve 0.95, recall 1.00, fault's code first 1.00, healthy runs with a warning 1/9) and "
              "looked at in round 20: a development set since.",
    ),
    # Drawn in round 20 from 269d1d4 (a CLI commit: Ctrl-C while the interpreter exits), before any of
    # round 20's engine changes was committed (the generator does not use the engine); nothing of it
    # diagnosed before its one grading.
    Draw(
        "third-fresh20", 73000, ("2026-12-04 21:41", "2026-12-04 21:44"),
        role="the third generator with every seed shifted by 73000 and every run redrawn (`--seed-shift "
             "73000 --vary`), generated at {drawn} UTC from 269d1d4 by the recorder with "
             "`logits_sum_to_one`, during round 20, graded once at the end of round 20 (996ec51): a development "
             "set since",
        note="`third-fresh20` (round 20): the same generator and redraw with every seed shifted by 73000 (`python -m "
             "benchmarks.third --seed-shift 73000 --vary`), trained from the committed tree at 269d1d4 (`draw.json` "
             "has the times) into a folder outside the repository, by the recorder that writes "
             "`logits_sum_to_one`, before round 20's first engine commit (the generator does not use the "
             "engine). Nothing of it was diagnosed before its one grading, and none of its generator log read; "
             "only its `draw.json`'s start and end times were printed.",
        which="*third-fresh20* (round 20; seeds shifted by 73000) was trained from 269d1d4 and graded once at "
              "996ec51 (curve 0.96, recall 1.00, fault's code first 1.00, healthy runs with a warning 0/12): a "
              "development set since (round 21 changed no reading a recorder run reaches).",
    ),
    # Drawn in round 21 from 941bb1f (round 20's last commit; round 21's changes were not committed yet
    # and the generator does not use the engine); nothing of it diagnosed before its one grading.
    Draw(
        "third-fresh21", 79000, ("2026-12-05 00:08", "2026-12-05 00:12"),
        role="the third generator with every seed shifted by 79000 and every run redrawn (`--seed-shift "
             "79000 --vary`), generated at {drawn} UTC from 941bb1f by the recorder with "
             "`logits_sum_to_one`, during round 21, graded once at the end of round 21 (48e9321): a development set "
             "since",
        note="`third-fresh21` (round 21): the same generator and redraw with every seed shifted by 79000 (`python -m "
             "benchmarks.third --seed-shift 79000 --vary`), trained from a clean export of the committed tree at "
             "941bb1f (`draw.json` has the times) into a folder outside the repository, by the recorder that "
             "writes `logits_sum_to_one`, before any of round 21's engine changes was committed (the generator "
             "does not use the engine). Nothing of it was diagnosed before its one grading, and none of its "
             "generator log read; only its `draw.json`'s start and end times and its number of entries were "
             "printed.",
        which="*third-fresh21* (round 21; seeds shifted by 79000) was trained from 941bb1f and graded once at "
              "48e9321 (curve 1.00, recall 1.00, fault's code first 1.00, healthy runs with a warning 0/12): a "
              "development set since.",
    ),
    # Drawn in round 22 from 72d5b50 (round 21's last commit; round 22's changes were not committed yet
    # and the generator does not use the engine); nothing of it diagnosed before its one grading.
    Draw(
        "third-fresh22", 83000, ("2026-12-05 02:22", "2026-12-05 02:27"),
        role="the third generator with every seed shifted by 83000 and every run redrawn (`--seed-shift "
             "83000 --vary`), generated at {drawn} UTC from 72d5b50 by the recorder with "
             "`logits_sum_to_one`, during round 22, graded once at the end of round 22 (50610bb): a development "
             "set since",
        note="`third-fresh22` (round 22): the same generator and redraw with every seed shifted by 83000 (`python -m "
             "benchmarks.third --seed-shift 83000 --vary`), trained from a clean export of the committed tree at "
             "72d5b50 (`draw.json` has the times) into a folder outside the repository, by the recorder that "
             "writes `logits_sum_to_one`, before any of round 22's engine changes was committed (the generator "
             "does not use the engine). Nothing of it was diagnosed before its one grading. By a slip, the first "
             "ten and the last three lines of its generator log were printed while checking that it had ended: "
             "the names, confirmation and measured criteria of about eight runs, no runlens output; the rest of "
             "the log was not read.",
        which="*third-fresh22* (round 22; seeds shifted by 83000) was trained from 72d5b50 and graded once at "
              "50610bb (curve 0.95, recall 1.00, fault's code first 1.00, healthy runs with a warning 0/10): a "
              "development set since.",
    ),
    # Drawn in round 23 from de341e3 (round 22's last commit; round 23's changes were not committed yet
    # and the generator does not use the engine); nothing of it diagnosed before its one grading.
    Draw(
        "third-fresh23", 89000, ("2026-12-05 05:32", "2026-12-05 05:37"),
        role="the third generator with every seed shifted by 89000 and every run redrawn (`--seed-shift "
             "89000 --vary`), generated at {drawn} UTC from de341e3 by the recorder with "
             "`logits_sum_to_one`, during round 23, graded once at the end of round 23 (5766399): a development "
             "set since",
        note="`third-fresh23` (round 23): the same generator and redraw with every seed shifted by 89000 (`python -m "
             "benchmarks.third --seed-shift 89000 --vary`), trained from a clean export of the committed tree at "
             "de341e3 (`draw.json` has the times) into a folder outside the repository, by the recorder that "
             "writes `logits_sum_to_one`, at the start of round 23, before any of its engine changes was committed "
             "(the generator does not use the engine). Nothing of it was diagnosed before its one grading, and none "
             "of its generator log read; only its `draw.json`'s start and end times and its number of entries were "
             "printed.",
        which="*third-fresh23* (round 23; seeds shifted by 89000) was trained from de341e3 and graded once at "
              "5766399 (curve 1.00, recall 1.00, fault's code first 1.00, healthy runs with a warning 0/9): a "
              "development set since.",
    ),
    # Drawn in round 24 from 2c40d57 (round 23's last commit; round 24's changes were not committed yet
    # and the generator does not use the engine); nothing of it diagnosed before its one grading.
    Draw(
        "third-fresh24", 97000, ("2026-12-05 08:36", "2026-12-05 08:42"),
        role="the third generator with every seed shifted by 97000 and every run redrawn (`--seed-shift "
             "97000 --vary`), generated at {drawn} UTC from 2c40d57 by the recorder with "
             "`logits_sum_to_one`, during round 24, graded once at the end of round 24 (d96a976): a development "
             "set since",
        note="`third-fresh24` (round 24): the same generator and redraw with every seed shifted by 97000 (`python -m "
             "benchmarks.third --seed-shift 97000 --vary`), trained from a clean export of the committed tree at "
             "2c40d57 (`draw.json` has the times) into a folder outside the repository, by the recorder that "
             "writes `logits_sum_to_one`, at the start of round 24, before any of its engine changes was committed "
             "(the generator does not use the engine). Nothing of it was diagnosed before its one grading. By a "
             "slip, the last three lines of its generator log (two runs' names, confirmation and measured "
             "criteria) and three of its folder names were printed while checking that it had ended; no runlens "
             "output, and the rest of the log was not read.",
        which="*third-fresh24* (round 24; seeds shifted by 97000) was trained from 2c40d57 and graded once at "
              "d96a976 (curve 0.95, recall 1.00, fault's code first 1.00, healthy runs with a warning 0/8): a "
              "development set since.",
    ),
    # Drawn in round 25 from 0a8d5c6 (round 24's last commit; round 25's changes were not committed yet
    # and the generator does not use the engine); nothing of it diagnosed before its one grading.
    Draw(
        "third-fresh25", 101000, ("2026-12-05 09:54", "2026-12-05 10:01"),
        role="the third generator with every seed shifted by 101000 and every run redrawn (`--seed-shift "
             "101000 --vary`), generated at {drawn} UTC from 0a8d5c6 by the recorder with "
             "`logits_sum_to_one`, during round 25, graded once at the end of round 25 (61e359d): a development "
             "set since",
        note="`third-fresh25` (round 25): the same generator and redraw with every seed shifted by 101000 (`python -m "
             "benchmarks.third --seed-shift 101000 --vary`), trained from a clean export of the committed tree at "
             "0a8d5c6 (`draw.json` has the times) into a folder outside the repository, by the recorder that "
             "writes `logits_sum_to_one`, at the start of round 25, before any of its engine changes was committed "
             "(the generator does not use the engine). Nothing of it was diagnosed before its one grading, and none "
             "of its generator log read; only its `draw.json`'s start and end times and its number of entries were "
             "printed.",
        which="*third-fresh25* (round 25; seeds shifted by 101000) was trained from 0a8d5c6 and graded once at "
              "61e359d (curve 1.00, recall 0.95 with `inputs_not_normalized` 1/2, fault's code first 0.96, healthy "
              "runs with a warning 0/11): a development set since (its miss was read in round 26). The runs graded "
              "here were retrained in round 27 from 9ae5df3 (the data folder, kept out of the repository, was lost "
              "between sessions; generator and recorder unchanged since); their `draw.json` says when.",
    ),
    # Drawn in round 26 from 10abc5e (round 25's last commit), before any round-26 change was committed;
    # nothing of it diagnosed before its one grading.
    Draw(
        "third-fresh26", 105000, ("2026-12-05 11:44", "2026-12-05 11:48"),
        role="the third generator with every seed shifted by 105000 and every run redrawn (`--seed-shift "
             "105000 --vary`), generated at {drawn} UTC from 10abc5e by the recorder with "
             "`logits_sum_to_one`, during round 26, graded once at the end of round 26 (00e011d): a development "
             "set since",
        note="`third-fresh26` (round 26): the same generator and redraw with every seed shifted by 105000 (`python -m "
             "benchmarks.third --seed-shift 105000 --vary`), trained from a clean export of the committed tree at "
             "10abc5e (`draw.json` has the times) into a folder outside the repository, by the recorder that "
             "writes `logits_sum_to_one`, at the start of round 26, before any of its engine changes was committed "
             "(the generator does not use the engine). Nothing of it was diagnosed before its one grading. By a "
             "slip, the last three lines of its generator log (two runs' names, confirmation and measured "
             "criteria, both healthy runs) were printed while checking that it had ended; no runlens output, and "
             "the rest of the log was not read.",
        which="*third-fresh26* (round 26; seeds shifted by 105000) was trained from 10abc5e and graded once at "
              "00e011d (curve 1.00, recall 1.00 pooled and per code, fault's code first 1.00, healthy runs with a "
              "warning 0/11): a development set since. The runs graded here were retrained in round 27 from 9ae5df3 "
              "(the data folder was lost between sessions; generator and recorder unchanged since), and graded at "
              "the round-26 engine they give the same figures.",
    ),
    # Drawn in round 27 from 9ae5df3 (round 26's last commit), before any round-27 change was made;
    # nothing of it diagnosed before its one grading.
    Draw(
        "third-fresh27", 109000, ("2026-12-05 21:14", "2026-12-05 21:18"),
        role="the third generator with every seed shifted by 109000 and every run redrawn (`--seed-shift "
             "109000 --vary`), generated at {drawn} UTC from 9ae5df3 by the recorder with "
             "`logits_sum_to_one`, during round 27, graded once at the end of round 27 (d9996a1): a development "
             "set since",
        note="`third-fresh27` (round 27): the same generator and redraw with every seed shifted by 109000 (`python -m "
             "benchmarks.third --seed-shift 109000 --vary`), trained from a clean export of the committed tree at "
             "9ae5df3 (`draw.json` has the times) into a folder outside the repository, at the start of round 27, "
             "before any of its engine changes was made (the generator does not use the engine). Nothing of it "
             "was diagnosed before its one grading, and its generator log was not read. By a slip, the run plan "
             "in its `draw.json` (each run's name, model, bug, optimizer, learning rate, batch, length and "
             "schedule, drawn from the seeds before training) was printed while checking that it had ended; no "
             "confirmation, measurement or runlens output was.",
        which="*third-fresh27* (round 27; seeds shifted by 109000) was trained from 9ae5df3 and graded once at "
              "d9996a1 (curve 0.95, recall 1.00 pooled and per code, fault's code first 1.00, healthy runs with a "
              "warning 0/9): a development set since.",
    ),
    # Drawn in round 28 from 19401c2 (round 28's last engine commit; the generator and the recorder
    # unchanged since round 25); nothing of it diagnosed before its one grading.
    Draw(
        "third-fresh28", 113000, ("2026-12-06 01:15", "2026-12-06 01:19"),
        role="the third generator with every seed shifted by 113000 and every run redrawn (`--seed-shift "
             "113000 --vary`), generated at {drawn} UTC from 19401c2 by the recorder with "
             "`logits_sum_to_one`, during round 28, graded once at the end of round 28 (8c4c59f): a development "
             "set since",
        note="`third-fresh28` (round 28): the same generator and redraw with every seed shifted by 113000 (`python -m "
             "benchmarks.third --seed-shift 113000 --vary`), trained from a clean export of the committed tree at "
             "19401c2 (`draw.json` has the times) into a folder outside the repository, after round 28's engine "
             "changes (none of them looked at a recorder run; the generator and the recorder do not use the "
             "engine). Nothing of it was diagnosed before its one grading; its generator log was not read, and "
             "of its `draw.json` only the start and end times were.",
        which="*third-fresh28* (round 28; seeds shifted by 113000) was trained from 19401c2 and graded once at "
              "8c4c59f (curve 0.93, recall 0.95 pooled with `overfitting` 0/1, fault's code first 0.96, healthy runs "
              "with a warning 0/7): a development set since (its miss, a validation rise that levelled off, was "
              "read in round 29).",
    ),
    # Drawn in round 29 from 3f55c03 (round 28's last commit), before any round-29 change was committed;
    # nothing of it diagnosed before its one grading.
    Draw(
        "third-fresh29", 117000, ("2026-12-06 03:05", "2026-12-06 03:08"),
        role="the third generator with every seed shifted by 117000 and every run redrawn (`--seed-shift "
             "117000 --vary`), generated at {drawn} UTC from 3f55c03 by the recorder with "
             "`logits_sum_to_one`, during round 29, graded once at the end of round 29 (6c91c63): a development "
             "set since",
        note="`third-fresh29` (round 29): the same generator and redraw with every seed shifted by 117000 (`python -m "
             "benchmarks.third --seed-shift 117000 --vary`), trained from a clean export of the committed tree at "
             "3f55c03 (`draw.json` has the times) into a folder outside the repository, at the start of round 29, "
             "before any of its engine changes was committed (the generator and the recorder do not use the "
             "engine). Nothing of it was diagnosed before its one grading; its generator log was not read, and of "
             "its `draw.json` only the start and end times (and its top-level key names) were.",
        which="*third-fresh29* (round 29; seeds shifted by 117000) was trained from 3f55c03 and graded once at "
              "6c91c63 (curve 0.95, recall 1.00 pooled and per code, fault's code first 1.00, healthy runs with a "
              "warning 0/9): a development set since.",
    ),
    # Drawn in round 30 from 8e35114 (round 29's last commit), before any round-30 change was committed;
    # nothing of it diagnosed before its one grading.
    Draw(
        "third-fresh30", 121000, ("2026-12-06 05:47", "2026-12-06 05:51"),
        role="the third generator with every seed shifted by 121000 and every run redrawn (`--seed-shift "
             "121000 --vary`), generated at {drawn} UTC from 8e35114 by the recorder with "
             "`logits_sum_to_one`, during round 30, graded once at the end of round 30 (3bb318a): a development "
             "set since",
        note="`third-fresh30` (round 30): the same generator and redraw with every seed shifted by 121000 (`python -m "
             "benchmarks.third --seed-shift 121000 --vary`), trained from a clean export of the committed tree at "
             "8e35114 (`draw.json` has the times) into a folder outside the repository, at the start of round 30, "
             "before any of its engine changes was committed (the generator and the recorder do not use the "
             "engine). Nothing of it was diagnosed before its one grading. By a slip, the last three lines of its "
             "generator log (two runs' confirmations against their fixed twins, and where one run was written) and "
             "the first of its run folders' names were printed while checking that it had ended; no runlens output "
             "was.",
        which="*third-fresh30* (round 30; seeds shifted by 121000) was trained from 8e35114 and graded once at "
              "3bb318a (curve 0.90, recall 0.95 pooled, overfitting 0/1, fault's code first 0.96, healthy runs "
              "with a warning 0/12): a development set since.",
    ),
    # Drawn in round 31 from 590d69c (round 30's last commit), before any round-31 change was committed;
    # nothing of it diagnosed before its one grading.
    Draw(
        "third-fresh31", 125000, ("2026-12-06 08:20", "2026-12-06 08:25"),
        role="the third generator with every seed shifted by 125000 and every run redrawn (`--seed-shift "
             "125000 --vary`), generated at {drawn} UTC from 590d69c by the recorder with "
             "`logits_sum_to_one`, during round 31, graded once at the end of round 31 (ea36466): a development "
             "set since",
        note="`third-fresh31` (round 31): the same generator and redraw with every seed shifted by 125000 (`python -m "
             "benchmarks.third --seed-shift 125000 --vary`), trained from a clean export of the committed tree at "
             "590d69c (`draw.json` has the times) into a folder outside the repository, at the start of round 31, "
             "before any of its engine changes was committed (the generator and the recorder do not use the "
             "engine). Nothing of it was diagnosed before its one grading. By a slip, the last lines of its "
             "generator log (three runs' confirmations against their healthy or fixed twins, with their measured "
             "numbers, and where one run was written) were printed twice while checking its progress; no runlens "
             "output was.",
        which="*third-fresh31* (round 31; seeds shifted by 125000) was trained from 590d69c and graded once at "
              "ea36466 (curve 1.00, recall 1.00 pooled and per code, fault's code first 1.00, healthy runs with a "
              "warning 0/9): a development set since.",
    ),
    # Drawn in round 32 from e5f0e17 (round 31's last commit), before any round-32 change was committed;
    # nothing of it diagnosed before its one grading.
    Draw(
        "third-fresh32", 129000, ("2026-12-06 11:14", "2026-12-06 11:18"),
        role="the third generator with every seed shifted by 129000 and every run redrawn (`--seed-shift "
             "129000 --vary`), generated at {drawn} UTC from e5f0e17 by the recorder with "
             "`logits_sum_to_one`, during round 32, graded once at the end of round 32 (c885d2a): a development "
             "set since",
        note="`third-fresh32` (round 32): the same generator and redraw with every seed shifted by 129000 (`python -m "
             "benchmarks.third --seed-shift 129000 --vary`), trained from a clean export of the committed tree at "
             "e5f0e17 (`draw.json` has the times) into a folder outside the repository, at the start of round 32, "
             "before any of its engine changes was committed (the generator and the recorder do not use the "
             "engine). Nothing of it was diagnosed before its one grading. By a slip, the end of the last line of "
             "its generator log (where one run was written, its name, length and size) was printed while checking "
             "that it had ended; no runlens output was.",
        which="*third-fresh32* (round 32; seeds shifted by 129000) was trained from e5f0e17 and graded once at "
              "c885d2a (curve 0.95, recall 1.00 pooled and per code, fault's code first 0.96, healthy runs with a "
              "warning 0/11): a development set since.",
    ),
    # Drawn in round 33 from c5b9ea4 (round 32's last commit), before any round-33 change was committed;
    # nothing of it diagnosed before its one grading.
    Draw(
        "third-fresh33", 133000, ("2026-12-06 13:32", "2026-12-06 13:35"),
        role="the third generator with every seed shifted by 133000 and every run redrawn (`--seed-shift "
             "133000 --vary`), generated at {drawn} UTC from c5b9ea4 by the recorder with "
             "`logits_sum_to_one`, during round 33, graded once at the end of round 33 (3a28bcd): a development "
             "set since",
        note="`third-fresh33` (round 33): the same generator and redraw with every seed shifted by 133000 (`python -m "
             "benchmarks.third --seed-shift 133000 --vary`), trained from a clean export of the committed tree at "
             "c5b9ea4 (`draw.json` has the times) into a folder outside the repository, at the start of round 33, "
             "before any of its engine changes was committed (the generator and the recorder do not use the "
             "engine). Nothing of it was diagnosed before its one grading, and nothing of its generator log or "
             "its runs was printed: only that the log holds no traceback and how many entries the folder holds.",
        which="*third-fresh33* (round 33; seeds shifted by 133000) was trained from c5b9ea4 and graded once at "
              "3a28bcd (curve 0.90, recall 1.00 pooled and per code, fault's code first 0.95, healthy runs with a "
              "warning 0/11): a development set since.",
    ),
    # Drawn in round 34 from 596cd4a (round 33's last commit), before any round-34 change was committed;
    # nothing of it diagnosed before its one grading.
    Draw(
        "third-fresh34", 137000, ("2026-12-06 16:03", "2026-12-06 16:07"),
        role="the third generator with every seed shifted by 137000 and every run redrawn (`--seed-shift "
             "137000 --vary`), generated at {drawn} UTC from 596cd4a by the recorder with "
             "`logits_sum_to_one`, during round 34, graded once at the end of round 34 (6939047): a development "
             "set since",
        note="`third-fresh34` (round 34): the same generator and redraw with every seed shifted by 137000 (`python -m "
             "benchmarks.third --seed-shift 137000 --vary`), trained from a clean export of the committed tree at "
             "596cd4a (`draw.json` has the times) into a folder outside the repository, at the start of round 34, "
             "before any of its engine changes was committed (the generator and the recorder do not use the "
             "engine). Nothing of it was diagnosed before its one grading, and nothing of its generator log or "
             "its runs was printed: only that the log holds no traceback, how many entries the folder holds and "
             "its draw record's times.",
        which="*third-fresh34* (round 34; seeds shifted by 137000) was trained from 596cd4a and graded once at "
              "6939047 (curve 0.96, recall 1.00 pooled and per code, fault's code first 1.00, healthy runs with a "
              "warning 0/11): a development set since.",
    ),
    # Drawn in round 35 from de5d474 (round 34's last commit), before any round-35 change was committed;
    # nothing of it diagnosed before its one grading.
    Draw(
        "third-fresh35", 141000, ("2026-12-06 18:37", "2026-12-06 18:41"),
        role="the third generator with every seed shifted by 141000 and every run redrawn (`--seed-shift "
             "141000 --vary`), generated at {drawn} UTC from de5d474 by the recorder with "
             "`logits_sum_to_one`, during round 35, graded once at the end of round 35 (857ec1c): a development "
             "set since",
        note="`third-fresh35` (round 35): the same generator and redraw with every seed shifted by 141000 (`python -m "
             "benchmarks.third --seed-shift 141000 --vary`), trained from a clean export of the committed tree at "
             "de5d474 (`draw.json` has the times) into a folder outside the repository, at the start of round 35, "
             "before any of its engine changes was committed (the generator and the recorder do not use the "
             "engine). Nothing of it was diagnosed before its one grading. By a slip, the last lines of its "
             "generator log were printed a few times while checking its progress (the names of six runs, the "
             "generator's own check of whether each run's fault showed, and its measurements); no runlens output "
             "was.",
        which="*third-fresh35* (round 35; seeds shifted by 141000) was trained from de5d474 and graded once at "
              "857ec1c (curve 1.00, recall 1.00 pooled and per code, fault's code first 1.00, healthy runs with a "
              "warning 0/11): a development set since.",
    ),
    # Drawn in round 36 from 647479f (round 35's last commit), before any round-36 change was committed;
    # nothing of it diagnosed before its one grading.
    Draw(
        "third-fresh36", 145000, ("2026-12-06 21:34", "2026-12-06 21:40"),
        role="the third generator with every seed shifted by 145000 and every run redrawn (`--seed-shift "
             "145000 --vary`), generated at {drawn} UTC from 647479f by the recorder with "
             "`logits_sum_to_one`, during round 36, graded once at the end of round 36 (81e7e38): a development "
             "set since",
        note="`third-fresh36` (round 36): the same generator and redraw with every seed shifted by 145000 (`python -m "
             "benchmarks.third --seed-shift 145000 --vary`), trained from a clean export of the committed tree at "
             "647479f (`draw.json` has the times) into a folder outside the repository, at the start of round 36, "
             "before any of its engine changes was committed (the generator and the recorder do not use the "
             "engine). Nothing of it was diagnosed before its one grading, and nothing of its generator log or "
             "its runs was printed: only that the log holds no traceback, how many entries the folder holds and "
             "its draw record's times.",
        which="*third-fresh36* (round 36; seeds shifted by 145000) was trained from 647479f and graded once at "
              "81e7e38 (curve 1.00, recall 1.00 pooled and per code, fault's code first 1.00, healthy runs with a "
              "warning 0/10): a development set since.",
    ),
    # Drawn in round 37 from bfae94c (round 36's last commit), before any round-37 change was committed;
    # nothing of it diagnosed before its one grading.
    Draw(
        "third-fresh37", 149000, ("2026-12-07 00:45", "2026-12-07 00:49"),
        role="the third generator with every seed shifted by 149000 and every run redrawn (`--seed-shift "
             "149000 --vary`), generated at {drawn} UTC from bfae94c by the recorder with "
             "`logits_sum_to_one`, during round 37, graded once at the end of round 37 (e42d150): a development "
             "set since",
        note="`third-fresh37` (round 37): the same generator and redraw with every seed shifted by 149000 (`python -m "
             "benchmarks.third --seed-shift 149000 --vary`), trained from a clean export of the committed tree at "
             "bfae94c (`draw.json` has the times) into a folder outside the repository, at the start of round 37, "
             "before any of its engine changes was committed (the generator and the recorder do not use the "
             "engine). Nothing of it was diagnosed before its one grading. By a slip, the last two lines of its "
             "generator log were printed once while checking its progress (one run's name and the generator's own "
             "check that its fault showed, with its measurements); no runlens output was.",
        which="*third-fresh37* (round 37; seeds shifted by 149000) was trained from bfae94c and graded once at "
              "e42d150 (curve 0.95, recall 1.00 pooled and per code, fault's code first 1.00, healthy runs with a "
              "warning 1/10): a development set since (its false alarm, a healthy run read as unstable, was read "
              "in round 38).",
    ),
    # Drawn in round 38 from 073bb32 (round 37's last commit), before any round-38 change was committed;
    # nothing of it diagnosed before its one grading.
    Draw(
        "third-fresh38", 153000, ("2026-12-07 03:13", "2026-12-07 03:18"),
        role="the third generator with every seed shifted by 153000 and every run redrawn (`--seed-shift "
             "153000 --vary`), generated at {drawn} UTC from 073bb32 by the recorder with "
             "`logits_sum_to_one`, during round 38, graded once at the end of round 38 (1493bd5): a development "
             "set since",
        note="`third-fresh38` (round 38): the same generator and redraw with every seed shifted by 153000 (`python -m "
             "benchmarks.third --seed-shift 153000 --vary`), trained from a clean export of the committed tree at "
             "073bb32 (`draw.json` has the times) into a folder outside the repository, at the start of round 38, "
             "before any of its engine changes was committed (the generator and the recorder do not use the "
             "engine). Nothing of it was diagnosed before its one grading. By two slips, five lines of its "
             "generator log were printed while checking its progress (the names of two runs, the generator's own "
             "check of whether each run's fault showed, and the start of its measurements); no runlens output "
             "was.",
        which="*third-fresh38* (round 38; seeds shifted by 153000) was trained from 073bb32 and graded once at "
              "1493bd5 (curve 1.00, recall 1.00 pooled and per code, fault's code first 1.00, healthy runs with a "
              "warning 0/9): a development set since.",
    ),
    # Drawn in round 39 from b0faf5e (round 38's last commit), before any round-39 change was committed;
    # nothing of it diagnosed before its one grading.
    Draw(
        "third-fresh39", 157000, ("2026-12-07 05:50", "2026-12-07 05:54"),
        role="the third generator with every seed shifted by 157000 and every run redrawn (`--seed-shift "
             "157000 --vary`), generated at {drawn} UTC from b0faf5e by the recorder with "
             "`logits_sum_to_one`, during round 39, graded once at the end of round 39 (47f36e4): a development "
             "set since",
        note="`third-fresh39` (round 39): the same generator and redraw with every seed shifted by 157000 (`python -m "
             "benchmarks.third --seed-shift 157000 --vary`), trained from a clean export of the committed tree at "
             "b0faf5e (`draw.json` has the times) into a folder outside the repository, at the start of round 39, "
             "before any of its engine changes was committed (the generator and the recorder do not use the "
             "engine). Nothing of it was diagnosed before its one grading, and nothing of its generator log or "
             "its runs was printed: only how many entries the folder holds, whether the log holds a traceback "
             "and its draw record's times.",
        which="*third-fresh39* (round 39; seeds shifted by 157000) was trained from b0faf5e and graded once at "
              "47f36e4 (curve 1.00, recall 1.00 pooled and per code, fault's code first 1.00, healthy runs with a "
              "warning 0/14): a development set since.",
    ),
    # Drawn in round 40 from 3387426 (round 39's last commit), before any round-40 change was committed;
    # nothing of it diagnosed before its one grading.
    Draw(
        "third-fresh40", 161000, ("2026-12-07 08:40", "2026-12-07 08:43"),
        role="the third generator with every seed shifted by 161000 and every run redrawn (`--seed-shift "
             "161000 --vary`), generated at {drawn} UTC from 3387426 by the recorder with "
             "`logits_sum_to_one`, during round 40, graded once at the end of round 40 (ad74a84): a development "
             "set since",
        note="`third-fresh40` (round 40): the same generator and redraw with every seed shifted by 161000 (`python -m "
             "benchmarks.third --seed-shift 161000 --vary`), trained from a clean export of the committed tree at "
             "3387426 (`draw.json` has the times) into a folder outside the repository, at the start of round 40, "
             "before any of its engine changes was committed (the generator and the recorder do not use the "
             "engine). Nothing of it was diagnosed before its one grading, and nothing of its generator log was "
             "printed. By a slip, its draw record was printed whole while reading its times: each run's drawn "
             "settings (name, task, bug injected, optimizer, rate, steps), the design the generator draws, not "
             "its measurements of whether each fault showed; no runlens output was.",
        which="*third-fresh40* (round 40; seeds shifted by 161000) was trained from 3387426 and graded once at "
              "ad74a84, the end of round 40 (curve 0.95, recall 1.00 pooled and per code, first 1.00, healthy runs "
              "warned 1/9): a development set since.",
    ),
    # Round 41's set to quote: drawn at the start of round 41 from a clean export of c6832a9, before any
    # engine change of the round; nothing of it diagnosed before its one grading.
    Draw(
        "third-fresh41", 165000, ("2026-12-07 11:04", "2026-12-07 11:07"),
        role="the third generator with every seed shifted by 165000 and every run redrawn (`--seed-shift "
             "165000 --vary`), generated at {drawn} UTC from c6832a9 by the recorder with "
             "`logits_sum_to_one`, during round 41, graded once at the end of round 41 (083d5c1): a development "
             "set since",
        note="`third-fresh41` (round 41): the same generator and redraw with every seed shifted by 165000 (`python -m "
             "benchmarks.third --seed-shift 165000 --vary`), trained from a clean export of the committed tree at "
             "c6832a9 (`draw.json` has the times) into a folder outside the repository, at the start of round 41, "
             "before any of its engine changes was committed (the generator and the recorder do not use the "
             "engine). Nothing of it was diagnosed before its one grading, and neither its generator log nor its "
             "draw record's runs were printed (only the record's start and end times were read).",
        which="*third-fresh41* (round 41; seeds shifted by 165000) was trained from c6832a9 and graded once at "
              "083d5c1, the end of round 41 (curve 1.00, recall 1.00 pooled and per code, first 1.00, healthy runs "
              "warned 0/12): a development set since.",
    ),
    # Round 42's set to quote: drawn at the start of round 42 from a clean export of ec703e1, before any
    # engine change of the round; nothing of it diagnosed before its one grading.
    Draw(
        "third-fresh42", 169000, ("2026-12-07 13:20", "2026-12-07 13:26"),
        role="the third generator with every seed shifted by 169000 and every run redrawn (`--seed-shift "
             "169000 --vary`), generated at {drawn} UTC from ec703e1 by the recorder with "
             "`logits_sum_to_one`, during round 42, graded once at the end of round 42 (8204cc2): a development "
             "set since",
        note="`third-fresh42` (round 42): the same generator and redraw with every seed shifted by 169000 (`python -m "
             "benchmarks.third --seed-shift 169000 --vary`), trained from a clean export of the committed tree at "
             "ec703e1 (`draw.json` has the times) into a folder outside the repository, at the start of round 42, "
             "before any of its engine changes was committed (the generator and the recorder do not use the "
             "engine). Nothing of it was diagnosed before its one grading, and neither its generator log nor its "
             "draw record's runs were printed; by a slip, the record's list of the setups it trained was printed "
             "while reading its times (names only: the catalogue every draw trains, the same as third-fresh41's).",
        which="*third-fresh42* (round 42; seeds shifted by 169000) was trained from ec703e1 and graded once at "
              "8204cc2, the end of round 42 (curve 1.00, recall 1.00 pooled and per code, first 1.00, healthy runs "
              "warned 0/8): a development set since.",
    ),
    # Round 43's set to quote: drawn at the start of round 43 from a clean export of 2871d6d, before any
    # engine change of the round; nothing of it diagnosed before its one grading.
    Draw(
        "third-fresh43", 173000, ("2026-12-07 15:54", "2026-12-07 15:58"),
        role="the third generator with every seed shifted by 173000 and every run redrawn (`--seed-shift "
             "173000 --vary`), generated at {drawn} UTC from 2871d6d by the recorder with "
             "`logits_sum_to_one`, during round 43, graded once at the end of round 43 (dc2eb35): a development "
             "set since",
        note="`third-fresh43` (round 43): the same generator and redraw with every seed shifted by 173000 (`python -m "
             "benchmarks.third --seed-shift 173000 --vary`), trained from a clean export of the committed tree at "
             "2871d6d (`draw.json` has the times) into a folder outside the repository, at the start of round 43, "
             "before any of its engine changes was committed (the generator and the recorder do not use the "
             "engine). Nothing of it was diagnosed before its one grading, and neither its generator log nor its "
             "draw record's runs were printed (only the record's start and end times were read).",
        which="*third-fresh43* (round 43; seeds shifted by 173000) was trained from 2871d6d and graded once at "
              "dc2eb35, the end of round 43 (curve 1.00, recall 1.00 pooled and per code, first 1.00, healthy runs "
              "warned 0/9): a development set since.",
    ),
    # Round 44's set to quote: drawn at the start of round 44 from a clean export of 7c3175d, before any
    # engine change of the round; nothing of it diagnosed before its one grading.
    Draw(
        "third-fresh44", 177000, ("2026-12-07 18:48", "2026-12-07 18:57"),
        role="the third generator with every seed shifted by 177000 and every run redrawn (`--seed-shift "
             "177000 --vary`), generated at {drawn} UTC from 7c3175d by the recorder with "
             "`logits_sum_to_one`, during round 44, graded once at the end of round 44 (94a0237): a development "
             "set since",
        note="`third-fresh44` (round 44): the same generator and redraw with every seed shifted by 177000 (`python -m "
             "benchmarks.third --seed-shift 177000 --vary`), trained from a clean export of the committed tree at "
             "7c3175d (`draw.json` has the times) into a folder outside the repository, at the start of round 44, "
             "before any of its engine changes was committed (the generator and the recorder do not use the "
             "engine). Nothing of it was diagnosed before its one grading, and neither its generator log nor its "
             "draw record's runs were printed (only the record's start and end times were read).",
        which="*third-fresh44* (round 44; seeds shifted by 177000) was trained from 7c3175d and graded once at "
              "94a0237, the end of round 44 (curve 1.00, recall 1.00 pooled and per code, first 1.00, healthy runs "
              "warned 0/12): a development set since.",
    ),
    # Round 45's set to quote: drawn at the start of round 45 from a clean export of 2910729, before any
    # engine change of the round; nothing of it diagnosed before its one grading.
    Draw(
        "third-fresh45", 181000, ("2026-12-07 21:54", "2026-12-07 22:03"),
        role="the third generator with every seed shifted by 181000 and every run redrawn (`--seed-shift "
             "181000 --vary`), generated at {drawn} UTC from 2910729 by the recorder with "
             "`logits_sum_to_one`, during round 45, graded once at the end of round 45; the set to quote",
        note="`third-fresh45` (round 45): the same generator and redraw with every seed shifted by 181000 (`python -m "
             "benchmarks.third --seed-shift 181000 --vary`), trained from a clean export of the committed tree at "
             "2910729 (`draw.json` has the times) into a folder outside the repository, at the start of round 45, "
             "before any of its engine changes was committed (the generator and the recorder do not use the "
             "engine). Nothing of it was diagnosed before its one grading, and neither its generator log nor its "
             "draw record's runs were printed (only the record's start and end times were read).",
        which="*third-fresh45* (round 45; seeds shifted by 181000) was trained from 2910729, with nothing of it "
              "diagnosed before its one grading, at the commit above: **quote third-fresh45**.",
    ),
)

QUOTE = "third-fresh45"


def draw(name: str) -> Draw:
    """The entry of set ``name`` (a ``KeyError`` for a set that is no fresh draw)."""
    for d in DRAWS:
        if d.name == name:
            return d
    raise KeyError(name)


def names() -> tuple[str, ...]:
    return tuple(d.name for d in DRAWS)
