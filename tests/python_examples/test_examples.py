"""The scripts of examples/python, run as a user runs them (from the
repository root, with the build tree's package on PYTHONPATH) but briefly,
writing into XTRAIN_EXAMPLES_DIR. CTest runs each test on its own
(PythonExample.*); train_lenet's weights are the other two's input."""
import os
import re
import subprocess
import sys

import pytest

REPOSITORY = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.environ.get("XTRAIN_EXAMPLES_DIR", os.path.join(REPOSITORY, "build", "python_examples"))
ITERATIONS = 300
WEIGHTS = os.path.join(OUT, "lenet_python_iter_%d.caffemodel" % ITERATIONS)


def run_example(name, *args):
    """Runs examples/python/<name> with `args`; returns its stdout (the
    test fails, showing both streams, if it exits with an error)."""
    result = subprocess.run([sys.executable, os.path.join("examples", "python", name)] + list(args),
                            cwd=REPOSITORY, capture_output=True, text=True, timeout=600)
    print(result.stdout)
    assert result.returncode == 0, result.stderr[-4000:]
    return result.stdout


def test_train_lenet():
    out = run_example("train_lenet.py", "--iterations", str(ITERATIONS), "--test-batches", "20",
                      "--data-dir", os.path.join(OUT, "fashion_mnist"), "--output-dir", OUT,
                      "--report-every", "100")
    # The callback saw every iteration (its reports), and training learnt:
    # chance is 0.1; 300 iterations reach about 0.8.
    assert re.search(r"^iteration +200 +loss", out, re.M)
    accuracy = float(re.search(r"test accuracy: ([0-9.]+)", out).group(1))
    assert accuracy > 0.65
    plot = re.search(r"loss plot: (\S+)", out).group(1)
    with open(plot, "rb") as f:
        assert b"<svg" in f.read(1000)  # ours, or matplotlib's after its XML header
    assert os.path.getsize(plot) > 1000  # a curve of 300 points, not an empty frame
    assert os.path.exists(WEIGHTS)


def weights_of_train_lenet():
    if not os.path.exists(WEIGHTS):
        pytest.skip("%s is missing: run test_train_lenet first (CTest's fixture does)" % WEIGHTS)
    return WEIGHTS


def test_classify_test_images():
    out = run_example("classify.py", "--weights", weights_of_train_lenet(), "--count", "100")
    right, count = (int(n) for n in re.search(r"(\d+) of (\d+) right", out).groups())
    assert count == 100 and right >= 60
    # Each line: the true label's name, then the top 3 with probabilities.
    assert re.search(r"^test\[0\] +Ankle boot +\S.* \d\.\d{3} \|", out, re.M)


def test_classify_png_files(tmp_path):
    np = pytest.importorskip("numpy")
    Image = pytest.importorskip("PIL.Image")
    # Test image 1 (a pullover) and 2 (trousers) as PNG files, one at twice
    # the size, as a user might give them.
    sys.path.insert(0, os.path.join(REPOSITORY, "examples", "python"))
    import classify
    images, labels = classify.test_images(1, 2)
    paths = []
    for index, image in enumerate(images):
        path = tmp_path / ("image%d.png" % index)
        picture = Image.fromarray((image[:, :, 0] * 255).astype(np.uint8))
        picture.resize((28 * (index + 1),) * 2).save(path)
        paths.append(str(path))
    out = run_example("classify.py", "--weights", weights_of_train_lenet(), *paths)
    assert list(labels) == [2, 1]
    assert re.search(r"image0\.png +Pullover ", out)
    assert re.search(r"image1\.png +Trouser ", out)


def test_net_surgery():
    out = run_example("net_surgery.py", "--weights", weights_of_train_lenet(),
                      "--output-dir", os.path.join(OUT, "surgery"))
    differences = [float(d) for d in re.findall(r"largest \|difference\|[^:]*: ([0-9.e+-]+)", out)]
    assert len(differences) == 2 and max(differences) < 1e-5
    assert "the outputs agree" in out
    assert os.path.exists(os.path.join(OUT, "surgery", "lenet_fully_conv.caffemodel"))
