#!/usr/bin/env bash
# Proves xtrain's wheel (scripts/build_wheel.sh) on a clean Python: a fresh
# virtual environment that sees none of the system's site-packages, the
# wheel installed into it with pip (NumPy and protobuf from PyPI), and every
# program run with an empty environment (env -i: no LD_LIBRARY_PATH, no
# PYTHONPATH) from an empty folder. Then:
#   1. pip install time, import time (printed)
#   2. the console scripts: convert_mnist_data makes Fashion-MNIST's LMDBs
#      (/usr/share/datasets/fashion-mnist), `xtrain --help` runs
#   3. LeNet from Python: SGDSolver on models/lenet, ITERATIONS (default 500)
#      iterations, then the test accuracy over the 10,000 test images
#      (printed; must pass 0.6)
#   4. the process's own memory map: every shared library it loaded is the
#      wheel's, the venv's (NumPy's), one of the system libraries a
#      manylinux wheel may assume (glibc, libstdc++, libgcc_s), or one the
#      interpreter's own modules need (libexpat, libffi, libz); a library of
#      our -dev packages (OpenCV, protobuf, OpenBLAS, ...) fails the check
#   5. the package's tests (tests/python, pycaffe's API) against the
#      installed package, with pytest from PyPI; and Caffe 1.0's own
#      python/caffe/test when XTRAIN_CAFFE_PYTHON_TESTS names a copy of it
#      (with its imports changed to xtrain, docs/python.md)
#
#   scripts/wheel_selftest.sh WHEEL [DIR]    (DIR default build-wheel/selftest)
#
# Exits 77 (CTest: skipped) when the venv cannot be made (no python3-venv,
# no PyPI), except in CI (CI=true), where that fails.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
WHEEL=$(readlink -f "$1")
DIR=${2:-build-wheel/selftest}
ITERATIONS=${XTRAIN_WHEEL_LENET_ITERATIONS:-500}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
rm -rf "$DIR/venv" "$DIR/work"
mkdir -p "$DIR/work"
say() { echo "wheel_selftest: $*" >&2; }

skip_or_fail() {
  if [ "${CI:-}" = "true" ]; then say "$1"; exit 1; fi
  say "$1; skipping"
  exit 77
}

/usr/bin/python3 -m venv "$DIR/venv" || skip_or_fail "cannot make a venv (python3-venv)"
PY=$DIR/venv/bin/python
start=$(date +%s%N)
"$PY" -m pip install --quiet --disable-pip-version-check "$WHEEL" ||
  skip_or_fail "pip install $WHEEL failed (no access to PyPI for NumPy and protobuf?)"
end=$(date +%s%N)
echo "pip install: $(( (end - start) / 1000000 )) ms (NumPy and protobuf from PyPI included)"
"$PY" -m pip install --quiet --disable-pip-version-check pytest ||
  skip_or_fail "cannot install pytest from PyPI"
# Caffe's own tests import six (for Python 2 and 3 alike); xtrain does not.
if [ -n "${XTRAIN_CAFFE_PYTHON_TESTS:-}" ]; then
  "$PY" -m pip install --quiet --disable-pip-version-check six ||
    skip_or_fail "cannot install six from PyPI (Caffe's tests import it)"
fi

# Everything below: an empty environment, in an empty folder.
clean() {
  (cd "$DIR/work" && env -i PATH="$DIR/venv/bin:/usr/bin:/bin" HOME="$DIR/work" \
    LD_LIBRARY_PATH= OMP_WAIT_POLICY=passive GLOG_minloglevel=1 "$@")
}

clean "$PY" -c '
import sys, time
start = time.perf_counter()
import xtrain
print("import xtrain: %.2f s (%s)" % (time.perf_counter() - start, xtrain.__file__))
assert "site-packages" in xtrain.__file__, xtrain.__file__
'

F=/usr/share/datasets/fashion-mnist
clean convert_mnist_data "$F/train-images-idx3-ubyte.gz" "$F/train-labels-idx1-ubyte.gz" \
  data/fashion_mnist/train_lmdb >/dev/null
clean convert_mnist_data "$F/t10k-images-idx3-ubyte.gz" "$F/t10k-labels-idx1-ubyte.gz" \
  data/fashion_mnist/test_lmdb >/dev/null
clean xtrain --help >/dev/null
mkdir -p "$DIR/work/models" "$DIR/work/snapshots"
cp -r "$REPO/models/lenet" "$DIR/work/models/"

clean "$PY" - "$ITERATIONS" <<'EOF'
import os, sys, time
import xtrain

iterations = int(sys.argv[1])
solver = xtrain.SGDSolver("models/lenet/lenet_solver.prototxt")
start = time.perf_counter()
solver.step(iterations, progress=False)
seconds = time.perf_counter() - start
net = solver.test_nets[0]
correct = 0.0
for _ in range(100):  # 100 batches of 100: the test set
    correct += float(net.forward()["accuracy"])
accuracy = correct / 100
print("LeNet from Python: %d iterations in %.1f s, test accuracy %.4f" %
      (iterations, seconds, accuracy))
assert accuracy > 0.6, accuracy

# Which shared libraries this process loaded, and from where.
allowed_system = ("ld-linux-x86-64.so", "libc.so", "libm.so", "libmvec.so", "libpthread.so",
                  "libdl.so", "librt.so", "libutil.so", "libresolv.so", "libnsl.so",
                  "libstdc++.so", "libgcc_s.so")
venv = os.path.dirname(os.path.dirname(sys.executable))
loaded, foreign = set(), []
with open("/proc/self/maps") as maps:
    for line in maps:
        path = line.split()[-1] if len(line.split()) >= 6 else ""
        if ".so" not in os.path.basename(path) or path in loaded:
            continue
        loaded.add(path)
        real = os.path.realpath(path)
        if real.startswith(os.path.realpath(venv) + "/") or path.startswith(venv + "/"):
            continue
        if os.path.basename(path).startswith(allowed_system):
            continue
        # The interpreter's own extension modules (Debian's python3.11).
        if "/python3" in path and "/lib-dynload/" in path:
            continue
        foreign.append(path)
# What the interpreter and its own modules (pyexpat, _ctypes, zlib) need is
# the interpreter's, not ours.
import re, subprocess
interpreter = [os.path.realpath(sys.executable)] + [p for p in loaded if "/lib-dynload/" in p]
theirs = set()
for path in interpreter:
    theirs.update(re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]",
                             subprocess.run(["readelf", "-d", path], capture_output=True,
                                            text=True).stdout))
foreign = [p for p in foreign
           if not any(os.path.basename(p).startswith(name) for name in theirs)]
bundled = [p for p in loaded if "xtrain.libs" in p]
print("shared libraries loaded: %d, %d of them from the wheel's xtrain.libs" %
      (len(loaded), len(bundled)))
if foreign:
    sys.exit("loaded from outside the wheel and the venv:\n  " + "\n  ".join(sorted(foreign)))
EOF

# The package's tests on the installed package (the source tree's tests,
# not its package: PYTHONPATH stays empty).
clean "$PY" -m pytest -q -p no:cacheprovider "$REPO/tests/python" 2>&1 | tail -3
if [ -n "${XTRAIN_CAFFE_PYTHON_TESTS:-}" ]; then
  clean "$PY" -m pytest -q -p no:cacheprovider "$XTRAIN_CAFFE_PYTHON_TESTS" 2>&1 | tail -3
fi
say "passed"
