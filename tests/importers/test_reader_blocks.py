"""Logs printed as repeated blocks of ``key value`` lines, and long frames keyed by two text columns.

- Stable-Baselines3's boxes (``| train/ | |`` sections, ``|    loss | 0.803 |``), RLlib's
  ``Result for ...:`` blocks of indented ``key: value`` lines, a loop's ``epoch: 3`` / ``loss: 0.41``
  blocks: one row a block, the section's name before the key, the counter from the block.
- R's ``as.data.frame(history)`` (``epoch value metric data``), its row names written as a column
  by ``write.csv``.

Each firing case has a silent twin: a box of settings, a config of ``key: value`` lines, YAML sections
of different keys stay refused (one line, exit 2).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from runlens.cli import main


def _analyze(path: Path) -> tuple[int, dict | str]:
    result = CliRunner().invoke(main, ["analyze", str(path), "--format", "json"])
    if result.exit_code not in (0, 1):  # 1: a failing verdict; the report is still written
        return result.exit_code, result.output
    doc = json.loads(result.output)
    return 0, doc if "curve" in doc else doc["runs"][0]


def _refused(path: Path) -> None:
    code, out = _analyze(path)
    assert code == 2 and isinstance(out, str)
    assert "no importer recognises it" in out and len(out.strip().splitlines()) == 1 and "Traceback" not in out


def _box(sections: list[tuple[str, list[tuple[str, str]]]]) -> str:
    """One SB3 dump: a dash rule, a ``| section/ | |`` row, ``|    key | value |`` rows under it."""
    rows: list[tuple[str, str]] = []
    for name, pairs in sections:
        rows.append((name + "/", ""))
        rows += [("   " + k, v) for k, v in pairs]
    kw, vw = max(len(k) for k, _ in rows), max(8, *(len(v) for _, v in rows))
    rule = "-" * (kw + vw + 7)
    return "\n".join([rule, *(f"| {k:<{kw}} | {v:<{vw}} |" for k, v in rows), rule])


def _sb3(n: int, loss) -> str:
    out = ["Using cpu device", "Wrapping the env in a DummyVecEnv."]
    for it in range(1, n + 1):
        sections = [("rollout", [("ep_len_mean", f"{20 + 5 * it:.3g}"), ("ep_rew_mean", f"{20 + 5 * it:.3g}")]),
                    ("time", [("fps", "1210"), ("iterations", str(it)), ("time_elapsed", str(2 * it)),
                              ("total_timesteps", str(2048 * it))])]
        if it > 1:  # the first dump comes before any update: no train/ section
            sections.append(("train", [("entropy_loss", "-0.69"), ("learning_rate", "0.0003"),
                                       ("loss", loss(it)), ("n_updates", str(10 * (it - 1))),
                                       ("value_loss", f"{1.9 * loss_val(it):.3g}")]))
        out.append(_box(sections))
    return "\n".join(out) + "\n"


def loss_val(it: int) -> float:
    return 2.0 * math.exp(-it / 6) + 0.1


def test_sb3_boxes_are_one_row_a_dump_named_by_section_and_counted_by_timesteps(tmp_path):
    path = tmp_path / "ppo.txt"
    path.write_text(_sb3(25, lambda it: f"{loss_val(it):.3g}"))
    code, doc = _analyze(path)
    assert code == 0 and isinstance(doc, dict)
    assert doc["roles"]["loss"]["columns"] == ["train/loss"]
    assert doc["roles"]["index"]["columns"] == ["time/total_timesteps"]
    assert doc["key_numbers"]["last_step"] == 2048 * 25 and doc["key_numbers"]["first_step"] == 4096


def test_a_dqn_loss_that_goes_nan_in_its_boxes_reads_as_non_finite(tmp_path):
    path = tmp_path / "dqn.txt"
    path.write_text(_sb3(25, lambda it: "nan" if it >= 20 else f"{loss_val(it):.3g}"))
    code, doc = _analyze(path)
    assert code == 0 and isinstance(doc, dict)
    assert "nonfinite_loss" in {f["code"] for f in doc["findings"]}
    assert doc["key_numbers"]["first_nonfinite_step"] == 2048 * 20


def test_a_box_of_settings_is_still_not_a_log(tmp_path):
    path = tmp_path / "settings.txt"
    path.write_text(_box([("config", [("learning_rate", "0.0003"), ("n_steps", "2048"),
                                      ("batch_size", "64"), ("vf_loss_coef", "0.5")])]) + "\n")
    _refused(path)


def test_the_same_box_printed_twice_unchanged_is_still_not_a_log(tmp_path):
    box = _box([("config", [("learning_rate", "0.0003"), ("n_steps", "2048"), ("vf_loss_coef", "0.5")])])
    path = tmp_path / "settings.txt"
    path.write_text(box + "\n" + box + "\n")
    _refused(path)


def _rllib(n: int, trial: str = "00000", scale: float = 100.0) -> str:
    out = ["== Status ==", "Current time: 2023-05-01 12:00:00", ""]
    for it in range(1, n + 1):
        total = loss_val(it) * scale
        out += [f"Result for PPO_CartPole-v1_7b8a0_{trial}:", f"  date: 2023-05-01_12-00-{it:02d}", "  done: false",
                f"  episode_reward_mean: {20 + it:.2f}", "  info:", "    learner:", "      default_policy:",
                "        learner_stats:", "          cur_lr: 5.0e-05", "          policy_loss: -0.03",
                f"          total_loss: {total:.3f}", f"          vf_loss: {total + 0.03:.3f}",
                f"    num_steps_sampled: {4000 * it}", f"  timesteps_total: {4000 * it}",
                f"  training_iteration: {it}", ""]
    return "\n".join(out)


def test_rllib_result_blocks_take_the_total_loss_of_their_nested_stats(tmp_path):
    path = tmp_path / "tune.txt"
    path.write_text(_rllib(25))
    code, doc = _analyze(path)
    assert code == 0 and isinstance(doc, dict)
    assert doc["roles"]["loss"]["columns"] == ["info/learner/default_policy/learner_stats/total_loss"]
    assert doc["roles"]["index"]["columns"] == ["training_iteration"]
    assert doc["key_numbers"]["steps"] == 25


@pytest.mark.parametrize(("block", "loss", "val_loss"), [
    ("epoch: {e}\nloss: {t:.4f}\nval_loss: {v:.4f}\n", "loss", "val_loss"),  # a loop's colon blocks
    ("Epoch {e}/25\ntrain loss: {t:.4f}\nval loss: {v:.4f}\n", "train loss", "val loss"),  # an epoch line over each
])
def test_blocks_of_a_loop_are_counted_by_their_epochs(tmp_path, block, loss, val_loss):
    log = tmp_path / "loop.txt"
    log.write_text("\n".join(block.format(e=e, t=loss_val(e), v=loss_val(e) + 0.05) for e in range(1, 26)))
    code, doc = _analyze(log)
    assert code == 0 and isinstance(doc, dict)
    assert doc["roles"]["loss"]["columns"] == [loss] and doc["roles"]["val_loss"]["columns"] == [val_loss]
    assert doc["roles"]["index"]["columns"] == ["epoch"]


def test_silent_twin_a_config_of_colon_lines_is_not_blocks(tmp_path):
    config = tmp_path / "config.txt"
    config.write_text("learning_rate: 0.0003\nn_steps: 2048\nbatch_size: 64\nvf_loss_coef: 0.5\nseed: 42\n")
    _refused(config)


def test_yaml_sections_of_different_keys_are_not_blocks_of_a_history(tmp_path):
    path = tmp_path / "config.txt"
    path.write_text("model:\n  layers: 4\n  loss_weight: 0.5\n\ntrain:\n  lr: 0.001\n  epochs: 10\n\n"
                    "eval:\n  batch: 64\n  every: 100\n")
    _refused(path)


# -- R's long frame ------------------------------------------------------------------------------


def _r_rows() -> list[tuple[int, float, str, str]]:
    rows = []
    for metric in ("loss", "acc"):
        for split in ("training", "validation"):
            for e in range(1, 21):
                v = loss_val(e) + (0.1 if split == "validation" else 0.0) if metric == "loss" else 1 - loss_val(e) / 3
                rows.append((e, round(v, 7), metric, split))
    return rows


def test_r_write_csv_of_a_long_history_drops_its_row_names_column(tmp_path):
    path = tmp_path / "history.csv"
    path.write_text("\n".join(['"","epoch","value","metric","data"'] + [
        f'"{k}",{e},{v},"{m}","{d}"' for k, (e, v, m, d) in enumerate(_r_rows(), 1)]) + "\n")
    code, doc = _analyze(path)
    assert code == 0 and isinstance(doc, dict)
    assert doc["roles"]["loss"]["columns"] == ["loss_training"]
    assert doc["roles"]["val_loss"]["columns"] == ["loss_validation"]


def test_r_printed_long_frame_with_train_and_val_splits(tmp_path):
    path = tmp_path / "history.txt"
    lines = ["   epoch     value metric  data"] + [
        f"{k:<3} {e:>5} {v:9.7f} {m:>6} {d.replace('training', 'train').replace('validation', 'val'):>5}"
        for k, (e, v, m, d) in enumerate(_r_rows(), 1)]
    path.write_text("\n".join(lines) + "\n")
    code, doc = _analyze(path)
    assert code == 0 and isinstance(doc, dict)
    assert doc["roles"]["loss"]["columns"] == ["loss_train"] and doc["roles"]["val_loss"]["columns"] == ["loss_val"]


def test_a_long_frame_whose_extra_number_column_is_not_row_numbers_is_still_refused(tmp_path):
    path = tmp_path / "history.csv"
    path.write_text("\n".join(['"","epoch","value","metric","data"'] + [
        f'"{3 * k}",{e},{v},"{m}","{d}"' for k, (e, v, m, d) in enumerate(_r_rows(), 1)]) + "\n")
    _refused(path)



def test_tune_blocks_of_two_trials_read_the_first_trial_alone(tmp_path):
    one, two = _rllib(25).split("Result for"), _rllib(25, "00001", scale=7.0).split("Result for")
    path = tmp_path / "tune.txt"
    pairs = zip(one[1:], two[1:], strict=True)
    path.write_text(one[0] + "".join("Result for" + a + "Result for" + b for a, b in pairs))
    code, doc = _analyze(path)
    assert code == 0 and isinstance(doc, dict)
    assert doc["key_numbers"]["steps"] == 25 and doc["key_numbers"]["last_step"] == 25
    assert doc["key_numbers"]["final_loss"] == round(loss_val(25) * 100, 3)


def test_the_calls_that_printed_an_r_frame_above_it_are_not_its_header(tmp_path):
    """``> df <- as.data.frame(history)`` and ``> df`` above the printed frame: the header is the line
    right above its first row of numbers."""
    path = tmp_path / "history.txt"
    lines = ["> df <- as.data.frame(history)", "> df", "    epoch      value   metric       data"] + [
        f"{k:<3} {e:>5} {v:9.7f} {m:>6} {d:>10}" for k, (e, v, m, d) in enumerate(_r_rows(), 1)]
    path.write_text("\n".join(lines) + "\n")
    code, doc = _analyze(path)
    assert code == 0 and isinstance(doc, dict)
    assert doc["roles"]["loss"]["columns"] == ["loss_training"]
