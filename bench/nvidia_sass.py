"""What NVIDIA's Vulkan driver made of surfgrad's WGSL kernels: the machine code (SASS).

    python3 bench/nvidia_sass.py --run -- ./build/surfgrad bench matmul --sizes 4096x4096x4096 --variants tuned
    python3 bench/nvidia_sass.py --out DIR CACHE_DIR_OR_FILE...

With --run, the command runs with the driver's shader disk cache pointed at an empty folder
(__GL_SHADER_DISK_CACHE_PATH), so every pipeline it creates is compiled and stored there; then
each stored kernel is disassembled. Without --run, the arguments are cache folders or their
`.bin` files, read the same way.

The cache format is the driver's, not documented; what this reads was found on driver 580 (H100,
2026-11-26): a `.bin` holds zstd frames; a frame that decompresses to a blob starting with
`NVDANVVMNVuc` is one compiled kernel, its code size at byte 0x4c and its code offset at 0x50
(32-bit little-endian), the instructions starting 8 bytes past that offset, 16 bytes each.
nvidia-cuda-nvdisasm (PyPI, bench/requirements-sass.txt) disassembles them as raw SM90 code.

For each kernel, largest first, it prints the instruction count, the highest register named
(registers a thread holds; 128 is the cap at 512 threads a workgroup), counts of the
instructions that decide a matmul's speed (FFMA, shared and global loads and stores, barriers,
local-memory spills, moves), and its shape: the sequence of loads, stores, barriers and FMA runs
in program order, which shows where the compiler placed the global loads relative to the FMAs.
"""
import argparse
import collections
import importlib.util
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

import zstandard

MAGIC_ZSTD = b"\x28\xb5\x2f\xfd"
MAGIC_KERNEL = b"NVDANVVMNVuc"
COUNTED = ["FFMA", "LDS", "STS", "LDG", "STG", "BAR", "LDL", "STL", "MOV", "ISETP", "BRA"]
SHAPE_OPS = {"LDG", "STS", "LDS", "BAR", "FFMA", "EXIT"}
INSTRUCTION = re.compile(r"/\*([0-9a-f]+)\*/\s+(?:@!?U?P[0-9T]\s+)?([A-Z][A-Z0-9_]*)((?:\.[A-Z0-9_]+)*)")


def find_nvdisasm(explicit):
    if explicit:
        return explicit
    spec = importlib.util.find_spec("nvidia")
    for root in list(spec.submodule_search_locations) if spec else []:
        for dirpath, _, files in os.walk(root):
            if "nvdisasm" in files:
                return os.path.join(dirpath, "nvdisasm")
    found = shutil.which("nvdisasm")
    if not found:
        sys.exit("nvidia_sass: no nvdisasm; pip install -r bench/requirements-sass.txt, or pass --nvdisasm PATH")
    return found


def kernels_in(path):
    """Every compiled kernel blob in one cache file."""
    data = open(path, "rb").read()
    at, out = 0, []
    while (i := data.find(MAGIC_ZSTD, at)) >= 0:
        at = i + 4
        try:
            blob = zstandard.ZstdDecompressor().decompressobj().decompress(data[i:])
        except zstandard.ZstdError:
            continue  # the magic number inside other data, not a frame
        if blob.startswith(MAGIC_KERNEL):
            out.append(blob)
    return out


