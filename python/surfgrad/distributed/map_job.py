"""map_shards: the sharded graph and its layout written as .npy and Parquet (nothing half-written),
and the report as the CLI prints it."""

from __future__ import annotations

import math
import os
import tempfile
import time
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from .. import _core
from .graph import knn_graph
from .shards import ShardSet, _parquet, open_shards


def write_map(output: str, embedding: np.ndarray, formats: Sequence[str] = ("npy", "parquet")) -> Tuple[str, ...]:
    """Writes ``output``.npy ([N, 2] float32) and ``output``.parquet (id, x, y): each under a
    hidden name in its folder, renamed into place only once all are complete."""
    if "parquet" in formats:
        pa, pq = _parquet()
    base = output[:-4] if output.endswith(".npy") else output
    folder = os.path.dirname(os.path.abspath(base))
    paths = tuple(base + "." + f for f in formats)
    temps = []
    try:
        for f in formats:
            fd, tmp = tempfile.mkstemp(prefix=".surfgrad-", suffix="." + f, dir=folder)
            os.close(fd)
            temps.append(tmp)
            if f == "npy":
                np.save(tmp, embedding.astype(np.float32))
            elif f == "parquet":
                table = pa.table({"id": np.arange(len(embedding), dtype=np.int64), "x": embedding[:, 0],
                                  "y": embedding[:, 1]})
                pq.write_table(table, tmp)
            else:
                raise _core.ArgumentError(f"output format {f!r} is not 'npy' or 'parquet'")
        for tmp, path in zip(temps, paths):
            os.replace(tmp, path)
        temps = []
    finally:
        for tmp in temps:
            if os.path.exists(tmp):
                os.remove(tmp)
    return paths


def _check_output(output: str, shards: ShardSet) -> str:
    base = os.fspath(output)
    base = base[:-4] if base.endswith(".npy") else base
    if not base or os.path.isdir(base):
        raise _core.ArgumentError(f"output {output!r} must name a file (written as NAME.npy and NAME.parquet)")
    folder = os.path.dirname(os.path.abspath(base))
    if not os.path.isdir(folder):
        raise _core.FileError(f"output folder {folder} does not exist; create it first")
    if not os.access(folder, os.W_OK):
        raise _core.FileError(f"output folder {folder} is not writable")
    inputs = {os.path.abspath(s.path) for s in shards.shards}
    for suffix in (".npy", ".parquet"):
        if os.path.abspath(base + suffix) in inputs:
            raise _core.ArgumentError(f"output {base + suffix} would overwrite an input shard")
    return base


def map_shards(source: Any, output: Optional[str], method: str = "umap", *, perplexity: float = 30.0,
               n_neighbors: int = 15, iterations: int = 750, epochs: int = 0, min_dist: float = 0.1,
               seed: int = 1, method_knn: str = "auto", formats: Sequence[str] = ("npy", "parquet"),
               layout_options: Optional[Dict[str, Any]] = None, **kwargs: Any) -> Dict[str, Any]:
    """The map of the points in ``source``: the kNN graph sharded over Ray (:func:`knn_graph`,
    whose keyword arguments pass through), then t-SNE or UMAP of it on one GPU (a Ray task).
    Writes ``output``.npy and ``output``.parquet (None: nothing written); returns the report
    (phases, workers, memory peaks, ``embedding``). ``method_knn``: knn_graph's ``method``;
    ``formats``: the outputs to write (Parquet needs pyarrow); ``layout_options``: any of the
    method's options by the library's keys (surfgrad/map_options.hpp: ``early_exaggeration``,
    ``learning_rate``, ``negative_sample_rate``, ...), over the keyword arguments above."""
    if method not in ("tsne", "umap"):
        raise _core.ArgumentError(f"method must be 'tsne' or 'umap', not {method!r}")
    shards = open_shards(source)
    base = _check_output(output, shards) if output is not None else None
    if base is not None and "parquet" in formats:
        _parquet()  # before any work: pyarrow is there
    if method == "tsne":
        options = {"perplexity": float(perplexity), "iterations": int(iterations), "seed": int(seed)}
    else:
        options = {"n_neighbors": int(n_neighbors), "min_dist": float(min_dist), "seed": int(seed)}
        if epochs:
            options["epochs"] = int(epochs)
    options.update(layout_options or {})
    # The layout's options are checked now, before any search (the library's messages).
    _core.validate_map_options(shards.rows, 1, method, options)
    if method == "tsne":
        k = int(min(shards.rows - 1, math.floor(3 * float(options["perplexity"]))))
    else:
        k = int(options["n_neighbors"])
    t0 = time.perf_counter()
    graph = knn_graph([s.path for s in shards.shards], k, seed=seed, method=method_knn, _layout=(method, options),
                      **kwargs)
    report = graph.report
    if base is not None:
        t1 = time.perf_counter()
        report["outputs"] = write_map(base, report["embedding"], formats)
        report["phases"]["write"] = time.perf_counter() - t1
    report["total_seconds"] = time.perf_counter() - t0
    return report


def format_report(report: Dict[str, Any]) -> str:
    """The report as printed by the CLI: seconds per phase and per worker, memory peaks."""
    lines = [f"{report['points']} points × {report['dims']}, {report['shards']} shards, {report['clusters']} "
             f"clusters ({report['cluster_points']['min']}–{report['cluster_points']['max']} points), k = "
             f"{report['k']}"]
    lines.append("phases: " + ", ".join(f"{k} {v:.2f} s" for k, v in report["phases"].items()))
    if "layout_phases" in report:
        lines.append("layout: " + ", ".join(f"{k} {v:.2f} s" for k, v in report["layout_phases"].items()))
    if "knn_recall" in report:
        lines.append(f"kNN recall@{report['k']} {report['knn_recall']:.4f} on {report['recall_sample']} points "
                     "(against exact lists on the searched features)")
    for w, s in sorted(report.get("workers", {}).items()):
        gpus = f" on {', '.join(s['adapters'])}" if s.get("adapters") else ""
        lines.append(f"worker {w}: {s['tasks']} tasks{gpus}, {s['seconds']:.2f} s, peak RSS "
                     f"{s['peak_rss'] / 2**20:.0f} MiB")
    lines.append(f"driver peak RSS {report.get('driver_peak_rss', 0) / 2**20:.0f} MiB"
                 + (f", layout GPU peak {report['gpu_peak_bytes'] / 2**20:.0f} MiB" if "gpu_peak_bytes" in report
                    else ""))
    return "\n".join(lines)
