"""A model behind an OpenAI-compatible HTTP server (llama.cpp server, vLLM, Ollama).

Only the standard library is used (:mod:`urllib.request`), so the backend adds no
dependency.  Both calls POST to ``{base_url}/v1/chat/completions``:

- ``generate`` sends the messages with ``temperature``, ``seed`` and ``max_tokens``.
  When ``options.json_schema`` is set it adds a ``response_format`` in one of two styles
  chosen by the ``json_mode`` constructor argument:

  * ``"json_object"`` (default; llama-cpp-python's server and llama.cpp's ``llama-server``):
    ``{"type": "json_object", "schema": <schema>}``;
  * ``"json_schema"`` (vLLM, the OpenAI API, Ollama >= 0.5):
    ``{"type": "json_schema", "json_schema": {"name": "reply", "schema": <schema>,
    "strict": true}}``.  llama-cpp-python's server rejects this style with an HTTP error.

- ``score_options`` asks for one token (``max_tokens=1``, greedy) with ``logprobs: true,
  top_logprobs: 20`` and reads the top log-probabilities of the first generated position.
  A token counts for an option when it equals the option after leading whitespace (and the
  byte-level / SentencePiece space markers ``Ġ`` and ``▁``) is stripped, so " A" and "A"
  both count for "A"; when several tokens match, the largest log-probability is taken.
  Options are therefore expected to be single tokens (the agents use letters).

  An option missing from the top 20 gets the floor :data:`ABSENT_PENALTY` below the
  smallest listed log-probability: ``min(listed) - log(20)``.  Its true probability is at
  most the smallest listed one (otherwise it would have been listed), so the floor stays
  below every listed option and keeps the ranking; dividing by 20 expresses "much less
  likely than anything listed" without claiming the unknown tail (-inf would make a
  renormalised vector degenerate).  Servers that return no ``logprobs`` (older Ollama)
  raise :class:`BackendError`.

Every failure (connection refused, timeout, HTTP 4xx/5xx, a body that is not the expected
JSON) raises :class:`BackendError` with a one-line message naming the URL and the status.
A failure of the transport itself is an :class:`HTTPCallError` (a :class:`BackendError`)
that also says whether another try may succeed: ``retryable`` is true for connection
errors, timeouts, replies broken off mid-way and HTTP 5xx, false for HTTP 4xx and for
anything else (:mod:`runtime.http_fleet` retries on that flag).
The reply's shape is checked strictly: ``choices[0].message.content`` must be text (or
null, read as ""), ``usage`` an object whose token counts are non-negative integers,
``logprobs`` an object whose ``content[0].top_logprobs`` entries carry a text ``token``
and a numeric ``logprob``.  Anything else -- a list where an object belongs, a string for
a number, numbers beyond a float or Python's integer-digit limit, nesting too deep to
decode -- is a :class:`BackendError` quoting at most ~100 characters of the body; no
other exception leaves :meth:`OpenAICompatBackend.generate` or
:meth:`OpenAICompatBackend.score_options`.

Identity: when the weights' hash is unknown (it usually is for a remote server),
``model_sha256`` defaults to ``sha256(f"{base_url}|{model}")``.  It only identifies the
endpoint and model name in cache keys; it does not notice the server swapping weights
under the same name, so pass the real file hash when you know it.
"""
from __future__ import annotations

import hashlib
import http.client
import json
import logging
import math
import socket
import time
import urllib.error
import urllib.request
from typing import Any, Callable, Sequence, TypeVar

from common.errors import ConfigError
from common.fields import Either, Instance, Number, Satisfies, Seq, Whole, bare, check, fixed
from runtime.backends import BackendError
from runtime.messages import GenerationOptions, Message, OptionScores, Reply

__all__ = ["OpenAICompatBackend", "HTTPCallError", "JSON_MODES", "TOP_LOGPROBS", "ABSENT_PENALTY", "default_identity"]

_T = TypeVar("_T")

JSON_MODES = ("json_object", "json_schema")
TOP_LOGPROBS = 20
ABSENT_PENALTY = math.log(TOP_LOGPROBS)  # floor = min(listed logprobs) - ABSENT_PENALTY
_SPACE_MARKERS = " \t\n\r\u0120\u2581"  # whitespace, "Ġ" (byte-level BPE), "▁" (SentencePiece)
_DETAIL_CHARS = 100  # at most this much of a server's body appears in an error
MAX_TOKEN_COUNT = 10**12  # a usage count above this is not a token count

log = logging.getLogger(__name__)


