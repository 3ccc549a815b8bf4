"""The command line: python -m surfgrad.distributed map SOURCE -o OUT [--ray ADDRESS] ..."""

from __future__ import annotations

import sys
from typing import Optional, Sequence

from .. import _core
from .._map_options import SCHEMA
from .map_job import format_report, map_shards


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``surfgrad-distributed map SOURCE -o OUT [options]``; exit status 0, 1 (an error while
    working) or 2 (a usage error), as ``surfgrad map``."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m surfgrad.distributed",
                                description="t-SNE / UMAP of sharded embeddings, the kNN graph sharded over Ray")
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("map", help="map the points of a folder or glob of .npy / Parquet shards")
    m.add_argument("source", help="folder, glob or file of .npy / .parquet shards")
    m.add_argument("-o", "--output", required=True, help="writes OUT.npy ([N, 2] float32) and OUT.parquet (id, x, y)")
    m.add_argument("--ray", metavar="ADDRESS", default=None,
                   help="a running Ray cluster (HOST:PORT, or 'auto'); default: a local cluster on this machine")
    m.add_argument("--workers", type=int, default=None, help="worker processes of a local cluster (default: CPUs)")
    m.add_argument("--method", choices=("tsne", "umap"), default="umap")
    # The layout's options, from the library's schema (the names, ranges and defaults of
    # `surfgrad map`); the library checks the values. Shared options this job handles itself
    # (--pca, --knn, --recall-sample, --seed) are below with their distributed meaning.
    layout_flags = {}
    for spec in SCHEMA:
        if not spec["method"] or spec["cli"] in layout_flags.values():
            continue
        helps = [f"{'UMAP' if s['method'] == 'umap' else 't-SNE'}: {s['doc'].split(': ', 1)[-1]} ({s['range']}; "
                 f"default {s['default']})" for s in SCHEMA if s["cli"] == spec["cli"]]
        m.add_argument(spec["cli"], default=None, metavar="VALUE", help="; ".join(helps))
        layout_flags[spec["cli"][2:].replace("-", "_")] = spec["cli"]
    m.add_argument("--points-per-cluster", type=int, default=8000,
                   help="C = ceil(N / this) clusters, each point in its 2 nearest")
    m.add_argument("--pca", type=int, default=-1, help="search on this many components (-1: 50 where D > 50)")
    m.add_argument("--knn", choices=("auto", "exact", "descent"), default="auto", help="kNN in each cluster")
    m.add_argument("--no-refine", action="store_true", help="skip the rounds of descent across clusters")
    m.add_argument("--refine-rounds", type=int, default=4, help="rounds of descent across clusters")
    m.add_argument("--refine-on", choices=("auto", "one-gpu", "clusters"), default="auto",
                   help="where: one GPU over all points (auto: where they fit one binding) or a task per cluster")
    m.add_argument("--gpus-per-task", type=float, default=0,
                   help="Ray num_gpus of each GPU task (0.25: four share a GPU; 0 without GPUs)")
    m.add_argument("--seed", type=int, default=1)
    m.add_argument("--device", default=None,
                   help="adapter name substring or #i (default: the GPU Ray gives each task where a node has several)")
    m.add_argument("--recall-sample", type=int, default=0,
                   help="report recall@k against exact lists of this many points (0: skip)")
    m.add_argument("--quiet", action="store_true", help="no progress lines")
    args = p.parse_args(argv)
    try:
        layout = {}
        for attr, flag in layout_flags.items():
            value = getattr(args, attr)
            if value is None:
                continue
            spec = next((s for s in SCHEMA if s["cli"] == flag and s["method"] == args.method), None)
            if spec is None:
                raise _core.ArgumentError(f"{flag} is not an option of --method {args.method}")
            layout[spec["key"]] = value  # text: the library reads it strictly, as `surfgrad map` does
        report = map_shards(args.source, args.output, args.method, layout_options=layout,
                            seed=args.seed, address=args.ray, workers=args.workers,
                            points_per_cluster=args.points_per_cluster, pca=args.pca, method_knn=args.knn,
                            refine=not args.no_refine, refine_rounds=args.refine_rounds, refine_on=args.refine_on,
                            gpus_per_task=args.gpus_per_task, device=args.device,
                            recall_sample=args.recall_sample, verbose=not args.quiet)
    except _core.ArgumentError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (_core.Error, OSError, ImportError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(format_report(report))
    print(f"wrote {' and '.join(report['outputs'])} in {report['total_seconds']:.2f} s")
    return 0
