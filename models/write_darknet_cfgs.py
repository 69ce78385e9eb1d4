#!/usr/bin/env python3
"""Writes models/yolov3/yolov3.cfg and models/yolov3_tiny/yolov3-tiny.cfg.

The two nets of the YOLOv3 paper (Redmon and Farhadi, 2018) as Darknet
publishes them, for the 80 COCO classes at 416 x 416, in Darknet's cfg format
(so Darknet reads them, and its published .weights fit them), written from
the architecture: Darknet-53 (a 3x3 convolution, then five stages, each a
stride-2 3x3 convolution and 1, 2, 8, 8, 4 residual blocks of a 1x1 and a 3x3
convolution) with heads at strides 32, 16 and 8; the tiny net's seven 3x3
convolutions and six max-poolings with heads at strides 32 and 16.

Usage: python3 models/write_darknet_cfgs.py   (from the repository root)
"""
import os

CLASSES = 80
# Anchors (width, height in input pixels) of the published nets, from k-means
# on COCO's boxes; each head predicts the anchors of its mask.
YOLOV3_ANCHORS = [(10, 13), (16, 30), (33, 23), (30, 61), (62, 45), (59, 119),
                  (116, 90), (156, 198), (373, 326)]
TINY_ANCHORS = [(10, 14), (23, 27), (37, 58), (81, 82), (135, 169), (344, 319)]


class Cfg:
    """Sections appended in order; `count` is the next layer's number."""

    def __init__(self, header):
        self.lines = header
        self.count = 0

    def section(self, name, comment=None, **keys):
        if comment:
            self.lines.append(f"# {comment}")
        self.lines.append(f"[{name}]")
        for key, value in keys.items():
            self.lines.append(f"{key}={value}")
        self.lines.append("")
        self.count += 1
        return self.count - 1

    def conv(self, filters, size, stride=1, comment=None):
        return self.section("convolutional", comment, filters=filters, size=size,
                            stride=stride, pad=1, batch_normalize=1, activation="leaky")

    def prediction(self, anchors_in_mask):
        # Per anchor: x, y, w, h, objectness and a score per class.
        return self.section("convolutional", "predictions, linear, with biases",
                            filters=anchors_in_mask * (5 + CLASSES), size=1, stride=1,
                            pad=1, activation="linear")

    def yolo(self, mask, anchors):
        return self.section(
            "yolo", "a detection head: decodes and trains the predictions above",
            classes=CLASSES, num=len(anchors), mask=",".join(str(m) for m in mask),
            anchors=", ".join(f"{w},{h}" for w, h in anchors),
            ignore_thresh=".7", truth_thresh="1", jitter=".3", random="1")

    def text(self):
        return "\n".join(self.lines)


def net_header(title, batch, subdivisions):
    return [
        f"# {title}: 80 COCO classes, 416 x 416 input.",
        "# Written by models/write_darknet_cfgs.py; Darknet's cfg format.",
        "",
        "[net]",
        "width=416",
        "height=416",
        "channels=3",
        "# Training (xtrain's solver and data layers say these; the import notes them):",
        f"batch={batch}",
        f"subdivisions={subdivisions}",
        "learning_rate=0.001",
        "momentum=0.9",
        "decay=0.0005",
        "burn_in=1000",
        "max_batches=500200",
        "policy=steps",
        "steps=400000,450000",
        "scales=.1,.1",
        "angle=0",
        "hue=.1",
        "saturation=1.5",
        "exposure=1.5",
        "",
    ]


def yolov3():
    cfg = Cfg(net_header("YOLOv3 (Darknet-53 backbone, three heads)", 64, 16))
    cfg.conv(32, 3, comment="Darknet-53")
    stage_ends = []
    for filters, blocks in [(64, 1), (128, 2), (256, 8), (512, 8), (1024, 4)]:
        cfg.conv(filters, 3, stride=2, comment=f"down to {filters} channels, stride 2")
        for _ in range(blocks):
            cfg.conv(filters // 2, 1)
            cfg.conv(filters, 3)
            last = cfg.section("shortcut", "residual: add the block's input",
                               **{"from": -3, "activation": "linear"})
        stage_ends.append(last)
    # Heads from the coarsest map on; each later one upsamples the branch
    # before the previous head and joins the backbone's map of its size.
    joins = [None, stage_ends[3], stage_ends[2]]
    masks = [[6, 7, 8], [3, 4, 5], [0, 1, 2]]
    widths = [512, 256, 128]
    for head, (join, mask, width) in enumerate(zip(joins, masks, widths)):
        if join is not None:
            cfg.section("route", "back to the branch before the last head", layers=-4)
            cfg.conv(width, 1)
            cfg.section("upsample", None, stride=2)
            cfg.section("route", "join the backbone's map of this size",
                        layers=f"-1, {join}")
        # Three 1x1 / 3x3 pairs; the next head's route (-4) starts again
        # from the last 1x1.
        for _ in range(3):
            cfg.conv(width, 1)
            cfg.conv(width * 2, 3)
        cfg.prediction(len(mask))
        cfg.yolo(mask, YOLOV3_ANCHORS)
    return cfg.text()


def yolov3_tiny():
    cfg = Cfg(net_header("YOLOv3-tiny (two heads)", 64, 2))
    for filters in [16, 32, 64, 128, 256]:
        last_conv = cfg.conv(filters, 3)
        cfg.section("maxpool", None, size=2, stride=2)
    stride16 = last_conv  # 256 channels, before the fifth pooling
    cfg.conv(512, 3)
    cfg.section("maxpool", "stride 1: the map stays 13 x 13", size=2, stride=1)
    cfg.conv(1024, 3)
    cfg.conv(256, 1, comment="the stride-32 head")
    cfg.conv(512, 3)
    cfg.prediction(3)
    cfg.yolo([3, 4, 5], TINY_ANCHORS)
    cfg.section("route", "back to the 256-channel 1x1", layers=-4)
    cfg.conv(128, 1)
    cfg.section("upsample", None, stride=2)
    cfg.section("route", "join the stride-16 map", layers=f"-1, {stride16}")
    cfg.conv(256, 3)
    cfg.prediction(3)
    cfg.yolo([0, 1, 2], TINY_ANCHORS)
    return cfg.text()


def main():
    root = os.path.dirname(os.path.abspath(__file__))
    for folder, name, text in [("yolov3", "yolov3.cfg", yolov3()),
                               ("yolov3_tiny", "yolov3-tiny.cfg", yolov3_tiny())]:
        os.makedirs(os.path.join(root, folder), exist_ok=True)
        with open(os.path.join(root, folder, name), "w") as out:
            out.write(text)


if __name__ == "__main__":
    main()
