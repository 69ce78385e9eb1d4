#!/usr/bin/env bash
# Installs the Debian packages xtrain needs to build, test and run its demo.
# Installs only what is missing; safe to run again.
#   scripts/install_deps.sh         everything (build, run, test)
#   scripts/install_deps.sh --run   what building and running need, without the
#                                   test-only packages (README command 1)
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config
  libprotobuf-dev protobuf-compiler
  liblmdb-dev lmdb-utils
  libgflags-dev
  libopenblas-dev
  libopenblas0-openmp
  libdnnl-dev
  python3
  libopencv-dev
  libhdf5-dev
  zlib1g-dev
  openmpi-bin libopenmpi-dev
  graphviz  # xtrain draw renders nets with its dot
  dataset-fashion-mnist
)
TEST_PACKAGES=(
  libgtest-dev libgmock-dev
  chromium  # tests render the training report headless (tests/tools/report_render_test.cpp)
  # scripts/fuzz.sh: libFuzzer and the sanitizers come with clang, OpenMP for
  # clang is libomp, and /usr/bin/time measures each target's CPU time.
  clang libclang-rt-14-dev libomp-14-dev time
)
case "${1:-}" in
  "") PACKAGES+=("${TEST_PACKAGES[@]}") ;;
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
