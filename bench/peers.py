"""Embedding maps side by side, in one Python process: surfgrad's t-SNE and UMAP through its Python
package (sg.TSNE / sg.UMAP .fit_transform) beside openTSNE, scikit-learn's Barnes-Hut t-SNE and
umap-learn, on the same data with the same parameters, timed on this machine. Every map is scored
by the same code: sg.map_quality, the library's evaluate_map that `surfgrad eval` prints (kNN
recall@10 against exact neighbours in the input space, 10-NN accuracy, trustworthiness@10, t-SNE
KL divergence on a sample).

    bash scripts/peers_env.sh        # pinned peers and the surfgrad wheel in .venv-peers
    .venv-peers/bin/python bench/peers.py --data ../shared/data/mnist10k --out bench-peers --threads 2
    .venv-peers/bin/python bench/peers.py --points build/debian-text/embeddings.npy \\
        --labels build/debian-text/labels.npy --out bench-text --threads 2
    .venv-peers/bin/python bench/peers.py --builtin 100000 --only surfgrad,surfgrad-umap   # the CLI's set
    .venv-peers/bin/python bench/peers.py --digits --threads 2     # scikit-learn's digits (1,797 × 64)
    .venv-peers/bin/python bench/peers.py --table --threads 2 --out bench-table   # issue 35's table

--table: every tool on MNIST 10k and then on scikit-learn's digits, in this one process, and the
table of seconds (surfgrad t-SNE beside scikit-learn and openTSNE, surfgrad UMAP beside
umap-learn) with each map's quality, in OUT/table.md and OUT/table.json (~2.5 min on the 2-core
host while quiet: scikit-learn ~28 s and openTSNE ~33 s at 10k dominate).
Warm-up, both ways: nobody is warmed up. surfgrad's MNIST t-SNE is the process's first fit
(--repeat 1), so it pays its pipeline builds (worker threads beside the map; on lavapipe the LLVM
code at each kernel's first dispatch, which the Mesa disk cache keeps between processes, as a
driver's cache would on a GPU); the digits fit after it finds the kernels both share built, as
the peers find their modules imported. scikit-learn and openTSNE compile nothing; umap-learn's
numba compilation is inside its time. On a loaded host openTSNE's threads spin at barriers
(digits: 5-22 s at load 4 against ~2.5 s quiet), so only a quiet run is a fair table.

Writes OUT/<tool>.npy for each map and OUT/peers.json; prints a table.

Call overhead (--overhead R): the same t-SNE job R times through `surfgrad map` (the CLI, its own
printed phase timings) and R times through sg.TSNE().fit_transform in a fresh Python process each
(so both pay the same first-use costs), alternating; prints the medians and the overhead.
"""
import argparse
import gzip
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

TOOLS = ["surfgrad", "opentsne", "sklearn", "surfgrad-umap", "umap"]


def read_idx(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        data = f.read()
    rank = data[3]
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(rank)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank).reshape(dims)


def load(a):
    """(points f32 [N, D], labels i32 [N], name, paths for the CLI or None)."""
    import surfgrad as sg

    if getattr(a, "digits", False):
        from sklearn.datasets import load_digits

        d = load_digits()
        return d.data.astype(np.float32), d.target.astype(np.int32), "digits 1,797", None
    if a.builtin:
        x, labels = sg.builtin_points(a.builtin)
        return x, labels, f"built-in {a.builtin:,} × 768", None
    if a.points:
        x = np.load(a.points).astype(np.float32)
        labels = np.load(a.labels).astype(np.int32) if a.labels else None
        return x, labels, a.points, (a.points, a.labels)
    images = os.path.join(a.data, "t10k-images-idx3-ubyte.gz")
    label_file = os.path.join(a.data, "t10k-labels-idx1-ubyte.gz")
    x = read_idx(images).reshape(10000, -1).astype(np.float32)
    return x, read_idx(label_file).astype(np.int32), "MNIST 10k", (images, label_file)


