"""Where assembled models live, and a small cache of model file digests.

The model cache directory is ``$DCEM_MODEL_CACHE`` when set, else ``models/`` under the
user's cache (``$XDG_CACHE_HOME/dcem/models`` or ``~/.cache/dcem/models``).  It is never
inside an installed package (``site-packages``): packages can be read-only and are
replaced on upgrade.

Hashing a model file takes about a second per 250 MB, so digests are kept in
``sha256.json`` inside that directory, keyed by the absolute path and valid while the
file's size, modification time, status-change time (``st_ctime``, which ``touch -r``
cannot set back) and inode are unchanged.

A file whose content must be exactly known (the assembled Gemma file) is checked with
:func:`verify_sha256`, which hashes the whole file once per process and never trusts
the digest cache, so a corrupted file of the same size is found and rebuilt.
"""
from __future__ import annotations

import json
import logging
import os
import sysconfig
import threading
from pathlib import Path

from runtime.backends import BackendError
from runtime.llama_backend import file_sha256

__all__ = ["CACHE_ENV", "DIGEST_FILE", "model_cache_dir", "cached_sha256", "remember_sha256", "verify_sha256"]

CACHE_ENV = "DCEM_MODEL_CACHE"
DIGEST_FILE = "sha256.json"

log = logging.getLogger(__name__)
_lock = threading.Lock()
_verified: dict[str, tuple[tuple[int, int, int, int], str]] = {}  # verified in this process


def _install_dirs() -> list[Path]:
    paths = sysconfig.get_paths()
    return [Path(paths[k]).resolve() for k in ("purelib", "platlib") if k in paths]


def model_cache_dir(create: bool = True) -> Path:
    """The model cache directory (created when ``create``).

    Raises :class:`BackendError` when it would be inside site-packages or cannot be
    created.
    """
    override = os.environ.get(CACHE_ENV, "").strip()
    if override:
        base = Path(override).expanduser()
    else:
        user_cache = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
        base = Path(user_cache).expanduser() / "dcem" / "models"
    base = base.resolve()
    for install in _install_dirs():
        if base == install or install in base.parents:
            raise BackendError(f"{CACHE_ENV}: the model cache {base} is inside the Python install "
                               f"({install}); choose a directory outside site-packages")
    if create:
        try:
            base.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BackendError(f"{CACHE_ENV}: cannot create the model cache {base} ({exc.strerror})") from None
    return base


def _stamp(path: Path) -> tuple[int, int, int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino


def _matches(entry: object, stamp: tuple[int, int, int, int]) -> bool:
    return (isinstance(entry, dict) and isinstance(entry.get("sha256"), str)
            and (entry.get("size"), entry.get("mtime_ns"), entry.get("ctime_ns"), entry.get("inode")) == stamp)


def _load(file: Path) -> dict[str, dict[str, object]]:
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable digest cache %s: %s", file, exc)
        return {}
    return data if isinstance(data, dict) else {}


def _store(file: Path, key: str, stamp: tuple[int, int, int, int], digest: str) -> None:
    size, mtime_ns, ctime_ns, inode = stamp
    with _lock:
        data = _load(file)
        data[key] = {"size": size, "mtime_ns": mtime_ns, "ctime_ns": ctime_ns, "inode": inode, "sha256": digest}
        tmp = file.with_name(f"{file.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
            os.replace(tmp, file)
        except OSError as exc:
            log.warning("cannot write the digest cache %s: %s", file, exc)
            tmp.unlink(missing_ok=True)


def _digest_file() -> Path | None:
    try:
        return model_cache_dir() / DIGEST_FILE
    except BackendError as exc:
        log.warning("model digests are not cached: %s", exc)
        return None


def cached_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file, from the digest cache when size, mtime, ctime and inode still match."""
    path = Path(path).absolute()
    if not path.is_file():
        raise BackendError(f"model file not found: {path}")
    stamp = _stamp(path)
    cache = _digest_file()
    key = str(path)
    if cache is not None:
        entry = _load(cache).get(key)
        if _matches(entry, stamp):
            return str(entry["sha256"])  # type: ignore[index]
    digest = file_sha256(path)
    if cache is not None:
        _store(cache, key, stamp, digest)
    return digest


def verify_sha256(path: str | os.PathLike[str], expected: str) -> bool:
    """Whether the file's content has the SHA-256 ``expected``.

    The whole file is hashed the first time in a process (the digest cache is not
    trusted: a same-size corrupted file keeps its size and may keep its mtime), then the
    answer is remembered for this process while the file's stamp is unchanged.
    """
    path = Path(path).absolute()
    if not path.is_file():
        return False
    stamp = _stamp(path)
    with _lock:
        if _verified.get(str(path)) == (stamp, expected):
            return True
    digest = file_sha256(path)
    cache = _digest_file()
    if cache is not None:
        _store(cache, str(path), stamp, digest)
    if digest != expected:
        return False
    with _lock:
        _verified[str(path)] = (stamp, expected)
    return True


def remember_sha256(path: str | os.PathLike[str], digest: str) -> None:
    """Record a digest already known to be right (e.g. verified after assembling); it also
    counts as verified (:func:`verify_sha256`) in this process."""
    path = Path(path).absolute()
    stamp = _stamp(path)
    with _lock:
        _verified[str(path)] = (stamp, digest)
    cache = _digest_file()
    if cache is not None:
        _store(cache, str(path), stamp, digest)
