"""One writer per output: a lock that refuses a second ``runlens import`` into the same run.

Two imports into one OUT_RUN at once would both say "imported" while the
second replaced the first. :func:`output_lock` takes an exclusive
``flock`` on a dot-file beside the output (``.NAME.runlens-lock``) without
waiting: a second writer gets a :class:`~runlens.errors.UsageError` (one
line, exit 2). The lock file is removed when the writer ends; a reader who
opened it just before may then hold a lock on a removed file, so a lock
counts only when the path still names the file locked.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from runlens.errors import UsageError


def lock_path(target: str | os.PathLike[str]) -> Path:
    """The lock file of the output ``target``: a dot-file in the same folder."""
    target = Path(os.path.abspath(target))
    return target.with_name(f".{target.name}.runlens-lock")


@contextlib.contextmanager
def output_lock(target: str | os.PathLike[str]) -> Iterator[None]:
    """Hold ``target``'s lock for the block; refuse at once (UsageError) when another
    process holds it."""
    path = lock_path(target)
    for _ in range(100):
        # O_NOFOLLOW: a symlink planted at the lock name must not make us create a file elsewhere.
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise UsageError(f"{os.fspath(target)}: another runlens process is writing this run "
                                 f"right now (lock {path.name}); run one at a time") from None
            raise
        if _same_file(fd, path):
            break
        os.close(fd)  # the holder removed it as we opened it: take the lock on a fresh file
    else:
        raise UsageError(f"{os.fspath(target)}: could not take the output lock {path}")
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.close(fd)


def _same_file(fd: int, path: Path) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


__all__ = ["lock_path", "output_lock"]
