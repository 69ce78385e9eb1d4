#!/usr/bin/env bash
# Builds the GPU bundle: a relocatable tarball (xz) that validates xtrain on a
# borrowed GPU machine which has CUDA, a driver and Python's NVIDIA wheels but
# none of our Debian libraries and no network (docs/cuda.md, "Validating on a
# borrowed GPU").
#
#   scripts/gpu_bundle.sh [OUT]      OUT: build-gpu-bundle/xtrain-gpu-bundle.tar.xz
#
# It builds the working tree as it is (uncommitted changes included) into
# build-gpu-bundle/ (Release, CUDA for sm_90 only: H100/H200), then packs
#   bin/      xtrain and the other tools, xtrain_tests
#   lib/      libxtrain and every non-CUDA, non-glibc library they load
#             (scripts/gpu_bundle_libs.py; RUNPATH $ORIGIN, stand-ins for the
#             ones never called), so nothing of this machine is needed there
#   source/   models/, bench/nets/, bench/kernels/, tests/fixtures/, tools/ (what the tests
#             and gpu_check.sh read; XTRAIN_SOURCE_DIR points the tests here)
#   data/fashion-mnist/  all 10,000 test images and the first
#             $XTRAIN_BUNDLE_TRAIN_IMAGES (20,000) training images, gzipped IDX
#   scripts/gpu_check.sh, BUNDLE.txt (what was built, from what, and the
#             newest glibc symbol version the bundle needs)
# and prints the tarball's size beside the tracked tree's: the device tool
# carries at most 64 MiB of both together.
#
# Environment: XTRAIN_BUNDLE_BUILD_DIR (build-gpu-bundle), XTRAIN_BUNDLE_CUDA_ARCH
# (90), XTRAIN_BUNDLE_TRAIN_IMAGES (20000), XTRAIN_JOBS (all cores).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${XTRAIN_BUNDLE_BUILD_DIR:-build-gpu-bundle}
TARBALL=${1:-$BUILD_DIR/xtrain-gpu-bundle.tar.xz}
CUDA_ARCH=${XTRAIN_BUNDLE_CUDA_ARCH:-90}
TRAIN_IMAGES=${XTRAIN_BUNDLE_TRAIN_IMAGES:-20000}
JOBS=${XTRAIN_JOBS:-$(nproc)}
FASHION_MNIST=/usr/share/datasets/fashion-mnist
LIMIT_BYTES=$((64 * 1024 * 1024))

say() { printf 'gpu_bundle: %s\n' "$*"; }
die() { printf 'gpu_bundle: error: %s\n' "$*" >&2; exit 1; }

