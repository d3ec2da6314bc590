"""Metric names as tokens: ``train/box_loss`` -> ``train box loss``, ``valLoss`` -> ``val loss``.

Roles are decided on tokens, never on whole spellings, so ``DEV_LOSS``,
``validation/main/loss``, ``eval_loss`` and ``loss (val)`` all read the
same way. Tokenizing is one linear pass (no backtracking pattern).

This module is runlens' one vocabulary of metric names: which words make a
loss, a validation metric, a step or epoch counter, a learning rate, a
gradient norm or a loss scale. The table reader's role inference
(:mod:`.roles`) and every importer that maps names one at a time (console
logs, MLflow and W&B keys, Markdown headers: :func:`role_of`) use it.
"""

from __future__ import annotations

import re

# ``vali``: the time-series forecasters' (Informer, Autoformer, TimesNet) "Vali Loss".
VAL = frozenset({"val", "valid", "validation", "validations", "testing", "validating", "eval", "evaluation", "dev", "test", "validate", "vl", "va", "vali",
                 "holdout"})
# ``learn``: CatBoost's name of the training set.
TRAIN = frozenset({"train", "training", "tr", "main", "trn", "learn"})
LOSS = frozenset({"loss", "losses", "xent", "nll", "ce", "objective", "cost", "crossentropy"})
PERPLEXITY = frozenset({"ppl", "perplexity"})
#: The least a perplexity can be, as printed: exp of a cross-entropy is 1 or more (0.995 rounds to 1.00).
PERPLEXITY_MIN = 0.995
# Words that qualify a name without making it another quantity: ``avg loss`` is the loss.
NEUTRAL = frozenset({"total", "avg", "avr", "average", "mean", "overall", "running", "lm", "value", "all", "sum",
                     "batch", "mini", "minibatch", "step", "epoch", "per", "on", "of", "the", "after", "smoothed", "ema",
                     "cur", "current", "global", "model", "net", "iter", "reduced", "full", "final", "set"})
# The neutral words that say a column adds others up: a ``total`` proven the sum of other columns is the loss.
TOTAL = frozenset({"total", "sum", "overall"})
METRIC = frozenset({"acc", "accuracy", "f1", "precision", "recall", "map", "bleu", "wer", "cer", "auc",
                    "iou", "score", "r2", "top1", "top5", "error", "err", "rouge", "em", "kl", "reward",
                    "fscore", "correct", "dice", "psnr", "ssim", "time", "eta", "memory", "mem", "perf", "performance"})


STEP_WORDS = ("step", "iteration", "iter", "steps", "it")
# Words beside a counter's own word that leave it the same counter (``global_step``, ``num_steps``).
STEP_SKIP = frozenset({"global", "current", "train", "trainer", "num", "cur", "optimizer", "training"})
EPOCH_WORDS = (("epoch",), ("epochs",), ("ep",))
# Abbreviations that name a counter only as the whole name: beside other words they say something else
# (``ep_len_mean`` is an episode's length, ``it/s`` a speed).
_ALONE = frozenset({"it", "ep"})
# The words that say a name counts, among any others (``total_timesteps``, ``n_updates``,
# ``training_iteration``, ``num_env_steps_sampled``): the step and epoch words, their plurals, and the
# timesteps and updates that reinforcement learning counts by. A new counter word goes into STEP_WORDS
# or EPOCH_WORDS (which name a counter as the whole name) or here, and reaches every reader from there.
COUNT_WORDS = ((frozenset(STEP_WORDS) | {w for (w,) in EPOCH_WORDS}) - _ALONE) | {
    "iterations", "iters", "timestep", "timesteps", "update", "updates"}
GRAD_WORDS = frozenset({"grad", "gradient", "grads", "total"})
SCALE = frozenset({"scale", "scaler"})
# Short names some trainers log for a whole phrase: read as the phrase. llm.c writes its training loss
# as ``trl`` and its validation loss as ``tel`` (train_gpt2.cu: ``"s:%d tel:%f", step, val_loss``).
# VSE++ and the image-text matching code built on it (SCAN, VSRN, SGRAF) log their embedding loss as
# ``Le`` (``logger.update('Le', loss.item(), ...)``).
ABBREVIATIONS = {"trl": ("train", "loss"), "tel": ("val", "loss"), "gnorm": ("grad", "norm"), "gradnorm": ("grad", "norm"),
                 "le": ("loss",)}


_POSSESSIVE = re.compile(r"'s\b")
#: A loss word run into the number of its part (``loss1``, ``loss2u``, ``cost0``): the part of a
#: loss, as ``loss_1`` is. Only after a loss word: ``top1``, ``conv3``, ``l1`` keep their digits.
_LOSS_WORDS = "|".join(sorted(LOSS, key=len, reverse=True))
_NUMBERED_LOSS = re.compile(rf"^({_LOSS_WORDS})(\d+[a-z]*)$")


