"""Exceptions raised by runlens.

The tree::

    RunlensError                 base of everything runlens raises on purpose
    ├── RunFormatError           a run directory that cannot be read as format v1
    │   └── UnsupportedVersionError   run.json names a format_version we do not know
    ├── ImportFailedError        an importer could not read its source
    └── UsageError               bad arguments (unknown detector code, bad option)
        └── OutputError          an output path that cannot be used or written (a missing folder,
                                 a run directory, a symlink or device as the target, a full disk)

The CLI catches only ``RunlensError``, prints ``runlens: <message>`` on one
line and exits with status 2.
"""

from __future__ import annotations


class RunlensError(Exception):
    """Base class of the errors runlens raises on purpose."""


class RunFormatError(RunlensError):
    """A run directory that cannot be read as run-log format v1."""


class UnsupportedVersionError(RunFormatError):
    """run.json declares a ``format_version`` this reader does not know."""


class ImportFailedError(RunlensError):
    """An importer could not turn its source into a run."""


class UsageError(RunlensError):
    """Bad arguments: an unknown detector code, an invalid option value."""


class OutputError(UsageError):
    """An output path that cannot be used or written: its folder missing, inside a run directory,
    a folder where a file was asked for, a symlink or special file as the target, or a write that
    failed (read-only folder, full disk). Raised by :mod:`runlens.io.output`."""
