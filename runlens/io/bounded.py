"""Bounded reading: integers the machine can hold, files that are files, sizes with a ceiling.

JSON and text logs can spell any integer (``"pid": 1180591620717411303424``,
a CSV step of ``9223372036854775808``); Python holds it, but ``os.kill``,
numpy and Arrow raise ``OverflowError`` on it. The readers call
:func:`bounded_int` where such a value enters, so it becomes "unknown" with
a warning instead of a traceback further down.

A path where a file is expected may name a FIFO (``open`` waits for a
writer forever), a device (``/dev/zero`` never ends) or a socket.
:func:`read_regular` opens without blocking, refuses anything but a regular
file by name, and reads at most a documented number of bytes;
:func:`loads_json` turns the parser's recursion limit (a document nested
100,000 deep) into the same one-line error as any other malformed JSON.

Remote runs are staged under byte ceilings of their own (``MAX_STAGED_*``,
applied by ``runlens.io.remote``), and network filesystems get connect and
read timeouts (:func:`fsspec_timeouts`, :func:`pyarrow_timeouts`, applied by
``runlens.io.discover.url_filesystem``).
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from recorders.merge import MAX_PART_ROWS as _PART_ROWS

if TYPE_CHECKING:
    import pyarrow.fs as pafs

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

#: The most bytes read from a run.json or a ``--config`` file; a real one is a few kB to a few MB
#: (a layers list for 10,000 parameters is about 2 MB).
MAX_JSON_BYTES = 64 << 20
#: Rows decoded from one Parquet part at most (the recorder's compaction writes parts of
#: 2,000,000). The footer's counts are checked before decoding and the rows counted again as
#: batches are decoded (a footer can understate them); a part past it is skipped (loader) or a
#: violation (validate). The number is the recorder's own (``recorders.merge.MAX_PART_ROWS``),
#: which its compaction and resume read under.
MAX_PART_ROWS = _PART_ROWS
#: Columns of one part at most (a scalars part with one column per class of a 1,000-class
#: model has 1,000): Arrow's decoding costs about 0.1 ms per column and per part, so a part of
#: 150,000 columns would take minutes; it is skipped with a warning, its schema alone read.
MAX_PART_COLUMNS = 10_000
#: Rows read into one table at most (ten times the engine's 10^7-row benchmark); past it the
#: run is refused in one line rather than read until memory runs out.
MAX_TABLE_ROWS = 100_000_000

#: The most bytes staged from one remote file (a part or a log), the text reader's own ceiling
#: for a local log (``runlens.io.reader.source.MAX_BYTES``); run.json keeps ``MAX_JSON_BYTES``.
MAX_STAGED_FILE_BYTES = 2 << 30
#: The most bytes staged from one remote run in all (into a temporary folder): eight files at the
#: file ceiling; the 10^7-step benchmark run, 10^8 layer rows, is 1.3 GB of parts.
MAX_STAGED_RUN_BYTES = 16 << 30
#: Seconds to wait for a network filesystem to accept a connection, and between two reads of a
#: response (not for the whole transfer: a large file on a slow link may take longer).
CONNECT_SECONDS = 20.0
READ_SECONDS = 60.0



def fsspec_timeouts(url: str) -> dict[str, Any]:
    """Storage options that bound an fsspec filesystem's network waits (``url_to_fs(url, **them)``).

    HTTP(S) is fsspec's aiohttp client, whose default waits 5 minutes in all for one response
    and has no read timeout: ``CONNECT_SECONDS`` to connect, ``READ_SECONDS`` between reads.
    Other fsspec schemes take no common timeout option and get none.
    """
    if url.split(":", 1)[0].lower() not in ("http", "https"):
        return {}
    import aiohttp

    return {"client_kwargs": {"timeout": aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_SECONDS,
                                                               sock_read=READ_SECONDS)}}


def pyarrow_timeouts(fs: pafs.FileSystem) -> pafs.FileSystem:
    """``fs`` (a pyarrow FileSystem) with bounded network waits: S3's connect and request timeouts,
    GCS's retry time limit; any other filesystem as it is."""
    import datetime as dt

    import pyarrow.fs as pafs

    # A pyarrow built without S3 or GCS has no such class (and no such filesystem to bound).
    s3, gcs = getattr(pafs, "S3FileSystem", ()), getattr(pafs, "GcsFileSystem", ())
    if not isinstance(fs, (s3, gcs)):
        return fs
    # Their options are given at construction only: rebuilt from their own state.
    rebuild, (options,) = fs.__reduce__()
    if isinstance(fs, s3):
        options.update(connect_timeout=CONNECT_SECONDS, request_timeout=READ_SECONDS)
    else:
        options.update(retry_time_limit=dt.timedelta(seconds=READ_SECONDS))
    return rebuild(options)


