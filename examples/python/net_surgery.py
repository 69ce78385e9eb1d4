#!/usr/bin/env python3
"""Net surgery: make LeNet fully convolutional by moving its weights.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/net_surgery.py
    ... net_surgery.py --weights snapshots/lenet_iter_5000.caffemodel --output-dir /tmp/surgery

As Caffe's net_surgery notebook does for CaffeNet: LeNet's two
InnerProduct layers become convolutions (ip1: 500 x 800 weights over the
50 x 4 x 4 pool2 map -> a 4x4 convolution of 500 outputs; ip2: 10 x 500
-> a 1x1 convolution), and their weights are copied over unchanged, since
an InnerProduct flattens its input in the same C x H x W order as a
convolution's kernel. The new net is saved, reloaded from the files and
checked: on 28x28 images it gives the old net's probabilities, and on a
56x56 picture of 2x2 test images it gives an 8x8 map of classifications
whose corners are the four images' (one output every 4 input pixels).

The weights: --weights, else snapshots/lenet_iter_10000.caffemodel
(scripts/run_lenet.sh), else snapshots/lenet_python_iter_600.caffemodel
(train_lenet.py); with neither, the net's random initial weights (the
surgery is exact whatever the weights are). Writes lenet_fully_conv.prototxt
and .caffemodel to --output-dir (default snapshots/). Exits with status 1
if the outputs disagree.
"""
import argparse
import gzip
import os
import sys

import numpy as np
from google.protobuf import text_format

import xtrain as caffe
from xtrain.proto import caffe_pb2

FASHION_MNIST = "/usr/share/datasets/fashion-mnist"  # Debian's dataset-fashion-mnist
DEPLOY = "models/lenet/lenet_deploy.prototxt"
TRAINED = ["snapshots/lenet_iter_10000.caffemodel", "snapshots/lenet_python_iter_600.caffemodel"]
# The InnerProduct layers and the kernel size of the convolution each becomes.
FULLY_CONNECTED = {"ip1": 4, "ip2": 1}


def fully_convolutional(deploy_path, height, width):
    """The deploy net with each InnerProduct of FULLY_CONNECTED as a
    Convolution named <name>-conv (a new name, so that loading the old
    .caffemodel leaves it alone), for inputs of height x width."""
    net = caffe_pb2.NetParameter()
    with open(deploy_path) as f:
        text_format.Merge(f.read(), net)
    net.name = "LeNet, fully convolutional"
    net.layer[0].input_param.shape[0].dim[2:] = [height, width]
    for layer in net.layer:
        if layer.name not in FULLY_CONNECTED:
            continue
        num_output = layer.inner_product_param.num_output
        layer.name += "-conv"
        layer.type = "Convolution"
        layer.ClearField("inner_product_param")
        layer.convolution_param.num_output = num_output
        layer.convolution_param.kernel_size.append(FULLY_CONNECTED[layer.name[:-5]])
    return net


def transplant(fc_net, conv_net):
    """Copies each InnerProduct's weights and bias into its convolution:
    the same numbers, reshaped (500 x 800 -> 500 x 50 x 4 x 4)."""
    for name in FULLY_CONNECTED:
        for fc_param, conv_param in zip(fc_net.params[name], conv_net.params[name + "-conv"]):
            print("  %s %s -> %s-conv %s" % (name, fc_param.data.shape, name,
                                             conv_param.data.shape))
            conv_param.data[...] = fc_param.data.reshape(conv_param.data.shape)


def test_images(count):
    with gzip.open(os.path.join(FASHION_MNIST, "t10k-images-idx3-ubyte.gz"), "rb") as f:
        images = np.frombuffer(f.read(), dtype=np.uint8, offset=16).reshape(-1, 1, 28, 28)
    return images[:count].astype(np.float32) / 256  # the training data's scale


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--weights", help="a .caffemodel for " + DEPLOY)
    parser.add_argument("--output-dir", default="snapshots")
    args = parser.parse_args()
    weights = args.weights or next((p for p in TRAINED if os.path.exists(p)), None)
    caffe.set_mode_cpu()

    # 1. The net as trained, and the fully convolutional one: its conv1 and
    # conv2 take the same weights (copied, as the weights may be random).
    if weights:
        print("weights: %s" % weights)
        fc_net = caffe.Net(DEPLOY, weights, caffe.TEST)
    else:
        print("no trained weights found: using the net's random initial weights")
        fc_net = caffe.Net(DEPLOY, caffe.TEST)
    os.makedirs(args.output_dir, exist_ok=True)
    conv_prototxt = os.path.join(args.output_dir, "lenet_fully_conv.prototxt")
    with open(conv_prototxt, "w") as f:
        f.write(text_format.MessageToString(fully_convolutional(DEPLOY, 56, 56)))
    conv_net = caffe.Net(conv_prototxt, caffe.TEST)
    for name in (n for n in fc_net.params if n not in FULLY_CONNECTED):
        for fc_param, conv_param in zip(fc_net.params[name], conv_net.params[name]):
            conv_param.data[...] = fc_param.data

    # 2. The surgery, then save and reload from the files alone.
    print("transplanting:")
    transplant(fc_net, conv_net)
    conv_weights = os.path.join(args.output_dir, "lenet_fully_conv.caffemodel")
    conv_net.save(conv_weights)
    reloaded = caffe.Net(conv_prototxt, conv_weights, caffe.TEST)
    print("saved and reloaded: %s" % conv_weights)

    # 3. Same images, same probabilities: the old net gives 4 x 10, the
    # new one 4 x 10 x 1 x 1 on 28x28 inputs.
    images = test_images(4)
    fc_prob = fc_net.forward_all(data=images)["prob"]
    reloaded.blobs["data"].reshape(*images.shape)
    reloaded.reshape()
    conv_prob = reloaded.forward(data=images)["prob"][:, :, 0, 0]
    difference = float(np.abs(fc_prob - conv_prob).max())
    print("28x28: largest |difference| of the probabilities: %.2g; classes %s and %s"
          % (difference, fc_prob.argmax(1).tolist(), conv_prob.argmax(1).tolist()))

    # 4. A 56x56 picture of the four images, 2 x 2: the 8x8 map's corners
    # see exactly one image each.
    picture = images.reshape(2, 2, 28, 28).transpose(0, 2, 1, 3).reshape(1, 1, 56, 56)
    reloaded.blobs["data"].reshape(1, 1, 56, 56)
    reloaded.reshape()
    prob_map = reloaded.forward(data=picture)["prob"][0]
    print("56x56: the %dx%d map of classes (corners: the four images)" % prob_map.shape[1:])
    for row in prob_map.argmax(0):
        print("  " + " ".join(str(c) for c in row))
    corners = prob_map[:, [0, 0, 7, 7], [0, 7, 0, 7]].T
    corner_difference = float(np.abs(corners - fc_prob).max())
    print("56x56: largest |difference| of the corners from the 28x28 results: %.2g"
          % corner_difference)

    tolerance = 1e-5
    if max(difference, corner_difference) > tolerance:
        sys.exit("the fully convolutional net disagrees (tolerance %g)" % tolerance)
    print("the outputs agree (tolerance %g)" % tolerance)


if __name__ == "__main__":
    main()
