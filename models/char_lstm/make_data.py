#!/usr/bin/env python3
"""Builds the character-level LSTM's data (models/char_lstm) from a text
file: every Debian machine has /usr/share/common-licenses/GPL-3 (35 KB).

  models/char_lstm/make_data.py [--text FILE] [--out DIR] [--streams N] [--steps T]

Run from the repository root: DIR defaults to data/char_lstm, where
train_val.prototxt looks (the list files hold the HDF5 files' paths as
given, so keep DIR relative to the root or absolute).

The characters become class numbers (the sorted set of characters in the
text; vocab.json lists them). The first 90% of the text trains, the rest
tests. Each part is cut into N streams of consecutive text, one per column:
row r of an HDF5 file holds character r of every stream, so that HDF5Data
with batch_size T hands the net T x N blocks whose rows are time steps and
whose next block continues every stream (the LSTM carries its state over,
cont = 1). `input` holds a character, `target` the one after it. The rows
are cut to a multiple of T. Needs numpy and h5py (Debian: apt-get install
python3-h5py).
"""
import argparse
import json
from pathlib import Path

import h5py
import numpy as np


def write_part(codes, streams, steps, path):
    rows = (len(codes) - 1) // streams // steps * steps
    if rows == 0:
        raise SystemExit(f"{path}: too little text for {streams} streams of {steps} steps")
    used = rows * streams
    inputs = codes[:used].reshape(streams, rows).T
    targets = codes[1:used + 1].reshape(streams, rows).T
    with h5py.File(path, "w") as out:
        out.create_dataset("input", data=inputs.astype(np.float32))
        out.create_dataset("target", data=targets.astype(np.float32))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text", default="/usr/share/common-licenses/GPL-3")
    parser.add_argument("--out", default="data/char_lstm")
    parser.add_argument("--streams", type=int, default=32)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()

    text = Path(args.text).read_text(encoding="utf-8")
    vocabulary = sorted(set(text))
    codes = np.array([vocabulary.index(c) for c in text], dtype=np.int64)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    split = len(codes) * 9 // 10
    for name, part in (("train", codes[:split]), ("test", codes[split:])):
        h5 = out / f"{name}.h5"
        rows = write_part(part, args.streams, args.steps, h5)
        (out / f"{name}.txt").write_text(f"{h5}\n")
        print(f"{h5}: {rows} time steps x {args.streams} streams")
    (out / "vocab.json").write_text(json.dumps(vocabulary))
    print(f"{len(vocabulary)} characters; the prototxt's input_dim and num_output must match")


if __name__ == "__main__":
    main()
