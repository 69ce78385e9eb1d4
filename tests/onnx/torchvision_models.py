"""torchvision's classification models (Debian's python3-torchvision),
exported by torch.onnx.export as a new user would: random weights,
batch-norm statistics and affine parameters away from 0 and 1, eval mode,
batch 1. For the import test (test_torchvision.py) and the table of
docs/onnx.md (bench/torchvision_table.py)."""
import numpy as np

# onnx before torch: Debian's torch loads its own, older libonnx, whose
# messages then take the names the onnx package registers.
import onnx_harness  # noqa: F401
import torch  # noqa: E402  (after onnx, above)
from torch import nn  # noqa: E402
import torchvision  # noqa: E402

from pytorch_models import randomize_batch_norm  # noqa: E402


def build(name):
    """Model `name` of torchvision.models with random weights (no download)."""
    constructor = getattr(torchvision.models, name)
    if name.startswith("googlenet") or name.startswith("inception"):
        # aux_logits off: eval mode ignores the auxiliary heads anyway.
        return constructor(weights=None, aux_logits=False, init_weights=True)
    return constructor(weights=None)


def export(name, onnx_path, opset=13, size=224, seed=0):
    """Exports torchvision model `name` on a (1, 3, size, size) input to
    `onnx_path`; returns {"inputs": {"data": x}, "outputs": {"scores": ...}}
    with PyTorch's outputs."""
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    model = build(name).eval()
    with torch.no_grad():
        randomize_batch_norm(model, generator)
        x = torch.randn(1, 3, size, size, generator=generator)
        scores = model(x)
    torch.onnx.export(model, x, onnx_path, opset_version=opset, input_names=["data"],
                      output_names=["scores"], do_constant_folding=True)
    return {"inputs": {"data": x.numpy()}, "outputs": {"scores": scores.numpy().astype(np.float32)}}
