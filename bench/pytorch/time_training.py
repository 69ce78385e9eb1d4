#!/usr/bin/env python3
"""Times PyTorch training iterations of one of the Caffe-shaped nets here
and prints one JSON line: ms per iteration, split into forward + loss +
backward and the solver step (SGD with momentum and weight decay, then
zeroing the gradients), the learnable parameter count, peak resident memory
and what PyTorch ran on.

  time_training.py NET --batch N [--iterations K] [--layout nchw|channels_last]

NET is a module of this folder (lenet, cifar10_quick, alexnet, googlenet,
resnet50). One untimed iteration comes first, as in `xtrain time`. Run it
with 2 threads' worth of cores free, and with PyTorch's BLAS pointed at
OpenBLAS (bench/cpu_nets.py does both; see /work/shared/toolchain.md).
"""
import argparse
import importlib
import json
import os
import re
import resource
import sys
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("net")
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--layout", choices=["nchw", "channels_last"], default="nchw")
    parser.add_argument("--threads", type=int, default=2)
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

    def iteration():
        """One training step; returns (forward+backward, step) seconds."""
        start = time.perf_counter()
        scores = model(images)
        if not isinstance(scores, tuple):
            scores = (scores,)
        loss = sum(w * criterion(s, labels) for w, s in zip(loss_weights, scores))
        loss.backward()
        backward_done = time.perf_counter()
        solver.step()
        solver.zero_grad(set_to_none=True)
        return backward_done - start, time.perf_counter() - backward_done

    iteration()  # warm-up: oneDNN primitives, momentum buffers, allocator
    forward_backward = step = 0.0
    for _ in range(args.iterations):
        fb, s = iteration()
        forward_backward += fb
        step += s
    n = args.iterations
    print(json.dumps({
        "net": args.net,
        "batch": args.batch,
        "layout": args.layout,
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
    }))


if __name__ == "__main__":
    main()