def _numbered(word: str) -> tuple[str, ...]:
    m = _NUMBERED_LOSS.match(word)
    return (m.group(1), m.group(2)) if m else (word,)


def _run_into_loss(word: str) -> bool:
    return len(word) > 5 and word.endswith("loss")


def _loss_run_on(word: str) -> bool:
    # ``lossvalue``, ``lossavg`` (InsightFace's ``lossvalue=6.24``): the loss and a neutral word, one word.
    return len(word) > 4 and word.startswith("loss") and word[4:] in NEUTRAL


def tokens(name: str) -> tuple[str, ...]:
    """Lower-case words of ``name``: split at non-alphanumerics and at lower-to-upper case changes."""
    if "'" in name:  # a possessive says whose: ``training's loss`` is the training loss
        name = _POSSESSIVE.sub("", name)
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
    if any(c.isdigit() for c in name):  # most names hold no digit: no word of theirs is a numbered loss
        out = [part for w in out for part in _numbered(w)]
    # ``genloss``, ``latloss``, ``klloss``, ``trainloss``: a loss and what it is of, written as one word (and
    # ``lossvalue``: the loss and a neutral word after it). Two letters before it at least: one letter run into it is a word (``gloss``, ``floss``) as often as a loss.
    if any(_run_into_loss(w) or _loss_run_on(w) for w in out):  # most names hold none: the list is not rebuilt
        out = [part for w in out for part in ((w[:-4], "loss") if _run_into_loss(w) else
                                              ("loss", w[4:]) if _loss_run_on(w) else (w,))]
    # ``CrossEntropy``, ``cross_entropy``: the loss function's name, one word however it is split, and
    # however short the entropy's part (``CrossE``, ``cross_ent``: abbreviations people print).
    for i in range(len(out) - 1, 0, -1):
        if out[i - 1] == "cross" and "entropy".startswith(out[i]):
            out[i - 1:i + 1] = ["crossentropy"]
    # BasicSR and the image-restoration code built on it (Real-ESRGAN, SwinIR, NAFNet, GFPGAN) name
    # each loss ``l_<what>``: ``l_pix``, ``l_g_percep``, ``l_d_real``. A lone ``l`` first is that loss.
    if len(out) >= 2 and out[0] == "l" and name.lstrip()[:2] in ("l_", "l."):
        out[0] = "loss"
    # ``l`` alone, in lower case, is the loss of the tutorials' loops (``l = loss(net(X), y)``, printed
    # ``w = 1.09, l = 9.12``); a capital ``L`` is a label (a confusion matrix's ``L = 0`` row), and beside
    # other words a lone letter is an index or a layer (``sigma_l``).
    if name == "l":
        return ("loss",)
    if not name.isascii() or not _ELSEWHERE_WORDS.isdisjoint(out):
        out = _in_english(out)
    if any(w in ABBREVIATIONS for w in out):
        return tuple(x for w in out for x in ABBREVIATIONS.get(w, (w,)))
    return tuple(out)


# The role words of other languages, as the courses, forks and fine-tuning repositories of their
# speakers print them (``loss entrenamiento=0.0086, loss validación=0.0092``, ``训练损失``): read as
# the English word, so every rule on roles holds for them. Written languages without spaces run their
# words together (``验证集损失``): there each known word is found inside the token.
ELSEWHERE = {
    "entrenamiento": "train", "treino": "train", "treinamento": "train", "entraînement": "train",
    "entrainement": "train", "addestramento": "train", "обучение": "train", "обучения": "train",
    "validación": "val", "validacion": "val", "validação": "val", "validacao": "val", "validierung": "val",
    "validazione": "val", "валидация": "val", "валидации": "val", "prueba": "test", "teste": "test",
    "pérdida": "loss", "perdida": "loss", "perda": "loss", "perte": "loss", "verlust": "loss", "perdita": "loss",
    "потери": "loss", "потеря": "loss", "época": "epoch", "epoca": "epoch", "époque": "epoch", "эпоха": "epoch",
}
_RUN_TOGETHER = {"训练": "train", "訓練": "train", "学習": "train", "验证": "val", "驗證": "val", "検証": "val",
                 "验证集": "val", "测试": "test", "測試": "test", "损失": "loss", "損失": "loss", "손실": "loss",
                 "학습": "train", "검증": "val"}
_ELSEWHERE_WORDS = frozenset(ELSEWHERE)
_RUN_WORDS = re.compile("|".join(sorted(_RUN_TOGETHER, key=len, reverse=True)))


