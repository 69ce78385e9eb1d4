#!/usr/bin/env bash
# examples/cpp_app against an installed xtrain, on a real trained model:
# trains LeNet for 1000 iterations on Fashion-MNIST with the installed tool
# (fixed seed), builds the example with find_package(xtrain), and checks that
# it labels three easy test images correctly: test images 0 (ankle boot),
# 2 (trouser) and 18 (bag), each at 0.95 or more after these 1000 iterations.
#   cpp_app.sh PREFIX WORK_DIR
set -euo pipefail
PREFIX="$1"
WORK="$2"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
FASHION_MNIST="${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}"
mkdir -p "$WORK"

# The training LMDB: the source tree's if it has one, else made here.
LMDB="$ROOT/data/fashion_mnist/train_lmdb"
if [ ! -d "$LMDB" ]; then
  LMDB="$WORK/train_lmdb"
  "$PREFIX/bin/convert_mnist_data" "$FASHION_MNIST/train-images-idx3-ubyte.gz" \
    "$FASHION_MNIST/train-labels-idx1-ubyte.gz" "$LMDB" > "$WORK/convert.log"
fi
sed "s#data/fashion_mnist/train_lmdb#$LMDB#" "$ROOT/models/lenet/lenet_train_test.prototxt" \
  > "$WORK/lenet_train.prototxt"
# models/lenet/lenet_solver.prototxt without its test passes.
cat > "$WORK/solver.prototxt" <<SOLVER
net: "$WORK/lenet_train.prototxt"
base_lr: 0.01
momentum: 0.9
weight_decay: 0.0005
lr_policy: "inv"
gamma: 0.0001
power: 0.75
display: 500
max_iter: 1000
snapshot_prefix: "$WORK/lenet"
solver_mode: CPU
random_seed: 1701
SOLVER
OMP_WAIT_POLICY=passive "$PREFIX/bin/xtrain" train --solver="$WORK/solver.prototxt" \
  > "$WORK/train.log" 2>&1 || { tail -20 "$WORK/train.log" >&2; exit 1; }
WEIGHTS="$WORK/lenet_iter_1000.caffemodel"
test -f "$WEIGHTS"

"$PREFIX/bin/idx_to_images" --count=20 \
  --class_names=tshirt_top,trouser,pullover,dress,coat,sandal,shirt,sneaker,bag,ankle_boot \
  "$FASHION_MNIST/t10k-images-idx3-ubyte.gz" "$FASHION_MNIST/t10k-labels-idx1-ubyte.gz" \
  "$WORK/images" > /dev/null

cmake -S "$ROOT/examples/cpp_app" -B "$WORK/build" -DCMAKE_PREFIX_PATH="$PREFIX" \
  -DCMAKE_BUILD_TYPE=Release > "$WORK/configure.log"
cmake --build "$WORK/build" > "$WORK/build.log"
OMP_WAIT_POLICY=passive "$WORK/build/classify_images" --scale=0.00390625 \
  "$ROOT/models/lenet/lenet_deploy.prototxt" "$WEIGHTS" \
  "$ROOT/models/lenet/fashion_mnist_labels.txt" "$WORK/images/ankle_boot/00000.png" \
  "$WORK/images/trouser/00002.png" "$WORK/images/bag/00018.png" | tee "$WORK/app.log"

# The top-1 line of each image: PATH <tab> LABEL <tab> PROBABILITY.
expect_top1() {
  if ! grep -q -P "^\Q$WORK/images/$1\E\t$2\t" "$WORK/app.log"; then
    echo "cpp_app: $1 is not labelled '$2'" >&2
    exit 1
  fi
}
expect_top1 ankle_boot/00000.png "Ankle boot"
expect_top1 trouser/00002.png "Trouser"
expect_top1 bag/00018.png "Bag"
echo "cpp_app: OK"
