"""The store behind a shipped evaluation file.

An evaluation export ``data/results/<name>.json`` keeps the metrics and every item's
answer, not the debates.  The store the evaluation was made in ships beside it as the
folder ``<name>/``, a compact export of every debate, every outcome and the call log
(:mod:`sag.runs.store_export`); an older copy may hold it gzipped instead, as
``<name>.duckdb.gz``.  :func:`import_shipped_store` merges either into a result store
(:func:`common.store_merge.merge_store`: rows the store lacks, one transaction), so the
debates behind the file's numbers can be opened on the Agent group page, and running the
same evaluation again answers every turn from the call log.
"""
from __future__ import annotations

import gzip
import zlib
from pathlib import Path

from common.db import StoreError
from common.errors import InputError
from common.scratch import scratch_folder
from common.store_merge import MergeReport, merge_store
from common.table_export import MANIFEST
from sag.runs.store_export import import_store_export
from sag.store.eval_tables import evaluations
from sag.store.merge_checks import sag_store_checks
from sag.store.tables import SagStore

__all__ = ["companion_store", "store_size", "import_shipped_store", "unpack_store", "MAX_UNPACKED_BYTES"]

PACKED_SUFFIX = ".duckdb.gz"
MAX_UNPACKED_BYTES = 1 << 30  # 1 GiB; the shipped store unpacks to about 137 MB
GZIP_MAGIC = b"\x1f\x8b"
DUCKDB_MAGIC, DUCKDB_MAGIC_AT = b"DUCK", 8  # a DuckDB file's header: "DUCK" at byte 8
_CHUNK = 1 << 20


def companion_store(export: str | Path) -> Path | None:
    """The store shipped beside the export file ``export``: the export folder of the same
    name, else a packed store ``<name>.duckdb.gz``; None when neither is there."""
    path = Path(export)
    folder = path.with_name(path.stem)
    if (folder / MANIFEST).is_file():
        return folder
    packed = path.with_name(path.stem + PACKED_SUFFIX)
    return packed if packed.is_file() else None


def store_size(shipped: Path) -> int:
    """Bytes of a shipped store: the export folder's files, or the packed file."""
    return sum(p.stat().st_size for p in shipped.iterdir() if p.is_file()) if shipped.is_dir() else \
        shipped.stat().st_size


def import_shipped_store(target: SagStore, packed: str | Path, eval_id: str, *,
                         limit: int | None = None) -> MergeReport:
    """Merge the shipped store ``packed`` (an export folder, or a gzipped store file) into
    ``target`` and check that it brought the evaluation ``eval_id``.  InputError for a file that cannot be unpacked, unpacks to more
    than ``limit`` bytes (default :data:`MAX_UNPACKED_BYTES`), is not a SAG evaluation
    store or does not hold the evaluation; StoreError from the merge (a target whose tables
    differ from the source's, say).  The target is unchanged after any of them."""
    packed = Path(packed)
    if packed.is_dir():
        return import_store_export(target, packed, eval_id)
    with scratch_folder("sag-shipped-") as tmp:
        raw = tmp / packed.name.removesuffix(".gz")
        unpack_store(packed, raw, limit)
        if eval_id not in _evaluation_ids(raw, packed.name):
            raise InputError("shipped store", f"{packed.name} does not hold the evaluation {eval_id!r}; "
                             "nothing was imported")
        return merge_store(target, raw, sag_store_checks())


def _declared_size(packed: Path) -> int:
    """The gzip's declared unpacked size (its ISIZE trailer: the size modulo 2**32 of its
    last member, so a lower bound of the whole); InputError for a file that is not gzip."""
    try:
        with packed.open("rb") as f:
            head = f.read(len(GZIP_MAGIC))
            size = f.seek(0, 2)
            if head != GZIP_MAGIC or size < 18:  # 10-byte header, 8-byte trailer
                raise InputError("shipped store", f"{packed.name} cannot be unpacked: it is not a gzip file")
            f.seek(size - 4)
            return int.from_bytes(f.read(4), "little")
    except OSError as exc:
        raise InputError("shipped store", f"{packed.name} cannot be unpacked: {exc.strerror or exc}") from None


def _too_large(packed: Path, limit: int, what: str) -> InputError:
    return InputError("shipped store", f"{packed.name} cannot be unpacked: it {what} more than the limit of "
                      f"{limit:,} bytes ({limit / 2**20:,.0f} MiB); nothing was imported")


def unpack_store(packed: str | Path, raw: str | Path, limit: int | None = None) -> None:
    """Unpack the gzipped DuckDB file ``packed`` into ``raw``, at most ``limit`` bytes
    (default :data:`MAX_UNPACKED_BYTES`).

    Refused with an InputError, ``raw`` removed, before DuckDB opens anything: a file that
    is not gzip; a declared size (ISIZE) above the limit; a stream that passes the limit
    (checked while unpacking, stopping at once: the declared size is only modulo 2**32); a
    truncated or damaged gzip; a payload without DuckDB's header."""
    packed, raw = Path(packed), Path(raw)
    limit = MAX_UNPACKED_BYTES if limit is None else limit
    if _declared_size(packed) > limit:
        raise _too_large(packed, limit, "declares an unpacked size of")
    header = DUCKDB_MAGIC_AT + len(DUCKDB_MAGIC)
    written, head = 0, b""
    try:
        with gzip.open(packed, "rb") as src, raw.open("wb") as dst:
            while chunk := src.read(_CHUNK):
                written += len(chunk)
                if written > limit:
                    raise _too_large(packed, limit, "unpacks to")
                if len(head) < header:
                    head += chunk[: header - len(head)]
                    if len(head) == header:
                        _check_header(packed, head)
                dst.write(chunk)
        if len(head) < header:
            _check_header(packed, head)
    except (OSError, EOFError, zlib.error) as exc:
        raw.unlink(missing_ok=True)
        raise InputError("shipped store", f"{packed.name} cannot be unpacked: {exc}") from None
    except InputError:
        raw.unlink(missing_ok=True)
        raise


def _check_header(packed: Path, head: bytes) -> None:
    if head[DUCKDB_MAGIC_AT:] != DUCKDB_MAGIC:
        raise InputError("shipped store", f"{packed.name} is not a SAG evaluation store (its content is not a "
                         "DuckDB database); nothing was imported")


def _evaluation_ids(raw: Path, name: str) -> set[str]:
    """The evaluations of the unpacked store file ``raw`` (shipped as ``name``)."""
    try:
        with SagStore(raw, read_only=True) as store:
            return set(evaluations(store)["eval_id"])
    except StoreError as exc:
        reason = str(exc).splitlines()[0].replace(str(raw), name)
        raise InputError("shipped store", f"{name} is not a SAG evaluation store ({reason})") from None
