"""Connecting to (or starting) a Ray cluster, checking it can run the job, and running a phase's
tasks with progress and per-worker statistics."""

from __future__ import annotations

import os
import socket
import sys
import time
from typing import Any, Dict, Optional

from .. import _core


class ClusterError(_core.Error, ConnectionError):
    """The Ray cluster cannot be reached or used (a ConnectionError and a surfgrad.Error)."""


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    target = address.split("://", 1)[-1]
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise ClusterError(f"Ray address {address!r} is not HOST:PORT (e.g. 10.0.0.5:6379, as `ray start --head` "
                           "prints), 'auto', or unset for a local cluster")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as e:
        raise ClusterError(f"cannot reach the Ray cluster at {address} ({e.strerror or e}): start it with "
                           f"`ray start --head --port={port}` on {host}, check the address, or leave the address "
                           "unset for a local cluster on this machine") from None


def _check_gpus(ray, gpus_per_task: float, layout: bool) -> None:
    """GPU tasks that no node can run would wait forever: refused before any work."""
    if not gpus_per_task:
        return
    need = max(gpus_per_task, 1.0 if layout else 0.0)
    most = max((nd.get("Resources", {}).get("GPU", 0) for nd in ray.nodes() if nd.get("Alive", True)), default=0)
    if most < need:
        raise ClusterError(f"gpus_per_task = {gpus_per_task} needs a node with at least {need:g} GPU"
                           f"{'s' if need != 1 else ''} (the layout task takes a whole one), but the cluster's nodes "
                           f"have at most {most:g}: pass gpus_per_task=0 to run on CPU adapters, or start Ray "
                           "where it sees the GPUs (ray start --num-gpus N; num_gpus= for a local cluster)")


class _Cluster:
    """Connects to (or starts) a Ray cluster for one job; shuts down only what it started."""

    def __init__(self, address: Optional[str], workers: Optional[int], gpus: Optional[float] = None) -> None:
        try:
            import ray
        except ImportError:
            raise ImportError("surfgrad.distributed needs Ray: pip install -r "
                              "python/requirements-distributed.txt") from None
        self.ray = ray
        self.started = False
        if ray.is_initialized():
            return
        import logging

        if address and address != "auto":
            _check_reachable(address)
        try:
            if address:
                ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False)
            else:
                ray.init(num_cpus=workers or os.cpu_count(), num_gpus=gpus, include_dashboard=False,
                         logging_level=logging.WARNING, log_to_driver=False)
        except ConnectionError as e:
            raise ClusterError(f"cannot connect to the Ray cluster at {address}: {e}") from None
        self.started = True

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()


class _Log:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.t0 = time.perf_counter()

    def __call__(self, msg: str) -> None:
        if self.enabled:
            print(f"[{time.perf_counter() - self.t0:7.1f} s] {msg}", file=sys.stderr, flush=True)


def _run(ray, remote, args_list, phase: str, log: _Log, report: Dict[str, Any], label) -> list:
    """Submits one task per args, prints each as it ends, returns results in submission order."""
    t0 = time.perf_counter()
    refs = [remote.remote(*a) for a in args_list]
    where = {r: i for i, r in enumerate(refs)}
    results: list = [None] * len(refs)
    pending = list(refs)
    workers = report.setdefault("workers", {})
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        i = where[done[0]]
        try:
            results[i] = ray.get(done[0])
        except ray.exceptions.RayTaskError as e:
            cause = getattr(e, "cause", None)
            raise (cause if isinstance(cause, Exception) else e) from None
        st = results[i][-1]
        w = workers.setdefault(st["worker"], {"tasks": 0, "seconds": 0.0, "peak_rss": 0})
        w["tasks"] += 1
        w["seconds"] += st["seconds"]
        w["peak_rss"] = max(w["peak_rss"], st["peak_rss"])
        if "adapter" in st:
            w.setdefault("adapters", [])
            if st["adapter"] not in w["adapters"]:
                w["adapters"].append(st["adapter"])
        where_ran = st["worker"] + (f" ({st['adapter']})" if "adapter" in st else "")
        log(f"{phase} {len(refs) - len(pending)}/{len(refs)}: {label(i, results[i])} in {st['seconds']:.2f} s "
            f"on {where_ran}")
    report["phases"][phase] = time.perf_counter() - t0
    return results
