"""Evidence retrieval for knowledge agents: a BM25 index over one corpus, cached on disk.

``Retriever("pubmedqa")`` indexes the passages of :func:`clinical.corpora.load_corpus`
with `bm25s <https://github.com/xhluca/bm25s>`_ (Lucene BM25, k1 = 1.5, b = 0.75) over
each passage's title and text.  :meth:`Retriever.search` returns the top passages as
:class:`Hit` objects whose ``passage_id`` an agent cites.

Tokens (:func:`tokenize`): lower-cased runs of two or more word characters, without the
179 English stopwords of bm25s (NLTK's list), each reduced by Harman's "S" stemmer
(``arteries`` -> ``artery``, ``symptoms`` -> ``symptom``); no compiled stemmer is needed.

The index is built once per corpus content and kept under the cache directory
(``cache_dir``; else the environment variable ``DCEM_INDEX_CACHE``; else
``$XDG_CACHE_HOME/dcem``, by default ``~/.cache/dcem``) in ``bm25/<corpus>-<first 16 hex of corpus_digest>/``, next to a
``manifest.json`` naming the corpus, its full digest, the tokenizer version and the
passage count.  It is written into a temporary folder and renamed into place, so a crash
never leaves a half-written index under that name.  The next construction loads it; a
folder that cannot be read or does not match its manifest is logged as a warning, removed
and rebuilt; folders of the same corpus with another digest are removed.  When the cache
cannot be written the index stays in memory only (with a warning).
"""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Collection, Iterable, Mapping

import numpy as np

from clinical.corpora import CORPORA, Passage, corpus_digest, load_corpus
from common.bm25 import STOPWORDS_EN_PLUS, bm25s
from common.errors import ConfigError, InputError
from common.fields import Instance, Whole, check

__all__ = ["Hit", "Retriever", "retrievers", "query_for", "tokenize", "default_cache_dir",
           "CACHE_ENV", "MAX_QUERY_CHARS", "TOKENIZER_VERSION"]

log = logging.getLogger(__name__)

CACHE_ENV = "DCEM_INDEX_CACHE"
MAX_QUERY_CHARS = 1500
TOKENIZER_VERSION = "en-nltk179-sstem-1"  # change it whenever tokenize() changes: caches rebuild
MANIFEST = "manifest.json"
_FORMAT = 1
_BM25_PARAMS: dict[str, Any] = {"k1": 1.5, "b": 0.75, "method": "lucene"}
_STALE_TMP_SECONDS = 3600.0
_TOKEN = re.compile(r"(?u)\b\w\w+\b")
_STOPWORDS = frozenset(STOPWORDS_EN_PLUS)


@dataclass(frozen=True)
class Hit:
    """One retrieved passage: its id (to cite), BM25 score (> 0), title, text and corpus;
    ``source_id`` is the record it came from (the PMID for PubMedQA)."""

    passage_id: str
    score: float
    title: str
    text: str
    corpus: str
    source_id: str = ""


def _s_stem(word: str) -> str:
    """Harman's "S" stemmer (1991): strip English plural endings only."""
    if len(word) > 3:
        if word.endswith("ies") and not word.endswith(("eies", "aies")):
            return word[:-3] + "y"
        if word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
            return word[:-1]
        if word.endswith("s") and not word.endswith(("us", "ss")):
            return word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """The index tokens of ``text``: lower-cased words without stopwords, "S"-stemmed."""
    return [_s_stem(word) for word in _TOKEN.findall(text.lower()) if word not in _STOPWORDS]


