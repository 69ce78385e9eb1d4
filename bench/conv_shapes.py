#!/usr/bin/env python3
"""Writes bench/onednn_conv_shapes.txt, the convolution shapes of the five
bench nets (bench/nets/) that bench/onednn_conv_bench.cpp times: one line
per distinct shape and net, with how many layers of the net have it, so that
count x time summed over a net's lines is the net's convolution time.

  bench/conv_shapes.py [XTRAIN]     (default build/bin/xtrain)

The blob shapes come from `xtrain time --iterations=1`'s setup log, read as
bench/cpu_nets.py reads it. Rerun when bench/nets/ changes.
"""
import math
import subprocess
import sys
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_nets import kernel_volume, layer_shapes  # noqa: E402
from make_bench_nets import NETS, REPO, read_prototxt_file  # noqa: E402

OUTPUT = REPO / "bench" / "onednn_conv_shapes.txt"
COLUMNS = "net layer count batch channels height width outputs kernel stride pad group"


def net_shapes(xtrain, net):
    """{shape tuple: [layer names]} of the net's convolutions, in net order."""
    log = subprocess.run([xtrain, "time", "--model=" + str(net.path), "--iterations=1"],
                         capture_output=True, text=True, check=True).stderr
    definitions = {layer.get("name"): layer for layer in read_prototxt_file(net.path).all("layer")}
    shapes = {}
    for layer in layer_shapes(log):
        definition = definitions.get(layer["name"])
        if definition is None or definition.get("type") != "Convolution":
            continue
        param = definition.get("convolution_param")
        if param.get("kernel_h") is not None or param.get("stride_h") is not None:
            sys.exit("conv_shapes.py: %s: non-square kernels or strides are not handled"
                     % layer["name"])
        kernel = math.isqrt(kernel_volume(param, 2))
        bottom = layer["bottom_shapes"][0]
        key = (*bottom, layer["top_shapes"][0][1], kernel, param.number("stride", 1),
               param.number("pad", 0), param.number("group", 1))
        shapes.setdefault(key, []).append(layer["name"])
    return shapes


def main():
    xtrain = sys.argv[1] if len(sys.argv) > 1 else str(REPO / "build" / "bin" / "xtrain")
    lines = ["# Written by bench/conv_shapes.py from bench/nets/; read by bench/onednn_conv_bench.cpp.",
             "# layer: the first layer of the net with the shape; count: how many have it.",
             "# " + COLUMNS]
    for net in NETS:
        for key, names in net_shapes(xtrain, net).items():
            lines.append(" ".join([net.name, names[0], str(len(names))] + [str(v) for v in key]))
    OUTPUT.write_text("\n".join(lines) + "\n")
    print("wrote %s (%d shapes)" % (OUTPUT, len(lines) - 3))


if __name__ == "__main__":
    main()