_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


def special_kind(mode: int) -> str | None:
    """What a non-regular file is, in words ("a FIFO (named pipe)"); None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((word for test, word in _KINDS if test(mode)), "not a regular file")


def read_regular(path: str | os.PathLike[str], limit: int, error: type[Exception] = OSError) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them.

    Opened with ``O_NONBLOCK`` (a FIFO does not wait for a writer) and
    checked with ``fstat`` on the open file (no race with a rename): a FIFO,
    device, socket or folder raises ``error`` naming the path and what it
    is; so does a file longer than ``limit`` bytes. ``OSError`` from
    opening or reading propagates.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        kind = special_kind(os.fstat(fd).st_mode)
        if kind is not None:
            raise error(f"{os.fsdecode(path)}: is {kind}, not a regular file; refusing to read it")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise error(f"{os.fsdecode(path)}: larger than {limit >> 20} MiB, the most runlens reads from such a file")
    return data


def loads_json(text: str | bytes) -> Any:
    """``json.loads`` that raises ``ValueError`` (as for any malformed JSON) on a document nested
    past the interpreter's recursion limit, instead of ``RecursionError``."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply (more levels than a JSON reader can follow)") from None


def is_int(value: Any) -> bool:
    """Whether ``value`` is a JSON integer (``True``/``False`` are not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def in_int64(value: int) -> bool:
    """Whether ``value`` fits a signed 64-bit integer."""
    return INT64_MIN <= value <= INT64_MAX


def bounded_int(value: Any, what: str, warnings: list[str] | None = None, *,
                minimum: int = INT64_MIN, maximum: int = INT64_MAX) -> int | None:
    """``value`` when it is an integer within ``[minimum, maximum]``, else None.

    Out of range (beyond int64 unless narrower bounds are given), a line
    naming ``what`` goes to ``warnings``; a value that is not an integer at
    all is returned as None without a warning (type errors are the caller's
    to report, with the caller's wording).
    """
    if not is_int(value):
        return None
    if minimum <= value <= maximum:
        return value
    if warnings is not None:
        limit = ("beyond what a 64-bit integer holds" if (minimum, maximum) == (INT64_MIN, INT64_MAX)
                 else f"outside {minimum}..{maximum}")
        warnings.append(f"{what} is {_short(value)}, {limit}; treated as unknown")
    return None


def parse_bounded_int(text: str, what: str, warnings: list[str] | None = None) -> int | None:
    """An int64 from the decimal text of an integer (a CSV cell, a log line); None when the
    text is not an integer or does not fit (with a warning, as :func:`bounded_int`)."""
    text = text.strip()
    if not text or len(text) > 4300:  # int() itself refuses longer digit strings
        return None
    try:
        value = int(text)
    except ValueError:
        return None
    return bounded_int(value, what, warnings)


def _short(value: int) -> str:
    digits = str(value)
    return digits if len(digits) <= 24 else f"{digits[:10]}...({len(digits)} digits)"


def bounded_steps(values: Iterable[Any], what: str, warnings: list[str]) -> np.ndarray:
    """Steps as int64 (a float truncated, as ``int()`` does), -1 (the importers' "no step")
    for a missing or negative value or one beyond int64; one line in ``warnings`` counts
    those beyond int64."""
    out, beyond = [], 0
    for v in values:
        if isinstance(v, float) and math.isfinite(v):
            v = int(v)
        if not is_int(v) or v < 0:
            out.append(-1)
        elif v > INT64_MAX:
            out.append(-1)
            beyond += 1
        else:
            out.append(v)
    if beyond:
        warnings.append(f"{beyond} row(s) with a {what} beyond what a 64-bit integer holds: skipped")
    return np.array(out, dtype=np.int64)


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` that refuses aliases (``*name``) with ``yaml.YAMLError``.

    A "billion laughs" document is a few hundred bytes of anchors, each a list
    of ten aliases of the one before: PyYAML builds it as shared references,
    cheaply, and it expands only when written out (a run's config in run.json),
    to 10^9 items. Metadata files that training tools write (MLflow's
    ``meta.yaml``, Lightning's ``hparams.yaml``) never use aliases.
    """
    import yaml

    class NoAliases(yaml.SafeLoader):
        def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node | None:
            if self.check_event(yaml.AliasEvent):
                mark = self.peek_event().start_mark
                raise yaml.composer.ComposerError(None, None, "YAML aliases are refused (they can expand "
                                                  "a small file into billions of items)", mark)
            return super().compose_node(parent, index)

    return yaml.load(text, Loader=NoAliases)  # noqa: S506 - a SafeLoader subclass
