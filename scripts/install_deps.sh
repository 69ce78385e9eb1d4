#!/usr/bin/env bash
# Installs the Debian packages xtrain needs to build, test and run its demo.
# Installs only what is missing; safe to run again.
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
  libgtest-dev libgmock-dev
  graphviz  # xtrain draw renders nets with its dot
  dataset-fashion-mnist
  chromium  # tests render the training report headless (tests/tools/report_render_test.cpp)
)

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
