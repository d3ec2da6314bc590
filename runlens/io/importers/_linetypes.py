"""What a console line's step marker gives the text reader (:class:`Line`), and what earlier lines
said that later lines rely on (:class:`Context`): the values the line reader
(:mod:`._textline`) passes on, kept apart from its patterns.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Context:
    """What earlier lines said that later lines rely on."""

    epoch: int | None = None  # from a Keras-style ``Epoch 3/10`` header
    per_epoch: int | None = None  # counter total of the last per-batch line (``200/735``)
    last_step: int | None = None
    restart: bool = False  # an ``Epoch 1/N`` header: a new run may begin here
    repeat_next: bool = False  # a "Best iteration is:" line: the next step's line repeats a recorded one
    zero_epoch: bool = False  # an epoch 0 was seen: epochs count from 0
    outer: int | None = None  # a running counter (._textsteps.running): the last outer and inner counts,
    inner: int = 0
    offset: int = 0  # and the steps of the outer counts before
    bar_total: int | None = None  # a progress bar with no epoch (._textsteps.bar_pass): its length,
    bar_last: int | None = None  # its last count,
    bar_offset: int = 0  # and the batches of the finished bars before
    bar_done: int | None = None  # the longest such bar that ran to its end
    headed: bool = False  # the line before was an epoch header


@dataclass
class Line:
    """A line that carries a step."""

    step: int
    rest: str  # the text after the step marker, where the fields are
    eval_line: bool
    epoch: int | None
    source: str  # which marker gave the step (``iter``, ``Epoch(train)``, ...)
    fields: list[tuple[str, float]] | None = None  # already read (dicts, caffe net outputs)
    # How the step was computed, for the line-shape cache (:mod:`._lineplan`): a formula name and
    # the spans of the numbers it used; "" when it cannot be replayed from the numbers alone.
    formula: str = ""
    spans: tuple[tuple[int, int], ...] = ()
    epoch_span: tuple[int, int] | None = None
    rest_at: int = 0
    # A Keras progress line inside an epoch: its numbers are running means of the epoch so far,
    # which restart every epoch (a sawtooth, not a curve); only the epoch's last line is kept.
    partial: bool = False
    # ``(i, N)`` of a counter inside an epoch (``200/735``): the text reader tells from these whether
    # the log keeps one line per epoch, where the epoch, not the counter, is the index.
    count: tuple[int, int] | None = None
