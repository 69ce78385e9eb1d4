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
its AveragePool; and a small ConvNeXt-style block (LayerNorm, GELU) at
opsets 13 and 17. bench/torchvision_table.py runs the whole list at
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


@pytest.mark.parametrize("opset", [13, 17])
def test_convnext_style_block_imports_with_pytorchs_outputs(opset, tmp_path):
    """ConvNeXt's block, small: a depthwise convolution, LayerNorm over the
    channels of each position (channels-last through Transpose; opset 17
    writes LayerNormalization, 13 its ReduceMean, Sub, Pow, Sqrt, Div), two
    Linear layers (MatMul) around nn.GELU (Div, Erf, Add, Mul, Mul: the GELU
    layer), a layer scale, and a LayerNorm of the pooled features."""
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 16, 4, stride=4)
            self.depthwise = nn.Conv2d(16, 16, 7, padding=3, groups=16)
            self.norm = nn.LayerNorm(16, eps=1e-6)
            self.expand = nn.Linear(16, 64)
            self.gelu = nn.GELU()
            self.project = nn.Linear(64, 16)
            self.layer_scale = nn.Parameter(torch.rand(16, 1, 1) + 0.5)
            self.head_norm = nn.LayerNorm(16)
            self.head = nn.Linear(16, 10)

        def forward(self, x):
            x = self.stem(x)
            y = self.depthwise(x).permute(0, 2, 3, 1)
            y = self.project(self.gelu(self.expand(self.norm(y))))
            x = x + self.layer_scale * y.permute(0, 3, 1, 2)
            return self.head(self.head_norm(x.mean((2, 3))))

    torch.manual_seed(opset)
    model = Block().eval()
    with torch.no_grad():
        for norm in (model.norm, model.head_norm):
            norm.weight.copy_(torch.rand(16) + 0.5)
            norm.bias.copy_(torch.rand(16) - 0.5)
        x = torch.randn(1, 3, 32, 32)
        scores = model(x)
    onnx_path = str(tmp_path / "block.onnx")
    torch.onnx.export(model, x, onnx_path, opset_version=opset, input_names=["data"],
                      output_names=["scores"])
    reference = {"inputs": {"data": x.numpy()}, "outputs": {"scores": scores.numpy()}}
    _, worst, prototxt, _ = import_and_compare(onnx_path, reference, str(tmp_path), "block")
    assert 'type: "GELU"' in open(prototxt).read()
    assert worst <= TOLERANCE, f"opset {opset}: largest relative difference {worst:.2e}"
