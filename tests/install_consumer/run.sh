#!/usr/bin/env bash
# Installs the build in BUILD_DIR to a temporary prefix, then configures,
# builds and runs the consumer project and examples/cpp_app against it.
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
echo "install consumer: OK"
