#!/usr/bin/env bash
# Tests the GPU bundle (scripts/gpu_bundle.sh) here, on the CPU, as the bare
# GPU machine will see it: unpacked into a root that holds only the bundle,
# glibc, /bin/sh, cat, env and the CUDA libraries (which that machine provides), with
# none of this machine's other libraries in sight. A library the bundle forgot
# makes a program fail to start here, as it would there.
#
#   scripts/gpu_bundle_selftest.sh [TARBALL]   (default build-gpu-bundle/xtrain-gpu-bundle.tar.xz)
#
# Needs root (chroot, and a private mount namespace from unshare -m for the
# CUDA, /proc and /dev bind mounts; nothing is mounted outside it). Runs:
#   1. every bundled executable starts (LD_BIND_NOW=1: every symbol resolves)
#   2. xtrain device_query: the one-line "no usable GPU" error, exit code 1
#   3. every CPU test of xtrain_tests (XTRAIN_SELFTEST_FILTER): oneDNN and
#      OpenBLAS layers, image codecs (OpenCV), LMDB, HDF5, the tools, LeNet
#      end to end on the bundled Fashion-MNIST slice; those that need what
#      the root lacks (mpirun, Graphviz, Chromium) skip; a few are left out
#      (CPU_TESTS below says which and why)
#   4. XTRAIN_REQUIRE_GPU=1 on a few GPU tests: they must fail, one line each
#   5. convert_mnist_data + xtrain train: LeNet, 200 iterations on the CPU
# The root and the logs stay in $XTRAIN_SELFTEST_DIR (default
# build-gpu-bundle/selftest); the exit status is 0 when every check passed.
set -euo pipefail
cd "$(dirname "$0")/.."

TARBALL=${1:-build-gpu-bundle/xtrain-gpu-bundle.tar.xz}
DIR=${XTRAIN_SELFTEST_DIR:-build-gpu-bundle/selftest}
CUDA_LIB=${XTRAIN_SELFTEST_CUDA_LIB:-/usr/local/cuda/lib}
# Left out: the GPU tests; GpuBinding* and MpiCommunicator.*, which run a
# stand-in CUDA runtime and comm_probe from the build tree (not bundled); two
# that run programs the root lacks (python3 for the model generators, protoc).
CPU_TESTS=${XTRAIN_SELFTEST_FILTER:-'-GPU/*:GpuBinding*:MpiCommunicator.*:ModelZoo/ZooModel.GeneratedFilesMatchTheirGenerator/*:CaffeSnapshot.XtrainsFilesParseWithCaffesSchema'}

[ "$(id -u)" -eq 0 ] || { echo "gpu_bundle_selftest: needs root (chroot, unshare -m)" >&2; exit 1; }
[ -f "$TARBALL" ] || { echo "gpu_bundle_selftest: no $TARBALL: run scripts/gpu_bundle.sh first" >&2; exit 1; }

