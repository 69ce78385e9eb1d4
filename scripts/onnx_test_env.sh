#!/usr/bin/env bash
# The Python of the ONNX tests (tests/onnx): Debian's Python with its NumPy,
# PyTorch (python3-torch) and pytest, plus onnx and onnxruntime from PyPI, in
# a virtual environment made once at VENV (CTest: <build>/onnx-venv).
#
#   scripts/onnx_test_env.sh VENV [PYTHON ARGUMENTS...]
#
# runs VENV's python with the arguments. When the environment cannot be made
# (no python3-venv, no python3-torch, no access to PyPI) it exits 77, which
# CTest reports as skipped -- except in CI (CI=true), where that fails.
set -euo pipefail
venv="$1"
shift
# Releases checked to import and run with Debian 12's NumPy 1.24.2.
requirements=(onnx==1.16.2 onnxruntime==1.19.2)

ready() { "$venv/bin/python" -c "import onnx, onnxruntime, torch, pytest" >/dev/null 2>&1; }

if ! ready; then
  echo "onnx_test_env: making $venv (${requirements[*]})" >&2
  if ! { /usr/bin/python3 -m venv --system-site-packages "$venv" &&
         "$venv/bin/pip" install --quiet --disable-pip-version-check "${requirements[@]}"; } >&2 ||
     ! ready; then
    message="onnx_test_env: cannot make the ONNX test environment in $venv (it needs python3-venv, python3-torch, python3-pytest and access to PyPI)"
    if [ "${CI:-}" = "true" ]; then
      echo "$message" >&2
      exit 1
    fi
    echo "$message; skipping the ONNX tests" >&2
    exit 77
  fi
fi
exec "$venv/bin/python" "$@"
