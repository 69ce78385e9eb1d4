"""The fine-tuning of examples/onnx_fine_tune (README.md) from Python: the
imported weights copied into the solver's net (the new head keeps its
filler's), 100 iterations, the held-out accuracy before and after.

  PYTHONPATH=build/python python3 examples/onnx_fine_tune/fine_tune.py [WORKDIR]"""
import os
import sys

import numpy as np

import xtrain as caffe

WORK = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "data/onnx_fine_tune")


def held_out(solver):
    """Test loss and accuracy over the 400 held-out images (8 batches of 50)."""
    results = [solver.test_nets[0].forward() for _ in range(8)]
    return (float(np.mean([r["loss"] for r in results])),
            float(np.mean([r["accuracy"] for r in results])))


def main():
    caffe.set_mode_cpu()
    solver = caffe.SGDSolver(os.path.join(WORK, "solver.prototxt"))
    solver.net.copy_from(os.path.join(WORK, "resnet18.caffemodel"))
    print("before: test loss %.4f, accuracy %.4f" % held_out(solver))
    losses = []
    for _ in range(10):
        solver.step(10)
        losses.append(float(solver.net.blobs["loss"].data))
    print("train loss after each 10 iterations:", " ".join("%.3f" % loss for loss in losses))
    print("after %d iterations: test loss %.4f, accuracy %.4f" % ((solver.iter,) + held_out(solver)))


if __name__ == "__main__":
    main()
