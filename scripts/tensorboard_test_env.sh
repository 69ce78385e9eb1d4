#!/usr/bin/env bash
# The Python of the TensorBoard tests (tests/tensorboard): Debian's Python with
# its NumPy, protobuf and pytest, plus TensorBoard from PyPI (its event file
# reader, tensorboard.backend.event_processing), in a virtual environment made
# once at VENV (CTest: <build>/tensorboard-venv).
#
#   scripts/tensorboard_test_env.sh VENV [PYTHON ARGUMENTS...]
#
# runs VENV's python with the arguments. When the environment cannot be made
# (no python3-venv, no access to PyPI) it exits 77, which CTest reports as
# skipped -- except in CI (CI=true), where that fails.
set -euo pipefail
# The last release that keeps Debian 12's protobuf (4.21) and NumPy (1.24):
# later ones pull a protobuf that the build's xtrain_pb2 (protoc 3.21) does
# not import with.
requirements=(tensorboard==2.14.1)
env_name="TensorBoard"
ready_check="from tensorboard.backend.event_processing import event_accumulator; import pytest"
needs="python3-venv, python3-pytest and access to PyPI"
source "$(dirname "$0")/pypi_test_env.sh"
