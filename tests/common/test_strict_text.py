"""The shared strict readers: UTF-8 with the line and column of a bad byte, strict JSON's
text checks, and terminal escaping of control characters."""
from __future__ import annotations

import pytest

from common import strict_json
from common.errors import InputError
from common.terminal import escape_controls


def test_decode_utf8_names_line_and_column_after_a_byte_order_mark() -> None:
    assert strict_json.decode_utf8(b"\xef\xbb\xbfab\n", "path", "f.jsonl") == "ab\n"
    with pytest.raises(InputError, match=r"^path: f.jsonl, line 3: not UTF-8 text \(byte 0xff at column 2\)"):
        strict_json.decode_utf8(b"\xef\xbb\xbfa\nb\nc\xffd", "path", "f.jsonl")


def test_repeated_keys_and_lone_surrogates_are_refused_only_when_asked() -> None:
    assert strict_json.loads('{"a": 1, "a": 2}', "doc") == {"a": 2}  # the D-CEM readers keep JSON's rule
    with pytest.raises(InputError, match="key 'a' is given twice"):
        strict_json.loads('{"a": 1, "a": 2}', "doc", strict_text=True)
    with pytest.raises(InputError, match=r"'\\udc80', a lone surrogate"):
        strict_json.loads('{"k": ["ok", {"\\udc80": 1}]}', "doc", strict_text=True)
    assert strict_json.loads('"\\ud83d\\ude00"', "doc", strict_text=True) == "\U0001f600"  # a pair is a character


@pytest.mark.parametrize("text, keep, shown", [
    ("a\u001b[2Jb", "", "a\\x1b[2Jb"), ("t\u001b]0;x\u0007", "", "t\\x1b]0;x\\x07"),
    ("a\rb\u007f", "", "a\\rb\\x7f"), ("x\u202ey\u2066", "", "x\\u202ey\\u2066"),
    ("c1\u0085\u009b", "", "c1\\x85\\x9b"), ("l\u2028p\u2029", "", "l\\u2028p\\u2029"),
    ("two\nlines\tok", "\n\t", "two\nlines\tok"), ("two\nlines", "", "two\\nlines"),
    ("caf\u00e9 \u00a0\U0001f600", "", "caf\u00e9 \u00a0\U0001f600"),
])
def test_escape_controls(text: str, keep: str, shown: str) -> None:
    assert escape_controls(text, keep) == shown
