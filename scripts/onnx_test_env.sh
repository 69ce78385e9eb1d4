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
# Releases checked to import and run with Debian 12's NumPy 1.24.2.
requirements=(onnx==1.16.2 onnxruntime==1.19.2)
env_name="ONNX"
ready_check="import onnx, onnxruntime, torch, pytest"
needs="python3-venv, python3-torch, python3-pytest and access to PyPI"
source "$(dirname "$0")/pypi_test_env.sh"
