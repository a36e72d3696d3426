"""Evaluation block starts (runtime.blocks): fixed and paragraph-aligned splits, and the
saved-state cache with a paragraph split."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common.errors import ConfigError
from runtime.blocks import FixedSplit, ParagraphSplit, floor_start, make_split, spans
from runtime.kv_cache import KvSnapshots, reusable_length

# A toy vocabulary: 0-5 words, 6 "\n", 7 "x\n", 8 "\n\n", 9 ".\n\n", 10 "" (an empty piece)
PIECES = {0: b"a", 1: b" b", 2: b" c", 3: b"d", 4: b" e", 5: b"f", 6: b"\n", 7: b"x\n", 8: b"\n\n", 9: b".\n\n",
          10: b""}


def para(size: int = 4) -> ParagraphSplit:
    return ParagraphSplit(PIECES.__getitem__, size)


def test_fixed_starts_every_size_tokens() -> None:
    assert FixedSplit(4).starts(list(range(10))).tolist() == [0, 4, 8]
    assert FixedSplit(4).starts([]).tolist() == []


def test_paragraph_starts_after_blank_lines_and_every_size_tokens() -> None:
    split = para(4)
    # "a b c\n\n" as one piece, as "\n" + "\n" after a piece ending in "\n", and as ".\n\n"
    assert split.starts([0, 1, 8, 2, 3]).tolist() == [0, 3]
    assert split.starts([0, 7, 6, 2, 3]).tolist() == [0, 3]
    assert split.starts([0, 9, 2]).tolist() == [0, 2]
    assert split.starts([0, 6, 2, 6, 3]).tolist() == [0, 4]  # single newlines do not break ...
    assert split.starts([0, 1, 2, 3, 4, 5, 0, 1, 2, 3]).tolist() == [0, 4, 8]  # ... long text cuts every 4
    assert split.starts([0, 1, 8, 0, 1, 2, 3, 4, 5]).tolist() == [0, 3, 7]  # counted from the paragraph
    assert split.starts([0, 8]).tolist() == [0]  # a break at the very end starts nothing yet
    assert para(8).starts([0, 7, 10, 6, 1]).tolist() == [0]  # an empty piece separates the two newlines


def test_floor_start_and_spans() -> None:
    starts = np.array([0, 3, 7, 9])
    assert [floor_start(starts, n) for n in (-1, 0, 2, 3, 8, 9, 20)] == [0, 0, 0, 3, 7, 9, 9]
    assert spans(starts, 3, 10) == [(3, 7), (7, 9), (9, 10)]
    assert spans(starts, 0, 5) == [(0, 3), (3, 5)]
    assert spans(starts, 7, 7) == []


def test_make_split_names_and_errors() -> None:
    assert make_split("fixed", 8).name == "fixed"
    assert make_split("paragraph", 8, PIECES.__getitem__).name == "paragraph"
    with pytest.raises(ConfigError, match="fixed, paragraph"):
        make_split("sentence", 8)
    with pytest.raises(ConfigError, match="token pieces"):
        make_split("paragraph", 8)
    for bad in (0, -2, True, 1.5):
        with pytest.raises(ConfigError, match="block size"):
            FixedSplit(bad)  # type: ignore[arg-type]


tokens_st = st.lists(st.integers(0, 10), min_size=0, max_size=60)


@settings(max_examples=300, deadline=None)
@given(tokens_st, st.integers(1, 9), st.integers(0, 60))
def test_starts_depend_only_on_the_tokens_before_them(tokens: list[int], size: int, k: int) -> None:
    """What two prompts share, they split alike: a prefix's starts are the full list's
    starts inside the prefix; starts are sorted, begin at 0 and never more than ``size``
    apart."""
    for split in (para(size), FixedSplit(size)):
        full = split.starts(tokens)
        assert split.starts(tokens[:k]).tolist() == [s for s in full.tolist() if s < min(k, len(tokens))]
        if tokens:
            assert full[0] == 0 and np.all(np.diff(full) >= 1) and np.all(np.diff(np.append(full, len(tokens))) <= size)


@settings(max_examples=200, deadline=None)
@given(tokens_st, st.integers(1, 9), st.integers(0, 60), st.integers(0, 60))
def test_spans_cover_the_range_in_whole_blocks(tokens: list[int], size: int, a: int, b: int) -> None:
    split = para(size)
    starts = split.starts(tokens)
    begin = floor_start(starts, min(a, len(tokens)))
    end = min(max(b, begin), len(tokens))
    got = spans(starts, begin, end)
    assert [lo for lo, _ in got[1:]] == [hi for _, hi in got[:-1]]  # contiguous
    assert (got[0][0], got[-1][1]) == (begin, end) if got else begin >= end
    assert all(lo in set(starts.tolist()) and hi - lo <= size for lo, hi in got)


@settings(max_examples=200, deadline=None)
@given(tokens_st, tokens_st, st.integers(1, 9))
def test_paragraph_reusable_length_is_a_shared_start(a: list[int], b: list[int], size: int) -> None:
    split = para(size)
    n = reusable_length(a, b, split)
    assert n == reusable_length(b, a, split) and a[:n] == b[:n]
    assert n == 0 or (n < min(len(a), len(b)) and n in split.starts(a).tolist() and n in split.starts(b).tolist())


def test_a_new_paragraph_after_a_shared_one_keeps_the_whole_shared_text() -> None:
    """The next round of a case: the same text up to a blank line, then a new note."""
    case = [0, 1, 2, 3, 4, 5, 0, 9]  # 8 tokens ending in ".\n\n"
    first, second = case + [1, 2, 8, 3], case + [4, 4, 4, 9, 3]
    assert reusable_length(second, first, para(4)) == 8  # the whole case
    assert reusable_length(second, first, FixedSplit(3)) == 6  # fixed blocks lose the partial one
    kv = KvSnapshots(1000, para(4))
    kv.put(first, b"1" * 10)
    kv.put(second, b"2" * 10)  # holds everything the first state could give: replaces it
    assert len(kv) == 1 and kv.replaced == 1
    snap, n = kv.best(case + [2, 2, 9, 0])
    assert snap is not None and snap.data == b"2" * 10 and n == 8
