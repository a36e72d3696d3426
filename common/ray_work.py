"""Units computed on Ray: a local instance or a cluster, with the driver alone writing the store.

``RayExecutor`` is the :class:`common.work.Executor` of ``--executor ray``.  It starts
``workers`` Ray actors (each reserving ``threads`` CPUs, and ``gpus`` GPUs where the
cluster has them); an actor opens the job once (loads its models) and keeps it open for
every unit it is given, across the runs of one executor (the parts of an evaluation).
Results stream back to the driver as they finish, and :func:`common.work.run_units`
writes each in one transaction: DuckDB keeps one writer.

Faults: a unit whose actor dies (killed, out of memory, a lost node) is given to a fresh
actor, up to ``retries`` more times, and written once, when it succeeds; a unit that
raises is returned as a :class:`common.work.Failure` with its message, and the job goes
on; a driver that is killed loses no unit it had written, and the same command resumes
(the actors die with it).  ``ray`` is imported only when this executor is used.

Joining a cluster (``address``, ``HOST:PORT``): :meth:`RayExecutor.connect` first opens a
plain TCP connection to the address, for at most :data:`CONNECT_TIMEOUT_S` seconds, so an
address nobody answers on is one line at once (Ray itself retries for minutes); a command
connects before it stores anything.
"""
from __future__ import annotations

import argparse
import collections
import logging
import os
import re
import socket
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from common.errors import ConfigError
from common.fields import Whole, check
from common.work import Cancel, Failure, Job, Unit, Worker, failure_of

__all__ = ["RayExecutor", "UnitActor", "EXECUTORS", "check_executor", "check_address", "CONNECT_TIMEOUT_S"]

log = logging.getLogger(__name__)

EXECUTORS = ("process", "ray")
PROJECT_ROOT = Path(__file__).resolve().parents[1]
_WAIT_S = 0.25  # how often cancel() is polled while units are under way
CONNECT_TIMEOUT_S = 10.0
"""How long joining a cluster waits for its address to answer at all."""


def check_executor(name: str, address: str | None = None) -> None:
    if name not in EXECUTORS:
        raise ConfigError("executor", f"must be one of {', '.join(EXECUTORS)}, got {name!r}")
    if address and name != "ray":
        raise ConfigError("ray_address", "a Ray address needs --executor ray")


def check_address(address: str) -> tuple[str, int]:
    """The host and port of ``HOST:PORT`` (:func:`common.cli_args.host_port`), or a
    :class:`ConfigError` naming ``ray_address``."""
    from common.cli_args import host_port

    try:
        text = host_port(address)
    except argparse.ArgumentTypeError as exc:
        raise ConfigError("ray_address", str(exc)) from None
    host, _, port = text.rpartition(":")
    return host.strip("[]"), int(port)


def _answers(address: str, timeout: float) -> None:
    """Refuse, with one line, an address where nothing accepts a TCP connection in ``timeout`` s."""
    host, port = check_address(address)
    try:
        with socket.create_connection((host, port), timeout=timeout) as conn:
            speaks = _speaks_grpc(conn, timeout)
    except socket.gaierror:
        raise ConfigError("ray_address", f"cannot find the host {host!r} of {address}") from None
    except TimeoutError:
        raise ConfigError("ray_address", f"nothing answered at {address} within {timeout:g} s; is `ray start "
                                         "--head` running there, and is the port open to this machine?") from None
    except OSError as exc:
        raise ConfigError("ray_address", f"nothing answers at {address} ({exc.strerror or exc}); start the cluster "
                                         f"there with `ray start --head --port {port}`, or leave out --ray-address "
                                         "for a local Ray instance") from None
    if not speaks:
        raise ConfigError("ray_address", f"something answers at {address}, but not as a Ray cluster does (no gRPC "
                                         "reply); give the address `ray start --head` printed (its GCS port, 6379 "
                                         "by default)")


# HTTP/2's client preface and an empty SETTINGS frame: a gRPC server (Ray's GCS) answers
# with a SETTINGS frame of its own; anything else (a web server, a database) does not.
_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def _speaks_grpc(conn: socket.socket, timeout: float) -> bool:
    """Whether the peer on ``conn`` answers HTTP/2's preface with a SETTINGS frame within
    ``timeout`` seconds (a Ray GCS does at once; Ray itself would retry for minutes)."""
    conn.settimeout(timeout)
    try:
        conn.sendall(_H2_PREFACE)
        head = b""
        while len(head) < 9:
            chunk = conn.recv(9 - len(head))
            if not chunk:
                return False
            head += chunk
    except OSError:
        return False
    return head[3] == 4  # the frame type of SETTINGS


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:  # pragma: no cover - ray is in requirements.txt
        raise ConfigError("executor", "the ray executor needs the ray package: pip install -r requirements.txt") \
            from None
    return ray


