"""The store behind a shipped evaluation file.

An evaluation export ``data/results/<name>.json`` keeps the metrics and every item's
answer, not the debates.  The store the evaluation was made in may ship beside it, gzipped,
as ``<name>.duckdb.gz``: every debate, every outcome and the call log.
:func:`import_shipped_store` unpacks it into a temporary file and merges it into a result
store (:func:`common.store_merge.merge_store`: rows the store lacks, one transaction), so
the debates behind the file's numbers can be opened on the Agent group page, and running
the same evaluation again answers every turn from the call log.
"""
from __future__ import annotations

import gzip
import shutil
import tempfile
import zlib
from pathlib import Path

from common.db import StoreError
from common.errors import InputError
from common.store_merge import MergeReport, merge_store
from sag.store.eval_tables import evaluations
from sag.store.merge_checks import sag_store_checks
from sag.store.tables import SagStore

__all__ = ["companion_store", "import_shipped_store"]

PACKED_SUFFIX = ".duckdb.gz"


def companion_store(export: str | Path) -> Path | None:
    """The packed store shipped beside the export file ``export``, or None."""
    path = Path(export)
    packed = path.with_name(path.stem + PACKED_SUFFIX)
    return packed if packed.is_file() else None


def import_shipped_store(target: SagStore, packed: str | Path, eval_id: str) -> MergeReport:
    """Merge the gzipped store ``packed`` into ``target`` and check that it brought the
    evaluation ``eval_id``.  InputError for a file that cannot be unpacked, is not a SAG
    evaluation store or does not hold the evaluation; StoreError from the merge (a target
    whose tables differ from the source's, say).  The target is unchanged after any of them."""
    packed = Path(packed)
    with tempfile.TemporaryDirectory(prefix="sag-shipped-") as tmp:
        raw = Path(tmp) / packed.name.removesuffix(".gz")
        try:
            with gzip.open(packed, "rb") as src, raw.open("wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError("shipped store", f"{packed.name} cannot be unpacked: {exc}") from None
        if eval_id not in _evaluation_ids(raw, packed.name):
            raise InputError("shipped store", f"{packed.name} does not hold the evaluation {eval_id!r}; "
                             "nothing was imported")
        return merge_store(target, raw, sag_store_checks())


def _evaluation_ids(raw: Path, name: str) -> set[str]:
    """The evaluations of the unpacked store file ``raw`` (shipped as ``name``)."""
    try:
        with SagStore(raw, read_only=True) as store:
            return set(evaluations(store)["eval_id"])
    except StoreError as exc:
        reason = str(exc).splitlines()[0].replace(str(raw), name)
        raise InputError("shipped store", f"{name} is not a SAG evaluation store ({reason})") from None
