"""Training-side writers of run-log format v1.

``recorders.writer`` is framework-free (pyarrow only); ``recorders.torch``
holds the PyTorch :class:`~recorders.torch.Recorder`; the Lightning and
Hugging Face callbacks live in ``recorders.lightning`` and
``recorders.huggingface``. Nothing here imports scipy, pandas, jinja2 or
``runlens``: this package goes into training environments and stays small.
"""

from typing import Any

# Loaded on first use so that ``recorders.writer`` (which the analysis engine's importers
# use) never pulls in torch.
_LAZY = {"Recorder": "recorders.torch", "RunWriter": "recorders.writer"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'recorders' has no attribute {name!r}")


__all__ = ["Recorder", "RunWriter"]
