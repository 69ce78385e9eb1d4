"""The tables of docs/onnx.md: each zoo net exported at batch 1 (export
wall and CPU time, file size, onnx.checker's verdict, the largest
difference between ONNX Runtime's outputs and xtrain's relative to the
output's largest magnitude), and the PyTorch models of bench/pytorch
exported by torch.onnx and imported (import time, the largest difference
between xtrain's outputs and PyTorch's).

  scripts/onnx_test_env.sh build/onnx-venv bench/onnx_table.py [WORKDIR]

with PYTHONPATH=build/python and XTRAIN_TOOLS_DIR=build/bin (as CTest's
OnnxRuntimeAndPyTorch sets them); prints Markdown."""
import os
import platform
import resource
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "onnx"))
# onnx_harness (onnx) before pytorch_models (torch): see pytorch_models.py.
import onnx_harness  # noqa: E402
import pytorch_models  # noqa: E402


def children_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu_name():
    for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def main():
    workdir = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="onnx_table_")
    os.makedirs(workdir, exist_ok=True)
    log = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    print(f"CPU: {cpu_name()}, {os.cpu_count()} CPUs; OMP_NUM_THREADS="
          f"{os.environ.get('OMP_NUM_THREADS', '(unset)')}\n")
    print("| net | export wall s | export CPU s | ONNX file | onnx.checker | "
          "largest relative difference, ONNX Runtime vs xtrain |")
    print("| --- | ---: | ---: | ---: | --- | ---: |")
    for name in onnx_harness.ZOO:
        before = children_cpu_seconds()
        _, seconds, size, verdict, worst = onnx_harness.compare_export(name, workdir, log)
        # The CPU time of the export alone: compare_export runs only it as a child.
        cpu = children_cpu_seconds() - before
        print(f"| {name} | {seconds:.2f} | {cpu:.2f} | {size / 2**20:.1f} MiB | {verdict} | "
              f"{worst:.1e} |", flush=True)
    print("\n| PyTorch model | ONNX file | import wall s | import CPU s | onnx.checker | "
          "largest relative difference, xtrain vs PyTorch |")
    print("| --- | ---: | ---: | ---: | --- | ---: |")
    for name in sorted(pytorch_models.MODELS):
        onnx_path = os.path.join(workdir, f"{name}_torch.onnx")
        reference = pytorch_models.export(name, onnx_path)
        verdict = onnx_harness.check_model(onnx_path)
        before = children_cpu_seconds()
        seconds, worst, _, _ = onnx_harness.import_and_compare(onnx_path, reference, workdir, name)
        cpu = children_cpu_seconds() - before
        log(f"{name}: import {seconds:.2f} s, difference {worst:.2e}")
        print(f"| {name} | {os.path.getsize(onnx_path) / 2**20:.1f} MiB | {seconds:.2f} | "
              f"{cpu:.2f} | {verdict} | {worst:.1e} |", flush=True)


if __name__ == "__main__":
    main()
