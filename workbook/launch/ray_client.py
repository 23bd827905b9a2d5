"""Talking to a Ray cluster: the one module of the workbook that imports ``ray``.

Everything else (the local cluster, the Ray Jobs launcher, the notebook's pre-flight) goes
through these functions, so Ray's own exceptions (bare ``RuntimeError``, ``ConnectionError``)
are turned into :class:`~workbook.errors.LaunchError` / :class:`~workbook.errors.RunFailed`
in one place.

Token authentication (on by default for Ray 2.60 clusters) is resolved the way Ray's C++
``AuthenticationTokenLoader`` does: ``RAY_AUTH_TOKEN``, else the file named by
``RAY_AUTH_TOKEN_PATH``, else ``~/.ray/auth_token``. The token goes into an explicit
``Authorization: Bearer`` header, so a client works whatever this process's ``RAY_AUTH_MODE``
is, and a cluster without authentication simply ignores the header.

The HTTP probes (version, nodes) use the standard library with a short timeout: Ray's SDK sends
its requests without one, so an unreachable address would otherwise hang for minutes.

The workbook's Ray (the ``[ray]`` extra) need not be the cluster's: the job client speaks the
Jobs REST API of the cluster's dashboard, and Ray's own client (2.40 and later) requires only a
job server of Ray 2.0 or later for what the workbook sends (a submission id, a runtime env with
env vars and py_modules; no entrypoint resources). The node and actor lists are the dashboard's
state API (``/api/v0``, Ray 2.0 and later). The tests run a 2.60 client against a 2.60 cluster.
"""

from __future__ import annotations

import asyncio
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbook.errors import LaunchError, RunFailed

DEFAULT_DASHBOARD_PORT = 8265
TERMINAL_STATUSES = frozenset({"SUCCEEDED", "FAILED", "STOPPED"})


def auth_token(env: Mapping[str, str] | None = None) -> str | None:
    """The Ray auth token visible to a client with environment ``env`` (default: ours).

    Same order as Ray: ``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH``, ``~/.ray/auth_token``.
    """
    env = os.environ if env is None else env
    token = (env.get("RAY_AUTH_TOKEN") or "").strip()
    if token:
        return token
    path = env.get("RAY_AUTH_TOKEN_PATH")
    candidates = [Path(path).expanduser()] if path else []
    candidates.append(Path.home() / ".ray" / "auth_token")
    for candidate in candidates:
        try:
            text = candidate.read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if text:
            return text
    return None


def dashboard_url(address: str | None, env: Mapping[str, str] | None = None) -> str:
    """Normalise a job-server address: ``host:port`` -> ``http://host:port``; None -> ``$RAY_ADDRESS``."""
    env = os.environ if env is None else env
    address = address or env.get("RAY_API_SERVER_ADDRESS") or env.get("RAY_ADDRESS")
    if not address:
        raise LaunchError(
            "no Ray address: set the scenario's ray.address (the dashboard/job server, "
            "e.g. http://127.0.0.1:8265), RAY_ADDRESS, or start one with `workbook cluster up`"
        )
    address = address.strip().rstrip("/")
    if address.startswith("ray://"):
        raise LaunchError(
            f"{address} is a Ray Client address; the Ray launcher needs the dashboard/job "
            f"server address (http://<head>:{DEFAULT_DASHBOARD_PORT})"
        )
    if "://" not in address:
        address = "http://" + address
    return address


def _get_json(url: str, token: str | None, timeout_s: float) -> Any:
    """GET ``url`` with the auth header; every failure becomes a LaunchError that says why."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        if exc.code == 401:
            raise LaunchError(
                f"{url}: the cluster requires a Ray auth token and none was found "
                "(set RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH, or ~/.ray/auth_token)"
            ) from None
        if exc.code == 403:
            raise LaunchError(f"{url}: the cluster rejected the Ray auth token") from None
        raise LaunchError(
            f"{url}: HTTP {exc.code} {exc.reason} (is this the Ray dashboard/job server address?)"
        ) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise LaunchError(
            f"cannot reach the Ray job server at {url} within {timeout_s:g} s: {reason} "
            "(is the cluster up, and is this its dashboard address?)"
        ) from None
    except ValueError:
        raise LaunchError(f"{url}: the answer is not JSON; is this a Ray dashboard?") from None


def probe(url: str, token: str | None, timeout_s: float = 5.0) -> str:
    """The Ray version the job server at ``url`` runs; LaunchError if unreachable."""
    data = _get_json(f"{url}/api/version", token, timeout_s)
    version = data.get("ray_version") if isinstance(data, dict) else None
    if not version:
        raise LaunchError(f"{url}/api/version did not name a Ray version; is this a Ray dashboard?")
    return str(version)


@dataclass(frozen=True)
class NodeInfo:
    """One Ray node as the state API reports it."""

    node_id: str
    ip: str
    alive: bool
    is_head: bool
    resources: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "node_id": self.node_id,
            "ip": self.ip,
            "alive": self.alive,
            "is_head": self.is_head,
            "resources": dict(self.resources),
        }


def list_nodes(url: str, token: str | None, timeout_s: float = 10.0) -> list[NodeInfo]:
    """Every node the cluster knows (alive or dead), from the dashboard's state API."""
    data = _get_json(f"{url}/api/v0/nodes?limit=10000&detail=true", token, timeout_s)
    try:
        rows = data["data"]["result"]["result"]
    except (KeyError, TypeError):
        raise LaunchError(
            f"{url}: unexpected answer from the node list: {str(data)[:200]}"
        ) from None
    return [
        NodeInfo(
            node_id=str(row.get("node_id", "")),
            ip=str(row.get("node_ip", "")),
            alive=row.get("state") == "ALIVE",
            is_head=bool(row.get("is_head_node")),
            resources={k: float(v) for k, v in (row.get("resources_total") or {}).items()},
        )
        for row in rows
    ]


