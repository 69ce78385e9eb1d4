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
# The CUDA wheel (xtrain-VERSION+cuNN-...) trains LeNet on the CPU as well,
# on a machine with no GPU too, and besides:
#   6. NVIDIA's libraries (CUDA runtime, cuBLAS, cuDNN, NCCL) are loaded from
#      outside the wheel, and the driver (libcuda.so.1) is not loaded at all
#   7. with no GPU, asking for one fails with a clear error and nothing worse:
#      set_mode_gpu() raises XtrainError, `xtrain train --gpu=0` exits 1
#   8. where a private mount namespace can be made (root, unshare), `import
#      xtrain` with NVIDIA's libraries hidden fails with the package's
#      message naming the missing library and the wheels to install
# Where NVIDIA's libraries come from (XTRAIN_WHEEL_CUDA_LIBS):
#   system (the default): the wheel is installed with --no-deps, its other
#          requirements from PyPI, and NVIDIA's libraries are the machine's
#          CUDA install (the loader's cache, or the folders in
#          XTRAIN_WHEEL_CUDA_LIBRARY_PATH, put in LD_LIBRARY_PATH): what CI
#          does, without downloading 1.3 GB of NVIDIA's wheels each run
#   pypi:  a plain `pip install WHEEL`, NVIDIA's wheels from PyPI (1.3 GB),
#          which must then be the ones loaded (the wheel's RPATHs into
#          site-packages/nvidia)
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
CUDA_LIBS=""  # empty: the CPU wheel
case "$(basename "$WHEEL")" in
  xtrain-*+cu[0-9]*) CUDA_LIBS=${XTRAIN_WHEEL_CUDA_LIBS:-system} ;;
esac
case "$CUDA_LIBS" in
  "" | system | pypi) ;;
  *) echo "wheel_selftest: XTRAIN_WHEEL_CUDA_LIBS is system or pypi, not '$CUDA_LIBS'" >&2; exit 2 ;;
esac
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
PIP=("$PY" -m pip install --quiet --disable-pip-version-check)
start=$(date +%s%N)
if [ "$CUDA_LIBS" = system ]; then
  # The wheel's requirements but NVIDIA's (the machine's CUDA install has
  # them), then the wheel alone.
  mapfile -t requirements < <("$PY" - "$WHEEL" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    name = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    for line in wheel.read(name).decode().splitlines():
        if line.startswith("Requires-Dist: ") and not line[15:].startswith("nvidia-"):
            print(line[15:])
EOF
  )
  "${PIP[@]}" "${requirements[@]}" ||
    skip_or_fail "pip install ${requirements[*]} failed (no access to PyPI?)"
  "${PIP[@]}" --no-deps "$WHEEL" || skip_or_fail "pip install --no-deps $WHEEL failed"
  what="NumPy, protobuf and Pillow from PyPI included; NVIDIA's libraries from the system"
else
  "${PIP[@]}" "$WHEEL" ||
    skip_or_fail "pip install $WHEEL failed (no access to PyPI for NumPy and protobuf?)"
  what="NumPy, protobuf and Pillow from PyPI included"
  [ "$CUDA_LIBS" = pypi ] && what="$what, and NVIDIA's CUDA wheels"
fi
end=$(date +%s%N)
echo "pip install: $(( (end - start) / 1000000 )) ms ($what)"
# The machine's CUDA install, where the loader's cache does not know it.
LIBRARY_PATH=""
[ "$CUDA_LIBS" = system ] && LIBRARY_PATH=${XTRAIN_WHEEL_CUDA_LIBRARY_PATH:-}
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
    LD_LIBRARY_PATH="$LIBRARY_PATH" OMP_WAIT_POLICY=passive GLOG_minloglevel=1 "$@")
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

clean "$PY" - "$ITERATIONS" "$CUDA_LIBS" <<'EOF'
import os, re, sys, time
import xtrain

iterations = int(sys.argv[1])
cuda_libs = sys.argv[2]  # "", "system" or "pypi"
assert xtrain.cuda_compiled_in() == bool(cuda_libs), xtrain.cuda_compiled_in()
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
# NVIDIA's libraries: the CUDA wheel's requirements, never in its xtrain.libs.
nvidia = re.compile(r"^lib(cudart|cublas|cublasLt|cudnn[a-z_]*|nccl)\.so")
loaded, foreign, from_nvidia = set(), [], []
with open("/proc/self/maps") as maps:
    for line in maps:
        path = line.split()[-1] if len(line.split()) >= 6 else ""
        if ".so" not in os.path.basename(path) or path in loaded:
            continue
        loaded.add(path)
        if os.path.basename(path).startswith("libcuda.so"):
            sys.exit("the driver %s was loaded with no GPU asked for" % path)
        if nvidia.match(os.path.basename(path)):
            from_nvidia.append(path)
            if not cuda_libs or "xtrain.libs" in path:
                sys.exit("NVIDIA's %s was loaded from %s" % (os.path.basename(path), path))
            if cuda_libs == "pypi" and not path.startswith(venv + "/"):
                sys.exit("%s is not NVIDIA's wheel's in the venv" % path)
            continue
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
import re, shutil, subprocess
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
if cuda_libs:
    print("NVIDIA's, from outside the wheel: " +
          ", ".join(sorted(os.path.basename(p) for p in from_nvidia)) +
          " (in %s)" % " ".join(sorted({os.path.dirname(p) for p in from_nvidia})))
    # Every folder the loader could take them from (for step 8): where they
    # were loaded from, its cache, LD_LIBRARY_PATH.
    folders = {os.path.dirname(os.path.realpath(p)) for p in from_nvidia}
    sonames = {os.path.basename(p) for p in from_nvidia}
    ldconfig = shutil.which("ldconfig", path="/usr/sbin:/sbin:/usr/bin:/bin")
    if ldconfig:
        for line in subprocess.run([ldconfig, "-p"], capture_output=True,
                                   text=True).stdout.splitlines():
            name, _, path = line.strip().partition(" => ")
            if name.split(" ")[0] in sonames:
                folders.add(os.path.dirname(os.path.realpath(path)))
    for folder in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
        if folder and any(os.path.exists(os.path.join(folder, s)) for s in sonames):
            folders.add(os.path.realpath(folder))
    with open("nvidia_dirs.txt", "w") as out:
        out.write("\n".join(sorted(folders)) + "\n")
