#!/usr/bin/env bash
# Fashion-MNIST the way most image datasets arrive: PNG files in one folder
# per class and a "PATH LABEL" list (the layout DIGITS builds), then an LMDB
# by convert_imageset and its mean image by compute_mean.
#   examples/fashion_mnist_png/create_fashion_mnist_png.sh [COUNT]
# COUNT: how many test-set images (default all 10000). Writes, under
# data/fashion_mnist_png/: test_images/<class>/<index>.png,
# test_images/list.txt, test_lmdb/ and test_mean.binaryproto. Steps whose
# output exists are skipped (delete it to redo them).
set -euo pipefail
cd "$(dirname "$0")/../.."

SOURCE="${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}"
BIN="${XTRAIN_BUILD_DIR:-build}/bin"
COUNT="${1:-10000}"
OUT="data/fashion_mnist_png"
CLASSES="tshirt_top,trouser,pullover,dress,coat,sandal,shirt,sneaker,bag,ankle_boot"

mkdir -p "$OUT"
if [ -f "$OUT/test_images/list.txt" ]; then
  echo "create_fashion_mnist_png: $OUT/test_images exists, keeping it"
else
  "$BIN/idx_to_images" --count="$COUNT" --class_names="$CLASSES" \
    "$SOURCE/t10k-images-idx3-ubyte.gz" "$SOURCE/t10k-labels-idx1-ubyte.gz" "$OUT/test_images"
fi

if [ -d "$OUT/test_lmdb" ]; then
  echo "create_fashion_mnist_png: $OUT/test_lmdb exists, keeping it"
else
  # --gray: the PNGs are grey, and the net wants 1 channel (without it,
  # OpenCV would hand back 3 equal channels). The trailing '/' matters:
  # the root folder is joined to each listed path as written.
  "$BIN/convert_imageset" --gray --shuffle "$OUT/test_images/" "$OUT/test_images/list.txt" \
    "$OUT/test_lmdb"
fi

"$BIN/compute_mean" "$OUT/test_lmdb" "$OUT/test_mean.binaryproto"
echo "create_fashion_mnist_png: mean image in $OUT/test_mean.binaryproto"