def _in_english(words: list[str]) -> list[str]:
    out: list[str] = []
    for w in words:
        if w in ELSEWHERE:
            out.append(ELSEWHERE[w])
        elif (found := _RUN_WORDS.findall(w)):
            out.extend(_RUN_TOGETHER[f] for f in found)
        else:
            out.append(w)
    return out


def counter_core(toks: tuple[str, ...]) -> tuple[str, ...]:
    """The words of a counter's name that say what it counts (``global_step`` -> ``step``)."""
    return tuple(x for x in toks if x not in STEP_SKIP)


def is_step(toks: tuple[str, ...]) -> bool:
    """A step counter's name: ``step``, ``global_step``, ``iteration``, ``iter``, ``num_steps``, ..."""
    core = counter_core(toks)
    return len(core) == 1 and core[0] in STEP_WORDS and "total" not in toks


def is_epoch(toks: tuple[str, ...]) -> bool:
    """An epoch counter's name: ``epoch``, ``epochs``, ``ep``, ``train_epoch``, ``cur_epoch``."""
    return counter_core(toks) in EPOCH_WORDS


def names_count(toks: tuple[str, ...]) -> bool:
    """Whether a name holds a counting word (:data:`COUNT_WORDS`) among its words: what a block of
    ``key value`` lines may be counted by, looser than :func:`is_step` / :func:`is_epoch`."""
    return not COUNT_WORDS.isdisjoint(toks)


# Metric words that never name a loss function: a loss's time or memory is a cost, not a loss.
_COSTS = frozenset({"time", "eta", "memory", "mem"})


def is_lossish(toks: tuple[str, ...]) -> bool:
    """A loss word and nothing that makes it another quantity (a metric, a loss scale). A name that
    ends in the loss word names a loss function, whatever metric it is built on (``dice_loss``,
    ``kl_loss``, ``iou_loss``: 1 - dice, a KL divergence, 1 - IoU are minimized)."""
    if not any(x in LOSS for x in toks) or SCALE & set(toks):
        return False
    metric = {x for x in toks if x in METRIC}
    return not metric or (toks[-1] in LOSS and not metric & _COSTS)


def is_lr(toks: tuple[str, ...]) -> bool:
    return "lr" in toks or ("learning" in toks and "rate" in toks)


#: A gradient logged under its bare name, once per line (SCNet's ``Grad=9164.28``): a whole gradient is one
#: number only as its norm.
_BARE_GRAD = frozenset({("grad",), ("grads",), ("gradient",), ("gradients",)})


def is_grad_norm(toks: tuple[str, ...]) -> bool:
    if tuple(t for t in toks if t not in TRAIN) in _BARE_GRAD:
        return True
    return ("norm" in toks and (bool(GRAD_WORDS & set(toks)) or toks == ("norm",))) or "gnorm" in toks


def is_loss_scale(toks: tuple[str, ...]) -> bool:
    return bool(SCALE & set(toks)) and ("loss" in toks or "grad" in toks or "amp" in toks or len(toks) == 1)


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


# A data set's name, an optional ordinal, and one metric: ``train-logloss``, ``validation_1-rmse``,
# ``valid_1's binary_logloss``, ``eval's l2`` (the per-round lines of gradient boosting libraries).
_SET_METRIC = re.compile(r"^([A-Za-z]+)(?:_\d+)?(?:-|'s\s+)([A-Za-z][\w@]*)$")
# ``<set>_<error measure>`` (LIBMF's ``tr_rmse``, ``va_rmse``): with an underscore only an error measure
# names a set's loss (``train_box_loss`` is a part, ``eval_wiki_loss`` a named set's loss).
_SET_UNDERSCORE = re.compile(r"^([A-Za-z]+)_([A-Za-z]+\d?)$")
# Metrics that measure an error to be minimised, whose value is the objective a boosting round reports.
# The boosting libraries' evaluation metrics that fall as the model fits (XGBoost, LightGBM, CatBoost):
# their documented names, read as a set's loss when a data set names them.
ERROR_MEASURES = frozenset({"rmse", "mse", "mae", "rmsle", "mape", "l1", "l2", "huber", "logloss", "mlogloss",
                            "rmspe", "smape", "msle", "mphe", "nloglik", "deviance", "fair", "quantile",
                            # the forecasting literature's relative and normalized errors (LSTNet's RAE and
                            # RSE, Weka's RRSE, darts' MASE, WAPE, NRMSE)
                            "rae", "rse", "rrse", "nrmse", "nmae", "nmse", "mase", "wape"})
