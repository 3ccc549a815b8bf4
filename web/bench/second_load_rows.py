"""gpu_browser_run.sh second-load's rows: merges each variant's page runs into one row per (variant, n,
method) and prints the `second-load:` lines. Standard library only.

    python3 web/bench/second_load_rows.py WORK OUT.json --variants "plain warmgpu" --modes "reload restart"

WORK/VARIANT-restart/{cold,second}/scale.json: a browser on a fresh profile ran the page once (cold),
a NEW browser on that profile ran it twice (run 1 the second load, run 2 warm); WORK/VARIANT-restart/
caches.txt is the profile's caches after the cold browser closed. WORK/VARIANT-reload/reload/scale.json:
one browser on another fresh profile ran it once (pass 1, cold), then the page loaded itself again
(pass 2: run 1 the second load in the same browser, run 2 warm). The restart's numbers keep their
names (cold_seconds, second_load_seconds, warm_seconds, second_over_warm, second_load_*,
phases_over_warm_seconds); the reload's are reload_* (reload_cold_seconds, reload_seconds,
reload_warm_seconds, reload_over_warm, reload_init_ms, ...). Each comes from its own browser and
profile, and every run used is checked to be of its pass and variant (warmgpu, precompile): a run
that is not is left out and named in errors / reload_errors, never merged into the other's numbers.
"""
import argparse
import json
import os

PHASED = "timings"


