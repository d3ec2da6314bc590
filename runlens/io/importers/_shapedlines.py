"""Console lines of a fixed shape whose numbers are not ``name value`` pairs after a step.

The field reader (:mod:`._textline`) reads a step marker, then named values. Some trainers print
a line whose shape names its numbers instead: the name before the step (CornerNet's ``focal loss at
iteration 30995: 7.34``), a batch and three unnamed numbers (Darknet), or a counter with its share
of the total and one unnamed number (the PyTorch tutorials' ``5000 5% (0m 12s) 2.4177 ...``), or the
iteration between a loss's name and its value (Tacotron 2's ``Train loss 130950 0.41``). Each
is matched whole, here, before the field reader tries the line.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from runlens.io.importers._mapping import NUM as _NUM
from runlens.io.importers._mapping import to_float

# The name, then the step, then the value: "focal loss at iteration 30995: 7.34" (CornerNet's
# prints), DL4J's "Score at iteration 60 is NaN". Up to four words of name before "at".
# The deeplearning.ai courses' numpy loops print the same shape with "after": "Cost after iteration 100:
# 0.67", "Cost after epoch 1000: 0.69"; a counter's word may be plural ("after 500 steps" is not this shape:
# there the count comes first).
_AT_COUNTER = re.compile(rf"(?P<name>[A-Za-z][\w./()-]*(?: [A-Za-z][\w./()-]*){{0,3}}) (?:at|after) (?:the )?"
                         rf"(?:iterations?|iters?|steps?|epochs?|batch(?:es)?|rounds?) (?P<n>\d+)\s*(?::|=|\bis\b)\s*"
                         rf"(?P<v>{_NUM})\s*$", re.I)
# Darknet's (YOLO v2-v4) progress line: "931: 86426484736.000000, 8648297472.000000 avg, 0.000751 rate,
# 0.089617 seconds, 931 images": the batch, its loss, the running average, the learning rate.
_DARKNET = re.compile(rf"^\s*(\d+):\s*({_NUM}),\s*({_NUM})\s+avg(?:\s+loss)?,\s*({_NUM})\s+rate\b", re.I)
# A counter and its percent of the total, then one unnamed number, an elapsed time around them:
# "5000 5% (0m 12s) 2.4177 Coelho / Portuguese ✓" and "0m 5s (5000 5%) 2.8345" (the PyTorch
# tutorials' ``'%d %d%% (%s) %.4f'``). The number is the loss the line reports on its progress.
_PERCENT = re.compile(rf"^\s*(?:\d+m\s+\d+s\s+\(\s*)?(?P<n>\d+)\s+(?P<pct>\d{{1,3}}(?:\.\d+)?)%\s*\)?\s+"
                      rf"(?:\(\s*\d+m\s+\d+s\s*\)\s+)?(?P<v>{_NUM})(?=\s|$)")

# The loss's name, the iteration, then the value: NVIDIA's Tacotron 2 and the trainers copied from it
# (Mellotron, Flowtron, many TTS repositories) print ``"Train loss {} {:.6f} Grad Norm {:.6f}
# {:.2f}s/it".format(iteration, ...)`` and ``"Validation loss {}: {:9f}"``. A counter (an integer, no
# decimal point) between a loss's name and a number is the step; the fields after the value are read
# as any line's. Without this the counter is read as the loss and the loss is lost.
_NAME_COUNTER = re.compile(rf"^\s*(?P<name>(?:[A-Za-z]+ )?loss) (?P<n>\d+)(?:\s*:\s*|\s+)(?P<v>{_NUM})(?=\s|$)",
                           re.I)

#: The shapes whose line names what it reports (an evaluation's line may, a Darknet line never does).
NAMED_STEP = frozenset({"at counter", "named counter"})


def shaped_line(text: str, read_fields: Callable[[str], list[tuple[str, float]]] | None = None
                ) -> tuple[int, str, list[tuple[str, float]]] | None:
    """``(step, shape, fields)`` of a line of one of these shapes, or None (``read_fields`` reads what
    follows a shape's value, where a shape has more)."""
    if m := _AT_COUNTER.search(text):
        # DL4J's ScoreIterationListener prints the loss as the network's score (``Score at iteration 60 is
        # NaN``): in this shape a bare "score" is that loss, where elsewhere a score is often higher-better.
        name = "loss" if m.group("name").lower() == "score" else m.group("name")
        return int(m.group("n")), "at counter", [(name, to_float(m.group("v")))]
    if m := _DARKNET.match(text):
        return int(m.group(1)), "darknet", [("loss", to_float(m.group(2))), ("avg loss", to_float(m.group(3))),
                                            ("lr", to_float(m.group(4)))]
    if m := _NAME_COUNTER.match(text):
        rest = read_fields(text[m.end():]) if read_fields is not None else []
        return int(m.group("n")), "named counter", [(m.group("name"), to_float(m.group("v"))), *rest]
    if (m := _PERCENT.match(text)) and 0 < float(m.group("pct")) <= 100:
        return int(m.group("n")), "percent counter", [("loss", to_float(m.group("v")))]
    return None