def cpu_seconds():
    """User + system CPU seconds of this process so far, every thread included. The machine is
    shared, so wall seconds swing with other people's load; CPU seconds much less (though a peer
    whose threads spin at barriers pays more of them under load)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def surfgrad_tsne(perplexity, seed=1):
    import surfgrad as sg

    # surfgrad map's defaults: 750 iterations, the first 250 exaggerated 12×, learning rate auto, PCA start.
    return sg.TSNE(perplexity=perplexity, max_iter=750, early_exaggeration=12, learning_rate="auto", init="pca",
                   random_state=seed)


def run_peers(a):
    import surfgrad as sg

    x, labels, name, _ = load(a)
    adapter = sg.device()["adapter"]
    os.makedirs(a.out, exist_ok=True)
    return name, adapter, run_set(a, x, labels, name, adapter)


def run_set(a, x, labels, name, adapter):
    """Every chosen tool on x; writes OUT/<tool>.npy and OUT/peers.json; returns the rows."""
    import surfgrad as sg

    os.makedirs(a.out, exist_ok=True)
    chosen = [t for t in TOOLS if t not in set(a.skip.split(",")) and (not a.only or t in a.only.split(","))]
    results = []

    def record(key, tool, seconds, y, detail, extra=None, cpu=None):
        np.save(os.path.join(a.out, key + ".npy"), y)
        t = time.perf_counter()
        q = sg.map_quality(x, y, labels)
        row = {"key": key, "tool": tool, "seconds": seconds, "knn_recall_10": q["knn_recall"],
               "knn_accuracy_10": q["knn_accuracy"], "trustworthiness_10": q["trustworthiness"],
               "kl_divergence_sample": q["kl_divergence"], "detail": detail, "scoring_seconds": time.perf_counter() - t,
               "cpu_seconds": cpu}
        row.update(extra or {})
        results.append(row)
        runs = (extra or {}).get("runs_seconds", [])
        shown = f"{seconds:.2f}" + (f" (first {runs[0]:.2f})" if len(runs) > 1 else "")
        shown += f" (CPU {cpu:.2f})" if cpu is not None else ""
        print(f"| {tool} | {shown} | {q['knn_recall']:.4f} | {q['knn_accuracy']:.4f} | "
              f"{q['trustworthiness']:.4f} | {q['kl_divergence']:.3f} |", flush=True)

    print(f"{name}: {x.shape[0]} points in {x.shape[1]} dimensions; surfgrad {sg.__version__} on {adapter}")
    print("| tool | seconds | recall@10 | 10-NN acc. | trust.@10 | KL |\n|---|---|---|---|---|---|", flush=True)
    def timed_fits(make):
        """fit_transform --repeat times (the first pays pipeline compilation); the last map, its
        seconds and every run's seconds."""
        runs = []
        for _ in range(a.repeat):
            est = make()
            t, c = time.perf_counter(), cpu_seconds()
            y = est.fit_transform(x)
            runs.append(time.perf_counter() - t)
            cpu = cpu_seconds() - c
        return y, runs[-1], {"runs_seconds": runs, "timings": est.timings_}, cpu

    if "surfgrad" in chosen:
        y, seconds, extra, cpu = timed_fits(lambda: surfgrad_tsne(a.perplexity))
        record("surfgrad", "surfgrad t-SNE", seconds, y,
               f"sg.TSNE.fit_transform, kNN exact (on 100 principal components past 200-D on CPU adapters; "
               f"descent on them past 20,000), repulsion exact up to 5,000 points else FFT, {adapter}", extra, cpu)
    if "opentsne" in chosen:
        import openTSNE

        # Its default gradient method: Barnes-Hut below 10,000 points (the digits), FFT from 10,000.
        # openTSNE 1.0.2's wheel spent 22 CPU s on the digits' Barnes-Hut (1.0.4: 4.0 s), hence 1.0.4.
        t, c = time.perf_counter(), cpu_seconds()
        y = openTSNE.TSNE(perplexity=a.perplexity, n_iter=500, early_exaggeration_iter=250, early_exaggeration=12,
                          learning_rate="auto", n_jobs=a.threads, random_state=1, neighbors="exact").fit(x)
        seconds, cpu = time.perf_counter() - t, cpu_seconds() - c
        method = "Barnes-Hut" if x.shape[0] < 10_000 else "FFT-accelerated interpolation"
        record("opentsne", "openTSNE " + openTSNE.__version__, seconds, np.asarray(y, dtype=np.float32),
               f"{method} (its default for {x.shape[0]:,} points), exact kNN, {a.threads} threads", cpu=cpu)
    if "sklearn" in chosen:
        import sklearn
        from sklearn.manifold import TSNE

        t, c = time.perf_counter(), cpu_seconds()
        y = TSNE(perplexity=a.perplexity, early_exaggeration=12, learning_rate="auto", max_iter=750, init="pca",
                 method="barnes_hut", random_state=1, n_jobs=a.threads).fit_transform(x)
        seconds, cpu = time.perf_counter() - t, cpu_seconds() - c
        record("sklearn", "scikit-learn " + sklearn.__version__, seconds, y.astype(np.float32),
               f"Barnes-Hut, {a.threads} threads", cpu=cpu)
    if "surfgrad-umap" in chosen:
        y, seconds, extra, cpu = timed_fits(lambda: sg.UMAP(n_neighbors=15, min_dist=0.1, random_state=1))
        record("surfgrad-umap", "surfgrad UMAP", seconds, y,
               f"sg.UMAP.fit_transform, n_neighbors 15, min_dist 0.1, default epochs, {adapter}", extra, cpu)
    if "umap" in chosen:
        import numba
        import umap

        # umap-learn's defaults (n_neighbors 15, min_dist 0.1, 500 epochs below 10,001 points);
        # a fixed random_state makes it single-threaded, so it is left unset and the threads capped.
        numba.set_num_threads(a.threads)
        t, c = time.perf_counter(), cpu_seconds()
        y = umap.UMAP(n_neighbors=15, min_dist=0.1, n_jobs=a.threads).fit_transform(x)
        seconds, cpu = time.perf_counter() - t, cpu_seconds() - c
        record("umap", "umap-learn " + umap.__version__, seconds, y.astype(np.float32),
               f"NN-descent kNN, spectral init, {a.threads} threads (includes numba compilation)", cpu=cpu)
    with open(os.path.join(a.out, "peers.json"), "w") as f:
        json.dump({"data": name, "points": int(x.shape[0]), "dims": int(x.shape[1]), "perplexity": a.perplexity,
                   "adapter": adapter, "python": sys.version.split()[0], "results": results}, f, indent=2)
    return results


