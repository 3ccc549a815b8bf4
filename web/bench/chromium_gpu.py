"""Runs the browser benchmark (web/bench/autorun.html) in a headless Chromium on a machine with no
node and no browser driver, e.g. the GPU machine: serves web/ and the MNIST folder, starts the
browser, receives each result as the page POSTs it, and writes them to OUT/results.jsonl and each
map to OUT/<tool>-<n>.npy (scored later with `surfgrad eval`). Standard library only.

    python3 web/bench/chromium_gpu.py --chromium BUNDLE --data DIR --out OUT \
        [--tools surfgrad-umap,umap-js] [--n 10000] [--flags "..."] [--timeout 500]

--page scale runs web/bench/scale.html instead (issue 32: builtinPoints(n) mapped in a Web
Worker, --methods tsne,umap, --repeats 2: the first run cold, the next warm), cross-origin
isolated (COOP/COEP, for performance.measureUserAgentSpecificMemory), and with --surfgrad
build/surfgrad times `surfgrad map --points N --method M` natively in the same call, as many
times, filling native_seconds; the rows go to OUT/scale.json too. --browser PATH runs a
browser binary (e.g. /usr/bin/chromium to try it without a GPU) instead of the bundle's.
--page-args reload=1[&reload_repeats=2] makes scale.html load itself again once its runs are
reported (pass=2 in its address: a second load in the same browser), /done only after pass 2;
its rows say their `pass` (native_seconds only on pass 1's).

--page map opens the map page itself (web/page/, its dist/ built) through web/bench/page_run.html:
--serve DIR is served at /files/, --data-url /files/NAME is loaded once by URL and mapped by each
of --methods --repeats times (Run clicked), and --native-input DIR/NAME is mapped natively
(`surfgrad map FILE --method M --labels-column label`) as many times. --page tiles opens
page/?tiles=/files/ (--serve DIR: a `surfgrad map … --tiles DIR` folder) and times the first view,
a scripted pan and zoom (--pan-seconds); --native-seconds fills its row's native column (the
driver script times the native tiles map). --extra-flags adds Chromium flags (e.g.
--enable-dawn-features=disable_robustness) and is recorded in every row as `flags`.

Progress as it happens (issue 32: a hang must tell why): every browser output line goes to
OUT/browser.log and the page's status lines (POSTed to /progress: its state, phase and detail each
second they change, its console errors), reports and the driver's own steps to OUT/progress.log,
each written and flushed as it comes, with the seconds since start; every --heartbeat seconds the
last of them is printed. On --timeout (or SIGTERM from an outer `timeout`) the browser's process
group is killed and both logs' tails printed. --page-args adds to the map page's address (e.g.
`iterations=50&epochs=20`); --stop load|run-start ends a --page map run after the load, or once
the first map has read its points and started (then cancelled): dry runs on SwiftShader.
--budget-native caps the native runs' total seconds (each one --native-timeout at most).

BUNDLE holds chromium/ (chromium-headless-shell and its resources) and lib/ (its shared
libraries), as scripts/make_chromium_bundle.sh makes it.
"""
import argparse
import functools
import http.server
import json
import os
import struct
import subprocess
import signal
import sys
import threading
import time
import urllib.parse

here = os.path.dirname(os.path.abspath(__file__))
web_root = os.path.dirname(here)


def write_npy(path, values, n):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, 2), }" % n
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack("<%df" % len(values), *values))


