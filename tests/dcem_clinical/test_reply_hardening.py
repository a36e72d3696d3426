"""Bad model replies never stop or poison a run (hardening defects 9-12)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from dcem.store.database import Store
from dcem_clinical.agent import DiagnosticAgent, parse_json_reply
from dcem_clinical.call_log import CallContext, LoggedAgent
from dcem_clinical.cli import main
from dcem_clinical.panel import LlmPanel
from runtime.backends import BackendError
from runtime.call_log import CallLog
from runtime.testing import ScriptedBackend

LABELS = ("Anaphylaxis", "GERD", "URTI")


@pytest.mark.parametrize("reply", [
    '{"predicted_label": "GERD", "probabilities": {"GERD": 1e308, "URTI": 1e308}}',
    '{"predicted_label": "GERD", "probabilities": {"GERD": 0, "URTI": 0}}',
    '{"predicted_label": "GERD", "probabilities": {"GERD": ' + "1" + "0" * 400 + "}}",
    '{"predicted_label": "GERD", "probabilities": {"GERD": ' + "7" * 5000 + "}}",
    "[" * 5000 + "]" * 5000,
])
def test_defect_9_and_10_unusable_json_replies_are_parse_errors(reply: str) -> None:
    with pytest.raises(ValueError):
        parse_json_reply(reply, list(LABELS))


def test_defect_10_overflowing_vector_falls_back_is_logged_as_failed_and_never_cached(store: Store) -> None:
    reply = '{"predicted_label": "GERD", "probabilities": {"GERD": 1e308, "URTI": 1e308}}'
    backend = ScriptedBackend([reply], scores=lambda m, o: [math.log(0.1), math.log(0.8), math.log(0.1)])
    agent = LoggedAgent(DiagnosticAgent(backend, LABELS, mode="json"), store)
    rep, cached = agent.classify("burning pain after meals", context=CallContext("r", "c", 0, 1))
    assert not cached and rep.error and "finite" in rep.error
    assert np.isfinite(rep.probabilities).all() and rep.probabilities.sum() == pytest.approx(1.0)
    again, cached = agent.classify("burning pain after meals", context=CallContext("r", "c", 0, 1))
    assert not cached  # a reply with an error never answers from the cache


def test_defect_10_poisoned_cache_rows_are_skipped_and_cleared(store: Store, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    backend = ScriptedBackend(scores=lambda m, o: [math.log(0.2), math.log(0.7), math.log(0.1)])
    agent = LoggedAgent(DiagnosticAgent(backend, LABELS), store)
    agent.classify("case", context=CallContext("r", "c", 0, 1))
    # an older version logged an all-zero vector as a good answer
    store.con.execute("UPDATE llm_calls SET probabilities = [0.0, 0.0, 0.0]")
    log = CallLog(store)
    assert log.invalid_count() == 1
    rep, cached = agent.classify("case", context=CallContext("r", "c", 0, 1))
    assert not cached and rep.probabilities.sum() == pytest.approx(1.0)  # asked again, not replayed
    store.con.execute("UPDATE llm_calls SET probabilities = [0.0, 0.0, 0.0]")
    store.close()
    db = str(tmp_path / "calls.duckdb")
    assert main(["cache", "--db", db]) == 0
    assert "2 with unusable probability vectors" in capsys.readouterr().out
    assert main(["cache", "--clear-invalid", "--db", db]) == 0
    assert "marked 2" in capsys.readouterr().out
    with Store(db) as again:
        assert CallLog(again).invalid_count() == 0
        errors = again.con.execute("SELECT count(*) FROM llm_calls WHERE error LIKE 'cleared:%'").fetchone()[0]
        assert errors == 2


class _Exploding:
    """A backend whose replies are malformed in ways a real server could produce."""

    name, model_id, model_sha256 = "broken", "broken", "1" * 64

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def generate(self, messages, options):  # type: ignore[no-untyped-def]
        raise self.exc

    def score_options(self, messages, options):  # type: ignore[no-untyped-def]
        raise self.exc


@pytest.mark.parametrize("exc", [TypeError("'list' object has no attribute 'get'"), KeyError("usage"),
                                 RecursionError("maximum recursion depth exceeded"),
                                 OverflowError("int too large to convert to float"), BackendError("no server")])
def test_defect_11_any_exception_of_one_call_is_a_failed_call(store: Store, exc: BaseException) -> None:
    good = ScriptedBackend(scores=lambda m, o: [math.log(0.1), math.log(0.8), math.log(0.1)])
    agents = [LoggedAgent(DiagnosticAgent(good, LABELS), store),
              LoggedAgent(DiagnosticAgent(_Exploding(exc), LABELS), store)]  # type: ignore[arg-type]
    panel = LlmPanel(agents, ["c1", "c2"], ["first case", "second case"], run_id="r")
    out = panel.report(1)
    assert out.shape == (2, 2, 3) and np.isfinite(out).all()
    np.testing.assert_allclose(out[:, 1], 1 / 3)  # the failed agent reports the uniform vector
    failed = [t for t in panel.turns if t["agent"] == 1]
    assert all(t["error"].startswith("call failed: " + type(exc).__name__) for t in failed)
    assert panel.errors == 2
    logged = store.con.execute("SELECT count(*) FROM llm_calls WHERE error LIKE 'call failed%'").fetchone()[0]
    assert logged == 2  # logged as failed calls, never as cache answers


@pytest.mark.parametrize("logprobs", [[float("nan"), -1.0, -2.0], [float("-inf")] * 3, [float("inf"), 0.0, 0.0]])
def test_defect_12_nan_log_probabilities_are_a_failed_call_not_the_first_label(store: Store,
                                                                              logprobs: list[float]) -> None:
    backend = ScriptedBackend(scores=lambda m, o: logprobs)
    agent = DiagnosticAgent(backend, LABELS)
    with pytest.raises(BackendError, match="unusable log-probabilities"):
        agent.classify("case")
    panel = LlmPanel([LoggedAgent(agent, store), LoggedAgent(agent, store)], ["c"], ["case"], run_id="r")
    out = panel.report(1)
    np.testing.assert_allclose(out, 1 / 3)
    assert all(t["error"] and "unusable log-probabilities" in t["error"] for t in panel.turns)
    assert json.loads(json.dumps([float(v) for v in out.ravel()]))  # finite, valid JSON


_TOPS = '{"content": [{"top_logprobs": [{"token": "A", "logprob": -0.1}]}]}'
_MALFORMED = {  # per agent mode: bodies a broken server could send, cycled through
    "scored": [
        '{"choices": [{"logprobs": ' + _TOPS + '}], "usage": [1, 2]}',  # usage as a list
        '{"choices": [{"logprobs": "A: -0.1"}]}',  # logprobs as a string
        '{"choices": [{"logprobs": {"content": [{"top_logprobs": [{"token": "A", "logprob": -' + "9" * 5000
        + "}]}]}}]}",  # beyond the integer-digit limit
        '{"choices": [{"logprobs": {"content": [{"top_logprobs": [{"token": ["A"], "logprob": -1}]}]}}]}',
        '{"choices": [{"logprobs": {"content": [{"top_logprobs": [{"token": "A", "logprob": NaN}]}]}}]}',
    ],
    "json": [
        '{"choices": [{"message": {"content": ["A"]}}]}',  # non-text content
        '{"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": 1e999}}',
        '{"choices": ' + "[" * 50_000 + "]" * 50_000 + "}",  # nested beyond the decoder
        '{"choices": [{"message": {"content": "x"}}], "usage": "many"}',
        "<html>bad gateway</html>",
    ],
}


def test_defect11_clinical_panel_over_a_malformed_http_server_completes_with_recorded_errors(store: Store) -> None:
    """A clinical panel whose agents talk to servers returning malformed bodies runs all
    its rounds; every turn is a recorded failed call (BackendError), nothing escapes."""
    from runtime.http_backend import OpenAICompatBackend
    from tests.runtime.fake_openai_server import fake_server

    with fake_server() as scored_server, fake_server() as json_server:
        agents = []
        for mode, server in (("scored", scored_server), ("json", json_server)):
            bodies = iter(_MALFORMED[mode] * 10)
            server.reply = lambda bodies=bodies: (200, next(bodies).encode())
            backend = OpenAICompatBackend(server.url, f"m-{mode}", timeout=5)
            agents.append(LoggedAgent(DiagnosticAgent(backend, LABELS, mode=mode), store))
        panel = LlmPanel(agents, ["c1", "c2", "c3"], ["chest pain", "wheeze", "heartburn"], run_id="r")
        out = np.stack([panel.report(t) for t in (1, 2, 3)])
        assert scored_server.requests == 9 and json_server.requests == 9  # 3 rounds x 3 cases; no cache answers
    assert out.shape == (3, 3, 2, 3) and np.isfinite(out).all()
    np.testing.assert_allclose(out, 1 / 3)
    assert panel.errors == panel.calls == 18 and len(panel.turns) == 18
    for turn in panel.turns:
        assert turn["error"].startswith("call failed: BackendError: ") and "\n" not in turn["error"]
        assert len(turn["error"]) < 400 and turn["label"] is None
    logged = store.con.execute("SELECT count(*) FROM llm_calls WHERE error LIKE 'call failed: BackendError%'"
                               ).fetchone()[0]
    assert logged == 18
    reasons = " | ".join(t["error"] for t in panel.turns)
    for words in ("'usage' as a JSON list", "'logprobs' as a JSON str", "4300 digits", "malformed top_logprobs",
                  "no finite top logprobs", "non-text content", "not a whole number", "nested too deeply",
                  "'usage' as a JSON str", "malformed JSON"):
        assert words in reasons, words
