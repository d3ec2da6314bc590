"""What the framework callbacks (Hugging Face, Lightning) keep from their keywords before training starts."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


class CallbackSettings:
    """The run's place and the Recorder's keywords, held until the framework hands over the model."""

    path: Path
    resume: bool | None
    name: str | None
    config: dict[str, Any]
    recorder_options: dict[str, Any]

    def _keep_settings(self, path: str | Path, name: str | None, config: Mapping[str, Any] | None,
                       resume: bool | None, recorder_options: Mapping[str, Any], *, layers_every: int,
                       flush_every: int, flush_seconds: float) -> None:
        self.path = Path(path)
        self.resume = resume
        self.name = name
        self.config = dict(config or {})
        self.recorder_options = dict(layers_every=layers_every, flush_every=flush_every,
                                     flush_seconds=flush_seconds, **recorder_options)
