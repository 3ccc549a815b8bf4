"""Reference numbers measured with PyTorch (CUDA) in the same run as surfgrad's benchmarks.

    python3 bench/torch_reference.py [--elements N] [--ops N] [--json FILE]

Elementwise add of two N-element f32 tensors and a device copy (GB/s, CUDA events, median of
repeats), and a chain of small adds in eager mode (µs per op). Prints one JSON line.
"""
import argparse
import json
import statistics

import torch


def time_ms(fn, reps=20):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--elements", type=int, default=64 << 20)
    p.add_argument("--ops", type=int, default=1000)
    p.add_argument("--json")
    a = p.parse_args()
    n = a.elements
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    out, dst = torch.empty_like(x), torch.empty_like(x)
    add_ms = time_ms(lambda: torch.add(x, y, out=out))
    copy_ms = time_ms(lambda: dst.copy_(x))
    assert torch.equal(out[:4096], x[:4096] + y[:4096])
    small, one = torch.rand(1024, device="cuda"), torch.full((1024,), 1e-3, device="cuda")

    def chain():
        z = small
        for _ in range(a.ops):
            z = z + one
        return z

    chain_ms = time_ms(chain, reps=10)

    # One training step of an MLP 784-1024-1024-10, batch 512, f32, Adam (PyTorch eager).
    torch.backends.cuda.matmul.allow_tf32 = False  # plain f32, as surfgrad computes
    model = torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                                torch.nn.ReLU(), torch.nn.Linear(1024, 10)).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    xb = torch.randn(512, 784, device="cuda")
    yb = torch.arange(512, device="cuda") % 10

    def train_step():
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(5):
        train_step()
    train_ms = time_ms(lambda: [train_step() for _ in range(20)], reps=5) / 20
    result = {
        "bench": "torch_reference",
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "elements": n,
        "add_ms": add_ms,
        "add_gbs": 12.0 * n / (add_ms * 1e6),
        "copy_ms": copy_ms,
        "copy_gbs": 8.0 * n / (copy_ms * 1e6),
        "ops": a.ops,
        "eager_us_per_op": chain_ms * 1000.0 / a.ops,
        "train_step_ms": train_ms,
    }
    print(json.dumps(result))
    if a.json:
        with open(a.json, "w") as f:
            f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
