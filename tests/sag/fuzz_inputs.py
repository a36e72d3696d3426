"""Fuzz inputs of ``python -m sag``: question items (JSONL files, JSON and text arguments) and
group files, mostly near-valid with mutations, and the reference readings that an accepted
input is checked against (an independent, plain-:mod:`json` reading of the same bytes).
"""
from __future__ import annotations

import json
import math
import re
from collections import Counter
from typing import Any, Callable

from hypothesis import settings
from hypothesis import strategies as st

from common.terminal import escape_controls
from tests.dcem.fuzz_support import COUNTS, json_values, nest, number_tokens, run_budget

__all__ = ["run_surface", "item_dicts", "item_files", "question_texts", "group_files", "mutate_text", "encode", "ids",
           "reference_items", "reference_item", "reference_group", "HOSTILE", "shown", "no_raw_controls"]

def run_surface(surface: str, strategy: st.SearchStrategy[Any], check: Callable[[Any], str],
                budget: settings) -> Counter[str]:
    """:func:`tests.dcem.fuzz_support.run_budget`, also counting the accepted inputs whose
    result was wrong (a failed check) apart from other exceptions (tracebacks)."""
    def checked(value: Any) -> str:
        counts = COUNTS.setdefault(surface, Counter())
        if counts["inputs"] and counts["inputs"] % 1000 == 0:
            print(f"fuzz {surface}: {counts['inputs']} inputs so far", flush=True)
        try:
            return check(value)
        except AssertionError:
            COUNTS.setdefault(surface, Counter())["wrong"] += 1
            raise
    counts = run_budget(surface, strategy, checked, budget)
    print(f"fuzz {surface}: {counts['wrong']} silent wrong results")
    assert counts["wrong"] == 0
    return counts


LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
HOSTILE = "\u001b[2J\u001b]0;t\u0007\r\u202e\u0085\u2028\u007f"
_NASTY = ["\u001b[2J", "\u001b]0;title\u0007", "\u202e", "\u2066", "\ud800", "\udcff", "\u0000", "\r", "\u2028",
          "\u0085", "\u007f", "\u009b", "caf\u00e9", " ", "", "\t", "\n", "A. x", "\U0001d518", "\ufeff", "\\",
          "/", "x" * 300]
_PLAIN = ["What is it?", "Chest pain after meals?", "Reflux", "Embolism", "a", "b", "c"]

_SHOWN = _PLAIN + ["Q[2J?", "x‮y", "tab	here", "café", " nbsp", "bell"]  # valid, escaped when shown
_plain_texts = st.sampled_from(_SHOWN)
texts = st.one_of(_plain_texts, st.sampled_from(_NASTY), st.text(max_size=12),
                  st.lists(st.sampled_from(_PLAIN + _NASTY), min_size=1, max_size=3).map("".join))
_extreme = st.sampled_from([float("nan"), float("inf"), -float("inf"), 10 ** 400, 10 ** 18, 10 ** 18 - 1, -(10 ** 18),
                            True, None, 1.5, 0, "", " ", [], {}, "A"])
_plain_ids = st.sampled_from(["q1", "q2", " q3 ", "7", "id-4", "qé"])
ids = st.one_of(_plain_ids, st.integers(-10 ** 19, 10 ** 19), texts, st.text(min_size=199, max_size=202, alphabet="xy"))


@st.composite
def item_dicts(draw: Any) -> dict[str, Any]:
    """One item: usually valid, sometimes with hostile text or a mutated field."""
    k = draw(st.integers(2, 5))
    letters = LETTERS[:k]
    hostile = draw(st.integers(0, 2)) == 0
    text, item_id = (texts, ids) if hostile else (_plain_texts, _plain_ids | st.integers(0, 10 ** 6))
    options: Any = [draw(text) for _ in range(k)]
    if draw(st.booleans()):
        options = dict(zip(letters, options))
    answer = st.sampled_from([" A ", "a", "Z", ""]) if draw(st.integers(0, 7)) == 0 else st.sampled_from(letters)
    item: dict[str, Any] = {"id": draw(item_id), "question": draw(text), "options": options, "answer": draw(answer)}
    if draw(st.booleans()):
        item["context"] = draw(text)
    for _ in range(draw(st.integers(1, 2)) if draw(st.integers(0, 3)) == 0 else 0):
        op = draw(st.sampled_from(["replace", "drop", "add", "nest"]))
        key = draw(st.sampled_from(sorted(item) + ["extra"]))
        if op == "drop":
            item.pop(key, None)
        elif op == "nest":
            item[key] = nest(item.get(key, "x"), draw(st.integers(1, 120)))
        else:
            item[key] = draw(json_values | _extreme | texts)
    return item


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")


