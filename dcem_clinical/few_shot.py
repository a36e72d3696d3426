"""Retrieval few-shot: the k most similar solved CAL cases of the seed in the agent's prompt.

:class:`ExampleIndex` is a BM25 index (`bm25s <https://github.com/xhluca/bm25s>`_, Lucene
BM25, k1 = 1.5, b = 0.75) over the texts of the solved cases it is given -- the cell
gives it the seed's CAL cases only, so a TEST case can never be shown.  Tokens: lower-cased
runs of two or more word characters without bm25s's English stopwords (the same rule as
the SAG retriever, which this package may not import).

:meth:`ExampleIndex.search` ranks every indexed case by its BM25 score against the query
text, ties in index order (so ranks are deterministic), and skips the query case itself:
a case whose text equals the query's (when an agent answers a CAL case during
calibration it never sees its own label) and any ``exclude_ids``.  Cases with score 0 fill
the list when fewer than k share a word with the query, so k examples are shown whenever
the index holds k other cases.

:class:`FewShot` turns the hits into the prompt's examples within the model's context:
the whole prompt may use ``(n_ctx - TEMPLATE_TOKENS) * CHARS_PER_TOKEN`` characters
(2.5 characters per token is below every measured DDXPlus-8 and MedQA-Tri text for
SmolLM2 and Gemma-3 tokenizers, whose minimum is 2.53), and each example at most
``max_example_chars``.  The room left after the system prompt, the case and the example
headers is shared out deterministically: shorter texts keep their length and the rest
split what remains equally; example texts are shown with their whitespace collapsed to
single spaces, and a text cut short ends at a word boundary with the mark
``[...]`` and is recorded as ``truncated``.  If an example would get fewer than
``MIN_EXAMPLE_CHARS`` characters the least similar one is dropped and the room shared
again, down to no examples at all for a case that fills the context by itself.

The examples are shown most similar last, next to the case.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Collection, Sequence

import numpy as np

from clinical.datasets import ClinicalCase
from common.bm25 import STOPWORDS_EN_PLUS, bm25s
from common.errors import InputError
from common.fields import Field, Spec, Whole, check
from dcem_clinical.prompts import examples_block

__all__ = ["Example", "ExampleIndex", "FewShot", "FewShotConfig", "fit_texts", "clip_text", "tokenize",
           "CHARS_PER_TOKEN", "TEMPLATE_TOKENS", "MAX_EXAMPLE_CHARS", "MIN_EXAMPLE_CHARS", "TRUNCATION_MARK"]


CHARS_PER_TOKEN = 2.5
TEMPLATE_TOKENS = 64  # chat-template tokens and the answer's first token
MAX_EXAMPLE_CHARS = 800
MIN_EXAMPLE_CHARS = 120
TRUNCATION_MARK = " [...]"
_TOKEN = re.compile(r"(?u)\b\w\w+\b")
_STOPWORDS = frozenset(STOPWORDS_EN_PLUS)


def tokenize(text: str) -> list[str]:
    """BM25 tokens of ``text``: lower-cased words of two or more characters, no stopwords."""
    return [w for w in _TOKEN.findall(text.lower()) if w not in _STOPWORDS]


@dataclass(frozen=True)
class Example:
    """One solved case as shown: its id, true label, text (maybe cut), rank (1 = most
    similar), BM25 score and whether the text was truncated."""

    source_id: str
    label: int
    text: str
    rank: int
    score: float
    truncated: bool

    def to_dict(self) -> dict[str, Any]:
        """The record kept with the call (the text itself is in the logged prompt)."""
        return {"source_id": self.source_id, "label": self.label, "rank": self.rank,
                "score": round(self.score, 6), "truncated": self.truncated, "chars": len(self.text)}


class ExampleIndex:
    """BM25 over solved cases (the CAL cases of one seed); see the module docstring."""

    def __init__(self, cases: Sequence[ClinicalCase]) -> None:
        if not cases:
            raise InputError("few_shot", "the example index needs at least one solved case")
        ids = [c.source_id for c in cases]
        if len(set(ids)) != len(ids):
            raise InputError("few_shot", "a solved case is listed twice")
        self.cases = tuple(cases)
        self._texts = [c.text.strip() for c in self.cases]
        self._model = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
        self._model.index([tokenize(t) for t in self._texts], show_progress=False)

    def __len__(self) -> int:
        return len(self.cases)

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every indexed case against ``query`` (zeros when no word is shared)."""
        ids = self._model.get_tokens_ids(tokenize(query))
        if not ids:
            return np.zeros(len(self.cases))
        return np.asarray(self._model.get_scores_from_ids(ids), dtype=float)

    def search(self, query: str, k: int, *, exclude_ids: Collection[str] = ()) -> list[tuple[ClinicalCase, float]]:
        """The ``k`` best (case, score) pairs, best first, never the query case itself."""
        check("k", k, Whole(0), error=InputError)
        scores, own, excluded = self.scores(query), query.strip(), set(exclude_ids)
        hits: list[tuple[ClinicalCase, float]] = []
        for i in np.argsort(-scores, kind="stable"):
            if len(hits) == k:
                break
            case = self.cases[int(i)]
            if self._texts[int(i)] != own and case.source_id not in excluded:
                hits.append((case, float(scores[int(i)])))
        return hits


