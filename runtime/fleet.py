"""The settings of a model served by a fleet of OpenAI-compatible servers, and its key.

A fleet key names one model served by one or more servers::

    openai:URL[,URL...]#MODEL

- ``URL`` is ``http://host:port`` or ``https://host:port``, optionally ending in ``/`` or
  ``/v1`` (both removed); several URLs are separated by commas, without spaces, and must
  differ.  Every server must serve the same weights under the same name.
- ``MODEL`` is the name the servers know the model by (vLLM's ``--served-model-name``;
  llama-cpp-python's single-model server ignores it).  Without ``#MODEL`` the name is
  ``default``.  The model name always follows ``#``: ``http://h:8000/v1:name`` is refused
  with a message saying so (a colon cannot separate it from a port).

The key says *what* is called (it is part of run ids and cache keys); *how* it is called
is set apart, so changing it never invalidates a cached call:

- ``DCEM_OPENAI_CONCURRENCY``: requests in flight at once over the whole fleet
  (default :data:`DEFAULT_CONCURRENCY`);
- ``DCEM_OPENAI_MAX_ATTEMPTS``: tries per call, over every URL (default 4);
- ``DCEM_OPENAI_PER_SERVER``: requests in flight at once on any one server (default 0:
  no limit beyond the concurrency; 1 for servers that answer one request at a time,
  such as llama-cpp-python's).

:func:`parse_openai_key` turns a key (and those variables) into a :class:`FleetConfig`;
every error is a :class:`~common.errors.ConfigError` naming the field.
"""
from __future__ import annotations

import os
import re
import urllib.parse
from dataclasses import dataclass
from typing import Mapping

from common.errors import ConfigError
from common.fields import Number, OneOf, Seq, Spec, Text, Whole, check

__all__ = ["FleetConfig", "parse_openai_key", "normalise_url", "HTTP_PREFIX", "DEFAULT_CONCURRENCY",
           "CONCURRENCY_ENV", "ATTEMPTS_ENV", "PER_SERVER_ENV", "MAX_CONCURRENCY", "MAX_ATTEMPTS"]

HTTP_PREFIX = "openai:"
DEFAULT_CONCURRENCY = 4
MAX_CONCURRENCY = 256
MAX_ATTEMPTS = 20
CONCURRENCY_ENV = "DCEM_OPENAI_CONCURRENCY"
ATTEMPTS_ENV = "DCEM_OPENAI_MAX_ATTEMPTS"
PER_SERVER_ENV = "DCEM_OPENAI_PER_SERVER"
_FORM = "openai:URL[,URL...]#MODEL, e.g. openai:http://h1:8000/v1,http://h2:8000/v1#smollm2"


def normalise_url(raw: str, field: str = "urls") -> str:
    """``http(s)://host[:port][/prefix]`` without a trailing ``/`` or ``/v1``; a
    :class:`ConfigError` naming ``field`` when it is not such a URL."""
    url = raw.strip().rstrip("/")
    if url.endswith("/v1"):
        url = url[:-3]
    if not url:
        raise ConfigError(field, f"an empty URL (a stray comma?) in {_FORM}")
    if any(c.isspace() for c in url) or "," in url:
        raise ConfigError(field, f"{raw!r} contains a space or a comma; separate URLs with ',' and no spaces")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ConfigError(field, f"{raw!r} must start with http:// or https://")
    if not parts.hostname:
        raise ConfigError(field, f"{raw!r} names no host")
    try:
        parts.port  # noqa: B018 -- raises on a port that is not a number in 0..65535
    except ValueError:
        raise ConfigError(field, f"{raw!r} has a port that is not a number in 1..65535 "
                                 "(the model name goes after '#')") from None
    if ":" in parts.path:
        raise ConfigError(field, f"{raw!r}: write the model name after '#', not ':' ({_FORM})")
    if parts.query or parts.fragment:
        raise ConfigError(field, f"{raw!r} must not carry a query or a fragment")
    return url


_URLS = Seq(min_len=1, types=(list, tuple, set, frozenset), msg=f"give one or more server URLs as a tuple ({_FORM})")
_FLEET = Spec({
    "model": Text(pattern=re.compile(r"[^#]*"), msg="must be a non-empty model name without '#', got {value!r}"),
    "concurrency": Whole(1, MAX_CONCURRENCY), "per_server": Whole(0, MAX_CONCURRENCY),
    "max_attempts": Whole(1, MAX_ATTEMPTS), "backoff_s": Number(0.0, 60.0),
})
_TIMES = Spec({"down_for_s": Number(0.0, 3600.0), "timeout_s": Number(1e-3, 3600.0),
               "json_mode": OneOf(("json_object", "json_schema"), msg="must be 'json_object' or 'json_schema', got {value!r}")})