def default_cache_dir() -> Path:
    """``$DCEM_INDEX_CACHE`` if set and non-empty, else ``$XDG_CACHE_HOME/dcem`` (by default
    ``~/.cache/dcem``, beside the model cache); indexes go in its ``bm25/`` folder."""
    configured = os.environ.get(CACHE_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    user_cache = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(user_cache).expanduser() / "dcem"


def _build_index(token_lists: list[list[str]]) -> bm25s.BM25:
    """A fresh BM25 index over the given token lists (one per passage, in order)."""
    model = bm25s.BM25(**_BM25_PARAMS)
    model.index(token_lists, show_progress=False)
    return model


class _CacheError(Exception):
    """The cached index folder cannot be used; the message says why."""


def _check_arrays(model: bm25s.BM25, n_docs: int) -> None:
    """Raise :class:`_CacheError` unless the loaded sparse matrix is consistent."""
    scores = model.scores
    data, indices, indptr = (np.asarray(scores[key]) for key in ("data", "indices", "indptr"))
    if scores.get("num_docs") != n_docs:
        raise _CacheError(f"index holds {scores.get('num_docs')} passages, the corpus {n_docs}")
    if data.ndim != 1 or data.shape != indices.shape or indptr.ndim != 1 or len(indptr) < 1:
        raise _CacheError("score arrays have inconsistent shapes")
    if int(indptr[-1]) != len(data) or np.any(np.diff(indptr) < 0):
        raise _CacheError("score array offsets are inconsistent")
    if len(indices) and (int(indices.min()) < 0 or int(indices.max()) >= n_docs):
        raise _CacheError("score array refers to passages outside the corpus")
    if len(indptr) - 1 > len(model.vocab_dict) or not np.all(np.isfinite(data)):
        raise _CacheError("vocabulary or scores are damaged")


def _load_cached(folder: Path, manifest: dict[str, Any]) -> bm25s.BM25:
    """The index saved in ``folder``; :class:`_CacheError` if it is unusable."""
    try:
        stored = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise _CacheError(f"manifest unreadable: {exc}") from None
    if stored != manifest:
        raise _CacheError("manifest does not match this corpus and tokenizer")
    try:
        model = bm25s.BM25.load(folder, mmap=False, show_progress=False)
    except Exception as exc:  # bm25s/numpy raise many types for damaged files
        raise _CacheError(f"index files unreadable: {type(exc).__name__}: {exc}") from None
    _check_arrays(model, int(manifest["passages"]))
    return model


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _save_atomically(model: bm25s.BM25, folder: Path, manifest: dict[str, Any]) -> None:
    """Write the index and manifest to a temporary sibling folder, then rename it to ``folder``."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".tmp", dir=folder.parent))
    try:
        model.save(tmp, show_progress=False)
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True), encoding="utf-8")
        os.chmod(tmp, 0o755)  # mkdtemp makes it private; the cache is an ordinary folder
        try:
            os.rename(tmp, folder)
        except OSError:
            if not folder.is_dir():
                raise
            log.info("bm25 index %s was written by another process meanwhile; keeping that one", folder)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _prune(folder: Path, corpus: str) -> None:
    """Remove folders of ``corpus`` with another digest and stale temporary folders."""
    other = re.compile(rf"{re.escape(corpus)}-[0-9a-f]{{16}}")
    temporary = re.compile(rf"\.{re.escape(corpus)}-[0-9a-f]{{16}}\..*\.tmp")
    now = time.time()
    for path in folder.parent.iterdir():
        if path.name != folder.name and other.fullmatch(path.name):
            log.info("removing the bm25 index of an older %s corpus: %s", corpus, path)
            _remove(path)
        elif temporary.fullmatch(path.name) and now - path.stat().st_mtime > _STALE_TMP_SECONDS:
            log.info("removing a temporary bm25 folder left by an interrupted build: %s", path)
            _remove(path)


class Retriever:
    """BM25 search over one corpus of :data:`clinical.corpora.CORPORA`.

    Parameters
    ----------
    corpus : str
        The corpus name; an unknown one raises :class:`~common.errors.ConfigError`.
    cache_dir : Path, optional
        Root of the on-disk cache (default :func:`default_cache_dir`); the index lives in
        ``bm25/<corpus>-<digest[:16]>/`` below it.
    data_dir : Path or str, optional
        Data folder of the corpus files (default: the project's ``data/``).

    After construction ``built`` tells whether the index was built (True) or loaded from
    the cache (False), and ``open_seconds`` how long that took.
    """

    def __init__(self, corpus: str, *, cache_dir: Path | None = None,
                 data_dir: Path | str | None = None) -> None:
        self.corpus = corpus
        self.passages: tuple[Passage, ...] = load_corpus(corpus, data_dir=data_dir)
        self.digest = corpus_digest(corpus, data_dir=data_dir)
        root = default_cache_dir() if cache_dir is None else Path(cache_dir)
        self.index_dir = root / "bm25" / f"{corpus}-{self.digest[:16]}"
        self.built = False
        start = time.perf_counter()
        self._model = self._open()
        self.open_seconds = time.perf_counter() - start

    def __len__(self) -> int:
        return len(self.passages)

    def __repr__(self) -> str:
        return f"Retriever({self.corpus!r}, passages={len(self)}, index_dir={str(self.index_dir)!r})"

    def _manifest(self) -> dict[str, Any]:
        return {"format": _FORMAT, "corpus": self.corpus, "digest": self.digest,
                "tokenizer": TOKENIZER_VERSION, "bm25": dict(_BM25_PARAMS), "passages": len(self.passages)}

    def _open(self) -> bm25s.BM25:
        """Load the cached index, or build it (and cache it) when absent or unusable."""
        folder, manifest = self.index_dir, self._manifest()
        if folder.exists() or folder.is_symlink():
            try:
                model = _load_cached(folder, manifest)
                log.debug("loaded the bm25 index of %s from %s", self.corpus, folder)
                return model
            except _CacheError as exc:
                log.warning("bm25 index cache %s is unusable (%s); rebuilding it", folder, exc)
                _remove(folder)
        start = time.perf_counter()
        model = _build_index([tokenize(f"{p.title}\n{p.text}") for p in self.passages])
        self.built = True
        log.info("built the bm25 index of %s (%d passages) in %.2f s", self.corpus, len(self.passages),
                 time.perf_counter() - start)
        try:
            _save_atomically(model, folder, manifest)
            _prune(folder, self.corpus)
        except OSError as exc:
            log.warning("cannot write the bm25 index cache %s (%s); using the index in memory only", folder, exc)
        return model

    def search(self, query: str, *, k: int = 3, exclude_sources: Collection[str] = ()) -> list[Hit]:
        """The ``k`` best passages for ``query`` by BM25 score, best first.

        Every passage is scored and the list walked in score order (ties in corpus order),
        skipping passages whose ``source_id`` is in ``exclude_sources`` (a single string
        counts as one id) and passages whose text equals a better hit's text (the
        MedlinePlus file repeats some texts).  Only scores above zero count, so fewer than
        ``k`` hits (or none) come back when few passages share a word with the query; an
        empty or whitespace-only query, or one made only of stopwords, gives ``[]``.
        """
        check("query", query, Instance(str, msg="must be a string, got {type}"), error=InputError)
        check("k", k, Whole(1), error=InputError)
        excluded = {exclude_sources} if isinstance(exclude_sources, str) else {str(s) for s in exclude_sources}
        token_ids = self._model.get_tokens_ids(tokenize(query))
        if not token_ids:
            return []
        scores = np.asarray(self._model.get_scores_from_ids(token_ids), dtype=float)
        hits: list[Hit] = []
        seen_texts: set[str] = set()
        for index in np.argsort(-scores, kind="stable"):
            score, passage = float(scores[index]), self.passages[int(index)]
            if score <= 0.0 or len(hits) == k:
                break
            if passage.source_id in excluded or passage.text in seen_texts:
                continue
            seen_texts.add(passage.text)
            hits.append(Hit(passage.passage_id, score, passage.title, passage.text, passage.corpus,
                            passage.source_id))
        return hits


def retrievers(names: Iterable[str], *, cache_dir: Path | None = None,
               data_dir: Path | str | None = None) -> dict[str, Retriever]:
    """One :class:`Retriever` per corpus name, in the given order (duplicates once)."""
    chosen = list(dict.fromkeys(names))
    unknown = [name for name in chosen if name not in CORPORA]
    if unknown:
        raise ConfigError("corpus", f"unknown corpus {unknown[0]!r} (known: {', '.join(CORPORA)})")
    return {name: Retriever(name, cache_dir=cache_dir, data_dir=data_dir) for name in chosen}


def _clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, at a word boundary when there is one."""
    if len(text) <= limit:
        return text
    cut = text[: max(limit, 0) + 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > 0 else cut[:limit]).rstrip()


def query_for(question: str, options: Mapping[str, str], *, max_chars: int = MAX_QUERY_CHARS) -> str:
    """A BM25 query from a question and its option texts (letters dropped), whitespace
    collapsed, at most ``max_chars`` characters.

    When too long, the question keeps at least half the room (its start, where a case
    vignette states the findings), the option texts the rest; cuts fall between words.
    Pass ``dict(item.options)`` for a :class:`~clinical.questions.QuestionItem`.
    """
    check("max_chars", max_chars, Whole(20), error=InputError)
    stem = " ".join(str(question).split())
    choices = " ".join(" ".join(str(text).split()) for text in options.values())
    if len(stem) + len(choices) + 1 <= max_chars:
        return f"{stem} {choices}".strip()
    gap = 1 if choices else 0
    stem = _clip(stem, max(max_chars - len(choices) - gap, max_chars // 2))
    choices = _clip(choices, max_chars - len(stem) - gap)
    return f"{stem} {choices}".strip()
