#!/usr/bin/env python3
"""Checks bench/caffe_memory.py's arithmetic on LeNet (batch 64) against
bytes worked out by hand from Caffe 1.0's rules (see caffe_memory.py).

  python3 bench/caffe_memory_test.py      (CTest runs it as CaffeMemoryModel)
"""
import io
import sys
import unittest
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import caffe_memory  # noqa: E402
from cpu_nets import layer_shapes  # noqa: E402
from make_bench_nets import REPO, read_prototxt_file  # noqa: E402

# `xtrain time --model=bench/nets/lenet.prototxt` setup log, net.cpp lines.
LENET_LOG = """\
I0101 00:00:00.000000 1 net.cpp:72] Creating layer data
I0101 00:00:00.000000 1 net.cpp:200] data -> data
I0101 00:00:00.000000 1 net.cpp:200] data -> label
I0101 00:00:00.000000 1 net.cpp:104] Top shape: 64 1 28 28 (50176)
I0101 00:00:00.000000 1 net.cpp:104] Top shape: 64 (64)
I0101 00:00:00.000000 1 net.cpp:72] Creating layer conv1
I0101 00:00:00.000000 1 net.cpp:170] conv1 <- data
I0101 00:00:00.000000 1 net.cpp:200] conv1 -> conv1
I0101 00:00:00.000000 1 net.cpp:104] Top shape: 64 20 24 24 (737280)
I0101 00:00:00.000000 1 net.cpp:72] Creating layer pool1
I0101 00:00:00.000000 1 net.cpp:170] pool1 <- conv1
I0101 00:00:00.000000 1 net.cpp:200] pool1 -> pool1
I0101 00:00:00.000000 1 net.cpp:104] Top shape: 64 20 12 12 (184320)
I0101 00:00:00.000000 1 net.cpp:72] Creating layer conv2
I0101 00:00:00.000000 1 net.cpp:170] conv2 <- pool1
I0101 00:00:00.000000 1 net.cpp:200] conv2 -> conv2
I0101 00:00:00.000000 1 net.cpp:104] Top shape: 64 50 8 8 (204800)
I0101 00:00:00.000000 1 net.cpp:72] Creating layer pool2
I0101 00:00:00.000000 1 net.cpp:170] pool2 <- conv2
I0101 00:00:00.000000 1 net.cpp:200] pool2 -> pool2
I0101 00:00:00.000000 1 net.cpp:104] Top shape: 64 50 4 4 (51200)
I0101 00:00:00.000000 1 net.cpp:72] Creating layer ip1
I0101 00:00:00.000000 1 net.cpp:170] ip1 <- pool2
I0101 00:00:00.000000 1 net.cpp:200] ip1 -> ip1
I0101 00:00:00.000000 1 net.cpp:104] Top shape: 64 500 (32000)
I0101 00:00:00.000000 1 net.cpp:72] Creating layer relu1
I0101 00:00:00.000000 1 net.cpp:170] relu1 <- ip1
I0101 00:00:00.000000 1 net.cpp:190] relu1 -> ip1 (in-place)
I0101 00:00:00.000000 1 net.cpp:104] Top shape: 64 500 (32000)
I0101 00:00:00.000000 1 net.cpp:72] Creating layer ip2
I0101 00:00:00.000000 1 net.cpp:170] ip2 <- ip1
I0101 00:00:00.000000 1 net.cpp:200] ip2 -> ip2
I0101 00:00:00.000000 1 net.cpp:104] Top shape: 64 10 (640)
I0101 00:00:00.000000 1 net.cpp:72] Creating layer loss
I0101 00:00:00.000000 1 net.cpp:170] loss <- ip2
I0101 00:00:00.000000 1 net.cpp:170] loss <- label
I0101 00:00:00.000000 1 net.cpp:200] loss -> loss
I0101 00:00:00.000000 1 net.cpp:104] Top shape: (1)
I0101 00:00:00.000000 1 net.cpp:106]     with loss weight 1
I0101 00:00:00.000000 1 net.cpp:306] loss needs backward computation.
I0101 00:00:00.000000 1 net.cpp:306] ip2 needs backward computation.
I0101 00:00:00.000000 1 net.cpp:306] relu1 needs backward computation.
I0101 00:00:00.000000 1 net.cpp:306] ip1 needs backward computation.
I0101 00:00:00.000000 1 net.cpp:306] pool2 needs backward computation.
I0101 00:00:00.000000 1 net.cpp:306] conv2 needs backward computation.
I0101 00:00:00.000000 1 net.cpp:306] pool1 needs backward computation.
I0101 00:00:00.000000 1 net.cpp:306] conv1 needs backward computation.
I0101 00:00:00.000000 1 net.cpp:306] data does not need backward computation.
"""

F = 4  # bytes per float (and per int)


class LenetTest(unittest.TestCase):
    def setUp(self):
        definitions = {layer.get("name"): layer for layer in
                       read_prototxt_file(REPO / "bench" / "nets" / "lenet.prototxt").all("layer")}
        self.ledger = caffe_memory.estimate(layer_shapes(LENET_LOG), definitions,
                                            caffe_memory.backward_needs(LENET_LOG))

    def test_activations(self):
        # Every top has data: data 64x1x28x28, label 64, conv1 64x20x24x24,
        # pool1 64x20x12x12, conv2 64x50x8x8, pool2 64x50x4x4, ip1 64x500
        # (relu1 in place: the same blob), ip2 64x10, loss 1.
        data = 50176 + 64 + 737280 + 184320 + 204800 + 51200 + 32000 + 640 + 1
        self.assertEqual(self.ledger.bytes["activations data"], data * F)
        # Diffs: all but data and label (nobody propagates down to them); the
        # loss's holds its weight.
        self.assertEqual(self.ledger.bytes["activations diff"], (data - 50176 - 64) * F)

    def test_params(self):
        # conv1 20x1x5x5 + 20, conv2 50x20x5x5 + 50, ip1 500x800 + 500,
        # ip2 10x500 + 10; all lr_mult != 0, so each has a diff too.
        params = 500 + 20 + 25000 + 50 + 400000 + 500 + 5000 + 10
        self.assertEqual(self.ledger.bytes["params data"], params * F)
        self.assertEqual(self.ledger.bytes["params diff"], params * F)

    def test_layer_buffers(self):
        # col_buffer_: (C_in * 5 * 5) x (H_out * W_out) per conv, one image.
        self.assertEqual(self.ledger.bytes["conv col_buffer_"], (1 * 25 * 576 + 20 * 25 * 64) * F)
        # max_idx_: an int per pooled value.
        self.assertEqual(self.ledger.bytes["pooling max_idx_"], (184320 + 51200) * F)
        self.assertEqual(self.ledger.bytes["SoftmaxWithLoss prob_"], 640 * F)
        # Bias multipliers: conv1 24x24, conv2 8x8, ip1 and ip2 M = 64; the
        # softmax's sum_multiplier_ (10 channels) and scale_ (64 x 1).
        self.assertEqual(self.ledger.bytes["multipliers"], (576 + 64 + 64 + 64 + 10 + 64) * F)
        self.assertEqual(self.ledger.transient, 0)

    def test_total(self):
        total = caffe_memory.report(self.ledger, None, out=io.StringIO())
        self.assertEqual(total, 5041924 + 4840964 + 2 * 1724320 + 185600 + 942080 + 2560 + 3368)


if __name__ == "__main__":
    unittest.main()
