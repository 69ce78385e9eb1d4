#!/usr/bin/env python3
"""Classify Fashion-MNIST images with a trained LeNet, printing the top classes.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/classify.py             # test images 0-7
    ... classify.py --start 100 --count 20                                           # test images 100-119
    ... classify.py shirt.png boot.png --weights snapshots/lenet_iter_5000.caffemodel

Without image arguments the images are the first of Debian's Fashion-MNIST
test set (the IDX files, read here with NumPy), shown with their true labels.
PNG files should look like Fashion-MNIST's: a light object on black, grey
(`idx_to_images` writes such files); they are resized to 28x28.

The weights: --weights, else the full run of scripts/run_lenet.sh
(snapshots/lenet_iter_10000.caffemodel), else train_lenet.py's
(snapshots/lenet_python_iter_600.caffemodel), which this script trains
first (about a minute, once) when neither exists.
"""
import argparse
import gzip
import os
import sys

import numpy as np

import xtrain as caffe

FASHION_MNIST = "/usr/share/datasets/fashion-mnist"  # Debian's dataset-fashion-mnist
DEPLOY = "models/lenet/lenet_deploy.prototxt"
LABELS = "models/lenet/fashion_mnist_labels.txt"
FULL_RUN = "snapshots/lenet_iter_10000.caffemodel"    # scripts/run_lenet.sh
QUICK_RUN = "snapshots/lenet_python_iter_600.caffemodel"  # train_lenet.py's defaults


def read_idx(path, header_bytes):
    """The bytes after the header of a gzipped IDX file, as uint8."""
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=header_bytes)


def test_images(start, count):
    """Test images start..start+count-1 as H x W x 1 floats in [0, 1] (as
    io.load_image gives them), with their labels."""
    images = read_idx(os.path.join(FASHION_MNIST, "t10k-images-idx3-ubyte.gz"), 16)
    labels = read_idx(os.path.join(FASHION_MNIST, "t10k-labels-idx1-ubyte.gz"), 8)
    images = images.reshape(-1, 28, 28, 1)[start:start + count]
    return images.astype(np.float32) / 255, labels[start:start + count]


def find_weights(given):
    if given:
        if not os.path.exists(given):
            sys.exit("no weights at %s" % given)
        return given
    for path in (FULL_RUN, QUICK_RUN):
        if os.path.exists(path):
            return path
    print("no trained LeNet in snapshots/: training one with train_lenet.py first", flush=True)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import train_lenet  # the example beside this one
    weights, _ = train_lenet.train(train_lenet.parse_args(["--report-every", "0"]))
    return weights


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("images", nargs="*", help="image files (default: the test set's)")
    parser.add_argument("--weights", help="a .caffemodel for " + DEPLOY)
    parser.add_argument("--start", type=int, default=0, help="the first test image")
    parser.add_argument("--count", type=int, default=8, help="how many test images")
    parser.add_argument("--top", type=int, default=3, help="classes shown per image")
    args = parser.parse_args()

    weights = find_weights(args.weights)
    with open(LABELS) as f:
        label_names = [line.strip() for line in f if line.strip()]

    if args.images:
        names = args.images
        images = [caffe.io.load_image(path, color=False) for path in names]
        truth = None
    else:
        names = ["test[%d]" % i for i in range(args.start, args.start + args.count)]
        images, truth = test_images(args.start, args.count)

    caffe.set_mode_cpu()
    # pycaffe's Classifier: images in [0, 1] are scaled back to [0, 255]
    # (raw_scale), then by 1/256 as the training data was (input_scale).
    classifier = caffe.Classifier(DEPLOY, weights, raw_scale=255, input_scale=1 / 256.)
    probabilities = classifier.predict(list(images), oversample=False)

    print("weights: %s" % weights)
    name_width = max(len(n) for n in names)
    top_heading = "top %d (probability)" % args.top
    if truth is None:
        print("%-*s  %s" % (name_width, "image", top_heading))
    else:
        print("%-*s  %-11s  %s" % (name_width, "image", "true label", top_heading))
    right = 0
    for index, (name, prob) in enumerate(zip(names, probabilities)):
        best = np.argsort(prob)[::-1][:args.top]
        ranked = " | ".join("%s %.3f" % (label_names[c], prob[c]) for c in best)
        if truth is None:
            print("%-*s  %s" % (name_width, name, ranked))
        else:
            right += best[0] == truth[index]
            print("%-*s  %-11s  %s" % (name_width, name, label_names[truth[index]], ranked))
    if truth is not None:
        print("%d of %d right" % (right, len(names)))


if __name__ == "__main__":
    main()
