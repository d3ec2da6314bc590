"""Opening a log within bounds: plain or gzip, refused past documented sizes.

Limits (documented in ``docs/integrations/reader.md``): a log file of at
most :data:`MAX_BYTES` (after decompression for ``.gz``; a gzip bomb stops
at the limit), a JSON document read whole of at most :data:`MAX_JSON`
bytes. Devices, FIFOs and sockets are refused before they are opened, so
``/dev/zero`` or a pipe never blocks or fills memory.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from runlens.errors import ImportFailedError

if TYPE_CHECKING:  # typing_extensions is the type checker's, not a runtime dependency
    from typing_extensions import Buffer  # collections.abc.Buffer is 3.12+

MAX_BYTES = 2 << 30
MAX_JSON = 256 << 20
HEAD = 262_144
_GZIP = b"\x1f\x8b"


def check_regular(path: str | os.PathLike[str]) -> os.stat_result:
    """The stat of ``path``, refusing anything that is not a regular file."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise ImportFailedError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(st.st_mode):
        what = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file (a device, FIFO or socket)"
        raise ImportFailedError(f"{path}: {what}; a log is a regular file")
    return st


def is_gzip(path: str | os.PathLike[str]) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == _GZIP


def open_binary(path: str | os.PathLike[str]) -> io.BufferedIOBase:
    """A binary stream of the log's bytes (decompressed for gzip)."""
    check_regular(path)
    return gzip.open(path, "rb") if is_gzip(path) else open(path, "rb")


def head_bytes(path: str | os.PathLike[str], n: int = HEAD) -> bytes:
    with open_binary(path) as f:
        try:
            return f.read(n)
        except (OSError, EOFError) as exc:
            raise ImportFailedError(f"{path}: a broken gzip stream ({exc})") from None


def read_all(path: Path, limit: int = MAX_BYTES) -> bytes:
    """Every byte of the log, refusing one larger than ``limit`` (decompressed size for gzip)."""
    st = check_regular(path)
    if not is_gzip(path) and st.st_size > limit:
        raise ImportFailedError(f"{path}: {st.st_size >> 20} MiB; logs are read up to {limit >> 20} MiB")
    out = io.BytesIO()
    with open_binary(path) as f:
        try:
            while chunk := f.read(1 << 22):
                out.write(chunk)
                if out.tell() > limit:
                    raise ImportFailedError(f"{path}: more than {limit >> 20} MiB once decompressed; "
                                            f"logs are read up to {limit >> 20} MiB")
        except (OSError, EOFError) as exc:
            raise ImportFailedError(f"{path}: a broken gzip stream ({exc})") from None
    return out.getvalue()


def decode(data: bytes) -> str:
    """Text of a log: UTF-8 (BOM dropped), UTF-16 when it starts with its BOM, bad bytes replaced."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return data.decode("utf-16", "replace")
    return data.decode("utf-8", "replace").lstrip("\ufeff")


class Limited(io.RawIOBase):
    """A stream that refuses to give more than ``limit`` bytes (a gzip bomb ends in one line, not a full disk)."""

    def __init__(self, raw: io.BufferedIOBase, path: Path, limit: int | None = None) -> None:
        self.raw, self.path = raw, path
        self.left = MAX_BYTES if limit is None else limit

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Buffer) -> int:
        try:
            n = self.raw.readinto(buf)
        except (OSError, EOFError) as exc:
            raise ImportFailedError(f"{self.path}: a broken gzip stream ({exc})") from None
        self.left -= n or 0
        if self.left < 0:
            raise ImportFailedError(f"{self.path}: more than {MAX_BYTES >> 20} MiB of text; logs are read up "
                                    f"to {MAX_BYTES >> 20} MiB (after decompression)")
        return n

    def close(self) -> None:
        self.raw.close()
        super().close()


def open_limited(path: Path) -> io.BufferedReader:
    """:func:`open_binary` within :data:`MAX_BYTES` (decompressed), buffered."""
    return io.BufferedReader(Limited(open_binary(path), path))
