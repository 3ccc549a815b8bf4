"""The tile-fftconv computation in PyTorch (CUDA), eager and torch.compile, beside
`surfgrad bench tile-fftconv` (same sizes, same circular convolution).

    python3 bench/tile_fftconv_torch.py [--signals 4096] [--length 256] [--taps 64] [--steps 20] [--json FILE]

`signals` real signals of `length` samples, circularly convolved with one real filter of `taps`
taps zero-padded to the length: y = irfft(rfft(x) · rfft(h)), as surfgrad's demo computes it
(there as complex FFTs of signal pairs). Forward, and forward + backward with a fixed upstream
gradient (gradients with respect to the signals and the filter). Time per step: wall clock around
five groups of `steps` steps, each ended by torch.cuda.synchronize(), the median group (as
surfgrad's bench). The first signals are checked against a direct float64 convolution. Prints
one JSON line.
"""
import argparse
import json
import statistics
import time

import torch


def conv(x, h_padded):
    n = x.shape[-1]
    return torch.fft.irfft(torch.fft.rfft(x) * torch.fft.rfft(h_padded), n=n)


def timed(fn, steps):
    for _ in range(3):  # warm-up (compilation, cuFFT plans, caching allocator)
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1000 / steps)
    return statistics.median(times)


def run(args, compiled):
    gen = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(args.signals, args.length, device="cuda", generator=gen)
    h = torch.randn(args.taps, device="cuda", generator=gen)
    h = h * torch.exp(-torch.arange(args.taps, device="cuda") / (0.25 * args.taps + 1))
    upstream = torch.randn(args.signals, args.length, device="cuda", generator=gen)
    f = torch.compile(conv) if compiled else conv

    def forward():
        with torch.no_grad():
            return f(x, torch.nn.functional.pad(h, (0, args.length - args.taps)))

    def train():
        xs, hs = x.detach().requires_grad_(), h.detach().requires_grad_()
        y = f(xs, torch.nn.functional.pad(hs, (0, args.length - args.taps)))
        y.backward(upstream)
        return xs.grad, hs.grad

    # Correctness on a few signals: y_b[i] = Σ_j h[j]·x_b[(i − j) mod n], in float64 on the host.
    y = forward()[:3].double().cpu()
    xd, hd = x[:3].double().cpu(), h.double().cpu()
    idx = (torch.arange(args.length)[:, None] - torch.arange(args.taps)[None, :]) % args.length
    want = (xd[:, idx] * hd).sum(-1)
    max_error = (y - want).abs().max().item()
    return {"form": "torch.compile" if compiled else "eager", "forward_ms": timed(forward, args.steps),
            "train_ms": timed(train, args.steps), "max_error": max_error}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--signals", type=int, default=4096)
    p.add_argument("--length", type=int, default=256)
    p.add_argument("--taps", type=int, default=64)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--json")
    args = p.parse_args()
    runs = [run(args, False)]
    try:
        runs.append(run(args, True))
    except Exception as e:  # torch.compile of complex FFTs is not available everywhere
        print(f"  torch.compile failed: {type(e).__name__}: {e}")
    for r in runs:
        print(f"  PyTorch {r['form']:14s} forward {r['forward_ms']:9.3f} ms  forward+backward {r['train_ms']:9.3f} ms  "
              f"max |error| {r['max_error']:.3g}")
    record = {"bench": "tile-fftconv-torch", "device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "signals": args.signals, "length": args.length, "taps": args.taps, "steps": args.steps, "runs": runs}
    print(json.dumps(record))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(record, f, indent=2)


if __name__ == "__main__":
    main()
