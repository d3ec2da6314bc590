"""Metric names as tokens: ``train/box_loss`` -> ``train box loss``, ``valLoss`` -> ``val loss``.

Roles are decided on tokens, never on whole spellings, so ``DEV_LOSS``,
``validation/main/loss``, ``eval_loss`` and ``loss (val)`` all read the
same way. Tokenizing is one linear pass (no backtracking pattern).
"""

from __future__ import annotations

VAL = frozenset({"val", "valid", "validation", "eval", "evaluation", "dev", "test", "validate", "vl", "holdout"})
TRAIN = frozenset({"train", "training", "tr", "main", "trn"})
LOSS = frozenset({"loss", "losses", "xent", "nll", "ce", "objective", "cost", "crossentropy"})
PERPLEXITY = frozenset({"ppl", "perplexity"})
# Words that qualify a name without making it another quantity: ``avg loss`` is the loss.
NEUTRAL = frozenset({"total", "avg", "average", "mean", "overall", "running", "lm", "value", "all", "sum",
                     "batch", "step", "epoch", "per", "on", "of", "the", "after", "smoothed", "ema",
                     "cur", "current", "global", "model", "net", "iter", "reduced", "full", "final", "set"})
METRIC = frozenset({"acc", "accuracy", "f1", "precision", "recall", "map", "bleu", "wer", "cer", "auc",
                    "iou", "score", "r2", "top1", "top5", "error", "err", "rouge", "em", "kl", "reward",
                    "fscore", "correct", "dice", "psnr", "ssim", "time", "eta", "memory", "mem"})


def tokens(name: str) -> tuple[str, ...]:
    """Lower-case words of ``name``: split at non-alphanumerics and at lower-to-upper case changes."""
    out: list[str] = []
    word: list[str] = []
    prev = ""
    for ch in name:
        if ch.isalnum():
            if word and ch.isupper() and prev.islower():
                out.append("".join(word).lower())
                word = []
            word.append(ch)
        elif word:
            out.append("".join(word).lower())
            word = []
        prev = ch
    if word:
        out.append("".join(word).lower())
    return tuple(out)


def is_val(toks: tuple[str, ...]) -> bool:
    return any(t in VAL for t in toks)


def val_set(toks: tuple[str, ...]) -> str | None:
    """The named validation set of a loss (``eval_wiki_loss`` -> ``wiki``); None for the unnamed one."""
    rest = [t for t in toks if t not in VAL and t not in LOSS and t not in NEUTRAL and t not in TRAIN]
    if "test" in toks and not any(t in VAL - {"test"} for t in toks):
        rest = ["test", *rest]
    return "_".join(rest) or None


def qualifiers(toks: tuple[str, ...]) -> tuple[str, ...]:
    """What is left of a loss name once roles and neutral words are taken out (``box`` of ``box_loss``)."""
    rest = tuple(t for t in toks if t not in VAL and t not in TRAIN and t not in LOSS and t not in NEUTRAL)
    kinds = [t for t in toks if t in LOSS and t != "loss"]
    # ``loss_ce`` is the cross-entropy part of a loss, not the loss: a second loss word qualifies the first.
    return (*kinds, *rest) if "loss" in toks and kinds else rest
