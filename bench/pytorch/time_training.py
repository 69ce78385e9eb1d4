#!/usr/bin/env python3
"""Times PyTorch training iterations of one of the Caffe-shaped nets here
and prints one JSON line: ms per iteration, split into forward + loss +
backward and the solver step (SGD with momentum and weight decay, then
zeroing the gradients), the learnable parameter count, peak resident memory
and what PyTorch ran on.

  time_training.py NET --batch N [--iterations K] [--layout nchw|channels_last]
                   [--precision fp32|bf16] [--onednn-kernels]

NET is a module of this folder (lenet, cifar10_quick, alexnet, googlenet,
resnet50). One untimed iteration comes first, as in `xtrain time`. Run it
with 2 threads' worth of cores free, and with PyTorch's BLAS pointed at
OpenBLAS (bench/cpu_nets.py does both; see /work/shared/toolchain.md).

--precision bf16 runs the forward pass and the loss under
torch.autocast("cpu", dtype=torch.bfloat16) and the backward pass outside
it, as PyTorch documents: the weights stay fp32 (autocast casts them, once
per iteration), convolutions and linear layers compute in bf16 and the
JSON's output_dtype says what the last layer produced. PyTorch 1.13's CPU
autocast has no fp16 (it raises "AutocastCPU only support Bfloat16").
--onednn-kernels turns oneDNN's verbose log on for the untimed iteration
and adds the implementations it executed per primitive kind (e.g.
convolution: brgconv:avx512_core_amx_bf16) to the JSON.
"""
import argparse
import contextlib
import ctypes
import importlib
import json
import os
import re
import resource
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch import nn

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))


def loaded_blas():
    """The BLAS shared library this process mapped (the reference BLAS is
    several times slower than OpenBLAS, so the caller should know)."""
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "blas" in line.split()[-1]}
    return sorted(paths)


def cpu_capability():
    match = re.search(r"CPU capability usage: (\S+)", torch.__config__.show())
    return match.group(1) if match else "unknown"


def onednn_kernels(run):
    """Calls run() with oneDNN's verbose log on; returns {primitive kind:
    sorted implementations} of what it executed, reorders left out. oneDNN
    prints from C to file descriptor 1, so that is pointed at a file for
    the call (C's buffers flushed on both sides)."""
    libc = ctypes.CDLL(None)
    sys.stdout.flush()
    libc.fflush(None)
    saved = os.dup(1)
    with tempfile.TemporaryFile() as log:
        os.dup2(log.fileno(), 1)
        try:
            with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
                run()
        finally:
            libc.fflush(None)
            os.dup2(saved, 1)
            os.close(saved)
        log.seek(0)
        text = log.read().decode(errors="replace")
    kernels = {}
    for line in text.splitlines():
        # onednn_verbose,exec,cpu,convolution,brgconv:avx512_core_amx_bf16,forward_training,...
        fields = line.split(",")
        if len(fields) > 5 and fields[0] in ("onednn_verbose", "dnnl_verbose") \
                and fields[1] == "exec" and fields[3] != "reorder":
            kernels.setdefault(fields[3], set()).add(fields[4])
    return {kind: sorted(names) for kind, names in sorted(kernels.items())}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("net")
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--layout", choices=["nchw", "channels_last"], default="nchw")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                        help="bf16: forward and loss under CPU autocast (see above)")
    parser.add_argument("--onednn-kernels", action="store_true",
                        help="report oneDNN's implementations of the untimed iteration")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)  # the default here is 1
    torch.manual_seed(1)
    net_module = importlib.import_module(args.net)
    model = net_module.build().train()
    loss_weights = getattr(net_module, "LOSS_WEIGHTS", (1.0,))
    images = torch.randn((args.batch,) + net_module.IMAGE_SHAPE)
    if args.layout == "channels_last":
        model = model.to(memory_format=torch.channels_last)
        images = images.contiguous(memory_format=torch.channels_last)
    parameters = sum(p.numel() for p in model.parameters())
    with torch.no_grad():
        outputs = model(images)
    classes = (outputs if isinstance(outputs, tuple) else (outputs,))[-1].shape[1]
    labels = torch.randint(0, classes, (args.batch,))
    criterion = nn.CrossEntropyLoss()
    solver = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9, weight_decay=5e-4)

    def autocast():
        if args.precision == "bf16":
            return torch.autocast("cpu", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    output_dtype = [None]  # of the last output, from the latest iteration

    def iteration():
        """One training step; returns (forward+backward, step) seconds."""
        start = time.perf_counter()
        with autocast():
            scores = model(images)
            if not isinstance(scores, tuple):
                scores = (scores,)
            loss = sum(w * criterion(s, labels) for w, s in zip(loss_weights, scores))
        loss.backward()
        backward_done = time.perf_counter()
        solver.step()
        solver.zero_grad(set_to_none=True)
        seconds = backward_done - start, time.perf_counter() - backward_done
        output_dtype[0] = scores[-1].dtype
        return seconds

    # The warm-up: oneDNN primitives, momentum buffers, allocator.
    kernels = None
    if args.onednn_kernels:
        kernels = onednn_kernels(iteration)
    else:
        iteration()
    forward_backward = step = 0.0
    for _ in range(args.iterations):
        fb, s = iteration()
        forward_backward += fb
        step += s
    n = args.iterations
    result = {
        "net": args.net,
        "batch": args.batch,
        "layout": args.layout,
        "precision": args.precision,
        "output_dtype": str(output_dtype[0]).replace("torch.", ""),
        "iterations": n,
        "forward_backward_ms": 1000 * forward_backward / n,
        "step_ms": 1000 * step / n,
        "iteration_ms": 1000 * (forward_backward + step) / n,
        "parameters": parameters,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "cpu_capability": cpu_capability(),
        "aten_cpu_capability_env": os.environ.get("ATEN_CPU_CAPABILITY", ""),
        "blas": loaded_blas(),
    }
    if kernels is not None:
        result["onednn_kernels"] = kernels
    print(json.dumps(result))


if __name__ == "__main__":
    main()