# ---- issue 35's table: both sets, every tool, one process ----

def run_table(a):
    import surfgrad as sg

    adapter = sg.device()["adapter"]
    out, sets = a.out, []
    for key, digits in (("mnist10k", False), ("digits", True)):
        a.digits, a.out = digits, os.path.join(out, key)
        x, labels, name, _ = load(a)
        sets.append((name, run_set(a, x, labels, name, adapter)))
    a.out = out

    def cell(rows, key):
        row = next((r for r in rows if r["key"] == key), None)
        if row is None:
            return ""
        cpu = f", CPU {row['cpu_seconds']:.1f} s" if row.get("cpu_seconds") is not None else ""
        return (f"{row['seconds']:.2f} s{cpu} (rec {row['knn_recall_10']:.3f}, trust {row['trustworthiness_10']:.3f}, "
                f"acc {row['knn_accuracy_10']:.3f})")

    lines = [f"surfgrad on {adapter}; peers with {a.threads} threads; perplexity {a.perplexity:g}, 750 iterations, "
             "n_neighbors 15", "",
             "| map | surfgrad | scikit-learn | openTSNE | umap-learn |", "|---|---|---|---|---|"]
    for name, rows in sets:
        lines.append(f"| t-SNE, {name} | {cell(rows, 'surfgrad')} | {cell(rows, 'sklearn')} | "
                     f"{cell(rows, 'opentsne')} | |")
    for name, rows in sets:
        lines.append(f"| UMAP, {name} | {cell(rows, 'surfgrad-umap')} | | | {cell(rows, 'umap')} |")
    for name, rows in sets:
        t = {r["key"]: r["seconds"] for r in rows}
        peers = [t[k] for k in ("sklearn", "opentsne") if k in t]
        if "surfgrad" in t and peers:
            lines.append(f"- t-SNE, {name}: surfgrad / faster CPU peer = {t['surfgrad'] / min(peers):.2f} (target <= 0.8)")
        if "surfgrad-umap" in t and "umap" in t:
            lines.append(f"- UMAP, {name}: umap-learn / surfgrad = {t['umap'] / t['surfgrad-umap']:.2f} (target >= 2)")
    text = "\n".join(lines) + "\n"
    print("\n" + text)
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(text)
    with open(os.path.join(out, "table.json"), "w") as f:
        json.dump({"adapter": adapter, "threads": a.threads, "sets": [{"data": n, "results": r} for n, r in sets]},
                  f, indent=2)


# ---- call overhead: fit_transform against the CLI's own timing ----

CHILD = """
import sys, time, json, numpy as np, surfgrad as sg
sys.path.insert(0, {bench!r})
import peers
class A: pass
a = A(); a.builtin, a.points, a.labels, a.data = {builtin!r}, {points!r}, {labels!r}, {data!r}
x, labels, _, _ = peers.load(a)
est = peers.surfgrad_tsne({perplexity!r})
t = time.perf_counter()
y = est.fit_transform(x)
wall = time.perf_counter() - t
np.save({save!r}, y)
print(json.dumps({{"wall": wall, "timings": est.timings_}}))
"""


