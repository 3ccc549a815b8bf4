#!/usr/bin/env python3
"""Writes small valid seed files for the fuzz targets (standard library only, no NumPy):
make_seeds.py DIR creates DIR/{npy,npz,idx,csv}/."""
import gzip
import io
import os
import struct
import sys
import zipfile


def npy(descr, shape, payload, fortran=False, version=1):
    dims = "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, dims)
    prefix = 10 if version == 1 else 12
    header += " " * ((64 - (prefix + len(header) + 1) % 64) % 64) + "\n"
    size = struct.pack("<H", len(header)) if version == 1 else struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + size + header.encode() + payload


def idx(type_code, fmt, shape, values):
    head = bytes([0, 0, type_code, len(shape)]) + b"".join(struct.pack(">I", d) for d in shape)
    return head + b"".join(struct.pack(">" + fmt, v) for v in values)


def main(out):
    arrays = {
        "f4_2x3.npy": npy("<f4", (2, 3), struct.pack("<6f", 1, 2, 3, 4, 5, 6)),
        "f8_fortran.npy": npy("<f8", (2, 2), struct.pack("<4d", 1, 3, 2, 4), fortran=True),
        "u1.npy": npy("|u1", (4,), bytes([0, 127, 128, 255])),
        "i8.npy": npy("<i8", (2,), struct.pack("<2q", 3, -7)),
        "f2_v2.npy": npy("<f2", (1, 2), struct.pack("<2H", 0x3C00, 0xC000), version=2),
        "zero.npy": npy("<f4", (0, 5), b""),
        "scalar.npy": npy("<i4", (), struct.pack("<i", 42)),
    }
    os.makedirs(os.path.join(out, "npy"), exist_ok=True)
    for name, data in arrays.items():
        open(os.path.join(out, "npy", name), "wb").write(data)
    os.makedirs(os.path.join(out, "npz"), exist_ok=True)
    for method, name in ((zipfile.ZIP_STORED, "stored.npz"), (zipfile.ZIP_DEFLATED, "deflated.npz")):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", method) as z:
            z.writestr("a.npy", arrays["f4_2x3.npy"])
            z.writestr("b.npy", arrays["u1.npy"])
        open(os.path.join(out, "npz", name), "wb").write(buf.getvalue())
    os.makedirs(os.path.join(out, "idx"), exist_ok=True)
    files = {
        "u8.idx": idx(0x08, "B", (2, 3), range(6)),
        "i16.idx": idx(0x0B, "h", (3,), (-2, 256, 7)),
        "f32.idx": idx(0x0D, "f", (2, 2), (1.5, -2, 0, 3)),
        "f64.idx": idx(0x0E, "d", (2,), (1e10, -0.5)),
    }
    for name, data in files.items():
        open(os.path.join(out, "idx", name), "wb").write(data)
        open(os.path.join(out, "idx", name + ".gz"), "wb").write(gzip.compress(data, mtime=0))
    os.makedirs(os.path.join(out, "csv"), exist_ok=True)
    texts = {
        "plain.csv": "1,2,3\n4.5,-6e-3,7\n",
        "header.csv": "x,y\r\n+1.5 , 2\r\n\r\n3,4\r\n",
        "one.csv": "value\n1\n2\n3\n",
    }
    for name, text in texts.items():
        open(os.path.join(out, "csv", name), "w").write(text)


if __name__ == "__main__":
    main(sys.argv[1])
