#!/usr/bin/env bash
# Installs the build in BUILD_DIR to a temporary prefix, then configures,
# builds and runs the consumer project, examples/cpp_app and
# examples/custom_layer against it.
set -euo pipefail
BUILD_DIR="$1"
SOURCE_DIR="$(cd "$(dirname "$0")" && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cmake --install "$BUILD_DIR" --prefix "$WORK/prefix" > "$WORK/install.log"
test -x "$WORK/prefix/bin/xtrain"
test -x "$WORK/prefix/bin/convert_mnist_data"
cmake -S "$SOURCE_DIR" -B "$WORK/build" -DCMAKE_PREFIX_PATH="$WORK/prefix" -DCMAKE_BUILD_TYPE=Release > "$WORK/configure.log"
cmake --build "$WORK/build" > "$WORK/build.log"
"$WORK/build/consumer"
# The installed tool finds its library (RPATH) and reports bad input.
if "$WORK/prefix/bin/xtrain" time --model=/nonexistent.prototxt > "$WORK/tool.log" 2>&1; then
  echo "xtrain accepted a missing model" >&2
  exit 1
fi
grep -q "nonexistent.prototxt" "$WORK/tool.log"
# examples/cpp_app, built against the same prefix, on a freshly trained LeNet.
bash "$SOURCE_DIR/cpp_app.sh" "$WORK/prefix" "$WORK/cpp_app"
# examples/custom_layer: an application's own layer type (gradient checked,
# a net naming it trained), against the same prefix.
ROOT="$(cd "$SOURCE_DIR/../.." && pwd)"
cmake -S "$ROOT/examples/custom_layer" -B "$WORK/custom_layer" -DCMAKE_PREFIX_PATH="$WORK/prefix" \
  -DCMAKE_BUILD_TYPE=Release > "$WORK/custom_layer_configure.log"
cmake --build "$WORK/custom_layer" > "$WORK/custom_layer_build.log"
if ! OMP_NUM_THREADS=1 "$WORK/custom_layer/custom_layer" > "$WORK/custom_layer.log" 2>&1; then
  tail -n 20 "$WORK/custom_layer.log" >&2
  exit 1
fi
grep -q "gradient check: .* (ok)" "$WORK/custom_layer.log"
grep -q "(learned)" "$WORK/custom_layer.log"
echo "install consumer: OK"