@dataclass(frozen=True)
class FleetConfig:
    """One model on one or more OpenAI-compatible servers.

    urls : the servers' base URLs (normalised by :func:`normalise_url`, distinct).
    model : the name the servers know the model by.
    concurrency : requests in flight at once over the whole fleet.
    per_server : requests in flight at once on any one server; 0 = no limit beyond
        ``concurrency``.  A request waits for a server with room (see
        :class:`runtime.http_fleet.FleetBackend`).
    max_attempts : tries per call over all URLs (1 = no retry).  A connection error, a
        timeout or an HTTP 5xx is retried, on another URL when one is up; an HTTP 4xx
        or a malformed 200 reply is not.
    backoff_s, backoff_max_s : the pause before retry ``k`` (when no untried URL is up)
        is ``min(backoff_max_s, backoff_s * 2**(k-1))``, its second half drawn uniformly
        (jitter), so one call waits at most ``(max_attempts - 1) * backoff_max_s``.
    down_for_s : a URL that failed is passed over this long (unless every URL is down).
    timeout_s : seconds per request.
    json_mode, api_key : as for :class:`runtime.http_backend.OpenAICompatBackend`.
    """

    urls: tuple[str, ...]
    model: str = "default"
    concurrency: int = DEFAULT_CONCURRENCY
    per_server: int = 0
    max_attempts: int = 4
    backoff_s: float = 0.25
    backoff_max_s: float = 4.0
    down_for_s: float = 10.0
    timeout_s: float = 60.0
    json_mode: str = "json_object"
    api_key: str | None = None

    def __post_init__(self) -> None:
        """Normalise the URLs and check every field."""
        check("urls", self.urls, _URLS)
        urls = tuple(normalise_url(u) for u in self.urls)
        twice = sorted({u for u in urls if urls.count(u) > 1})
        if twice:
            raise ConfigError("urls", f"{', '.join(twice)} is listed more than once")
        object.__setattr__(self, "urls", urls)
        _FLEET.apply(self)
        check("backoff_max_s", self.backoff_max_s, Number(self.backoff_s, 600.0))
        _TIMES.apply(self)

    @property
    def capacity(self) -> int:
        """Requests that can be in flight at once: ``concurrency``, or fewer when
        ``per_server`` times the number of servers is smaller."""
        if self.per_server == 0:
            return self.concurrency
        return min(self.concurrency, self.per_server * len(self.urls))


def _env_int(env: Mapping[str, str], name: str, default: int, high: int, low: int = 1, hint: str = "") -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        raise ConfigError(name, f"must be a whole number in [{low}, {high}]{hint}, got {raw!r}")
    return value


def parse_openai_key(key: str, env: Mapping[str, str] | None = None) -> FleetConfig:
    """The :class:`FleetConfig` of ``openai:URL[,URL...]#MODEL`` (see the module docstring);
    the concurrency, the attempts and the per-server limit come from ``env`` (default: the
    process environment)."""
    env = os.environ if env is None else env
    key = key.strip()
    if not key.startswith(HTTP_PREFIX):
        raise ConfigError("model key", f"{key!r} is not an OpenAI-compatible key ({_FORM})")
    body, sep, model = key[len(HTTP_PREFIX):].partition("#")
    if sep and not model.strip():
        raise ConfigError("model", f"{key!r}: give the model name after '#' ({_FORM})")
    if not body.strip():
        raise ConfigError("urls", f"{key!r}: give at least one server URL ({_FORM})")
    return FleetConfig(urls=tuple(body.split(",")), model=model.strip() or "default",
                       concurrency=_env_int(env, CONCURRENCY_ENV, DEFAULT_CONCURRENCY, MAX_CONCURRENCY),
                       max_attempts=_env_int(env, ATTEMPTS_ENV, 4, MAX_ATTEMPTS),
                       per_server=_env_int(env, PER_SERVER_ENV, 0, MAX_CONCURRENCY, low=0,
                                           hint=" (requests in flight per server; 0 = no limit)"))
