"""The comparison's codes, as the codes catalog (``runlens.codes``) writes them.

The entries themselves live in the catalog, with every other code; the checks take their
advice from an entry's "What to try". Parameters are fields of
:class:`runlens.compare.model.Thresholds`.
"""

from __future__ import annotations

from runlens.codes import COMPARE_CODES as CODES
from runlens.codes import advice

__all__ = ["CODES", "advice"]