def wait_for_startup_trace(flags, browser, limit=90):
    """With --trace-startup-file=F among the flags, Chromium writes F after --trace-startup-duration
    seconds, which takes a while for a busy page: the browser is left up to `limit` s more, until F
    is written and has stopped growing (gpu_browser_run.sh's TRACE_SECONDS)."""
    path = next((f.split("=", 1)[1] for f in flags.split() if f.startswith("--trace-startup-file=")), None)
    if not path:
        return
    t0, last = time.time(), -1
    while browser.poll() is None and time.time() - t0 < limit:
        size = os.path.getsize(path) if os.path.exists(path) else 0
        if size > 0 and size == last:
            return
        last = size
        time.sleep(2)
    print("the startup trace %s: %s after %.0f s" % (path, "written" if last > 0 else "NOT written", time.time() - t0),
          flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--chromium", default="", help="the Chromium bundle (scripts/make_chromium_bundle.sh)")
    p.add_argument("--data", default=".", help="folder holding mnist10k/ (the peers page)")
    p.add_argument("--page", choices=["peers", "scale", "map", "tiles", "matmul"], default="peers")
    p.add_argument("--sizes", default="4096x4096x4096", help="--page matmul: MxNxK,...")
    p.add_argument("--variants", default="f16-tuned,f16-tuned-tiled,f16-sgmat-direct", help="--page matmul: rung names")
    p.add_argument("--serve", help="--page map|tiles: a folder served at /files/")
    p.add_argument("--data-url", help="--page map: the table's URL, e.g. /files/p1m64.parquet")
    p.add_argument("--native-input", help="--page map: the same table's path, mapped natively")
    p.add_argument("--native-seconds", type=float, help="--page tiles: the native tiles map's wall time")
    p.add_argument("--pan-seconds", type=float, default=3, help="--page tiles: seconds of scripted pan, and of zoom")
    p.add_argument("--extra-flags", default="", help="more Chromium flags, recorded in each row")
    p.add_argument("--methods", default="tsne,umap", help="--page scale: the maps")
    p.add_argument("--repeats", type=int, default=2, help="--page scale: runs of each map (the first cold)")
    p.add_argument("--source", choices=["builtin", "stream"], default="builtin",
                   help="--page scale: builtinPoints(n), or points made in JS and streamed in (native_seconds: built-in)")
    p.add_argument("--surfgrad", help="--page scale: the native CLI, timed on the same sizes")
    p.add_argument("--browser", help="a browser binary instead of BUNDLE's chromium-headless-shell")
    p.add_argument("--user-data-dir", default="/tmp/chromium-profile",
                   help="the browser profile: Chromium keeps its WebGPU shader cache there, so a second "
                        "call with the same folder is a second page load (issue 35), a fresh one a cold load")
    p.add_argument("--port", type=int, default=0,
                   help="the page server's port (default: any free one). A page's origin includes it, and the "
                        "browser keys its HTTP cache, the wasm's code cache and WebGPU's shader cache by origin: "
                        "second-load gives both browsers the same port, as a user's second visit has")
    p.add_argument("--out", required=True)
    p.add_argument("--tools", default="surfgrad-umap,surfgrad-tsne,umap-js")
    p.add_argument("--n", default="10000")
    p.add_argument("--flags", default="--enable-unsafe-webgpu --enable-features=Vulkan --use-vulkan=native "
                                      "--ignore-gpu-blocklist --disable-gpu-sandbox --use-angle=vulkan")
    p.add_argument("--timeout", type=float, default=500, help="seconds to wait for the page's /done")
    p.add_argument("--heartbeat", type=float, default=20, help="print the last progress line every so many seconds")
    p.add_argument("--page-args", default="", help="--page map: more of the map page's URL parameters (a=1&b=2); --page scale: "
                                                         "more of scale.html's (warmgpu=1)")
    p.add_argument("--stop", choices=["", "load", "run-start"], default="", help="--page map: end early (dry runs)")
    p.add_argument("--linger", type=float, default=0, help="seconds the browser is left open after /done "
                                                            "(lets it write its caches: second-load's cold pass)")
    p.add_argument("--native-timeout", type=float, default=150, help="seconds a native run may take")
    p.add_argument("--budget-native", type=float, default=240, help="seconds all native runs may take")
    a = p.parse_args()
    extra = a.extra_flags.strip()
    os.makedirs(a.out, exist_ok=True)
    done = threading.Event()
    log = open(os.path.join(a.out, "results.jsonl"), "a")
    rows = []
    progress = Progress(os.path.join(a.out, "progress.log"))

    class Handler(http.server.SimpleHTTPRequestHandler):
        def translate_path(self, path):
            path = path.split("?")[0]
            if path.startswith("/data/"):
                return os.path.join(a.data, path[len("/data/"):])
            if path.startswith("/files/") and a.serve:
                return os.path.join(a.serve, path[len("/files/"):])
            return super().translate_path(path)

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            if self.path == "/done":
                progress.line("page: done")
                done.set()
            elif self.path == "/progress":
                progress.line("page: " + body.decode("utf-8", "replace")[:2000])
            else:
                r = json.loads(body)
                if r.get("kind") == "scale":
                    r["flags"] = extra
                    rows.append(r)
                if r.get("embedding"):
                    write_npy(os.path.join(a.out, "%s-%d.npy" % (r["tool"], r["n"])), r["embedding"], r["n"])
                    r["embedding"] = "%s-%d.npy" % (r["tool"], r["n"])
                log.write(json.dumps(r) + "\n")
                log.flush()
                progress.line("report: " + json.dumps(r)[:1500])
                print("report:", json.dumps(r)[:400], flush=True)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

        def end_headers(self):
            if a.page != "peers":  # cross-origin isolated: measureUserAgentSpecificMemory works
                self.send_header("Cross-Origin-Opener-Policy", "same-origin")
                self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
            super().end_headers()

    Handler.extensions_map = {**Handler.extensions_map, ".wasm": "application/wasm", ".js": "text/javascript",
                              ".mjs": "text/javascript"}
    http.server.ThreadingHTTPServer.allow_reuse_address = True  # (--port: the last run's socket may linger)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", a.port), functools.partial(Handler, directory=web_root))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d/bench/autorun.html?surfgrad=1&tools=%s&n=%s" % (server.server_address[1], a.tools, a.n)
    if a.page == "scale":
        url = "http://127.0.0.1:%d/bench/scale.html?n=%s&methods=%s&repeats=%d&source=%s%s" % (
            server.server_address[1], a.n, a.methods, a.repeats, a.source, "&" + a.page_args if a.page_args else "")
    elif a.page == "map":
        url = "http://127.0.0.1:%d/bench/page_run.html?mode=map&data=%s&methods=%s&repeats=%d&budget=%d&stop=%s&pageq=%s" % (
            server.server_address[1], a.data_url, a.methods, a.repeats, max(10, a.timeout - 10), a.stop,
            urllib.parse.quote(a.page_args, safe=""))
    elif a.page == "tiles":
        url = "http://127.0.0.1:%d/bench/page_run.html?mode=tiles&tiles=/files/&pan_s=%g&budget=%d" % (
            server.server_address[1], a.pan_seconds, max(10, a.timeout - 10))
    elif a.page == "matmul":
        url = "http://127.0.0.1:%d/bench/matmul.html?sizes=%s&variants=%s" % (
            server.server_address[1], a.sizes, urllib.parse.quote(a.variants, safe=","))
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.path.join(a.chromium, "lib") + ":" + os.path.join(a.chromium, "chromium") + \
        (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    binary = a.browser or os.path.join(a.chromium, "chromium", "chromium-headless-shell")
    cmd = [binary, "--no-sandbox", "--headless",
           "--disable-dev-shm-usage", "--user-data-dir=" + a.user_data_dir, "--enable-logging=stderr", "--v=0",
           "--window-size=1400,900", *a.flags.split(), *extra.split(), url]
    print("browser:", " ".join(cmd), flush=True)
    progress.line("browser: " + " ".join(cmd))
    t0 = time.time()
    # Its own process group: the GPU and renderer processes go with it when it is killed.
    browser = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    blog = open(os.path.join(a.out, "browser.log"), "w", buffering=1)
    pidfile = os.path.join(a.out, "browser.pid")  # (gpu_browser_run.sh kills the group if this driver is killed)
    with open(pidfile, "w") as f:
        f.write(str(browser.pid))

    def pump():
        for line in browser.stdout:
            blog.write(line)
            if "CONSOLE" in line or "Uncaught" in line or "FATAL" in line or "crash" in line.lower():
                progress.line("browser: " + line.rstrip()[:1500])
    threading.Thread(target=pump, daemon=True).start()

    def stop_browser():
        wait_for_startup_trace(a.flags + " " + extra, browser)
        if browser.poll() is None:
            try:
                os.killpg(browser.pid, signal.SIGTERM)
                browser.wait(10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(browser.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
    # An outer `timeout` (gpu_browser_run.sh) sends SIGTERM: close the browser, say where it stood.
    def on_term(signum, _frame):
        progress.line("driver: signal %d after %.1f s: stopping" % (signum, time.time() - t0))
        stop_browser()
        if os.path.exists(pidfile):
            os.remove(pidfile)
        progress.tail("the page's last progress (killed)")
        sys.exit(124)
    signal.signal(signal.SIGTERM, on_term)
    finished = False
    while not finished:
        finished = done.wait(min(a.heartbeat, max(0.1, a.timeout - (time.time() - t0))))
        if finished or time.time() - t0 >= a.timeout:
            break
        if browser.poll() is not None:
            progress.line("driver: the browser exited (code %s) before the page was done" % browser.returncode)
            break
        print("[%6.1f s] waiting; last: %s" % (time.time() - t0, progress.last[:300]), flush=True)
    if finished and a.linger > 0:
        time.sleep(a.linger)
    stop_browser()
    os.remove(pidfile)
    blog.close()
    seconds = time.time() - t0
    if finished:
        print("finished after %.1f s" % seconds, flush=True)
        progress.line("driver: finished after %.1f s" % seconds)
    elif browser.returncode is not None and seconds < a.timeout - 1:
        progress.line("driver: THE BROWSER DIED (exit %s) after %.1f s" % (browser.returncode, seconds))
        print("THE BROWSER DIED (exit %s) after %.1f s; its last lines below" % (browser.returncode, seconds), flush=True)
    else:
        progress.line("driver: TIMED OUT after %.1f s (--timeout %g)" % (seconds, a.timeout))
        print("TIMED OUT after %.1f s waiting for the page (--timeout %g)" % (seconds, a.timeout), flush=True)
    if not finished:
        progress.tail("the page's last progress")
        with open(os.path.join(a.out, "browser.log")) as f:
            lines = [l for l in f if "dbus" not in l and "DBus" not in l]
        print("browser log (last lines, dbus left out):", "".join(lines[-15:]), sep="\n", flush=True)
    if a.page in ("scale", "map"):
        native_times(a, rows)
    elif a.page == "tiles":
        for r in rows:
            r["native_seconds"] = a.native_seconds
        write_rows(a, rows)
    return 0 if finished else 1


class Progress:
    """OUT/progress.log: one line per event, the seconds since start first, flushed as written."""
    def __init__(self, path):
        self.f = open(path, "a", buffering=1)
        self.t0 = time.time()
        self.last = ""
        self.lines = []
        self.lock = threading.Lock()

    def line(self, text):
        with self.lock:
            self.last = text
            self.lines.append("[%7.1f s] %s" % (time.time() - self.t0, text))
            self.f.write(self.lines[-1] + "\n")

    def tail(self, title, n=30):
        with self.lock:
            print("%s (%s):" % (title, self.f.name), *self.lines[-n:], sep="\n", flush=True)


def native_times(a, rows):
    """Fills each scale row's native_seconds: `surfgrad map --points N --method M` timed wall, run
    as many times as the browser ran it (the row of run r gets the native run r: cold, then warm)."""
    native = {}
    start = time.time()
    if a.surfgrad:
        for key in sorted({(r["n"], r["method"]) for r in rows if r.get("method") in ("tsne", "umap")}):
            for repeat in range(1, a.repeats + 1):
                left = a.budget_native - (time.time() - start)
                if left < 5:
                    print("native: %s %d run %d skipped (--budget-native %g s spent)" % (key[1], key[0], repeat, a.budget_native), flush=True)
                    continue
                t0 = time.time()
                # (the maps themselves go to /tmp: the device returns only a few files from OUT)
                os.makedirs("/tmp/surfgrad-native", exist_ok=True)
                target = os.path.join("/tmp/surfgrad-native", "native-%s-%d" % (key[1], key[0]))
                cmd = [a.surfgrad, "map", "--points", str(key[0]), "--method", key[1], "-o", target]
                if a.native_input:  # the page's table: the same file, its labels carried
                    cmd = [a.surfgrad, "map", a.native_input, "--method", key[1], "--labels-column", "label",
                           "-o", target + ".parquet"]
                print("native: %s (run %d, at most %.0f s)" % (" ".join(cmd), repeat, min(left, a.native_timeout)), flush=True)
                try:
                    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                       timeout=min(left, a.native_timeout))
                    code, text = p.returncode, p.stdout
                except subprocess.TimeoutExpired as e:
                    code, text = "timeout", (e.stdout or b"").decode("utf-8", "replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
                seconds = time.time() - t0
                native[key + (repeat,)] = seconds if code == 0 else None
                print("native: %.2f s, exit %s" % (seconds, code), flush=True)
                with open(os.path.join(a.out, "native.log"), "a") as f:
                    f.write("%s (run %d): %.2f s, exit %s\n%s\n" % (" ".join(cmd), repeat, seconds, code, text))
    for r in rows:  # (a page that loaded itself again, reload=1: pass 2's runs have no native twin)
        r["native_seconds"] = native.get((r["n"], r["method"], r.get("run", 1))) if (r.get("pass") or 1) == 1 else None
    write_rows(a, rows)


def write_rows(a, rows):
    with open(os.path.join(a.out, "scale.json"), "w") as f:
        json.dump(rows, f, indent=1)
    for r in rows:
        print("scale:", json.dumps({k: r.get(k) for k in ("n", "method", "pass", "run", "seconds", "native_seconds",
                                                          "max_frame_gap_ms", "tab_peak_mb", "first_view_s", "pan_fps",
                                                          "zoom_fps", "gpu_calls_per_iteration", "flags", "error")
                                    if k in r}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
