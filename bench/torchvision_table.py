"""The torchvision table of docs/onnx.md: each model exported by
torch.onnx.export at each opset (random weights and batch-norm statistics,
eval mode, batch 1, 224x224; Inception V3 299x299), imported with
`xtrain import --onnx` and run by the Python package; the largest
difference from PyTorch's output relative to its largest magnitude, or the
import's one-line refusal.

  scripts/onnx_test_env.sh build/onnx-venv bench/torchvision_table.py \\
      [--opsets 11,13,17] [--workdir DIR] MODEL...

with PYTHONPATH=build/python and XTRAIN_TOOLS_DIR=build/bin; prints one
Markdown row per model as it goes (files are deleted after each)."""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "onnx"))
# onnx_harness (onnx) before torchvision_models (torch): see pytorch_models.py.
import onnx_harness  # noqa: E402
import torchvision_models  # noqa: E402


def refusal(error):
    """The xtrain import's error line (its last line)."""
    lines = [line for line in str(error).splitlines() if line.strip()]
    return lines[-1].replace("xtrain import: error: ", "") if lines else repr(error)


def one(name, opset, workdir):
    onnx_path = os.path.join(workdir, f"{name}_{opset}.onnx")
    size = 299 if name.startswith("inception") else 224
    try:
        reference = torchvision_models.export(name, onnx_path, opset=opset, size=size)
    except Exception as error:  # noqa: BLE001  (the exporter's own refusal)
        return f"export fails: {str(error).splitlines()[0][:120]}"
    try:
        _, worst, prototxt, weights = onnx_harness.import_and_compare(onnx_path, reference,
                                                                      workdir, f"{name}_{opset}")
        for path in (prototxt, weights):
            os.remove(path)
        return f"{worst:.1e}"
    except RuntimeError as error:
        return "refused: " + refusal(error)
    finally:
        if os.path.exists(onnx_path):
            os.remove(onnx_path)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--opsets", default="11,13,17")
    parser.add_argument("--workdir", default=None)
    parser.add_argument("models", nargs="+")
    args = parser.parse_args()
    opsets = [int(opset) for opset in args.opsets.split(",")]
    workdir = args.workdir or tempfile.mkdtemp(prefix="torchvision_table_")
    os.makedirs(workdir, exist_ok=True)
    print("| model | " + " | ".join(f"opset {opset}" for opset in opsets) + " |")
    print("| --- |" + " ---: |" * len(opsets))
    for name in args.models:
        cells = [one(name, opset, workdir) for opset in opsets]
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
