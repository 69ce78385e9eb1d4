#!/usr/bin/env python3
"""YOLO anchors by k-means on the training boxes' sizes (YOLOv2's "dimension
clusters"): boxes are compared by shape alone, both centred at one point,
with the distance d(box, anchor) = 1 - IoU(box, anchor), so that big boxes do
not outweigh small ones as with Euclidean distance.

Reads convert_annoset's list file of a folder in either layout that
make_fashion_detection.py (or a labelling tool) writes:

  IMAGE                    YOLO: IMAGE's boxes in IMAGE with .txt, lines
                           "class cx cy w h" in fractions of the image
  IMAGE ANNOTATION.xml     Pascal VOC: <size> and <bndbox> in pixels

and prints the anchors in pixels of the net's input (--input, the side the
AnnotatedData layer resizes to), smallest area first, as yolo_param lines,
with the mean IoU of each box with its nearest anchor:

  python3 examples/detection/yolo/anchors.py data/fashion_yolo/train.txt

Standard library only; the same --seed gives the same anchors."""

import argparse
import os
import random
import sys
import xml.etree.ElementTree as ElementTree


def yolo_boxes(path):
    """(w, h) fractions of the image of each line of a YOLO label file."""
    sizes = []
    with open(path) as f:
        for number, line in enumerate(f, start=1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 5:
                sys.exit(f"{path}:{number}: expected 'class cx cy w h', got {line.strip()!r}")
            sizes.append((float(fields[3]), float(fields[4])))
    return sizes


def voc_boxes(path):
    """(w, h) fractions of the image of each <object> of a Pascal VOC file."""
    root = ElementTree.parse(path).getroot()
    width = float(root.findtext("size/width"))
    height = float(root.findtext("size/height"))
    sizes = []
    for box in root.iter("bndbox"):
        w = float(box.findtext("xmax")) - float(box.findtext("xmin"))
        h = float(box.findtext("ymax")) - float(box.findtext("ymin"))
        sizes.append((w / width, h / height))
    return sizes


def read_boxes(list_file):
    root = os.path.dirname(os.path.abspath(list_file))
    sizes = []
    with open(list_file) as f:
        for line in f:
            fields = line.split()
            if not fields:
                continue
            if len(fields) > 1 and fields[1].endswith(".xml"):
                sizes += voc_boxes(os.path.join(root, fields[1]))
            else:
                labels = fields[1] if len(fields) > 1 else os.path.splitext(fields[0])[0] + ".txt"
                sizes += yolo_boxes(os.path.join(root, labels))
    return [(w, h) for w, h in sizes if w > 0 and h > 0]


def iou(box, anchor):
    """IoU of two sizes placed at the same centre."""
    inter = min(box[0], anchor[0]) * min(box[1], anchor[1])
    return inter / (box[0] * box[1] + anchor[0] * anchor[1] - inter)


def kmeans(sizes, k, rng, rounds=300):
    """Anchors from k-means++ seeding, then Lloyd steps until no box moves."""
    anchors = [rng.choice(sizes)]
    while len(anchors) < k:
        far = [min(1 - iou(s, a) for a in anchors) ** 2 for s in sizes]
        anchors.append(rng.choices(sizes, weights=far)[0])
    nearest = None
    for _ in range(rounds):
        assignment = [max(range(k), key=lambda j: iou(s, anchors[j])) for s in sizes]
        if assignment == nearest:
            break
        nearest = assignment
        for j in range(k):
            members = [s for s, a in zip(sizes, assignment) if a == j]
            if members:  # the mean size of the cluster (YOLOv2's centroid)
                anchors[j] = (sum(m[0] for m in members) / len(members),
                              sum(m[1] for m in members) / len(members))
    return sorted(anchors, key=lambda a: a[0] * a[1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("list_file", help="convert_annoset's list file of the training set")
    parser.add_argument("--clusters", type=int, default=6,
                        help="anchors in all (YOLOv3-tiny: 6, 3 per head)")
    parser.add_argument("--input", type=int, default=96, help="the net's input side in pixels")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    sizes = read_boxes(args.list_file)
    if len(sizes) < args.clusters:
        sys.exit(f"{args.list_file}: {len(sizes)} boxes, fewer than --clusters {args.clusters}")
    anchors = kmeans(sizes, args.clusters, random.Random(args.seed))
    mean_iou = sum(max(iou(s, a) for a in anchors) for s in sizes) / len(sizes)
    pixels = [(round(w * args.input), round(h * args.input)) for w, h in anchors]
    print(f"# {len(sizes)} boxes, {args.clusters} anchors at input {args.input}: "
          f"mean IoU with the nearest anchor {mean_iou:.3f}")
    print(" ".join(f"anchors: {w} anchors: {h}" for w, h in pixels))


if __name__ == "__main__":
    main()