def default_identity(base_url: str, model: str) -> str:
    """The stand-in ``model_sha256`` of an endpoint whose weights' hash is unknown."""
    return hashlib.sha256(f"{base_url}|{model}".encode("utf-8")).hexdigest()


def _one_line(text: str, limit: int = _DETAIL_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 3] + "..."


def _snippet(value: Any, limit: int = _DETAIL_CHARS) -> str:
    """At most ``limit`` characters of a decoded JSON value, for an error message."""
    try:
        text = value if isinstance(value, str) else json.dumps(value)
    except (ValueError, TypeError, RecursionError):  # too deep or not serialisable
        text = f"<{type(value).__name__}>"
    return _one_line(text[:limit * 4], limit)


_REPLY = bare(BackendError)  # a reply's shape errors name the call, not a field
_NON_EMPTY = Seq(min_len=1, types=(list,))


def _error_detail(body: bytes) -> str:
    """The server's error message from an error body (OpenAI, FastAPI or plain text)."""
    text = body.decode("utf-8", errors="replace")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, digit limit, nested too deeply
        return _one_line(text[:_DETAIL_CHARS * 4])
    if isinstance(data, dict):
        err = data.get("error", data.get("detail", data))
        if isinstance(err, dict) and "message" in err:
            err = err["message"]
        return _snippet(err)
    return _one_line(text[:_DETAIL_CHARS * 4])


def _token_count(usage: Any, key: str, where: str) -> int:
    """A usage token count: missing or null is 0, else a non-negative whole number."""
    if usage is None:
        return 0
    check("usage", usage, Instance(dict, msg=lambda v: f"{where} has 'usage' as a JSON {type(v).__name__}, not an "
                                                       "object"), error=_REPLY)
    value = usage.get(key)
    if value is None:
        return 0
    check(key, value, Number(msg=lambda v: f"{where} has usage.{key} {_snippet(v, 40)!s} that is not a number"),
          Either((Whole(), Satisfies(lambda v: math.isfinite(v) and v.is_integer())),
                 msg=lambda v: f"{where} has usage.{key} {v!r} that is not a whole number"), error=_REPLY)
    if not 0 <= value <= MAX_TOKEN_COUNT:
        shown = f"{value:.3g}" if isinstance(value, float) or abs(value) < 10**15 else "a huge integer"
        raise BackendError(f"{where} has usage.{key} out of range ({shown})")
    return int(value)


