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
venv="$1"
shift
# The last release that keeps Debian 12's protobuf (4.21) and NumPy (1.24):
# later ones pull a protobuf that the build's xtrain_pb2 (protoc 3.21) does
# not import with.
requirements=(tensorboard==2.14.1)

ready() {
  "$venv/bin/python" -c "from tensorboard.backend.event_processing import event_accumulator; import pytest" \
    >/dev/null 2>&1
}

if ! ready; then
  echo "tensorboard_test_env: making $venv (${requirements[*]})" >&2
  if ! { /usr/bin/python3 -m venv --system-site-packages "$venv" &&
         "$venv/bin/pip" install --quiet --disable-pip-version-check "${requirements[@]}"; } >&2 ||
     ! ready; then
    message="tensorboard_test_env: cannot make the TensorBoard test environment in $venv (it needs python3-venv, python3-pytest and access to PyPI)"
    if [ "${CI:-}" = "true" ]; then
      echo "$message" >&2
      exit 1
    fi
    echo "$message; skipping the TensorBoard tests" >&2
    exit 77
  fi
fi
exec "$venv/bin/python" "$@"
