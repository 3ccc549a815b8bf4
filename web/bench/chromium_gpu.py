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
import sys
import threading
import time

here = os.path.dirname(os.path.abspath(__file__))
web_root = os.path.dirname(here)


def write_npy(path, values, n):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, 2), }" % n
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack("<%df" % len(values), *values))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--chromium", default="", help="the Chromium bundle (scripts/make_chromium_bundle.sh)")
    p.add_argument("--data", default=".", help="folder holding mnist10k/ (the peers page)")
    p.add_argument("--page", choices=["peers", "scale"], default="peers")
    p.add_argument("--methods", default="tsne,umap", help="--page scale: the maps")
    p.add_argument("--repeats", type=int, default=2, help="--page scale: runs of each map (the first cold)")
    p.add_argument("--source", choices=["builtin", "stream"], default="builtin",
                   help="--page scale: builtinPoints(n), or points made in JS and streamed in (native_seconds: built-in)")
    p.add_argument("--surfgrad", help="--page scale: the native CLI, timed on the same sizes")
    p.add_argument("--browser", help="a browser binary instead of BUNDLE's chromium-headless-shell")
    p.add_argument("--out", required=True)
    p.add_argument("--tools", default="surfgrad-umap,surfgrad-tsne,umap-js")
    p.add_argument("--n", default="10000")
    p.add_argument("--flags", default="--enable-unsafe-webgpu --enable-features=Vulkan --use-vulkan=native "
                                      "--ignore-gpu-blocklist --disable-gpu-sandbox --use-angle=vulkan")
    p.add_argument("--timeout", type=float, default=500)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    done = threading.Event()
    log = open(os.path.join(a.out, "results.jsonl"), "a")
    rows = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def translate_path(self, path):
            path = path.split("?")[0]
            if path.startswith("/data/"):
                return os.path.join(a.data, path[len("/data/"):])
            return super().translate_path(path)

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            if self.path == "/done":
                done.set()
            else:
                r = json.loads(body)
                if r.get("kind") == "scale":
                    rows.append(r)
                if r.get("embedding"):
                    write_npy(os.path.join(a.out, "%s-%d.npy" % (r["tool"], r["n"])), r["embedding"], r["n"])
                    r["embedding"] = "%s-%d.npy" % (r["tool"], r["n"])
                log.write(json.dumps(r) + "\n")
                log.flush()
                print("report:", json.dumps(r)[:400], flush=True)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

        def end_headers(self):
            if a.page == "scale":  # cross-origin isolated: measureUserAgentSpecificMemory works
                self.send_header("Cross-Origin-Opener-Policy", "same-origin")
                self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
            super().end_headers()

    Handler.extensions_map = {**Handler.extensions_map, ".wasm": "application/wasm", ".js": "text/javascript",
                              ".mjs": "text/javascript"}
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=web_root))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d/bench/autorun.html?surfgrad=1&tools=%s&n=%s" % (server.server_address[1], a.tools, a.n)
    if a.page == "scale":
        url = "http://127.0.0.1:%d/bench/scale.html?n=%s&methods=%s&repeats=%d&source=%s" % (
            server.server_address[1], a.n, a.methods, a.repeats, a.source)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.path.join(a.chromium, "lib") + ":" + os.path.join(a.chromium, "chromium") + \
        (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    binary = a.browser or os.path.join(a.chromium, "chromium", "chromium-headless-shell")
    cmd = [binary, "--no-sandbox", "--headless",
           "--disable-dev-shm-usage", "--user-data-dir=/tmp/chromium-profile", "--enable-logging=stderr", "--v=0",
           *a.flags.split(), url]
    print("browser:", " ".join(cmd), flush=True)
    t0 = time.time()
    browser = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    threading.Thread(target=lambda: [lines.append(l) for l in browser.stdout], daemon=True).start()
    finished = done.wait(a.timeout)
    browser.terminate()
    try:
        browser.wait(10)
    except subprocess.TimeoutExpired:
        browser.kill()
    with open(os.path.join(a.out, "browser.log"), "w") as f:
        f.writelines(lines)
    print("browser log (last lines):", "".join(lines[-25:]), sep="\n")
    print("finished" if finished else "TIMED OUT", "after %.1f s" % (time.time() - t0))
    if a.page == "scale":
        native_times(a, rows)
    return 0 if finished else 1


def native_times(a, rows):
    """Fills each scale row's native_seconds: `surfgrad map --points N --method M` timed wall, run
    as many times as the browser ran it (the row of run r gets the native run r: cold, then warm)."""
    native = {}
    if a.surfgrad:
        for key in sorted({(r["n"], r["method"]) for r in rows}):
            for repeat in range(1, a.repeats + 1):
                t0 = time.time()
                p = subprocess.run([a.surfgrad, "map", "--points", str(key[0]), "--method", key[1], "-o",
                                    os.path.join(a.out, "native-%s-%d" % (key[1], key[0]))],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                seconds = time.time() - t0
                native[key + (repeat,)] = seconds if p.returncode == 0 else None
                with open(os.path.join(a.out, "native.log"), "a") as f:
                    f.write("surfgrad map --points %d --method %s (run %d): %.2f s, exit %d\n%s\n" % (
                        key[0], key[1], repeat, seconds, p.returncode, p.stdout))
    for r in rows:
        r["native_seconds"] = native.get((r["n"], r["method"], r.get("run", 1)))
    with open(os.path.join(a.out, "scale.json"), "w") as f:
        json.dump(rows, f, indent=1)
    for r in rows:
        print("scale:", json.dumps({k: r.get(k) for k in ("n", "method", "run", "seconds", "native_seconds",
                                                          "max_frame_gap_ms", "tab_peak_mb", "error")}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