def mutate_text(draw: Any, text: str) -> str:
    """A JSON text with one token swapped for an extreme number, deep nesting, a repeated
    key or truncation -- or unchanged."""
    kind = draw(st.sampled_from(["same", "same", "same", "token", "deep", "dup", "cut"]))
    if kind == "token":
        spans = [m.span() for m in _NUMBER.finditer(text)] or [(len(text) // 2, len(text) // 2)]
        a, b = spans[draw(st.integers(0, len(spans) - 1))]
        text = text[:a] + draw(number_tokens) + text[b:]
    elif kind == "deep":
        depth = draw(st.sampled_from([63, 65, 999, 1000, 5000]))
        text = text.replace("{", '{"deep": ' + "[" * depth + "]" * depth + ", ", 1)
    elif kind == "dup":
        key = draw(st.sampled_from(["id", "question", "answer", "options", "A", "name", "t_max", "loss"]))
        text = text.replace("{", '{"' + key + '": ' + json.dumps(draw(st.sampled_from(["B", 1, "x"]))) + ", ", 1)
    elif kind == "cut":
        text = text[: draw(st.integers(0, len(text)))]
    return text


def encode(draw: Any, text: str) -> bytes:
    kind = draw(st.sampled_from(["utf8", "utf8", "utf8", "utf8", "bom", "latin1", "byte"]))
    if kind == "latin1":
        return text.encode("latin-1", "replace")
    data = text.encode("utf-8", "surrogatepass")
    if kind == "bom":
        return b"\xef\xbb\xbf" + data
    if kind == "byte":
        at = draw(st.integers(0, len(data)))
        return data[:at] + draw(st.sampled_from([b"\xff", b"\xe9", b"\xed\xa0\x80", b"\xc0\xaf", b"\x00"])) + data[at:]
    return data


@st.composite
def item_files(draw: Any) -> bytes:
    """The bytes of a JSONL question file: one to three items, maybe blank lines, each line
    maybe mutated, the whole maybe badly encoded -- or arbitrary text."""
    if draw(st.integers(0, 15)) == 0:
        return encode(draw, draw(st.text(max_size=40)))
    lines = [mutate_text(draw, json.dumps(item, ensure_ascii=draw(st.booleans())))
             for item in draw(st.lists(item_dicts(), min_size=1, max_size=draw(st.sampled_from([1, 1, 2, 3]))))]
    if draw(st.integers(0, 4)) == 0:
        lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from(["", "  ", "\t", "\r"])))
    return encode(draw, "\n".join(lines) + draw(st.sampled_from(["\n", "", "\r\n"])))


@st.composite
def question_texts(draw: Any) -> tuple[str, dict[str, Any] | None]:
    """A ``sag ask`` text argument and, when it was built cleanly, the item it stands for."""
    text = texts if draw(st.integers(0, 2)) == 0 else _plain_texts
    question = draw(text)
    options = [draw(text) for _ in range(draw(st.integers(0, 4)))]
    lines = [question] + [f"{LETTERS[i]}{draw(st.sampled_from(['. ', ') ', ': ', '.']))}{t}"
                          for i, t in enumerate(options)]
    clean = all(t in _SHOWN for t in [question, *options]) and len(options) >= 2
    if draw(st.integers(0, 3)) == 0:
        lines.insert(draw(st.integers(0, len(lines))), draw(texts))
        clean = False
    text = "\n".join(lines)
    if draw(st.integers(0, 5)) == 0:
        text = " ".join(lines) * draw(st.integers(1, 40))  # a long one-line question
        clean = False
    item = {"question": question, "options": list(options), "answer": "A"} if clean else None
    return text, item


# ------------------------------------------------------------------ group files

_METHODS = ["sag", "single", "majority", "no_reasoning", "no_knowledge", "no_safety", "no_judge", "dcem", "x"]
_CORPORA = ["medlineplus", "pubmedqa", "ddxplus"]


@st.composite
def _loss(draw: Any) -> Any:
    k = draw(st.sampled_from([2, 2, 2, 3]))
    loss: list[list[Any]] = [[0 if d == y else draw(st.sampled_from([1, 2, 0.5, 10, 1e12])) for y in range(k)]
                             for d in range(k)]
    if draw(st.integers(0, 3)) == 0:
        loss[draw(st.integers(0, k - 1))][draw(st.integers(0, k - 1))] = draw(
            _extreme | st.sampled_from(["x", "1", -1, 1e13, 1e12 + 1, 5e-324]))
    return loss


