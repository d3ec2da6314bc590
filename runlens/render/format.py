"""What every renderer writes alike: a severity's colour on a terminal, and numbers.

Numbers come in two styles, on purpose: the reports and ``runlens analyze`` spell NaN and Inf
for a reader (:func:`float_text`); the audit's and the comparison's tables keep Python's
``nan``/``inf`` and leave a value that was not logged blank (:func:`cell_number`), as those
tables (CSV included) always have.
"""

from __future__ import annotations

import math

#: The largest magnitude a chart or a sparkline draws: an axis spanning values near float64's limit
#: (1.8e308) overflows when its ends are subtracted. A loss that large has overflowed in any dtype a
#: model trains in, so it is marked as a NaN/Inf is.
DRAWABLE = 1e300

#: A severity's ANSI colour (``--color``); severity is data, its colour the renderer's business.
SEVERITY_ANSI = {"error": "\033[1;31m", "warning": "\033[33m", "info": "\033[36m"}
RESET = "\033[0m"


def float_text(value: float) -> str:
    """``value`` at 4 significant digits; NaN and Inf by name."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Inf" if value > 0 else "-Inf"
    return f"{value:.4g}"


def cell_number(value: float | None) -> str:
    """``value`` in a table cell: 4 significant digits, ``nan``/``inf`` as Python writes them,
    empty when it was not logged."""
    if value is None:
        return ""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.4g}"
