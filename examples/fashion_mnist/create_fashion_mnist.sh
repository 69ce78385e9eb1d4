#!/usr/bin/env bash
# Turns Debian's packaged Fashion-MNIST (gzipped IDX files) into the train and
# test LMDBs that models/lenet reads: data/fashion_mnist/{train,test}_lmdb.
set -euo pipefail
cd "$(dirname "$0")/../.."

SOURCE="${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}"
OUT="data/fashion_mnist"
CONVERT="${XTRAIN_BUILD_DIR:-build}/bin/convert_mnist_data"

mkdir -p "$OUT"
for split in train:train t10k:test; do
  prefix="${split%%:*}"
  name="${split##*:}"
  if [ -d "$OUT/${name}_lmdb" ]; then
    echo "create_fashion_mnist: $OUT/${name}_lmdb exists, keeping it"
    continue
  fi
  "$CONVERT" "$SOURCE/${prefix}-images-idx3-ubyte.gz" "$SOURCE/${prefix}-labels-idx1-ubyte.gz" \
    "$OUT/${name}_lmdb"
done