def run_overhead(a):
    import surfgrad as sg

    x, labels, name, paths = load(a)
    if paths is None and not a.builtin:
        sys.exit("--overhead needs --data, --points or --builtin")
    adapter = sg.device()["adapter"]
    os.makedirs(a.out, exist_ok=True)
    cli = [a.surfgrad, "map"] + ([paths[0]] if paths else ["--points", str(a.builtin)]) + [
        "-o", os.path.join(a.out, "overhead-cli"), "--perplexity", str(a.perplexity), "--seed", "1"]
    child = CHILD.format(bench=os.path.dirname(os.path.abspath(__file__)), builtin=a.builtin, points=a.points,
                         labels=a.labels, data=a.data, perplexity=a.perplexity,
                         save=os.path.join(a.out, "overhead-py.npy"))
    rows = []

    def run_cli():
        out = subprocess.run(cli, capture_output=True, text=True, check=True).stdout
        return dict((m.group(1).strip(), float(m.group(2))) for m in re.finditer(r"^  (\S.*?)\s+([\d.]+) s$", out, re.M))

    def run_py():
        return json.loads(subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                                         check=True).stdout.strip().splitlines()[-1])

    for r in range(a.overhead):
        # Alternating which goes first, so that a load that comes and goes favours neither.
        if r % 2 == 0:
            phases, py = run_cli(), run_py()
        else:
            py = run_py()
            phases = run_cli()
        # The CLI's compute: its printed total less the load (file decoding) and the write (npy, csv, png).
        cli_map = phases["total"] - phases.get("load", phases.get("generate", 0)) - phases["write"]
        same = bool(np.array_equal(np.load(os.path.join(a.out, "overhead-cli.npy")),
                                   np.load(os.path.join(a.out, "overhead-py.npy"))))
        rows.append({"cli_total": phases["total"], "cli_map": cli_map, "py_wall": py["wall"],
                     "py_pipeline": py["timings"]["total"], "same_map": same, "cli_phases": phases,
                     "py_phases": py["timings"]})
        print(f"round {r + 1}: CLI map phases {cli_map:.3f} s (printed total {phases['total']:.3f} s); "
              f"fit_transform {py['wall']:.3f} s (its pipeline {py['timings']['total']:.3f} s); "
              f"bitwise the same map: {same}", flush=True)
        print("  CLI phases: " + ", ".join(f"{k} {v:.2f}" for k, v in phases.items()), flush=True)
        print("  fit_transform phases: " + ", ".join(f"{k} {v:.2f}" for k, v in py["timings"].items()), flush=True)
    med = {k: statistics.median(row[k] for row in rows) for k in ("cli_total", "cli_map", "py_wall", "py_pipeline")}
    overhead = med["py_wall"] / med["cli_map"] - 1
    print(f"{name} on {adapter}, {a.overhead} rounds, medians: CLI map phases {med['cli_map']:.3f} s, "
          f"fit_transform {med['py_wall']:.3f} s: overhead {100 * overhead:+.2f}%")
    with open(os.path.join(a.out, "overhead.json"), "w") as f:
        json.dump({"data": name, "adapter": adapter, "rounds": rows, "medians": med, "overhead": overhead}, f,
                  indent=2)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="../shared/data/mnist10k")
    p.add_argument("--points", help="an N×D .npy to map instead of MNIST (e.g. bench/text_embeddings.py's)")
    p.add_argument("--labels", help="its labels (.npy)")
    p.add_argument("--builtin", type=int, default=0, help="map N points of the CLI's built-in set instead")
    p.add_argument("--digits", action="store_true", help="map scikit-learn's digits (1,797 × 64) instead")
    p.add_argument("--table", action="store_true",
                   help="every tool on MNIST 10k and on the digits; issue 35's table in OUT/table.md")
    p.add_argument("--out", default="bench-peers")
    p.add_argument("--perplexity", type=float, default=30)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--skip", default="", help="comma-separated tools to skip: " + ",".join(TOOLS))
    p.add_argument("--only", default="", help="comma-separated tools to run (default: all)")
    p.add_argument("--repeat", type=int, default=1,
                   help="fit surfgrad's maps this many times, reporting the last (the first pays pipeline compilation)")
    p.add_argument("--overhead", type=int, default=0, metavar="R",
                   help="measure fit_transform against `surfgrad map` over R alternating rounds instead")
    p.add_argument("--surfgrad", default="build/surfgrad", help="the CLI, for --overhead")
    a = p.parse_args()
    if a.overhead:
        run_overhead(a)
    elif a.table:
        run_table(a)
    else:
        run_peers(a)


if __name__ == "__main__":
    main()
