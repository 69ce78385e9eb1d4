"""ONNX out and in, checked against ONNX Runtime and PyTorch (docs/onnx.md).

Run by CTest as OnnxRuntimeAndPyTorch through scripts/onnx_test_env.sh, which
makes the virtual environment with onnx and onnxruntime (torch: Debian's
python3-torch, seen through --system-site-packages)."""
import os
import subprocess

import numpy as np
import pytest
from google.protobuf import text_format

from xtrain.proto import xtrain_pb2

# onnx_harness (onnx) before pytorch_models (torch): see pytorch_models.py.
from onnx_harness import (TOLERANCE, ZOO, compare_export, export_and_compare, import_and_compare,
                          random_inputs, relative_difference, run_onnx, run_xtrain, session_of,
                          weights_from_fillers, xtrain_tool)
import layer_cases  # noqa: E402
import pytorch_models  # noqa: E402


@pytest.mark.parametrize("case", sorted(layer_cases.CASES))
def test_layer_exports_with_caffes_arithmetic(case, tmp_path):
    deploy = tmp_path / f"{case}.prototxt"
    deploy.write_text(layer_cases.prototxt(case))
    _, _, verdict, _, differences = export_and_compare(str(deploy), str(tmp_path), case,
                                                       random_statistics=True)
    assert verdict == "ok"
    assert max(differences.values()) <= TOLERANCE, differences


@pytest.mark.parametrize("case", ["pooling_average", "reduction", "concat_slice_split"])
def test_highest_opset_reads_the_same(case, tmp_path):
    """Opset 17, the last before Split and the reductions change their
    inputs, with the operators whose form differs across 13..17."""
    deploy = tmp_path / f"{case}.prototxt"
    deploy.write_text(layer_cases.prototxt(case))
    _, _, verdict, worst, _ = export_and_compare(str(deploy), str(tmp_path), case,
                                                 export_flags=["--opset=17"])
    assert verdict == "ok" and worst <= TOLERANCE


@pytest.mark.parametrize("name", list(ZOO))
def test_zoo_net_exports_and_runs_in_onnx_runtime(name, tmp_path):
    _, _, _, verdict, worst = compare_export(name, str(tmp_path))
    assert verdict == "ok"
    assert worst <= TOLERANCE


def test_dynamic_batch_takes_another_batch_size(tmp_path):
    """LeNet at batch 3, exported with --dynamic_batch: ONNX Runtime at batch
    3 agrees with xtrain, and at batch 5 gives the same rows for the same
    images."""
    deploy = tmp_path / "lenet.prototxt"
    deploy.write_text(open(os.path.join(os.path.dirname(__file__), "..", "..", ZOO["lenet"]))
                      .read().replace("shape { dim: 1 dim: 1", "shape { dim: 3 dim: 1"))
    weights = str(tmp_path / "lenet.caffemodel")
    net = weights_from_fillers(str(deploy), weights)
    onnx_path = str(tmp_path / "lenet.onnx")
    xtrain_tool("export", f"--model={deploy}", f"--weights={weights}", f"--output={onnx_path}",
                "--dynamic_batch")
    session = session_of(onnx_path)
    assert session.get_inputs()[0].shape[0] == "N"
    images = np.random.default_rng(0).standard_normal((5, 1, 28, 28)).astype(np.float32)
    expected = run_xtrain(str(deploy), weights, {"data": images[:3]}, net=net)["prob"]
    assert relative_difference(run_onnx(session, {"data": images[:3]})["prob"],
                               expected) <= TOLERANCE
    five = run_onnx(session, {"data": images})["prob"]
    assert five.shape[0] == 5
    assert relative_difference(five[:3], expected) <= TOLERANCE


def import_and_export_again(onnx_path, tmp_path, name, seed):
    """ONNX Runtime runs `onnx_path` on random inputs; `xtrain import` must
    give the same outputs, and the imported net is exported again. Returns
    the first outputs and those of the file exported again."""
    session = session_of(onnx_path)
    inputs = random_inputs(session, seed=seed)
    reference = {"inputs": inputs, "outputs": run_onnx(session, inputs)}
    _, worst, prototxt, weights = import_and_compare(onnx_path, reference, str(tmp_path), name)
    assert worst <= TOLERANCE
    again = str(tmp_path / f"{name}_again.onnx")
    xtrain_tool("export", f"--model={prototxt}", f"--weights={weights}", f"--output={again}")
    return reference["outputs"], run_onnx(session_of(again), inputs)


