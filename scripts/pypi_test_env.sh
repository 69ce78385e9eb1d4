# Sourced by the scripts that run a group of tests in a virtual environment
# of Debian's Python plus packages from PyPI (scripts/onnx_test_env.sh,
# scripts/tensorboard_test_env.sh); not run on its own. They set:
#   env_name      the group, for messages ("ONNX")
#   requirements  the PyPI packages, pinned (an array)
#   ready_check   Python that imports what the tests need
#   needs         the Debian packages and access it takes, for the message
# and pass VENV and the Python arguments. The environment is made once at
# VENV; the script then runs VENV's python with the arguments. When it cannot
# be made it exits 77, which CTest reports as skipped -- except in CI
# (CI=true), where that fails.
venv="$1"
shift
script_name="$(basename "$0" .sh)"

ready() { "$venv/bin/python" -c "$ready_check" >/dev/null 2>&1; }

if ! ready; then
  echo "$script_name: making $venv (${requirements[*]})" >&2
  if ! { /usr/bin/python3 -m venv --system-site-packages "$venv" &&
         "$venv/bin/pip" install --quiet --disable-pip-version-check "${requirements[@]}"; } >&2 ||
     ! ready; then
    message="$script_name: cannot make the $env_name test environment in $venv (it needs $needs)"
    if [ "${CI:-}" = "true" ]; then
      echo "$message" >&2
      exit 1
    fi
    echo "$message; skipping the $env_name tests" >&2
    exit 77
  fi
fi
exec "$venv/bin/python" "$@"