# --- tools -------------------------------------------------------------------
if ! command -v patchelf >/dev/null; then
  say "installing patchelf (apt-get install patchelf)"
  if [ "$(id -u)" -eq 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q patchelf >/dev/null
  else
    sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -q patchelf >/dev/null
  fi
fi
for tool in cmake nvcc readelf objdump gcc python3 xz tar; do
  command -v "$tool" >/dev/null || die "$tool is missing (scripts/install_deps.sh installs the toolchain)"
done
[ -f "$FASHION_MNIST/train-images-idx3-ubyte.gz" ] ||
  die "Fashion-MNIST is missing ($FASHION_MNIST): apt-get install dataset-fashion-mnist"

# --- build -------------------------------------------------------------------
say "building into $BUILD_DIR (Release, CUDA sm_$CUDA_ARCH, $JOBS jobs; log: $BUILD_DIR/bundle-build.log)"
mkdir -p "$BUILD_DIR"
{
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DXTRAIN_USE_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH" && cmake --build "$BUILD_DIR" -j "$JOBS"
} >"$BUILD_DIR/bundle-build.log" 2>&1 ||
  { grep -m 20 -E 'error|Error' "$BUILD_DIR/bundle-build.log"; die "build failed (log: $BUILD_DIR/bundle-build.log)"; }

# --- stage -------------------------------------------------------------------
STAGE=$BUILD_DIR/bundle
rm -rf "$STAGE"
mkdir -p "$STAGE"/{bin,lib,scripts,source/bench,source/tests,data/fashion-mnist}

executables=()
for file in "$BUILD_DIR"/bin/*; do
  # comm_probe runs under mpirun, which the GPU machine does not have.
  [ -f "$file" ] && [ -x "$file" ] && [ "$(basename "$file")" != comm_probe ] && executables+=("$file")
done
[ -x "$BUILD_DIR/bin/xtrain_tests" ] || die "$BUILD_DIR/bin/xtrain_tests was not built"

say "collecting the libraries (scripts/gpu_bundle_libs.py)"
python3 scripts/gpu_bundle_libs.py "$STAGE/lib" "${executables[@]}" >"$BUILD_DIR/bundle-libs.txt" ||
  { cat "$BUILD_DIR/bundle-libs.txt"; die "the library closure is incomplete"; }
for file in "${executables[@]}"; do
  cp "$file" "$STAGE/bin/"
  # shellcheck disable=SC2016 # $ORIGIN is the loader's, not the shell's
  patchelf --set-rpath '$ORIGIN/../lib' "$STAGE/bin/$(basename "$file")"
done

cp -r models tools "$STAGE/source/"
cp -r bench/nets bench/kernels "$STAGE/source/bench/"
cp -r tests/fixtures "$STAGE/source/tests/"
cp scripts/gpu_check.sh "$STAGE/scripts/"

say "Fashion-MNIST: 10000 test images, the first $TRAIN_IMAGES training images"
cp "$FASHION_MNIST"/t10k-images-idx3-ubyte.gz "$FASHION_MNIST"/t10k-labels-idx1-ubyte.gz \
  "$STAGE/data/fashion-mnist/"
python3 - "$FASHION_MNIST" "$STAGE/data/fashion-mnist" "$TRAIN_IMAGES" <<'EOF'
# The first N records of the training split, as IDX files with N in their headers.
import gzip, struct, sys
source, target, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
for name, header in (("train-images-idx3-ubyte.gz", 16), ("train-labels-idx1-ubyte.gz", 8)):
    data = gzip.open(source + "/" + name).read()
    dims = struct.unpack(">%dI" % (header // 4), data[:header])
    assert count <= dims[1], "only %d records in %s" % (dims[1], name)
    record = 1
    for d in dims[2:]:
        record *= d
    sliced = struct.pack(">%dI" % (header // 4), dims[0], count, *dims[2:])
    sliced += data[header:header + count * record]
    with gzip.GzipFile(target + "/" + name, "wb", compresslevel=9, mtime=0) as out:
        out.write(sliced)
EOF

# --- what the bundle asks of the machine --------------------------------------
elf_files=("$STAGE"/bin/* "$STAGE"/lib/*)
glibc_max=$(objdump -T "${elf_files[@]}" 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
glibcxx_max=$(objdump -T "${elf_files[@]}" 2>/dev/null | grep -o 'GLIBCXX_[0-9.]*' | sort -uV | tail -1)
{
  echo "xtrain GPU bundle"
  echo "built:    $(date -u '+%Y-%m-%d %H:%M UTC') on $(sed -n 's/^PRETTY_NAME="\(.*\)"/\1/p' /etc/os-release)"
  echo "source:   $(git describe --always --dirty 2>/dev/null || echo unknown)" \
    "($(git status --porcelain 2>/dev/null | wc -l) uncommitted paths)"
  echo "cuda:     nvcc $(nvcc --version | grep -o 'release [0-9.]*' | cut -d' ' -f2), sm_$CUDA_ARCH"
  echo "needs:    glibc >= ${glibc_max#GLIBC_} (newest symbol version used), x86-64,"
  echo "          an NVIDIA driver for CUDA 13, and libcudart.so.13, libcublas.so.13,"
  echo "          libcudnn.so.9, libnccl.so.2 (system-wide, /usr/local/cuda or pip wheels)"
  echo "carries:  its own libstdc++ (newest ${glibcxx_max}), libgomp, libgcc_s"
  echo "data:     Fashion-MNIST test 10000, train $TRAIN_IMAGES (data/fashion-mnist)"
  echo
  echo "libraries (scripts/gpu_bundle_libs.py):"
  cat "$BUILD_DIR/bundle-libs.txt"
} >"$STAGE/BUNDLE.txt"

# --- pack ----------------------------------------------------------------------
say "packing $TARBALL (xz -9)"
mkdir -p "$(dirname "$TARBALL")"
tar --sort=name --owner=0 --group=0 --numeric-owner -C "$STAGE" -cf - . |
  xz -9 -T "$JOBS" >"$TARBALL.tmp"
mv "$TARBALL.tmp" "$TARBALL"

bundle_bytes=$(stat -c %s "$TARBALL")
tree_bytes=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
total=$((bundle_bytes + tree_bytes))
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
say "unpacked: $(mib "$(du -sb "$STAGE" | cut -f1)") ($(find "$STAGE/lib" -type f | wc -l) libraries, of which" \
  "$(grep -c '^stand-in' "$BUILD_DIR/bundle-libs.txt") stand-ins)"
say "tarball:  $TARBALL  $bundle_bytes bytes ($(mib "$bundle_bytes"))"
say "tree:     $tree_bytes bytes of tracked files ($(mib "$tree_bytes"))"
say "together: $(mib "$total") of the device tool's 64 MiB"
say "needs glibc >= ${glibc_max#GLIBC_} on the GPU machine"
[ "$total" -le "$LIMIT_BYTES" ] || die "tarball + tree exceed 64 MiB: lower XTRAIN_BUNDLE_TRAIN_IMAGES"
