"""A remote store that lies, for the staging ceilings' tests: fsspec's in-memory filesystem
under the scheme ``lying://``, whose listing can announce any size for a file and whose files
can stream zeros without end (a server sending more than it announced).

A campaign child installs it before the CLI starts (``install(folder, url_path, ...)``), so
``runlens analyze lying://bucket/run`` stages from it exactly as from S3.
"""

from __future__ import annotations

import os
from pathlib import Path

import fsspec
from fsspec.implementations.memory import MemoryFileSystem


class _Zeros:
    """A read-only file of endless zero bytes."""

    closed = False

    def read(self, n: int = -1) -> bytes:
        return bytes(min(n, 1 << 20) if n and n > 0 else 1 << 20)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class LyingFileSystem(MemoryFileSystem):
    protocol = "lying"
    #: path suffix -> size the listing announces
    announced: dict[str, int] = {}
    #: path suffixes whose content never ends
    endless: set[str] = set()

    @classmethod
    def _strip_protocol(cls, path):
        if isinstance(path, str) and path.startswith("lying://"):
            path = "memory://" + path[len("lying://"):]
        return super()._strip_protocol(path)

    def _lie(self, entry: dict) -> dict:
        for suffix, size in self.announced.items():
            if entry["name"].endswith(suffix):
                return {**entry, "size": size}
        return entry

    def info(self, path, **kwargs):
        return self._lie(super().info(path, **kwargs))

    def ls(self, path, detail=True, **kwargs):
        out = super().ls(path, detail=detail, **kwargs)
        return [self._lie(e) for e in out] if detail else out

    def find(self, path, maxdepth=None, withdirs=False, detail=False, **kwargs):
        out = super().find(path, maxdepth=maxdepth, withdirs=withdirs, detail=detail, **kwargs)
        return {k: self._lie(v) for k, v in out.items()} if detail else out

    def _open(self, path, mode="rb", **kwargs):
        if mode == "rb" and any(self._strip_protocol(path).endswith(s) for s in self.endless):
            return _Zeros()
        return super()._open(path, mode, **kwargs)


def install(folder: str | os.PathLike[str], under: str, announced: dict[str, int] | None = None,
            endless: tuple[str, ...] = ()) -> None:
    """Copy the local ``folder`` to ``lying://{under}`` and register the scheme."""
    fsspec.register_implementation("lying", LyingFileSystem, clobber=True)
    LyingFileSystem.announced = dict(announced or {})
    LyingFileSystem.endless = set(endless)
    fs = LyingFileSystem()
    base = Path(folder)
    for path in base.rglob("*"):
        if path.is_file():
            fs.pipe(f"/{under}/{path.relative_to(base).as_posix()}", path.read_bytes())