class HTTPCallError(BackendError):
    """A request that failed in transport: ``status`` is the HTTP status (None when no
    reply came), ``retryable`` whether the same request may succeed on a retry."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False) -> None:
        super().__init__(message)
        self.status, self.retryable = status, retryable


class OpenAICompatBackend:
    """A chat model served over the OpenAI-compatible API.

    Parameters: base_url (``http://host:port``; a trailing ``/`` or ``/v1`` is removed),
    model (the name the server knows the model by; llama-cpp-python's single-model server
    ignores it), api_key (sent as ``Authorization: Bearer``), timeout in seconds per
    request, model_sha256 (the weights' hash if known, else :func:`default_identity`),
    json_mode (``"json_object"`` or ``"json_schema"``, see the module docstring).
    """

    name = "openai-http"

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None, timeout: float = 60,
                 model_sha256: str | None = None, json_mode: str = "json_object") -> None:
        base = base_url.strip().rstrip("/")
        if base.endswith("/v1"):
            base = base[:-3]
        if not base.startswith(("http://", "https://")):
            raise ConfigError("base_url", f"must start with http:// or https://, got {base_url!r}")
        if not model:
            raise ConfigError("model", "must be a non-empty model name")
        if json_mode not in JSON_MODES:
            raise ConfigError("json_mode", f"must be one of {JSON_MODES}, got {json_mode!r}")
        if not timeout > 0:
            raise ConfigError("timeout", f"must be > 0 seconds, got {timeout}")
        self.base_url = base
        self.model_id = model
        self.api_key = api_key
        self.timeout = float(timeout)
        self.json_mode = json_mode
        self.model_sha256 = model_sha256 or default_identity(base, model)

    # ------------------------------------------------------------------- transport
    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def request(self, path: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
        """GET (payload None) or POST JSON to ``base_url + path``; the decoded JSON object.

        Raises :class:`BackendError` naming the URL and the status on any failure.
        """
        url = self.base_url + path
        method = "GET" if payload is None else "POST"
        data = None if payload is None else json.dumps(payload).encode("utf-8")
        req = urllib.request.Request(url, data=data, headers=self._headers(), method=method)
        log.debug("%s %s", method, url)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                status, body = resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            try:
                detail = _error_detail(exc.read() or b"")
            except Exception:  # noqa: BLE001 -- the body broke off; the status still says it
                detail = ""
            raise HTTPCallError(f"{method} {url} returned HTTP {exc.code} {exc.reason}"
                                + (f": {detail}" if detail else ""), status=exc.code,
                                retryable=exc.code >= 500) from None
        except (TimeoutError, socket.timeout):
            raise HTTPCallError(f"{method} {url} failed: timed out after {self.timeout:g} s",
                                retryable=True) from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, (TimeoutError, socket.timeout)):
                raise HTTPCallError(f"{method} {url} failed: timed out after {self.timeout:g} s",
                                    retryable=True) from None
            if isinstance(reason, ConnectionRefusedError):
                raise HTTPCallError(f"{method} {url} failed: connection refused (is the server running?)",
                                    retryable=True) from None
            raise HTTPCallError(f"{method} {url} failed: {_one_line(str(reason))}", retryable=True) from None
        except (ConnectionError, OSError) as exc:  # reset or closed mid-response
            raise HTTPCallError(f"{method} {url} failed: {_one_line(str(exc) or type(exc).__name__)}",
                                retryable=True) from None
        except http.client.HTTPException as exc:  # bad status line, truncated body, header too long
            raise HTTPCallError(f"{method} {url} failed: malformed HTTP reply ({type(exc).__name__}: "
                                f"{_one_line(str(exc)[:400], 80)})", retryable=True) from None
        except Exception as exc:  # noqa: BLE001 -- anything else the transport raises on a broken reply
            raise BackendError(f"{method} {url} failed: {type(exc).__name__}: {_one_line(str(exc)[:400], 80)}"
                               ) from None
        try:
            out = json.loads(body.decode("utf-8"))
        except RecursionError:
            raise BackendError(f"{method} {url} returned HTTP {status} with JSON nested too deeply: "
                               f"{_one_line(body[:400].decode('utf-8', 'replace'), 80)}") from None
        except ValueError as exc:  # not UTF-8, not JSON, an integer beyond the digit limit
            raise BackendError(f"{method} {url} returned HTTP {status} with malformed JSON "
                               f"({_one_line(str(exc)[:400], 80)}): "
                               f"{_one_line(body[:400].decode('utf-8', 'replace'), 80)}") from None
        return check("reply", out, Instance(dict, msg=lambda v: f"{method} {url} returned HTTP {status} with a JSON "
                                                              f"{type(v).__name__}, not an object"), error=_REPLY)

    def list_models(self) -> list[str]:
        """Model ids listed by ``GET /v1/models``."""
        out = self.request("/v1/models")
        data = check("data", out.get("data"), Instance(list), error=_REPLY,
                     msg=fixed(f"GET {self.base_url}/v1/models returned HTTP 200 without a 'data' list"))
        return [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]

    def _chat(self, messages: Sequence[Message], **fields: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """POST a chat completion; the first choice and the whole reply."""
        payload: dict[str, Any] = {"model": self.model_id, "messages": [m.to_dict() for m in messages]}
        payload.update(fields)
        out = self.request("/v1/chat/completions", payload)

        def no_choice(_: Any) -> str:
            return f"POST {self.base_url}/v1/chat/completions returned HTTP 200 without choices: {_snippet(out)}"

        choices = check("choices", out.get("choices"), Seq(min_len=1, types=(list,)), msg=no_choice, error=_REPLY)
        return check("choices", choices[0], Instance(dict), msg=no_choice, error=_REPLY), out

    def response_format(self, schema: dict[str, Any]) -> dict[str, Any]:
        """The ``response_format`` field for a JSON schema in this backend's ``json_mode``."""
        if self.json_mode == "json_object":
            return {"type": "json_object", "schema": schema}
        return {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema, "strict": True}}

    def _shape_error(self, exc: BaseException) -> BackendError:
        """A parsing slip not caught by the explicit checks, as a one-line BackendError."""
        return BackendError(f"POST {self.base_url}/v1/chat/completions returned a reply of unexpected shape "
                            f"({type(exc).__name__}: {_one_line(str(exc)[:400], 80)})")

    def _guarded(self, call: Callable[..., _T], *args: Any) -> _T:
        """``call(*args)``; a parsing slip the explicit checks missed becomes a BackendError."""
        try:
            return call(*args)
        except BackendError:
            raise
        except (LookupError, TypeError, AttributeError, ValueError, RecursionError, ArithmeticError) as exc:
            raise self._shape_error(exc) from None

    # -------------------------------------------------------------------- generate
    def generate(self, messages: Sequence[Message], options: GenerationOptions) -> Reply:
        return self._guarded(self._generate, messages, options)

    def _generate(self, messages: Sequence[Message], options: GenerationOptions) -> Reply:
        fields: dict[str, Any] = {"temperature": options.temperature, "seed": options.seed,
                                  "max_tokens": options.max_tokens}
        if options.json_schema is not None:
            fields["response_format"] = self.response_format(options.json_schema)
        start = time.perf_counter()
        choice, out = self._chat(messages, **fields)
        where = f"POST {self.base_url}/v1/chat/completions"
        message = check("message", choice.get("message"), Instance(dict), error=_REPLY,
                        msg=lambda _: f"{where} returned HTTP 200 without choices[0].message: {_snippet(choice)}")
        content = message.get("content")
        if content is None:
            content = ""
        check("content", content, Instance(str), error=_REPLY, msg=lambda v: (
            f"{where} returned non-text content (a JSON {type(v).__name__}): {_snippet(v)}"))
        usage = out.get("usage")
        return Reply(text=content, prompt_tokens=_token_count(usage, "prompt_tokens", where),
                     completion_tokens=_token_count(usage, "completion_tokens", where),
                     duration_s=time.perf_counter() - start, raw=out)

    # ----------------------------------------------------------------------- score
    def _top_logprobs(self, choice: dict[str, Any]) -> list[tuple[str, float]]:
        """(token, logprob) pairs of the first generated position."""
        url = f"{self.base_url}/v1/chat/completions"
        logprobs = check("logprobs", choice.get("logprobs"), Instance(dict), optional=True, error=_REPLY, msg=lambda v: (
            f"POST {url} returned 'logprobs' as a JSON {type(v).__name__}, not an object: {_snippet(v)}"))
        content = check("logprobs", (logprobs or {}).get("content"), _NON_EMPTY, error=_REPLY, msg=fixed(
            f"POST {url} returned HTTP 200 without logprobs (does the server support 'logprobs'/'top_logprobs'?)"))
        first = content[0]
        tops = check("top_logprobs", first.get("top_logprobs") if isinstance(first, dict) else None, _NON_EMPTY,
                     msg=fixed(f"POST {url} returned HTTP 200 without top_logprobs at the first position"), error=_REPLY)
        pairs = []
        for item in tops:
            token = item.get("token") if isinstance(item, dict) else None
            value = item.get("logprob") if isinstance(item, dict) else None
            def malformed(_: Any, item: Any = item) -> str:
                return f"POST {url} returned a malformed top_logprobs entry: {_snippet(item)}"
            check("token", token, Instance(str), msg=malformed, error=_REPLY)
            check("logprob", value, Number(), msg=malformed, error=_REPLY)
            try:
                number = float(value)
            except OverflowError:  # an integer too large for a float
                number = math.inf if value > 0 else -math.inf
            pairs.append((token, number))
        return pairs

    def score_options(self, messages: Sequence[Message], options: Sequence[str]) -> OptionScores:
        return self._guarded(self._score_options, messages, options)

    def _score_options(self, messages: Sequence[Message], options: Sequence[str]) -> OptionScores:
        start = time.perf_counter()
        choice, out = self._chat(messages, max_tokens=1, temperature=0.0, seed=0,
                                 logprobs=True, top_logprobs=TOP_LOGPROBS)
        pairs = self._top_logprobs(choice)
        finite = [lp for _, lp in pairs if math.isfinite(lp)]
        if not finite:
            raise BackendError(f"POST {self.base_url}/v1/chat/completions returned no finite top logprobs")
        floor = min(finite) - ABSENT_PENALTY
        best: dict[str, float] = {}
        for token, lp in pairs:
            key = token.lstrip(_SPACE_MARKERS)
            if math.isfinite(lp) and lp > best.get(key, -math.inf):
                best[key] = lp
        wanted = [o.lstrip(_SPACE_MARKERS) for o in options]
        values = tuple(min(best.get(o, floor), 0.0) for o in wanted)
        missing = [o for o in wanted if o not in best]
        if missing:
            log.debug("options %s not in the top %d; floor %.3f", missing, TOP_LOGPROBS, floor)
        return OptionScores(values, prompt_tokens=_token_count(out.get("usage"), "prompt_tokens",
                                                               f"POST {self.base_url}/v1/chat/completions"),
                            duration_s=time.perf_counter() - start)