@pytest.mark.parametrize("name", ["lenet", "cifar10_full", "squeezenet", "googlenet"])
def test_round_trip_export_import_export(name, tmp_path):
    compare_export(name, str(tmp_path))
    outputs, again = import_and_export_again(str(tmp_path / f"{name}.onnx"), tmp_path, name, seed=3)
    for key, value in outputs.items():
        np.testing.assert_allclose(again[key], value, rtol=0, atol=1e-6 * np.abs(value).max())


# Every layer case: `xtrain import` reads back each ONNX form the export writes.
ROUND_TRIP_CASES = sorted(layer_cases.CASES)


@pytest.mark.parametrize("case", ROUND_TRIP_CASES)
def test_layer_round_trip_export_import_export(case, tmp_path):
    deploy = tmp_path / f"{case}.prototxt"
    deploy.write_text(layer_cases.prototxt(case))
    _, onnx_path, _, _, _ = export_and_compare(str(deploy), str(tmp_path), case,
                                               random_statistics=True)
    outputs, again = import_and_export_again(onnx_path, tmp_path, case, seed=5)
    # The imported net exported again gives ONNX Runtime the same numbers.
    for key, value in outputs.items():
        assert relative_difference(again[key], value) <= TOLERANCE, key


@pytest.mark.parametrize("name", sorted(pytorch_models.MODELS))
def test_pytorch_export_imports_with_pytorchs_outputs(name, tmp_path):
    onnx_path = str(tmp_path / f"{name}_torch.onnx")
    reference = pytorch_models.export(name, onnx_path)
    _, worst, _, _ = import_and_compare(onnx_path, reference, str(tmp_path), name)
    assert worst <= TOLERANCE


def test_imported_net_fine_tunes_with_xtrain_train(tmp_path):
    """A small PyTorch classifier, imported, trained two iterations from its
    weights on DummyData under a SoftmaxWithLoss."""
    import torch
    from torch import nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.MaxPool2d(2, ceil_mode=True), nn.Flatten(),
                          nn.Linear(8 * 5 * 5, 4)).eval()
    onnx_path = str(tmp_path / "small.onnx")
    torch.onnx.export(model, torch.randn(1, 3, 9, 9), onnx_path, opset_version=13,
                      input_names=["data"], output_names=["scores"])
    prototxt, weights = str(tmp_path / "small.prototxt"), str(tmp_path / "small.caffemodel")
    xtrain_tool("import", f"--onnx={onnx_path}", f"--output_model={prototxt}",
                f"--output_weights={weights}")
    # The Input becomes DummyData with labels (all class 1), a loss goes on top.
    net = xtrain_pb2.NetParameter()
    text_format.Merge(open(prototxt).read(), net)
    data = net.layer[0]
    assert data.type == "Input"
    data.type = "DummyData"
    data.ClearField("input_param")
    data.top.append("label")
    fillers = data.dummy_data_param.data_filler
    fillers.add(type="gaussian")
    fillers.add(type="constant", value=1)
    data.dummy_data_param.shape.add(dim=[4, 3, 9, 9])
    data.dummy_data_param.shape.add(dim=[4])
    net.layer.add(name="loss", type="SoftmaxWithLoss", bottom=["scores", "label"], top=["loss"])
    text = text_format.MessageToString(net)
    train = tmp_path / "train.prototxt"
    train.write_text(text)
    solver = tmp_path / "solver.prototxt"
    solver.write_text(f'net: "{train}"\nbase_lr: 0.01\nlr_policy: "fixed"\nmax_iter: 2\n'
                      f'solver_mode: CPU\ndisplay: 1\nsnapshot_prefix: "{tmp_path}/small"\n')
    result = subprocess.run([os.path.join(os.environ.get("XTRAIN_TOOLS_DIR", "build/bin"),
                                          "xtrain"), "train", f"--solver={solver}",
                             f"--weights={weights}"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "Iteration 2" in result.stderr + result.stdout
