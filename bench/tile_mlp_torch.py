"""The tile-mlp training step in PyTorch (CUDA), eager and torch.compile, beside
`surfgrad bench tile-mlp` (same network, image, optimizer and step count).

    python3 bench/tile_mlp_torch.py [--side 64] [--hidden 64] [--layers 3] [--steps 200] [--json FILE]

The image is src/demos/tile_mlp.cpp's target (a gradient with two discs and a ring), every
pixel in every step; MLP 2-hidden^layers-3, ReLU, sigmoid out, MSE, Adam (lr 5e-3). Time per
step: wall clock around groups of steps ended by a synchronising read of the loss, median (as
surfgrad's bench). Prints one JSON line.
"""
import argparse
import json
import statistics
import time

import torch


def smooth_disc(u, v, cu, cv, radius):
    d = torch.sqrt((u - cu) ** 2 + (v - cv) ** 2)
    return torch.clamp((radius - d) / 0.03 + 0.5, 0.0, 1.0)


def target_image(side, device):
    idx = (torch.arange(side, dtype=torch.float64, device=device) + 0.5) / side
    v, u = torch.meshgrid(idx, idx, indexing="ij")  # row y, column x
    r, g, b = 0.15 + 0.6 * u, 0.2 + 0.5 * v, 0.55 - 0.3 * u * v
    sun, lake = smooth_disc(u, v, 0.32, 0.35, 0.17), smooth_disc(u, v, 0.7, 0.68, 0.2)
    ring = smooth_disc(u, v, 0.62, 0.3, 0.12) * (1 - smooth_disc(u, v, 0.62, 0.3, 0.07))
    r, g, b = r * (1 - sun) + 0.98 * sun, g * (1 - sun) + 0.8 * sun, b * (1 - sun) + 0.15 * sun
    r, g, b = r * (1 - lake) + 0.1 * lake, g * (1 - lake) + 0.35 * lake, b * (1 - lake) + 0.85 * lake
    r, g, b = r * (1 - ring) + 0.9 * ring, g * (1 - ring) + 0.2 * ring, b * (1 - ring) + 0.5 * ring
    coords = torch.stack([2 * u - 1, 2 * v - 1], -1).reshape(-1, 2).float()
    return coords, torch.stack([r, g, b], -1).reshape(-1, 3).float()


def make_model(hidden, layers, device):
    mods, fan_in = [], 2
    for _ in range(layers):
        mods += [torch.nn.Linear(fan_in, hidden), torch.nn.ReLU()]
        fan_in = hidden
    mods += [torch.nn.Linear(fan_in, 3), torch.nn.Sigmoid()]
    return torch.nn.Sequential(*mods).to(device)


def run(args, compiled):
    torch.manual_seed(1)
    coords, target = target_image(args.side, "cuda")
    model = make_model(args.hidden, args.layers, "cuda")
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)

    def step():
        loss = ((model(coords) - target) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    if compiled:
        step = torch.compile(step)
    first = step().item()
    for _ in range(10):  # warm-up (compilation, caching allocator)
        step()
    torch.cuda.synchronize()
    group, times, done, loss = 20, [], 11, first
    while done < args.steps:
        n = min(group, args.steps - done)
        t0 = time.perf_counter()
        for _ in range(n):
            out = step()
        loss = out.item()  # the sync point
        times.append((time.perf_counter() - t0) * 1000 / n)
        done += n
    return {"form": "torch.compile" if compiled else "eager", "ms_per_step": statistics.median(times),
            "first_loss": first, "final_loss": loss}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--side", type=int, default=64)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--json")
    args = p.parse_args()
    runs = [run(args, False), run(args, True)]
    for r in runs:
        print(f"  PyTorch {r['form']:14s} {r['ms_per_step']:9.3f} ms/step  loss {r['first_loss']:.5f} → "
              f"{r['final_loss']:.5f}")
    record = {"bench": "tile-mlp-torch", "device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "side": args.side, "hidden": args.hidden, "layers": args.layers, "steps": args.steps, "runs": runs}
    print(json.dumps(record))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(record, f, indent=2)


if __name__ == "__main__":
    main()
