#!/usr/bin/env bash
# Installs the Debian packages xtrain needs to build, test and run its demo.
# Installs only what is missing; safe to run again.
#   scripts/install_deps.sh         everything (build, run, test)
#   scripts/install_deps.sh --run   what building and running README command 1
#                                   need: no test-only packages, no MPI or
#                                   Gloo, no Graphviz, three OpenCV modules
set -euo pipefail

# What building xtrain and running README command 1 need (--run)...
PACKAGES=(
  build-essential cmake pkg-config
  libprotobuf-dev protobuf-compiler
  liblmdb-dev
  libgflags-dev
  libopenblas-dev
  libopenblas0-openmp
  libdnnl-dev
  # The three OpenCV modules xtrain uses, which CMakeLists.txt finds without
  # OpenCV's CMake package: that one is in libopencv-dev, which pulls in
  # every module's -dev package (~250 packages, ~190 MB: GDAL, VTK, FFmpeg,
  # GTK, ...), half of what README command 1 would install.
  libopencv-core-dev libopencv-imgproc-dev libopencv-imgcodecs-dev
  libhdf5-dev
  zlib1g-dev
  # JSON: the metrics file (libxtrain_reporting) and COCO annotations;
  # XML: Pascal VOC annotations (convert_annoset).
  nlohmann-json3-dev libtinyxml2-dev
  dataset-fashion-mnist
)
# ...and, without --run, the rest: what the tests need, and the optional
# parts the build and the tools use when they are there.
FULL_PACKAGES=(
  libopencv-dev  # OpenCV's CMake package (the build prefers it)
  openmpi-bin libopenmpi-dev  # several processes (mpirun; the build finds MPI)
  libgloo-dev  # several processes without MPI (--rendezvous; the build finds Gloo)
  graphviz  # xtrain draw renders nets with its dot
  lmdb-utils  # mdb_stat, mdb_dump
  python3  # tests (bench/caffe_memory_test.py)
  # The Python package (python/, pycaffe's API) and its pytest tests.
  python3-dev python3-numpy pybind11-dev python3-pytest
  python3-protobuf  # xtrain.proto (caffe_pb2), net_spec, io, draw
  python3-pil  # xtrain.io.load_image / resize_image (lighter than python3-skimage)
  # tests/onnx: PyTorch models to import (torchvision's classifiers too);
  # onnx and onnxruntime come from PyPI into a virtual environment the test
  # makes (scripts/onnx_test_env.sh).
  python3-torch python3-torchvision python3-venv
  libgtest-dev libgmock-dev
  chromium  # tests render the training report headless (tests/tools/report_render_test.cpp)
  # scripts/fuzz.sh: libFuzzer and the sanitizers come with clang, OpenMP for
  # clang is libomp, and /usr/bin/time measures each target's CPU time.
  clang libclang-rt-14-dev libomp-14-dev time
)
case "${1:-}" in
  "") PACKAGES+=("${FULL_PACKAGES[@]}") ;;
  --run) ;;
  *) echo "install_deps: unknown argument '$1' (use --run, or nothing for everything)" >&2; exit 1 ;;
esac

missing=()
for package in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then SUDO="sudo"; else
    echo "install_deps: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi
echo "install_deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