def read_rows(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return []


def page_errors(folder):
    """The page's own error reports (kind 'error': an uncaught error ended its run) in results.jsonl."""
    try:
        lines = open(os.path.join(folder, "results.jsonl")).read().splitlines()
    except OSError:
        return []
    rows = [json.loads(line) for line in lines if line.strip()]
    return ["page error: %s" % r.get("error") for r in rows if r.get("kind") == "error"]


def variant_flags(variant):
    """'plain' -> {}, 'warmgpu' -> {warmgpu: True}, 'warmgpu+precompile' -> both: the page's flags."""
    return {} if variant == "plain" else {name: True for name in variant.split("+")}


def pick(rows, key, run, page_pass, flags, errors, what):
    """The row of run `run` of pass `page_pass` for key (n, method), checked against the variant's flags."""
    found = [r for r in rows if (r.get("n"), r.get("method")) == key and r.get("run") == run
             and (r.get("pass") or 1) == page_pass]
    if not found:
        errors.append("%s: no row (pass %d, run %d)" % (what, page_pass, run))
        return {}
    r = found[0]
    for name in ("warmgpu", "precompile"):
        if bool(r.get(name)) != bool(flags.get(name)):
            errors.append("%s: the row's %s is %s, not the variant's" % (what, name, r.get(name)))
            return {}
    if r.get("error"):
        errors.append("%s: %s" % (what, r["error"]))
    return r


def unphased(r):
    """The worker's map time outside its phases (set-up, the result's readback, waits between phases)."""
    if r.get("worker_seconds") is None or not r.get(PHASED):
        return None
    return round(r["worker_seconds"] - sum(r[PHASED].values()), 3)


def split(first, warm):
    """A second load's parts (first: its run 1; warm: run 2 in the same page), by suffix."""
    return {
        "seconds": first.get("seconds"),
        "timings": first.get("timings"),
        "pipelines": first.get("pipelines"),
        # the page's seconds minus the worker's map: the worker's modules, init(), the messages
        "outside_map_seconds": round(first["seconds"] - first["worker_seconds"], 3)
        if first.get("seconds") and first.get("worker_seconds") else None,
        "unphased_seconds": unphased(first),
        # each phase's first and last progress event, ms since the map was called: [second load, warm]
        "phase_events_ms": {k: [v, (warm.get("phase_events_ms") or {}).get(k)]
                            for k, v in (first.get("phase_events_ms") or {}).items()} or None,
        "init_seconds": first.get("init_seconds"),
        "init_ms": first.get("init_ms"),
        "worker_loaded_ms": first.get("worker_loaded_ms"),
        "worker_created_ms": first.get("worker_created_ms"),
        "run_started_ms": first.get("run_started_ms"),
        "precompiled_ms": first.get("precompiled_ms"),
        "navigation_type": first.get("navigation_type"),
        "wasm_fetch": first.get("wasm_fetch"),  # (transfer_bytes 0: from the HTTP cache)
        "webgpu_calls": first.get("webgpu_calls"),
        "phases_over_warm_seconds": {k: round(v - warm["timings"].get(k, 0), 3)
                                     for k, v in (first.get("timings") or {}).items()} or None
        if warm.get("timings") else None,
    }


def ratio(a, b):
    return round(a / b, 3) if a and b else None


def caches_kb(path):
    dawn_kb = wasm_kb = None
    try:
        for line in open(path):
            if "DawnWebGPUCache" in line:
                dawn_kb = (dawn_kb or 0) + int(line.split()[0])
            if "Code Cache/wasm" in line:
                wasm_kb = int(line.split()[0])
    except OSError:
        pass
    return dawn_kb, wasm_kb


def merge(work, variant, modes):
    flags = variant_flags(variant)
    restart_dir, reload_dir = os.path.join(work, variant + "-restart"), os.path.join(work, variant + "-reload")
    cold, second = read_rows(os.path.join(restart_dir, "cold", "scale.json")), \
        read_rows(os.path.join(restart_dir, "second", "scale.json"))
    reload = read_rows(os.path.join(reload_dir, "reload", "scale.json"))
    keys = sorted({(r["n"], r["method"]) for r in cold + second + reload if "method" in r})
    merged = []
    for key in keys or [(None, None)]:  # (no rows at all: one row that says why)
        row = {"kind": "second-load", "variant": variant, "n": key[0], "method": key[1],
               "warmgpu": bool(flags.get("warmgpu")), "precompile": bool(flags.get("precompile"))}
        adapter = None
        if "restart" in modes:
            errors = []
            c = pick(cold, key, 1, 1, flags, errors, "restart cold")
            s1 = pick(second, key, 1, 1, flags, errors, "restart second load")
            s2 = pick(second, key, 2, 1, flags, errors, "restart warm")
            parts = split(s1, s2)
            row.update({"cold_seconds": c.get("seconds"), "second_load_seconds": s1.get("seconds"),
                        "warm_seconds": s2.get("seconds"), "second_over_warm": ratio(s1.get("seconds"), s2.get("seconds")),
                        "cold_timings": c.get("timings"), "warm_timings": s2.get("timings"),
                        "cold_init_ms": c.get("init_ms"), "warm_webgpu_calls": s2.get("webgpu_calls"),
                        "warm_unphased_seconds": unphased(s2),
                        "phases_over_warm_seconds": parts.pop("phases_over_warm_seconds")})
            row.update({"second_load_" + k: v for k, v in parts.items() if k != "seconds"})
            row["dawn_cache_kb"], row["wasm_code_cache_kb"] = caches_kb(os.path.join(restart_dir, "caches.txt"))
            errors += page_errors(os.path.join(restart_dir, "cold")) + page_errors(os.path.join(restart_dir, "second"))
            row["errors"] = errors or None
            adapter = c.get("adapter") or s1.get("adapter")
        if "reload" in modes:
            errors = []
            c = pick(reload, key, 1, 1, flags, errors, "reload cold (pass 1)")
            r1 = pick(reload, key, 1, 2, flags, errors, "reload second load (pass 2)")
            r2 = pick(reload, key, 2, 2, flags, errors, "reload warm (pass 2)")
            parts = split(r1, r2)
            row.update({"reload_cold_seconds": c.get("seconds"), "reload_seconds": r1.get("seconds"),
                        "reload_warm_seconds": r2.get("seconds"), "reload_over_warm": ratio(r1.get("seconds"), r2.get("seconds")),
                        "reload_cold_timings": c.get("timings"), "reload_warm_timings": r2.get("timings"),
                        "reload_cold_init_ms": c.get("init_ms"), "reload_cold_run_started_ms": c.get("run_started_ms"),
                        "reload_warm_webgpu_calls": r2.get("webgpu_calls"), "reload_warm_unphased_seconds": unphased(r2)})
            row.update({"reload_" + k: v for k, v in parts.items() if k != "seconds"})
            errors += page_errors(os.path.join(reload_dir, "reload"))
            row["reload_errors"] = errors or None
            adapter = adapter or c.get("adapter") or r1.get("adapter")
        row["adapter"] = adapter
        merged.append(row)
    return merged


def print_rows(merged):
    for r in merged:
        print("second-load:", json.dumps({k: r[k] for k in (
            "variant", "n", "method", "cold_seconds", "second_load_seconds", "warm_seconds", "second_over_warm",
            "reload_cold_seconds", "reload_seconds", "reload_warm_seconds", "reload_over_warm",
            "dawn_cache_kb", "wasm_code_cache_kb", "errors", "reload_errors") if k in r}))
        for load, prefix, phases, warm_calls in (("restart", "second_load_", "phases_over_warm_seconds", "warm_webgpu_calls"),
                                                 ("reload", "reload_", "reload_phases_over_warm_seconds",
                                                  "reload_warm_webgpu_calls")):
            if prefix + "seconds" not in r and prefix + "init_ms" not in r:
                continue
            p = r.get(prefix + "pipelines") or {}
            print("second-load split:", json.dumps({
                "variant": r["variant"], "load": load, "outside_map_s": r.get(prefix + "outside_map_seconds"),
                "init_ms": r.get(prefix + "init_ms"), "worker_loaded_ms": r.get(prefix + "worker_loaded_ms"),
                "run_started_ms": r.get(prefix + "run_started_ms"), "navigation": r.get(prefix + "navigation_type"),
                "wasm_fetch": r.get(prefix + "wasm_fetch"),
                "unphased_s": [r.get(prefix + "unphased_seconds"),
                               r.get("warm_unphased_seconds" if load == "restart" else "reload_warm_unphased_seconds")],
                "phases_over_warm_s": r.get(phases),
                "phase_events_ms_second_vs_warm": r.get(prefix + "phase_events_ms"),
                "webgpu_calls_second_vs_warm": {k: [v, (r.get(warm_calls) or {}).get(k)]
                                                for k, v in (r.get(prefix + "webgpu_calls") or {}).items()},
                "pipelines": {k: p.get(k) for k in ("pipelines", "prewarmed", "builtAtUse", "atUseMs", "prewarmWaits",
                                                    "prewarmWaitMs", "atUse")}}))
    print("second-load table: variant, load: cold / second load / warm s, second/warm; init_ms adapter, total")
    for r in merged:
        for load, c, s, w, ratio_key, init in (
                ("restart", "cold_seconds", "second_load_seconds", "warm_seconds", "second_over_warm", "second_load_init_ms"),
                ("reload", "reload_cold_seconds", "reload_seconds", "reload_warm_seconds", "reload_over_warm", "reload_init_ms")):
            if ratio_key not in r:
                continue
            fmt = lambda v: "%.3f" % v if isinstance(v, (int, float)) else "-"
            i = r.get(init) or {}
            print("second-load table: %-20s %-8s %s / %s / %s s  %sx  adapter %s ms, init %s ms" % (
                r["variant"], load, fmt(r.get(c)), fmt(r.get(s)), fmt(r.get(w)), fmt(r.get(ratio_key)),
                i.get("adapter", "-"), i.get("total", "-")))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("work")
    p.add_argument("out")
    p.add_argument("--variants", default="plain")
    p.add_argument("--modes", default="reload restart")
    a = p.parse_args()
    merged = []
    for variant in a.variants.split():
        merged += merge(a.work, variant, a.modes.split())
    with open(a.out, "w") as f:
        json.dump(merged, f, indent=1)
    print_rows(merged)


if __name__ == "__main__":
    main()
