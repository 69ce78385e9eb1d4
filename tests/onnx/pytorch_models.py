"""The PyTorch classification models of bench/pytorch (AlexNet, GoogLeNet
and ResNet-50 as laid out for Caffe, written in plain torch), exported with
torch.onnx.export as a user would, for the import tests and the table of
docs/onnx.md.

nn.LocalResponseNorm has no ONNX symbolic in torch: the exporter traces its
Python body into ~10 primitive nodes (Pad, AveragePool, Pow, Div, ...).
Exported models use ONNX's LRN operator instead, through an autograd
Function whose `symbolic` writes it, the usual way to give torch.onnx an
operator (the values are F.local_response_norm's)."""
import os
import sys

import numpy as np

# onnx before torch: Debian's torch loads its own, older libonnx, whose
# messages then take the names the onnx package registers.
from onnx_harness import SOURCE_DIR
import torch  # noqa: E402  (after onnx, above)
from torch import nn  # noqa: E402

sys.path.insert(0, os.path.join(SOURCE_DIR, "bench", "pytorch"))
import alexnet  # noqa: E402
import googlenet  # noqa: E402
import resnet50  # noqa: E402

MODELS = {"alexnet": alexnet, "googlenet": googlenet, "resnet50": resnet50}


class _OnnxLrn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, size, alpha, beta, k):
        return nn.functional.local_response_norm(x, size, alpha, beta, k)

    @staticmethod
    def symbolic(g, x, size, alpha, beta, k):
        return g.op("LRN", x, size_i=size, alpha_f=alpha, beta_f=beta, bias_f=k)


class LrnAsOnnxOperator(nn.Module):
    def __init__(self, lrn):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = lrn.size, lrn.alpha, lrn.beta, lrn.k

    def forward(self, x):
        return _OnnxLrn.apply(x, self.size, self.alpha, self.beta, self.k)


def _replace_lrn(module):
    for name, child in module.named_children():
        if isinstance(child, nn.LocalResponseNorm):
            setattr(module, name, LrnAsOnnxOperator(child))
        else:
            _replace_lrn(child)


def randomize_batch_norm(model, generator):
    """Running statistics and affine parameters away from 0 and 1, so that
    the import of each is tested (an untrained net's are trivial)."""
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            count = module.num_features
            module.running_mean.copy_(torch.rand(count, generator=generator) * 0.2 - 0.1)
            module.running_var.copy_(torch.rand(count, generator=generator) + 0.5)
            module.weight.data.copy_(torch.rand(count, generator=generator) + 0.5)
            module.bias.data.copy_(torch.rand(count, generator=generator) * 0.2 - 0.1)


def export(name, onnx_path, seed=0):
    """Exports model `name` (batch 1, opset 13, eval mode) to `onnx_path`;
    returns {"inputs": {"data": x}, "outputs": {name: PyTorch's values}}."""
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    module = MODELS[name]
    model = module.build().eval()
    _replace_lrn(model)
    with torch.no_grad():
        randomize_batch_norm(model, generator)
        x = torch.randn(1, *module.IMAGE_SHAPE, generator=generator)
        outputs = model(x)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    names = [f"scores{i + 1}" for i in range(len(outputs))] if len(outputs) > 1 else ["scores"]
    torch.onnx.export(model, x, onnx_path, opset_version=13, input_names=["data"],
                      output_names=names, do_constant_folding=True)
    return {"inputs": {"data": x.numpy()},
            "outputs": {n: o.numpy().astype(np.float32) for n, o in zip(names, outputs)}}