def clip_text(text: str, limit: int) -> tuple[str, bool]:
    """``text`` in at most ``limit`` characters, cut at a word boundary with the mark."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text, False
    room = max(limit - len(TRUNCATION_MARK), 0)
    cut = text[: room + 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > 0 else cut[:room]).rstrip() + TRUNCATION_MARK, True


def fit_texts(texts: Sequence[str], room: int, max_chars: int) -> list[int] | None:
    """Character allowance per text within ``room`` in all (None if one would get fewer
    than ``MIN_EXAMPLE_CHARS``): short texts keep their length, the rest share equally."""
    wanted = [min(len(" ".join(t.split())), max_chars) for t in texts]
    allowance = [0] * len(texts)
    left, open_ = room, sorted(range(len(texts)), key=lambda i: (wanted[i], i))
    while open_:
        share = left // len(open_)
        i = open_.pop(0)
        allowance[i] = min(wanted[i], share)
        left -= allowance[i]
    if any(a < min(MIN_EXAMPLE_CHARS, w) for a, w in zip(allowance, wanted)):
        return None
    return allowance


_FEW_SHOT = Spec({"k": Field((Whole(0, 16),), label="few_shot_k"), "n_ctx": Whole(256),
                  "max_example_chars": Whole(MIN_EXAMPLE_CHARS)})


@dataclass(frozen=True)
class FewShotConfig:
    """k solved examples per prompt (0 = off) within a context of ``n_ctx`` tokens."""

    k: int = 3
    n_ctx: int = 2048
    max_example_chars: int = MAX_EXAMPLE_CHARS

    def __post_init__(self) -> None:
        _FEW_SHOT.apply(self)

    @property
    def budget_chars(self) -> int:
        """Characters the whole prompt (system and user turns) may use."""
        return int((self.n_ctx - TEMPLATE_TOKENS) * CHARS_PER_TOKEN)


class FewShot:
    """Examples for a prompt: retrieval over ``cases`` (the seed's CAL cases) and fitting."""

    def __init__(self, cases: Sequence[ClinicalCase], config: FewShotConfig = FewShotConfig()) -> None:
        self.config, self.index = config, ExampleIndex(cases)

    def select(self, query: str, labels: Sequence[str], used_chars: int) -> list[Example]:
        """The examples for ``query`` in display order (most similar last), fitted into
        what the prompt's other ``used_chars`` characters leave of the budget."""
        hits = self.index.search(query, self.config.k)
        while hits:
            overhead = len(examples_block(labels, [("", c.label) for c, _ in hits])) + 2  # + the "\n\n" joint
            allowance = fit_texts([c.text for c, _ in hits], self.config.budget_chars - used_chars - overhead,
                                  self.config.max_example_chars)
            if allowance is not None:
                shown = []
                for rank, ((case, score), n) in enumerate(zip(hits, allowance), start=1):
                    text, cut = clip_text(case.text, n)
                    shown.append(Example(case.source_id, case.label, text, rank, score, cut))
                return shown[::-1]
            hits = hits[:-1]  # drop the least similar and share the room again
        return []