DIR=$(mkdir -p "$DIR" && cd "$DIR" && pwd)
ROOT=$DIR/root
rm -rf "$ROOT" "$DIR"/*.log
mkdir -p "$ROOT"/{xb,bin,lib64,lib/x86_64-linux-gnu,usr/local/cuda/lib64,proc,dev,tmp,work}
chmod 1777 "$ROOT/tmp"
tar -xJf "$TARBALL" -C "$ROOT/xb"

# glibc, from this machine (the GPU machine has its own); dash as /bin/sh (the
# tests run the tools through popen), cat and env (some tests' commands use them).
for lib in ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libmvec.so.1 libpthread.so.0 libdl.so.2 \
  librt.so.1 libresolv.so.2 libutil.so.1; do
  cp -L "/lib/x86_64-linux-gnu/$lib" "$ROOT/lib/x86_64-linux-gnu/"
done
cp -L /lib64/ld-linux-x86-64.so.2 "$ROOT/lib64/"
cp -L /bin/dash "$ROOT/bin/sh"
cp -L /usr/bin/cat /usr/bin/env "$ROOT/bin/"

# Everything below runs in a private mount namespace: the CUDA libraries, /proc
# and /dev are bound into the root there, and vanish with it.
cat >"$DIR/inside.sh" <<'EOF'
set -u
ROOT=$1 CUDA_LIB=$2 CPU_TESTS=$3 DIR=$4
mount --bind -o ro "$CUDA_LIB" "$ROOT/usr/local/cuda/lib64"
mount -t proc proc "$ROOT/proc" 2>/dev/null || mount --rbind /proc "$ROOT/proc"
mount --rbind /dev "$ROOT/dev"
# In the root: only the bundle's folder on RUNPATH, the CUDA folder on
# LD_LIBRARY_PATH (gpu_check.sh's doing there), and the loader's default
# folders, which hold nothing but glibc.
in_root() {
  env -i PATH=/xb/bin:/bin HOME=/work TMPDIR=/tmp LD_LIBRARY_PATH=/usr/local/cuda/lib64 \
    OMP_WAIT_POLICY=passive /usr/sbin/chroot "$ROOT" /bin/sh -c "cd /work && $*"
}
failures=0
check() {  # check NAME EXPECTED_STATUS COMMAND
  local name=$1 expected=$2 status
  shift 2
  in_root "$*" >"$DIR/$name.log" 2>&1
  status=$?
  if [ "$status" = "$expected" ]; then
    printf 'PASS  %-16s (exit %s; log %s)\n' "$name" "$status" "$DIR/$name.log"
  else
    printf 'FAIL  %-16s (exit %s, expected %s; log %s)\n' "$name" "$status" "$expected" "$DIR/$name.log"
    tail -5 "$DIR/$name.log" | sed 's/^/      /'
    failures=$((failures + 1))
  fi
}

echo "root: $(cd "$ROOT" && find . -path ./xb -prune -o -path ./proc -prune -o -path ./dev -prune \
  -o -type f -print | sort | tr '\n' ' ')+ /usr/local/cuda/lib64 (bound: $CUDA_LIB)"

# What the loader loads for each program, and from where, with every symbol
# bound (ldd -r's way: the program itself does not run).
for exe in "$ROOT"/xb/bin/*; do
  name=$(basename "$exe")
  check "load-$name" 0 "LD_TRACE_LOADED_OBJECTS=1 LD_WARN=yes LD_BIND_NOW=yes /xb/bin/$name"
  if grep -E -q 'not found|undefined symbol' "$DIR/load-$name.log" ||
    grep -E '=> /' "$DIR/load-$name.log" | grep -E -v '=> /(xb/bin/../lib|lib/x86_64-linux-gnu|usr/local/cuda/lib64)/' | grep -q .; then
    echo "FAIL  load-$name: a library is missing or comes from elsewhere:"
    grep -E 'not found|undefined symbol' "$DIR/load-$name.log" | head -5 | sed 's/^/      /'
    failures=$((failures + 1))
  fi
done
sed -n 's/^[[:space:]]*\(lib[^ ]*\) => \(.*\) (0x.*/      \1 => \2/p' "$DIR/load-xtrain.log" |
  grep -v '/xb/bin/../lib/' | sed 's/^/      (not bundled) /' 
check device_query 1 "/xb/bin/xtrain device_query"
grep -q "no usable GPU" "$DIR/device_query.log" || { echo "FAIL  device_query said: $(cat "$DIR/device_query.log")"; failures=$((failures + 1)); }

check cpu-tests 0 "XTRAIN_SOURCE_DIR=/xb/source XTRAIN_TOOLS_DIR=/xb/bin \
  XTRAIN_FASHION_MNIST_DIR=/xb/data/fashion-mnist /xb/bin/xtrain_tests --gtest_filter='$CPU_TESTS'"
grep -E '^\[==========\] .* ran|^\[  (PASSED|FAILED|SKIPPED) *\] [0-9]+ test|^\[  FAILED  \] [A-Z]' "$DIR/cpu-tests.log" |
  sed 's/^/      /'
grep -E -q '^\[  PASSED  \] [0-9]+ test' "$DIR/cpu-tests.log" || failures=$((failures + 1))

check require-gpu 1 "XTRAIN_REQUIRE_GPU=1 XTRAIN_SOURCE_DIR=/xb/source /xb/bin/xtrain_tests --gtest_filter='GPU/PowerLayer*:GPU/NcclCommunicator.*:GPU/LenetFashionMnist*'"
grep -m3 "XTRAIN_REQUIRE_GPU=1 but no GPU" "$DIR/require-gpu.log" | sed 's/^/      /'
grep -q "XTRAIN_REQUIRE_GPU=1 but no GPU" "$DIR/require-gpu.log" || failures=$((failures + 1))

mkdir -p "$ROOT/work/data/fashion_mnist" "$ROOT/work/snapshots"
ln -s /xb/source/models "$ROOT/work/models"
check lenet-lmdb 0 "convert_mnist_data /xb/data/fashion-mnist/train-images-idx3-ubyte.gz \
  /xb/data/fashion-mnist/train-labels-idx1-ubyte.gz data/fashion_mnist/train_lmdb && \
  convert_mnist_data /xb/data/fashion-mnist/t10k-images-idx3-ubyte.gz \
  /xb/data/fashion-mnist/t10k-labels-idx1-ubyte.gz data/fashion_mnist/test_lmdb"
check lenet-train 0 "xtrain train --solver=models/lenet/lenet_solver.prototxt --max_iter=200"
grep -o 'accuracy = [0-9.]*' "$DIR/lenet-train.log" | tail -1 | sed 's/^/      LeNet, 200 iterations on the CPU: test /'
exit $((failures > 0))
EOF

status=0
unshare -m --propagation private bash "$DIR/inside.sh" "$ROOT" "$CUDA_LIB" "$CPU_TESTS" "$DIR" || status=$?
echo "gpu_bundle_selftest: $([ $status -eq 0 ] && echo PASS || echo FAIL) (logs in $DIR)"
exit $status