class UnitActor:
    """A Ray worker: opens a job once and computes its units (wrapped by ``ray.remote``)."""

    def __init__(self) -> None:
        self.key: str | None = None
        self.worker: Worker | None = None

    def compute(self, job: Job, payload: Any) -> Any:
        if self.worker is None or job.key != self.key:
            self.worker, self.key = job.open(None), job.key
        try:
            return self.worker.compute_unit(payload, lambda: None)
        except Exception as exc:  # noqa: BLE001 - recorded as the unit's failure by the driver
            return failure_of(exc)

    def pid(self) -> int:
        return os.getpid()


class RayExecutor:
    """See the module docstring.  Use as a context manager (or call :meth:`close`): the
    actors and, when this executor started it, the local Ray instance end with it."""

    def __init__(self, *, workers: int = 2, threads: int = 1, gpus: float = 0.0, address: str | None = None,
                 retries: int = 2) -> None:
        for name, value, low in (("workers", workers, 1), ("threads", threads, 1), ("retries", retries, 0)):
            check(name, value, Whole(low))
        if not gpus >= 0:
            raise ConfigError("gpus", f"must be >= 0, got {gpus!r}")
        if address:
            check_address(address)
        self.workers, self.threads, self.gpus, self.address, self.retries = workers, threads, gpus, address, retries
        self.actors: list[Any] = []
        self.started = False
        self.deaths = 0  # actors that died under a unit (each unit was given to a fresh one)

    def __enter__(self) -> "RayExecutor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def connect(self) -> None:
        """Join the cluster (or start the local instance) now rather than with the first
        units: a cluster that cannot be joined is a :class:`ConfigError` of one line."""
        self._ray()

    def _ray(self) -> Any:
        ray = _import_ray()
        if not ray.is_initialized():
            # workers import the project from the driver's checkout (on a cluster: the same path on every node)
            path = os.pathsep.join(p for p in (str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")) if p)
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": "WARNING",
                                      "runtime_env": {"env_vars": {"PYTHONPATH": path}}}
            if self.address:
                _answers(self.address, CONNECT_TIMEOUT_S)
                try:
                    ray.init(address=self.address, **kwargs)
                except Exception as exc:  # noqa: BLE001 - Ray raises several kinds; each is one line here
                    raise ConfigError("ray_address", f"cannot join the Ray cluster at {self.address}: "
                                                     f"{_first_line(exc)}") from None
            else:
                ray.init(num_cpus=self.workers * self.threads, num_gpus=self.gpus * self.workers or None, **kwargs)
                self.started = True
        return ray

    def _actor(self, ray: Any) -> Any:
        cls = ray.remote(num_cpus=self.threads, num_gpus=self.gpus, max_restarts=0, max_task_retries=0)(UnitActor)
        return cls.remote()

    def run(self, job: Job, units: Sequence[Unit], tick: Callable[[Unit], None],
            cancel: Cancel | None) -> Iterator[tuple[Unit, Any]]:
        if not units:
            return
        ray = self._ray()
        while len(self.actors) < self.workers:
            self.actors.append(self._actor(ray))
        job_ref = ray.put(job)
        queue = collections.deque((u, 0) for u in units)
        inflight: dict[Any, tuple[Unit, int, int]] = {}  # task -> (unit, actor slot, attempt)
        idle = list(range(len(self.actors)))
        while queue or inflight:
            if cancel is not None and cancel():
                return
            while queue and idle:
                unit, attempt = queue.popleft()
                slot = idle.pop()
                inflight[self.actors[slot].compute.remote(job_ref, unit.payload)] = (unit, slot, attempt)
            ready, _ = ray.wait(list(inflight), num_returns=1, timeout=_WAIT_S)
            for ref in ready:
                unit, slot, attempt = inflight.pop(ref)
                idle.append(slot)
                result = self._collect(ray, ref, unit, slot, attempt, queue)
                if result is not _RETRIED:
                    yield unit, result

    def _collect(self, ray: Any, ref: Any, unit: Unit, slot: int, attempt: int,
                 queue: collections.deque[tuple[Unit, int]]) -> Any:
        try:
            return ray.get(ref)
        except ray.exceptions.RayActorError as exc:
            self.deaths += 1
            self.actors[slot] = self._actor(ray)  # a fresh worker for this slot
            if attempt < self.retries:
                log.warning("the worker computing %s died; retrying it (%d of %d)", unit.key, attempt + 1,
                            self.retries)
                queue.appendleft((unit, attempt + 1))
                return _RETRIED
            return Failure(f"the worker computing it died {attempt + 1} times: {_first_line(exc)}")
        except ray.exceptions.RayTaskError as exc:  # raised outside the unit (unpickling its payload)
            return failure_of(exc.cause if isinstance(exc.cause, BaseException) else exc)

    def close(self) -> None:
        if not self.actors and not self.started:
            return
        ray = _import_ray()
        for actor in self.actors:
            try:
                ray.kill(actor)
            except Exception:  # noqa: BLE001 - an actor already gone
                pass
        self.actors = []
        if self.started:
            ray.shutdown()
            self.started = False


_RETRIED = object()
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _first_line(exc: BaseException) -> str:
    text = _ANSI.sub("", str(exc)).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