@st.composite
def _group(draw: Any) -> dict[str, Any]:
    def pick(good: list[Any], bad: list[Any]) -> Any:  # a bad value one time in eight
        return draw(st.sampled_from(bad)) if bad and draw(st.integers(0, 7)) == 0 else draw(st.sampled_from(good))
    group: dict[str, Any] = {
        "name": draw(texts) if draw(st.integers(0, 7)) == 0 else pick(["mine", "g 1", "x" * 100], ["x" * 101]),
        "method": pick(_METHODS[:-2], _METHODS[-2:]),
        "counts": [draw(st.integers(0, 2)) for _ in range(4)],
        "backbones": [draw(st.sampled_from(["smollm2-135m", "gemma3-270m"])) for _ in range(4)],
        "t_max": pick([1, 2, 3], [0, 11]), "rationale_tokens": pick([1, 8, 512], [0, 513]),
        "top_k": pick([1, 2, 3], [0]), "corpora": draw(st.lists(st.sampled_from(_CORPORA), min_size=1, max_size=3)),
        "temperature": pick([0, 0.0, 0.7, 5.0], [5.1, -0.1]), "top_p": pick([1.0, 0.9, 1e-6], [0, 1.1]),
        "seed": pick([0, 7, 2 ** 31 - 1], [2 ** 31, -1]), "refuse_threshold": pick([0.5, 1.0, 1e-6], [0]),
        "n_cal": pick([2, 20], [1]), "loss": draw(st.none() | _loss()),
    }
    keys = draw(st.lists(st.sampled_from(sorted(group)), unique=True, max_size=len(group)))
    if draw(st.integers(0, 7)):  # usually a small group (the default one debates 10 agents for 3 rounds)
        keys += [key for key in ("counts", "t_max") if key not in keys]
    out = {key: group[key] for key in keys}
    for _ in range(draw(st.integers(1, 2)) if draw(st.integers(0, 3)) == 0 else 0):
        key = draw(st.sampled_from(sorted(group) + ["bogus"]))
        out[key] = draw(json_values | _extreme | texts | st.just("abcd"))
    return out


@st.composite
def group_files(draw: Any) -> bytes:
    """The bytes of a group JSON file: a near-valid group, maybe mutated or badly encoded."""
    if draw(st.integers(0, 15)) == 0:
        return encode(draw, draw(st.text(max_size=40)))
    text = json.dumps(draw(_group()), ensure_ascii=draw(st.booleans()), indent=draw(st.sampled_from([None, 1])))
    return encode(draw, mutate_text(draw, text))


# ------------------------------------------------------------------ reference readings


def _refuse(name: str) -> Any:
    raise AssertionError(f"{name} accepted")


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    assert len(keys) == len(set(keys)), f"a repeated key accepted: {keys}"
    return dict(pairs)


def _plain_json(text: str) -> Any:
    value = json.loads(text, parse_constant=_refuse, object_pairs_hook=_unique)
    json.dumps(value).encode("utf-8")  # no lone surrogate in an accepted text (json.dumps escapes them)
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            v.encode("utf-8")
        elif isinstance(v, float):
            assert math.isfinite(v)
        elif isinstance(v, dict):
            stack.extend(list(v) + list(v.values()))
        elif isinstance(v, list):
            stack.extend(v)
    return value


def _item_tuple(obj: dict[str, Any]) -> tuple[Any, ...]:
    raw_id = obj["id"]
    if isinstance(raw_id, int):
        assert not isinstance(raw_id, bool) and abs(raw_id) < 10 ** 18
        item_id = str(raw_id)
    else:
        item_id = raw_id.strip()
        assert 0 < len(item_id) <= 200 and item_id.isprintable()
    opts = obj["options"]
    pairs = list(opts.items()) if isinstance(opts, dict) else list(zip(LETTERS, opts))
    return (item_id, obj["question"].strip(), tuple((k, t.strip()) for k, t in pairs), obj["answer"].strip(),
            obj.get("context", "").strip())


def reference_item(text: str) -> tuple[Any, ...]:
    """The item of an accepted JSON object text (``sag ask '{...}'``)."""
    return _item_tuple(_plain_json(text))


def reference_items(data: bytes) -> list[tuple[Any, ...]]:
    """The items an accepted JSONL file holds, read with plain :mod:`json` (asserting the
    file is one that should have been accepted)."""
    text = (data[3:] if data.startswith(b"\xef\xbb\xbf") else data).decode("utf-8")
    return [_item_tuple(_plain_json(line)) for line in text.split("\n") if line.strip()]


def reference_group(data: bytes) -> dict[str, Any]:
    """The fields an accepted group file gives, read with plain :mod:`json`."""
    text = (data[3:] if data.startswith(b"\xef\xbb\xbf") else data).decode("utf-8")
    value = _plain_json(text)
    assert isinstance(value, dict)
    return value


def shown(item: tuple[Any, ...]) -> str:
    """The lines ``sag ask`` prints for an item's question and options."""
    _, question, options, _, _ = item
    lines = [f"Question: {escape_controls(question, keep=chr(10) + chr(9))}"]
    return "\n".join(lines + [f"  {letter}. {escape_controls(text)}" for letter, text in options]) + "\n"


def no_raw_controls(out: str) -> None:
    """No character of ``out`` that a terminal would act on, except line breaks and tabs."""
    raw = {c for c in out if c not in "\n\t" and escape_controls(c) != c}
    assert not raw, sorted(raw)
