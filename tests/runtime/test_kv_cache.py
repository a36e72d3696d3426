"""Saved KV states (runtime.kv_cache): which state a prompt restores, what is dropped, the budget."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common.errors import ConfigError
from runtime.kv_cache import DEFAULT_MB, ENV, KvSnapshots, kv_cache_mb, reusable_length

B = 4  # block size of these tests


def toks(*parts: range | list[int]) -> list[int]:
    return [t for p in parts for t in p]


def test_budget_from_parameter_environment_and_default() -> None:
    assert kv_cache_mb(None, env={}) == DEFAULT_MB
    assert kv_cache_mb(None, env={ENV: " 64 "}) == 64
    assert kv_cache_mb(0, env={ENV: "64"}) == 0  # the parameter wins; 0 = off
    for bad in ("lots", "1.5", "-3"):
        with pytest.raises(ConfigError, match=ENV if bad != "-3" else "kv_cache_mb"):
            kv_cache_mb(None, env={ENV: bad})
    with pytest.raises(ConfigError, match=r"\[0, "):
        kv_cache_mb(-1)


def test_reusable_length_is_whole_blocks_before_either_last_token() -> None:
    held = list(range(20))
    assert reusable_length(list(range(20)) + [99], held, B) == 16  # held's last token (19) is excluded
    assert reusable_length(list(range(9)), held, B) == 8  # the prompt's last token is never kept
    assert reusable_length(list(range(7)) + [50] * 10, held, B) == 4  # whole blocks of the common prefix
    assert reusable_length([5] + list(range(1, 20)), held, B) == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=40), st.lists(st.integers(0, 3), min_size=1, max_size=40),
       st.integers(1, 8))
def test_reusable_length_properties(a: list[int], b: list[int], block: int) -> None:
    n = reusable_length(a, b, block)
    assert n % block == 0 and 0 <= n <= min(len(a), len(b)) - 1 or n == 0
    assert a[:n] == b[:n]
    assert n == reusable_length(b, a, block)


def test_best_picks_the_longest_reusable_state_and_marks_it_recent() -> None:
    kv = KvSnapshots(1000, B)
    kv.put(toks(range(20)), b"x" * 10)
    kv.put(toks(range(6), [60] * 14), b"y" * 10)  # shares one of the first state's four blocks: both stay
    assert len(kv) == 2
    snap, n = kv.best(toks(range(20), [70, 71]))
    assert snap is not None and list(snap.tokens) == list(range(20)) and n == 16
    snap, n = kv.best(toks(range(6), [60] * 5))
    assert snap is not None and snap.data == b"y" * 10 and n == 8
    assert kv.best([90, 91, 92, 93, 94, 95]) == (None, 0)
    kv.best(toks(range(20), [70]))  # the first state is now the most recent: the second goes first
    kv.max_bytes = 15
    kv.put(toks([40] * 9), b"z" * 5)
    assert kv.bytes == 15 and kv.evicted == 1
    assert kv.best(toks(range(6), [60] * 9))[1] == 4  # only the first state's common block remains


def test_a_state_covering_an_older_one_replaces_it() -> None:
    kv = KvSnapshots(1000, B)
    kv.put(toks(range(10)), b"a" * 10)  # reusable prefix: 8 tokens
    kv.put(toks(range(9), [50] * 6), b"b" * 15)  # holds those 8 and more: replaces it
    assert len(kv) == 1 and kv.replaced == 1 and kv.bytes == 15
    kv.put(toks(range(2), [80] * 9), b"c" * 11)  # shares no whole block: both stay
    assert len(kv) == 2 and kv.replaced == 1
    kv.put(toks(range(9), [81] * 9), b"d" * 18)  # all but one block of the second state's: it goes
    assert len(kv) == 2 and kv.replaced == 2 and kv.best(toks(range(9), [50] * 8))[1] == 8


def test_budget_is_never_exceeded_and_off_saves_nothing() -> None:
    rng = np.random.default_rng(0)
    kv = KvSnapshots(100, B)
    for _ in range(50):
        kv.put(rng.integers(0, 50, size=int(rng.integers(2, 30))).tolist(), b"s" * int(rng.integers(1, 40)))
        assert kv.bytes <= 100 and kv.bytes == sum(len(s.data) for s in kv._states.values())
    assert kv.put([1, 2, 3], b"s" * 101) is False  # one state beyond the budget is not kept
    off = KvSnapshots(0, B)
    assert not off.enabled and off.put([1, 2, 3], b"s") is False and len(off) == 0
    with pytest.raises(ConfigError):
        KvSnapshots(-1, B)
