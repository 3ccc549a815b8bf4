"""cuBLAS through PyTorch, measured in the same run as `surfgrad bench matmul`.

    python3 bench/torch_matmul.py 1024x1024x1024 4096x4096x4096 ...

Prints one JSON object: for each MxNxK, TFLOP/s of fp32 (TF32 off: true SGEMM), tf32 and fp16
products (CUDA events, median of repeats, inputs uniform in [-1, 1]). Exits 1 without CUDA.
"""
import json
import statistics
import sys

import torch


def tflops(m, n, k, dtype, tf32):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    a = torch.rand(m, k, device="cuda", dtype=dtype) * 2 - 1
    b = torch.rand(k, n, device="cuda", dtype=dtype) * 2 - 1
    c = a @ b
    torch.cuda.synchronize()
    reps = max(3, min(50, int(2e11 / (2.0 * m * n * k))))
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        torch.matmul(a, b, out=c)
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    return 2.0 * m * n * k / (statistics.median(times) * 1e9)


def main():
    if not torch.cuda.is_available():
        sys.exit(1)
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "sizes": {}}
    for spec in sys.argv[1:]:
        m, n, k = (int(x) for x in spec.split("x"))
        out["sizes"][spec] = {
            "fp32": tflops(m, n, k, torch.float32, False),
            "tf32": tflops(m, n, k, torch.float32, True),
            "fp16": tflops(m, n, k, torch.float16, False),
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