if foreign:
    sys.exit("loaded from outside the wheel and the venv:\n  " + "\n  ".join(sorted(foreign)))
EOF

if [ -n "$CUDA_LIBS" ]; then
  if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
    # A GPU: the CUDA wheel trains on it.
    clean "$PY" - <<'EOF'
import math
import xtrain
xtrain.set_mode_gpu()
solver = xtrain.SGDSolver("models/lenet/lenet_solver.prototxt")
solver.step(100, progress=False)
loss = float(solver.net.blobs["loss"].data)
print("LeNet on the GPU from Python: 100 iterations, loss %.4f" % loss)
assert math.isfinite(loss) and loss < 2.3, loss
EOF
  else
    # No GPU: asking for one is a clear error, from Python and from the tools.
    clean "$PY" - <<'EOF'
import xtrain
try:
    xtrain.set_mode_gpu()
except xtrain.XtrainError as error:
    assert "no usable GPU" in str(error), error
    print("set_mode_gpu() with no GPU: XtrainError: %s" % error)
else:
    raise SystemExit("set_mode_gpu() succeeded with no GPU")
EOF
    status=0
    clean xtrain train --solver=models/lenet/lenet_solver.prototxt --gpu=0 >"$DIR/work/train_gpu.txt" 2>&1 ||
      status=$?
    if [ "$status" != 1 ] || ! grep -q "no usable GPU" "$DIR/work/train_gpu.txt"; then
      cat "$DIR/work/train_gpu.txt" >&2
      say "xtrain train --gpu=0 with no GPU: exit status $status, not 1 with 'no usable GPU'"
      exit 1
    fi
    echo "xtrain train --gpu=0 with no GPU: exit 1, $(grep -m1 -o "error: .*" "$DIR/work/train_gpu.txt")"
  fi
  # NVIDIA's libraries hidden (an empty tmpfs over each folder the loader
  # could take them from, in a mount namespace of this command's own): the
  # import fails with our message, not the loader's alone. A folder that
  # also holds glibc (NVIDIA's libraries in /usr/lib/...) cannot be hidden.
  mounts=""
  while read -r folder; do
    [ -z "$folder" ] && continue
    if [ -e "$folder/libc.so.6" ]; then mounts=""; break; fi
    mounts+="mount -t tmpfs none '$folder' && "
  done <"$DIR/work/nvidia_dirs.txt"
  if [ -n "$mounts" ] && unshare -m true 2>/dev/null; then
    status=0
    (cd "$DIR/work" && env -i PATH="$DIR/venv/bin:/usr/bin:/bin" HOME="$DIR/work" \
      LD_LIBRARY_PATH="$LIBRARY_PATH" unshare -m sh -c "${mounts}exec '$PY' -c 'import xtrain'") \
      >"$DIR/work/hidden.txt" 2>&1 || status=$?
    if [ "$status" = 0 ] || ! grep -q "xtrain: lib[a-zA-Z_]*\.so[.0-9]* was not found" "$DIR/work/hidden.txt" ||
       ! grep -q "pip install 'nvidia-" "$DIR/work/hidden.txt"; then
      cat "$DIR/work/hidden.txt" >&2
      say "import xtrain with NVIDIA's libraries hidden: exit status $status, without the package's message"
      exit 1
    fi
    echo "import xtrain with NVIDIA's libraries hidden: $(grep -o 'ImportError: xtrain: .* was not found' "$DIR/work/hidden.txt")"
  else
    echo "import xtrain with NVIDIA's libraries hidden: not checked (no private mount namespace" \
      "here, or they are in glibc's folder: $(tr '\n' ' ' <"$DIR/work/nvidia_dirs.txt"))"
  fi
fi

# The package's tests on the installed package (the source tree's tests,
# not its package: PYTHONPATH stays empty).
clean "$PY" -m pytest -q -p no:cacheprovider "$REPO/tests/python" 2>&1 | tail -3
if [ -n "${XTRAIN_CAFFE_PYTHON_TESTS:-}" ]; then
  clean "$PY" -m pytest -q -p no:cacheprovider "$XTRAIN_CAFFE_PYTHON_TESTS" 2>&1 | tail -3
fi
say "passed"
