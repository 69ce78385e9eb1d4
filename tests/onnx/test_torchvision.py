"""torchvision's classifiers as a user brings them: exported by
torch.onnx.export (opset 13, eval mode, random weights and batch-norm
statistics), imported with `xtrain import --onnx` and run by the Python
package against PyTorch's outputs on the same input (docs/onnx.md). A few
small models on a 64x64 input, each reaching one of the exporter's forms:
ResNet's floor-rounded pooling (round_mode FLOOR), SqueezeNet's Identity
aliases, MobileNetV2's Clip (ReLU6), ShuffleNet's channel shuffle
(Transpose) and chunk (Shape arithmetic folded into Slice bounds),
MobileNetV3's HardSigmoid and squeeze-and-excitation Mul, EfficientNet's
SiLU (Sigmoid, Mul), DenseNet's BatchNormalization and Pad in front of
its AveragePool. bench/torchvision_table.py runs the whole list at
224x224 for the table.

Debian's python3-torchvision (scripts/install_deps.sh); without it the test
is skipped, except in CI (CI=true), where that fails."""
import os

import pytest

from onnx_harness import TOLERANCE, import_and_compare

try:
    import torchvision_models
except ImportError as missing:
    if os.environ.get("CI") == "true":
        raise
    pytest.skip(f"python3-torchvision is not installed ({missing})", allow_module_level=True)

MODELS = ["resnet18", "squeezenet1_0", "mobilenet_v2", "shufflenet_v2_x0_5",
          "mobilenet_v3_small", "efficientnet_b0", "densenet121"]


@pytest.mark.parametrize("name", MODELS)
def test_torchvision_export_imports_with_pytorchs_outputs(name, tmp_path):
    onnx_path = str(tmp_path / f"{name}.onnx")
    reference = torchvision_models.export(name, onnx_path, opset=13, size=64)
    _, worst, _, _ = import_and_compare(onnx_path, reference, str(tmp_path), name)
    assert worst <= TOLERANCE, f"{name}: largest relative difference {worst:.2e}"
