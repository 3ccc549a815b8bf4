"""Runs the browser benchmark (web/bench/autorun.html) in a headless Chromium on a machine with no
node and no browser driver, e.g. the GPU machine: serves web/ and the MNIST folder, starts the
browser, receives each result as the page POSTs it, and writes them to OUT/results.jsonl and each
map to OUT/<tool>-<n>.npy (scored later with `surfgrad eval`). Standard library only.

    python3 web/bench/chromium_gpu.py --chromium BUNDLE --data DIR --out OUT \
        [--tools surfgrad-umap,umap-js] [--n 10000] [--flags "..."] [--timeout 500]

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
    p.add_argument("--chromium", required=True)
    p.add_argument("--data", required=True, help="folder holding mnist10k/")
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

    Handler.extensions_map = {**Handler.extensions_map, ".wasm": "application/wasm", ".js": "text/javascript",
                              ".mjs": "text/javascript"}
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=web_root))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d/bench/autorun.html?surfgrad=1&tools=%s&n=%s" % (server.server_address[1], a.tools, a.n)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.path.join(a.chromium, "lib") + ":" + os.path.join(a.chromium, "chromium") + \
        (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    cmd = [os.path.join(a.chromium, "chromium", "chromium-headless-shell"), "--no-sandbox", "--headless",
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
    return 0 if finished else 1


if __name__ == "__main__":
    sys.exit(main())
