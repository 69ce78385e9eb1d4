#!/usr/bin/env python3
"""Train LeNet on Fashion-MNIST from Python, drawing the loss as it goes.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/train_lenet.py
    ... --iterations 10000        # the full run of models/lenet (about 20 min on 2 cores)

The training loop is the C++ one (solver.step); Python watches it through
pycaffe's solver.add_callback(on_start, on_gradients_ready), records the loss
of every iteration, then measures the test accuracy with the solver's test
net and draws the loss curve to a file (with matplotlib when it is installed,
Debian's python3-matplotlib, else as a plain SVG written here).

The LMDBs are those of scripts/run_lenet.sh (data/fashion_mnist); when they
are missing, the project's convert_mnist_data tool (build/bin) makes them
from Debian's Fashion-MNIST. Writes <output-dir>/lenet_python_iter_N.caffemodel
(and .solverstate) and <output-dir>/lenet_python_loss.svg.
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np
from google.protobuf import text_format

import xtrain as caffe
from xtrain.proto import caffe_pb2

FASHION_MNIST = "/usr/share/datasets/fashion-mnist"  # Debian's dataset-fashion-mnist


def make_lmdbs(data_dir, tools_dir):
    """data_dir/{train,test}_lmdb from the IDX files, unless they exist."""
    convert = os.path.join(tools_dir, "convert_mnist_data")
    for idx_prefix, name in (("train", "train"), ("t10k", "test")):
        lmdb = os.path.join(data_dir, name + "_lmdb")
        if os.path.isdir(lmdb):
            continue
        if not os.path.exists(convert):
            sys.exit("%s is missing and so is %s to make it: build the tools "
                     "(scripts/build.sh) or give --tools-dir" % (lmdb, convert))
        os.makedirs(data_dir, exist_ok=True)
        print("making %s with %s" % (lmdb, convert), flush=True)
        subprocess.run([convert, "%s/%s-images-idx3-ubyte.gz" % (FASHION_MNIST, idx_prefix),
                        "%s/%s-labels-idx1-ubyte.gz" % (FASHION_MNIST, idx_prefix), lmdb],
                       check=True, stdout=subprocess.DEVNULL)


def write_solver(args):
    """Copies of the solver and net prototxts for this run, in the output
    folder: our LMDB paths, max_iter and snapshot prefix, and no periodic
    test (the script tests once at the end, from Python)."""
    solver = caffe_pb2.SolverParameter()
    with open(args.solver) as f:
        text_format.Merge(f.read(), solver)
    net = caffe_pb2.NetParameter()
    with open(solver.net) as f:
        text_format.Merge(f.read(), net)
    for layer in net.layer:
        if layer.type == "Data":
            phase = layer.include[0].phase
            split = "train" if phase == caffe_pb2.TRAIN else "test"
            layer.data_param.source = os.path.join(args.data_dir, split + "_lmdb")
    os.makedirs(args.output_dir, exist_ok=True)
    solver.net = os.path.join(args.output_dir, "lenet_python_train_test.prototxt")
    with open(solver.net, "w") as f:
        f.write(text_format.MessageToString(net))
    solver.max_iter = args.iterations
    solver.test_interval = args.iterations  # due only after the last step: never inside it
    solver.test_initialization = False
    solver.display = 0                      # the callback reports instead
    solver.snapshot = 0
    solver.snapshot_prefix = os.path.join(args.output_dir, "lenet_python")
    path = os.path.join(args.output_dir, "lenet_python_solver.prototxt")
    with open(path, "w") as f:
        f.write(text_format.MessageToString(solver))
    return path


class LossRecorder:
    """The two callbacks of solver.add_callback: the iteration's start time,
    then its loss once backward is done (the loss blob holds this
    iteration's forward result until the next one)."""

    def __init__(self, solver, report_every):
        self.solver = solver
        self.loss = solver.net.blobs["loss"]  # the Blob: its .data views the C++ memory
        self.report_every = report_every
        self.losses = []
        self.started = time.time()

    def on_start(self):
        self.iteration_start = time.time()

    def on_gradients_ready(self):
        self.losses.append(float(self.loss.data))
        it = self.solver.iter  # not yet advanced: this is the iteration just computed
        if self.report_every and (it % self.report_every == 0 or it == 0):
            print("iteration %5d  loss %.4f  (%.1f ms/iteration, %.0f s)"
                  % (it, self.losses[-1], 1000 * (time.time() - self.iteration_start),
                     time.time() - self.started), flush=True)


def test_accuracy(solver, batches):
    """Mean of the test net's `accuracy` output over `batches` batches (the
    test net shares the train net's weights)."""
    net = solver.test_nets[0]
    return float(np.mean([net.forward()["accuracy"] for _ in range(batches)]))


def plot_losses(losses, path):
    """Writes the loss curve to `path`: matplotlib when installed (any
    format it knows), else a small SVG drawn by hand."""
    try:
        import matplotlib
        matplotlib.use("Agg")  # no display needed
        import matplotlib.pyplot as plt
    except ImportError:
        return write_svg_plot(losses, os.path.splitext(path)[0] + ".svg")
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(np.arange(len(losses)), losses, linewidth=0.8)
    ax.set_xlabel("iteration")
    ax.set_ylabel("training loss")
    ax.set_title("LeNet on Fashion-MNIST")
    fig.tight_layout()
    fig.savefig(path)
    return path


def write_svg_plot(values, path, width=600, height=320, margin=50):
    """A line chart of `values` against their index as SVG text: one
    polyline, two axes and the extreme values as tick labels."""
    top = max(values)
    span_x = max(len(values) - 1, 1)
    span_y = top or 1.0  # the y axis starts at 0: losses are positive

    def point(i, v):
        return (margin + (width - 2 * margin) * i / span_x,
                height - margin - (height - 2 * margin) * v / span_y)

    line = " ".join("%.1f,%.1f" % point(i, v) for i, v in enumerate(values))
    x0, y0 = point(0, 0)
    x1, y1 = point(span_x, top)
    svg = f"""<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="{width / 2}" y="20" text-anchor="middle">LeNet on Fashion-MNIST: training loss</text>
<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y0}" stroke="black"/>
<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}" stroke="black"/>
<text x="{x0}" y="{y0 + 16}" text-anchor="middle">0</text>
<text x="{x1}" y="{y0 + 16}" text-anchor="middle">{span_x}</text>
<text x="{width / 2}" y="{height - 10}" text-anchor="middle">iteration</text>
<text x="{x0 - 6}" y="{y0 + 4}" text-anchor="end">0</text>
<text x="{x0 - 6}" y="{y1 + 4}" text-anchor="end">{top:.2f}</text>
<polyline fill="none" stroke="steelblue" stroke-width="1" points="{line}"/>
</svg>
"""
    with open(path, "w") as f:
        f.write(svg)
    return path


def train(args):
    """Trains as `args` say; returns (caffemodel path, test accuracy)."""
    make_lmdbs(args.data_dir, args.tools_dir)
    caffe.set_mode_cpu()
    caffe.set_random_seed(args.seed)
    solver = caffe.SGDSolver(write_solver(args))
    recorder = LossRecorder(solver, args.report_every)
    solver.add_callback(recorder.on_start, recorder.on_gradients_ready)
    started = time.time()
    solver.step(args.iterations)
    train_seconds = time.time() - started
    accuracy = test_accuracy(solver, args.test_batches)
    caffemodel = [p for p in solver.snapshot() if p.endswith(".caffemodel")][0]
    plot = plot_losses(recorder.losses, args.plot)
    print("trained %d iterations in %.1f s; final loss %.4f (mean of the last 50: %.4f)"
          % (args.iterations, train_seconds, recorder.losses[-1], np.mean(recorder.losses[-50:])))
    print("test accuracy: %.4f (%d batches)" % (accuracy, args.test_batches))
    print("weights: %s\nloss plot: %s" % (caffemodel, plot))
    return caffemodel, accuracy


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--solver", default="models/lenet/lenet_solver.prototxt")
    parser.add_argument("--iterations", type=int, default=600,
                        help="training iterations (600: about a minute; 10000: the full run)")
    parser.add_argument("--data-dir", default="data/fashion_mnist",
                        help="where the train_lmdb and test_lmdb are, or are made")
    parser.add_argument("--tools-dir", default=os.environ.get("XTRAIN_TOOLS_DIR", "build/bin"),
                        help="where convert_mnist_data is (to make the LMDBs)")
    parser.add_argument("--output-dir", default="snapshots",
                        help="the snapshot and the solver copy go here")
    parser.add_argument("--plot", help="the loss plot (default: <output-dir>/lenet_python_loss.svg)")
    parser.add_argument("--test-batches", type=int, default=100,
                        help="test batches of 100 images (100: the whole test set)")
    parser.add_argument("--report-every", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1701)
    args = parser.parse_args(argv)
    if args.plot is None:
        args.plot = os.path.join(args.output_dir, "lenet_python_loss.svg")
    return args


if __name__ == "__main__":
    train(parse_args())
