"""What blocked a frame: the long tasks of a Chromium trace (issue 32's frame gaps).

    python3 web/bench/trace_long_tasks.py TRACE.json [--ms 40] [--out SUMMARY.json]

TRACE.json is a JSON trace that Chromium wrote with
`--trace-startup=CATEGORIES --trace-startup-format=json --trace-startup-file=TRACE.json
--trace-startup-duration=SECONDS` (gpu_browser_run.sh passes them through EXTRA_FLAGS; its
TRACE_SECONDS does it for you). For the threads that can stop the page's frames (the GPU process's
main thread, where Chromium runs WebGPU's and WebGL's commands and the display compositor; the
compositor threads; the page's main thread) it lists each task longer than --ms with the longest
events nested in it, so a gap the page measured can be matched to what ran: a pipeline compile
(`CreateComputePipeline`, Tint), a buffer's allocation or free, a readback's map, a WebGL upload.
Standard library only (the GPU machine has no trace processor).
"""
import argparse
import collections
import json
import sys

WATCHED = ("CrGpuMain", "VizCompositorThread", "CrRendererMain", "Compositor", "DedicatedWorker thread")


def load_events(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        # A trace cut short (the browser killed while writing) lacks its closing brackets.
        data = json.loads(text.rstrip().rstrip(",") + "]}")
    return data["traceEvents"] if isinstance(data, dict) else data


def complete_events(events):
    """Every event as (pid, tid, start µs, duration µs, name, args): 'X' events as they are, 'B'/'E'
    pairs matched per thread."""
    out, open_ = [], collections.defaultdict(list)
    for e in events:
        ph = e.get("ph")
        key = (e.get("pid"), e.get("tid"))
        if ph == "X" and "dur" in e:
            out.append((key[0], key[1], e["ts"], e["dur"], e.get("name", "?"), e.get("args") or {}))
        elif ph == "B":
            open_[key].append(e)
        elif ph == "E" and open_[key]:
            b = open_[key].pop()
            out.append((key[0], key[1], b["ts"], e["ts"] - b["ts"], b.get("name", "?"), b.get("args") or {}))
    return out


def describe(name, args):
    """The event's name with what its arguments say about the work (posted-from, mojo method)."""
    extra = []
    for k in ("src_func", "src_file", "method", "name", "label"):
        v = args.get(k)
        if isinstance(v, (str, int)) and v != name:
            extra.append(f"{k}={v}")
    td = args.get("task")
    if isinstance(td, dict):
        for k in ("posted_from", "function_name"):
            if k in td:
                extra.append(f"{k}={td[k]}")
    return name + (f" ({', '.join(extra[:3])})" if extra else "")


def doing_the_work(task, inside):
    """The events nested in `task`, longest first, without the wrappers: an event that one child
    covers (≥ 95 % of its time) says less than that child (Chromium nests ~9 equal-length layers,
    RunTask → … → HandleDawnCommands, around Dawn's own calls such as
    DeviceBase::APICreateComputePipeline)."""
    nodes = sorted([task] + inside, key=lambda c: (c[2], -c[3]))
    longest_child = collections.defaultdict(int)
    stack = []
    for c in nodes:
        while stack and c[2] >= stack[-1][2] + stack[-1][3]:
            stack.pop()
        if stack:
            longest_child[id(stack[-1])] = max(longest_child[id(stack[-1])], c[3])
        stack.append(c)
    kept = [c for c in inside if longest_child[id(c)] < 0.95 * c[3]]
    return sorted(kept, key=lambda c: -c[3])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace")
    p.add_argument("--ms", type=float, default=40.0, help="tasks at least this long (default 40)")
    p.add_argument("--children", type=int, default=8, help="nested events listed per task")
    p.add_argument("--out", help="also write the findings as JSON here")
    a = p.parse_args()

    events = load_events(a.trace)
    threads, procs = {}, {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            threads[(e["pid"], e["tid"])] = e["args"]["name"]
        if e.get("ph") == "M" and e.get("name") == "process_name":
            procs[e["pid"]] = e["args"]["name"]
    spans = complete_events(events)
    if not spans:
        sys.exit(f"{a.trace}: no complete events (was the trace written with --trace-startup-format=json?)")
    t0 = min(s[2] for s in spans)
    by_thread = collections.defaultdict(list)
    for s in spans:
        by_thread[(s[0], s[1])].append(s)

    findings = []
    for key, ss in sorted(by_thread.items(), key=lambda kv: str(threads.get(kv[0]))):
        tname = threads.get(key, "?")
        if not any(tname.startswith(w) for w in WATCHED):
            continue
        ss.sort(key=lambda s: (s[2], -s[3]))
        # Top-level tasks: not nested in an earlier, longer event of the same thread.
        top, end = [], -1
        for s in ss:
            if s[2] >= end:
                top.append(s)
                end = s[2] + s[3]
        for s in top:
            if s[3] < a.ms * 1000:
                continue
            inside = [c for c in ss if c is not s and c[2] >= s[2] and c[2] + c[3] <= s[2] + s[3]]
            inside = doing_the_work(s, inside)
            findings.append({
                "process": procs.get(key[0], str(key[0])), "thread": tname,
                "at_s": round((s[2] - t0) / 1e6, 3), "ms": round(s[3] / 1000, 1),
                "task": describe(s[4], s[5]),
                "longest_inside": [{"ms": round(c[3] / 1000, 1), "at_s": round((c[2] - t0) / 1e6, 3),
                                    "event": describe(c[4], c[5])} for c in inside[:a.children]],
            })
    findings.sort(key=lambda f: f["at_s"])
    print(f"{a.trace}: {len(spans)} events, {len(findings)} tasks ≥ {a.ms:g} ms on "
          f"{', '.join(WATCHED)}")
    for f in findings:
        print(f"{f['at_s']:9.3f} s {f['ms']:8.1f} ms  {f['process']} / {f['thread']}: {f['task']}")
        for c in f["longest_inside"]:
            print(f"{'':22}{c['ms']:8.1f} ms  {c['event']}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"trace": a.trace, "min_ms": a.ms, "tasks": findings}, f, indent=1)


if __name__ == "__main__":
    main()