#: The words that name an error a trainer minimizes, as a whole name (FANN's ``Current error``, Torch7's
#: ``Err``, an ``mse``): a log that names no loss prints its objective under one of these. A divergence
#: is minimized by definition (t-SNE's ``KL divergence``); beside a named loss it is a part and not read.
ERROR_WORDS = frozenset({"error", "err", "divergence"}) | ERROR_MEASURES
#: The two players of a GAN as their logs name them, alone or beside an error or loss word (``G``, ``D``,
#: ``errG``, ``Err_D``, ``netG``, ``gen``, ``disc``): a generator's and a discriminator's loss.
_GAN_SIDES = {"g": "g", "gen": "g", "generator": "g", "d": "d", "dis": "d", "disc": "d", "discriminator": "d"}


#: The words that name a part of one GAN player's loss (``d_fake``, ``d_real``, ``g_adv``, ``g_l1``: SEGAN's
#: print): the player is still the name's first word.
_GAN_PARTS = frozenset({"real", "fake", "adv", "adversarial", "gan", "gp", "penalty", "fm", "feat", "feature",
                        "rec", "recon", "cycle", "idt", "identity", "perceptual", "vgg", "pix", "style", "content"})


def adversarial_side(toks: tuple[str, ...]) -> str | None:
    """``"g"`` or ``"d"`` for a name that is one GAN player's loss, or a named part of it, and says nothing
    else, else None."""
    rest = [t for t in toks if t not in NEUTRAL and t not in TRAIN and t not in ERROR_WORDS and t not in LOSS]
    return _GAN_SIDES.get(rest[0]) if rest and set(rest[1:]) <= _GAN_PARTS else None


#: The words of a clock or a throughput: "eta: inf" at a run's first line, "tokens/s: inf" when a step
#: took no measurable time, say nothing about the model.
CLOCK_WORDS = frozenset({"time", "eta", "sec", "secs", "second", "seconds", "s", "ms", "speed", "throughput",
                         "fps", "elapsed", "duration", "it", "its", "per", "samples", "tokens", "memory", "mem",
                         "date", "timestamp", "wall", "clock"})
#: A record of an extreme so far ("best: inf" until the first evaluation) starts at +/-inf by convention.
RECORD_WORDS = frozenset({"best", "min", "max", "lowest", "highest", "minimum", "maximum"})
#: The words of a quantity whose inf says nothing of the model: a clock, a throughput, a record so far.
NOT_A_SIGNAL = CLOCK_WORDS | RECORD_WORDS


def is_loss_term(toks: tuple[str, ...]) -> bool:
    """A loss term's words: a loss word (:func:`is_lossish`) or an error measure (``loss_cls``,
    ``SmoothL1``, ``giou_loss``), the parts a total loss adds up."""
    return is_lossish(toks) or not ERROR_MEASURES.isdisjoint(toks)


def set_metric_role(name: str) -> tuple[bool, str] | None:
    """``(is_val, "loss"/"val_loss")`` for a data set's loss-like metric named ``<set>-<metric>``,
    ``<set>'s <metric>`` or ``<set>_<error measure>``: the training set's is the training loss, a held-out set's the validation loss.
    The set's ordinal (``valid_1``) numbers the sets, it names none. None for any other name."""
    m = _SET_METRIC.match(name.strip())
    if m is None:
        m = _SET_UNDERSCORE.match(name.strip())
        if m is None or m.group(2).lower() not in ERROR_MEASURES:
            return None
    side, metric = m.group(1).lower(), tokens(m.group(2))
    last = metric[-1] if metric else ""
    if not (last in LOSS or last in ERROR_MEASURES or last.endswith("loss")) or METRIC & set(metric):
        return None
    if side in TRAIN:
        return False, "loss"
    if side not in VAL:
        return None
    named = val_set((side, "loss"))  # ``test`` names a set, as in ``test_loss``
    return True, "val_loss" if named is None else f"val_loss@{named}"


def role_of(name: str) -> tuple[bool, str | None]:
    """``(is_val, role)`` of one metric name read by itself, by the rules :mod:`.roles` applies to a
    table's columns: ``loss`` / ``val_loss`` for a loss named with nothing but neutral words beside it,
    ``val_loss@<set>`` for a named validation set's, ``lr``, ``grad_norm``, ``loss_scale``, ``epoch``;
    None for any other name (a loss part, a metric), kept under its own name."""
    if (by_set := set_metric_role(name)) is not None:
        return by_set
    t = tokens(name)
    val = is_val(t)
    if is_lossish(t):
        if not val:
            return False, None if qualifiers(t) else "loss"
        named = val_set(t)
        return True, "val_loss" if named is None else f"val_loss@{named}"
    if val:
        return True, None
    for role, test in (("loss_scale", is_loss_scale), ("lr", is_lr), ("grad_norm", is_grad_norm),
                       ("epoch", is_epoch)):
        if test(t):
            return False, role
    return False, None
