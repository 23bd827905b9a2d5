"""Which verl every node of a Ray cluster imports, asked by a job of its own before the run.

A multinode run tests the commit only if every worker imports the checkout, not the verl of the
image. The Ray launcher ships the checkout's ``verl`` package in the job's runtime env; this
module's source is then run on the cluster as a short job with that same runtime env (``python
-c <this file>``): one zero-CPU task pinned to each alive node finds where ``import verl`` would
load from (``importlib.util.find_spec``: nothing is imported) and digests that package's files.
The same digest of the local checkout says whether each node has exactly the checkout's files.

Standard library and Ray only, nothing of the workbook: on the cluster this file runs alone.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

MARK = "workbook-verl-probe: "  # the one line of the job's log that holds the answer
SUFFIXES = (".py", ".yaml", ".json")  # what a package's behaviour is made of (never caches)


def tree_digest(folder: str) -> str:
    """sha256 over the relative paths and bytes of ``folder``'s source files, in sorted order."""
    digest = hashlib.sha256()
    for base, dirs, files in sorted(os.walk(folder)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(SUFFIXES) or name == "version":
                path = os.path.join(base, name)
                digest.update(os.path.relpath(path, folder).encode() + b"\0")
                with open(path, "rb") as handle:
                    digest.update(handle.read() + b"\0")
    return digest.hexdigest()


def look() -> dict[str, Any]:
    """Where this process's ``import verl`` would load from, its version file and digest."""
    from importlib.util import find_spec

    spec = find_spec("verl")
    places = list(spec.submodule_search_locations or []) if spec else []
    if not places:
        return {"file": None}
    folder = places[0]
    version = None
    try:
        with open(os.path.join(folder, "version", "version"), encoding="utf-8") as handle:
            version = handle.read(200).strip() or None
    except OSError:
        pass
    return {"file": spec.origin if spec else None, "version": version,
            "digest": tree_digest(folder)}


def main() -> None:
    """On the cluster: the driver's answer and every alive node's, as one marked JSON line."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    ray.init()
    remote = ray.remote(num_cpus=0)(_on_node)
    alive = [n for n in ray.nodes() if n.get("Alive")]
    refs = [remote.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
        n["NodeID"], soft=False)).remote(n["NodeID"], "node:__internal_head__" in n.get(
            "Resources", {})) for n in alive]
    nodes = ray.get(refs, timeout=300)
    print(MARK + json.dumps({"driver": look(), "nodes": nodes}), flush=True)


def _on_node(node_id: str, head: bool) -> dict[str, Any]:
    import ray

    return {"node_id": node_id, "node_ip": ray.util.get_node_ip_address(), "head": head,
            **look()}


def answer_in(log: str) -> dict[str, Any] | None:
    """The probe's answer in its job's log, None when the log holds none."""
    for line in reversed(log.splitlines()):
        if line.startswith(MARK):
            try:
                found = json.loads(line[len(MARK):])
            except ValueError:
                return None
            return found if isinstance(found, dict) else None
    return None


if __name__ == "__main__":
    main()
