"""A comparison as the JSON of its ``to_dict``."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runlens.compare.model import Comparison


def render_compare_json(c: Comparison) -> str:
    return json.dumps(c.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