def live_actors(url: str, token: str | None, name: str, timeout_s: float = 10.0) -> list[str]:
    """Job ids holding a live actor named ``name``, from the dashboard's state API."""
    query = urllib.parse.urlencode([("limit", 100), ("filter_keys", "name"),
                                    ("filter_predicates", "="), ("filter_values", name),
                                    ("filter_keys", "state"), ("filter_predicates", "="),
                                    ("filter_values", "ALIVE")])
    data = _get_json(f"{url}/api/v0/actors?{query}", token, timeout_s)
    try:
        rows = data["data"]["result"]["result"]
    except (KeyError, TypeError):
        raise LaunchError(f"{url}: unexpected answer from the actor list: {str(data)[:200]}") from None
    return [str(row.get("job_id", "?")) for row in rows]


NOT_INSTALLED = ("the Ray launcher needs Ray's job client in the workbook's environment: "
                 "pip install 'verl-workbook[ray]'")


def _ray_errors() -> tuple[type[BaseException], ...]:
    """What Ray's job SDK raises: bare RuntimeError, requests' OSErrors, RayError subclasses."""
    try:
        from ray.exceptions import RayError
    except ImportError:
        raise LaunchError(NOT_INSTALLED) from None

    return (RuntimeError, OSError, ValueError, RayError)


@dataclass(frozen=True)
class JobState:
    """The Ray job fields the workbook records."""

    status: str
    message: str
    driver_exit_code: int | None
    error_type: str | None
    start_time: int | None
    end_time: int | None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES


class JobsClient:
    """A Ray Job Submission client with the workbook's errors and an explicit auth header.

    Construct with :meth:`connect`, which checks the server answers within ``timeout_s`` first.
    Tests may subclass it to inject faults into :meth:`tail` (the real client underneath).
    """

    def __init__(self, url: str, token: str | None, sdk: Any) -> None:
        self.url = url
        self.token = token
        self._sdk = sdk

    @classmethod
    def connect(cls, url: str, token: str | None, timeout_s: float = 5.0) -> JobsClient:
        probe(url, token, timeout_s)
        try:
            from ray.job_submission import JobSubmissionClient
        except ImportError:
            raise LaunchError(NOT_INSTALLED) from None

        headers = {"Authorization": f"Bearer {token}"} if token else None
        try:
            sdk = JobSubmissionClient(url, headers=headers)
        except _ray_errors() as exc:  # Ray raises bare RuntimeError/ConnectionError here
            raise LaunchError(f"cannot open a Ray job client for {url}: {exc}") from None
        return cls(url, token, sdk)

    def nodes(self, timeout_s: float = 10.0) -> list[NodeInfo]:
        return list_nodes(self.url, self.token, timeout_s)

    def live_actors(self, name: str, timeout_s: float = 10.0) -> list[str]:
        return live_actors(self.url, self.token, name, timeout_s)

    def submit(self, *, entrypoint: str, submission_id: str, runtime_env: dict[str, Any]) -> str:
        try:
            return str(
                self._sdk.submit_job(
                    entrypoint=entrypoint, submission_id=submission_id, runtime_env=runtime_env
                )
            )
        except _ray_errors() as exc:
            raise LaunchError(f"Ray refused the job {submission_id}: {exc}") from None

    def state(self, job_id: str) -> JobState:
        try:
            info = self._sdk.get_job_info(job_id)
        except _ray_errors() as exc:
            raise RunFailed(f"cannot read the status of Ray job {job_id}: {exc}") from None
        status = getattr(info.status, "value", info.status)
        return JobState(
            status=str(status),
            message=info.message or "",
            driver_exit_code=info.driver_exit_code,
            error_type=info.error_type,
            start_time=info.start_time,
            end_time=info.end_time,
        )

    def logs(self, job_id: str) -> str:
        """The job's whole log so far (authoritative; the tail may drop)."""
        try:
            return str(self._sdk.get_job_logs(job_id))
        except _ray_errors() as exc:
            raise RunFailed(f"cannot read the log of Ray job {job_id}: {exc}") from None

    def stop(self, job_id: str) -> bool:
        try:
            return bool(self._sdk.stop_job(job_id))
        except _ray_errors() as exc:
            raise RunFailed(f"cannot stop Ray job {job_id}: {exc}") from None

    async def tail(self, job_id: str) -> AsyncIterator[str]:
        """Chunks of the job log from its first byte; ends or raises when the stream drops."""
        async for chunk in self._sdk.tail_job_logs(job_id):
            yield chunk


def run_coroutine(coro: Any) -> Any:
    """Run ``coro`` on a fresh event loop (used from a worker thread, never the notebook's loop)."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()
