"""The parked-prefix bookkeeping: which sequence a prefix comes from, where sequence 0 is
parked, and that two alternating prompt kinds each keep their own (no model needed)."""
from __future__ import annotations

import pytest

from runtime.parked_prefixes import ParkedPrefixes, common_prefix

B = 4  # block


def test_common_prefix_and_whole_blocks() -> None:
    assert common_prefix([1, 2, 3], [1, 2, 4]) == 2 and common_prefix([], [1]) == 0
    parked = ParkedPrefixes(B)
    assert parked.reusable(list(range(10)), list(range(9)) + [99]) == 8
    assert parked.reusable(list(range(3)), list(range(3))) == 0  # less than a block
    with pytest.raises(ValueError, match="block"):
        ParkedPrefixes(0)


def test_source_prefers_the_sequence_that_holds_most() -> None:
    parked = ParkedPrefixes(B)
    kept = [0] * 4 + [1] * 8
    prefix = [0] * 4 + [2] * 8
    assert parked.source(kept, prefix, [2, 3]) == (0, 4)
    parked.park(3, [0] * 4 + [2] * 6)
    assert parked.source(kept, prefix, [2, 3]) == (3, 8)
    assert parked.source(kept, prefix, [2]) == (0, 4)  # sequence 3 is needed by this run
    parked.park(2, prefix)
    assert parked.source(prefix, prefix, [2, 3]) == (0, 12)  # a tie keeps sequence 0


def test_target_parks_only_what_would_be_lost_and_not_twice() -> None:
    parked = ParkedPrefixes(B)
    kept = list(range(12))
    assert parked.target(kept, 12, 0, [2, 3]) is None  # nothing is trimmed
    assert parked.target([1, 2, 3], 0, 0, [2, 3]) is None  # less than a block held
    assert parked.target(kept, 4, 0, []) is None  # no free sequence
    assert parked.target(kept, 4, 0, [2, 3]) == 2
    parked.park(2, kept)
    assert parked.target(kept, 4, 0, [2, 3]) is None  # already parked
    assert parked.target(kept, 4, 3, [3]) is None  # the only free one is the source
    other = [7] * 12
    assert parked.target(other, 0, 0, [2, 3]) == 3  # the empty one first
    parked.park(3, other)
    parked.touch(2)
    assert parked.target([5] * 12, 0, 0, [2, 3]) == 3  # then the least recently used
    parked.forget([3])
    assert parked.held(3) == [] and len(parked) == 1
    parked.clear()
    assert len(parked) == 0


def test_two_alternating_kinds_each_find_their_own() -> None:
    """Simulate a runner: kind 0 and kind 1 prompts of cases 0..3, one per run, two free
    sequences; from case 1 on each prompt reuses its kind's shared part (2 blocks), where
    sequence 0 alone (the previous prompt, of the other kind) gives 1 block."""
    parked, kept = ParkedPrefixes(B), []
    system, kinds = [9] * B, ([1] * B, [2] * B)
    for case in range(4):
        for kind in (0, 1):
            prefix = system + kinds[kind] + [100 + case] * B
            source, keep = parked.source(kept, prefix, [2, 3])
            if case >= 1:
                assert keep == 2 * B and source != 0
            target = parked.target(kept, keep, source, [2, 3])
            if target is not None:
                parked.park(target, kept)
            if source != 0:
                kept = parked.held(source)
                parked.touch(source)
            kept = list(prefix)
    assert len(parked) == 2
