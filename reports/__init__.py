"""Report templates (Jinja2), shipped inside the installed package."""

from __future__ import annotations

from pathlib import Path

TEMPLATES = Path(__file__).parent / "templates"
