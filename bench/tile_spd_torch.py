"""Batched SPD solves in PyTorch (CUDA), beside `surfgrad bench tile-spd` (same shapes, same maths):
x = H⁻¹ f with H = Jᵀ M J + diag(R), by torch.linalg.cholesky and torch.cholesky_solve, eager and
torch.compile, forward and forward + backward (gradients to J, M, R and f).

    python3 bench/tile_spd_torch.py [--systems 1024] [--n 32] [--m 32] [--rhs 1] [--steps 10]
                                    [--repeats 7] [--json FILE]

Data as src/demos/tile_spd.cpp makes it (not the same numbers): J, f uniform in [-1, 1],
M = G Gᵀ / m + I/2, R uniform in [0.1, 1]. Time per solve: wall clock around groups of `steps`
solves ended by torch.cuda.synchronize(), median over `repeats` groups (as surfgrad's bench).
Prints one JSON line.
"""
import argparse
import json
import statistics
import time

import torch


def make_systems(b, n, m, rhs, device):
    g = torch.Generator(device="cpu").manual_seed(1)
    u = lambda *s: torch.rand(*s, generator=g, dtype=torch.float64) * 2 - 1  # noqa: E731
    j = u(b, m, n)
    gm = u(b, m, m)
    mm = gm @ gm.transpose(1, 2) / m + 0.5 * torch.eye(m, dtype=torch.float64)
    r = 0.1 + 0.9 * torch.rand(b, 1, n, generator=g, dtype=torch.float64)
    f = u(b, n, rhs)
    return [t.float().to(device) for t in (j, mm, r, f)]


def solve(j, mm, r, f):
    h = j.transpose(1, 2) @ mm @ j + torch.diag_embed(r[:, 0, :])
    l = torch.linalg.cholesky(h)
    return torch.cholesky_solve(f, l)


def residual(j, mm, r, f, x):
    h = (j.transpose(1, 2) @ mm @ j + torch.diag_embed(r[:, 0, :])).double()
    res = torch.linalg.vector_norm(h @ x.double() - f.double(), dim=(1, 2))
    return (res / torch.linalg.vector_norm(f.double(), dim=(1, 2))).max().item()


def timed(fn, steps, repeats):
    for _ in range(3):  # warm-up: compilation, the caching allocator
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1000 / steps)
    return statistics.median(times)


def run(args, compiled):
    inputs = make_systems(args.systems, args.n, args.m, args.rhs, "cuda")
    params = [t.clone().requires_grad_(True) for t in inputs]
    seed = torch.rand_like(inputs[3]) * 2 - 1
    f = torch.compile(solve) if compiled else solve

    def forward():
        with torch.no_grad():
            return f(*inputs)

    def forward_backward():
        for p in params:
            p.grad = None
        f(*params).backward(seed)

    x = forward()
    out = {"form": "torch.compile" if compiled else "eager", "residual": residual(*inputs, x)}
    out["forward_ms"] = timed(forward, args.steps, args.repeats)
    out["forward_backward_ms"] = timed(forward_backward, args.steps, args.repeats)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--systems", type=int, default=1024)
    p.add_argument("--n", type=int, default=32)
    p.add_argument("--m", type=int, default=32)
    p.add_argument("--rhs", type=int, default=1)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--no-compile", action="store_true", help="eager only")
    p.add_argument("--json")
    args = p.parse_args()
    runs = [run(args, False)]
    if not args.no_compile:
        try:
            runs.append(run(args, True))
        except Exception as e:  # torch.compile needs a working Triton; report, keep eager
            print(f"  torch.compile failed: {type(e).__name__}: {e}")
    for r in runs:
        print(f"  PyTorch {r['form']:14s} forward {r['forward_ms']:8.3f} ms  forward + backward "
              f"{r['forward_backward_ms']:8.3f} ms  max |Hx - f|/|f| {r['residual']:.2e}")
    record = {"bench": "tile-spd-torch", "device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "systems": args.systems, "n": args.n, "m": args.m, "rhs": args.rhs, "steps": args.steps,
              "repeats": args.repeats, "runs": runs}
    print(json.dumps(record))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(record, f, indent=2)


if __name__ == "__main__":
    main()
