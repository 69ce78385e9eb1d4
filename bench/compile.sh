#!/usr/bin/env bash
# Compiles bench/NAME.cpp against a build of libxtrain (its internal headers
# included) unless the binary is newer than the source and the library, and
# prints the binary's path.
#   bench/compile.sh NAME        XTRAIN_BUILD_DIR (default build): the build
set -euo pipefail
cd "$(dirname "$0")/.."
NAME="$1"
BUILD="${XTRAIN_BUILD_DIR:-build}"
BIN="$BUILD/bench/$NAME"
mkdir -p "$BUILD/bench"
if [[ ! -x "$BIN" || "bench/$NAME.cpp" -nt "$BIN" || "$BUILD/lib/libxtrain.so" -nt "$BIN" ]]; then
  g++ -std=c++17 -O2 -Wall -Wextra -Isrc -Iinclude -I"$BUILD/include" \
    $(pkg-config --cflags opencv4) "bench/$NAME.cpp" -o "$BIN" \
    -L"$BUILD/lib" -Wl,-rpath,"$(realpath "$BUILD/lib")" -lxtrain -lprotobuf -llmdb \
    $(pkg-config --libs opencv4) -pthread >&2
fi
echo "$BIN"