def code_of(blob):
    size, offset = struct.unpack_from("<II", blob, 0x4C)
    code = blob[offset + 8 : offset + size]
    return code[: len(code) // 16 * 16]


def disassemble(nvdisasm, code, workdir):
    path = os.path.join(workdir, "kernel.code")
    with open(path, "wb") as f:
        f.write(code)
    r = subprocess.run([nvdisasm, "-b", "SM90", path], capture_output=True, text=True)
    return r.stdout, r.stderr.strip()


def shape(ops):
    """Program order of the ops that matter, runs counted and stretches of shared loads and FMAs
    merged: 'LDG×3 STS×3 BAR LDG×3 [FFMA×512 LDS×32] BAR' is a step whose global loads are issued
    before its FMAs."""
    runs = []
    for op in ops:
        if op not in SHAPE_OPS:
            continue
        if runs and runs[-1][0] == op:
            runs[-1][1] += 1
        else:
            runs.append([op, 1])
    out, inner = [], collections.Counter()

    def close():
        if inner:
            out.append("[" + " ".join(f"{k}×{v}" for k, v in sorted(inner.items())) + "]")
            inner.clear()

    for op, n in runs:
        if op in ("FFMA", "LDS"):
            inner[op] += n
            continue
        close()
        out.append(op if n == 1 else f"{op}×{n}")
    close()
    return " ".join(out)


def summarise(sass):
    ops = [m.group(2) for m in INSTRUCTION.finditer(sass)]
    counts = collections.Counter(ops)
    registers = [int(r) for r in re.findall(r"\bR(\d+)\b", sass)]
    return {
        "instructions": len(ops),
        "max_register": max(registers) if registers else -1,
        "counts": {k: counts[k] for k in COUNTED},
        "shape": shape(ops),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", help="cache folders or .bin files (without --run)")
    ap.add_argument("--run", action="store_true", help="run the command after -- with a fresh shader cache first")
    ap.add_argument("--out", help="write each kernel's disassembly to OUT/kernelN.sass")
    ap.add_argument("--nvdisasm", help="nvdisasm to use (default: the nvidia-cuda-nvdisasm package's, then PATH)")
    ap.add_argument("--min-instructions", type=int, default=0, help="skip kernels shorter than this")
    argv = sys.argv[1:]
    command = argv[argv.index("--") + 1 :] if "--" in argv else []
    args = ap.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    nvdisasm = find_nvdisasm(args.nvdisasm)
    work = tempfile.mkdtemp(prefix="nvidia_sass_")
    paths = args.paths
    if args.run:
        if not command:
            sys.exit("nvidia_sass: --run needs a command after --")
        cache = os.path.join(work, "cache")
        os.makedirs(cache)
        env = dict(os.environ, __GL_SHADER_DISK_CACHE="1", __GL_SHADER_DISK_CACHE_PATH=cache,
                   __GL_SHADER_DISK_CACHE_SKIP_CLEANUP="1")
        rc = subprocess.run(command, env=env).returncode
        if rc != 0:
            sys.exit(f"nvidia_sass: the command exited with {rc}")
        paths = [cache]
    elif command:
        sys.exit("nvidia_sass: a command after -- needs --run")
    if not paths:
        sys.exit("nvidia_sass: name cache folders or .bin files, or --run -- COMMAND")
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += [os.path.join(d, f) for d, _, fs in os.walk(p) for f in fs if f.endswith(".bin")]
        elif os.path.isfile(p):
            files.append(p)
        else:
            sys.exit(f"nvidia_sass: no such file or folder: {p}")
    blobs = [(os.path.basename(f), b) for f in sorted(files) for b in kernels_in(f)]
    if not blobs:
        sys.exit("nvidia_sass: no compiled kernels found (is this NVIDIA's driver, and was the cache empty first?)")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    for n, (source, blob) in enumerate(sorted(blobs, key=lambda fb: len(fb[1]), reverse=True)):
        sass, err = disassemble(nvdisasm, code_of(blob), work)
        if err and not sass:
            print(f"kernel {n} ({source}): not disassembled ({err.splitlines()[0]})")
            continue
        s = summarise(sass)
        if s["instructions"] < args.min_instructions:
            continue
        if args.out:
            with open(os.path.join(args.out, f"kernel{n}.sass"), "w") as f:
                f.write(sass)
        counts = " ".join(f"{k} {v}" for k, v in s["counts"].items() if v)
        print(f"kernel {n} ({source}): {s['instructions']} instructions, registers up to R{s['max_register']}; {counts}")
        print(f"  shape: {s['shape']}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
