#!/usr/bin/env python3
"""Writes train_test.prototxt and deploy.prototxt: a YOLOv3-tiny scaled to the Fashion-MNIST
detection task of examples/detection (96 x 96 grey canvases, items of 20-48
pixels, 10 classes). Run it from anywhere:
python3 examples/detection/yolo/generate.py [--check].

YOLOv3-tiny's shape (Darknet's yolov3-tiny.cfg): 3 x 3 convolutions with
batch normalization and leaky ReLU (0.1), each halving the size through a
2 x 2 max pool; a 1 x 1 bottleneck; two [yolo] heads, the second on the
first's features upsampled 2x and concatenated with an earlier layer's.
Scaled to the task:
  - four stride-2 pools instead of five, so that the heads see 6 x 6
    (stride 16) and 12 x 12 (stride 8) cells instead of 3 x 3 and 6 x 6:
    Darknet's strides 32 and 16 would put up to four items of a 96-pixel
    canvas into one of nine cells;
  - Darknet's size-2 stride-1 max pool before its 1024-channel convolution
    (it keeps the size) is left out: at 6 x 6 it only blurs the features;
  - channels 16-128 in the base and 256 at the top instead of 16-1024.
The anchors are k-means clusters of the training boxes (anchors.py); the
small three go to the 12 x 12 head, the large three to the 6 x 6 one."""
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from fashion_layers import LABEL_MAP, annotated_data, pool  # noqa: E402

CLASSES = 10  # YOLO has no background class; label maps number them 1..10
INPUT = 96
# python3 examples/detection/yolo/anchors.py data/fashion_detection/train.txt
# (the default data set; mean IoU 0.774 with the nearest anchor)
ANCHORS = [(26, 13), (14, 24), (17, 40), (23, 31), (38, 22), (35, 41)]
PER_ANCHOR = 5 + CLASSES


def conv_bn_leaky(name, bottom, outputs, kernel=3):
    """Convolution without bias, BatchNorm, Scale (the learned gain and
    bias), leaky ReLU: Darknet's [convolutional] with batch_normalize=1."""
    pad = kernel // 2
    return (f'layer {{ name: "{name}" type: "Convolution" bottom: "{bottom}" top: "{name}"\n'
            f'  param {{ lr_mult: 1 decay_mult: 1 }}\n'
            f'  convolution_param {{ num_output: {outputs} kernel_size: {kernel} pad: {pad}'
            f' bias_term: false\n'
            f'    weight_filler {{ type: "msra" }} }} }}\n'
            f'layer {{ name: "{name}_bn" type: "BatchNorm" bottom: "{name}" top: "{name}" }}\n'
            f'layer {{ name: "{name}_scale" type: "Scale" bottom: "{name}" top: "{name}"\n'
            f'  scale_param {{ bias_term: true }} }}\n'
            f'layer {{ name: "{name}_leaky" type: "ReLU" bottom: "{name}" top: "{name}"\n'
            f'  relu_param {{ negative_slope: 0.1 }} }}\n')


def prediction(name, bottom):
    """Darknet's last [convolutional] of a head: 1 x 1, linear, with bias."""
    return (f'layer {{ name: "{name}" type: "Convolution" bottom: "{bottom}" top: "{name}"\n'
            f'  param {{ lr_mult: 1 decay_mult: 1 }} param {{ lr_mult: 2 decay_mult: 0 }}\n'
            f'  convolution_param {{ num_output: {3 * PER_ANCHOR} kernel_size: 1\n'
            f'    weight_filler {{ type: "msra" }} bias_filler {{ type: "constant" value: 0 }} }} }}\n')


def anchors():
    return " ".join(f"anchors: {w} anchors: {h}" for w, h in ANCHORS)


def loss(name, bottom, mask):
    masks = " ".join(f"mask: {m}" for m in mask)
    return (f'layer {{ name: "{name}" type: "YoloLoss" bottom: "{bottom}" bottom: "label"'
            f' bottom: "data" top: "{name}"\n'
            f'  include {{ phase: TRAIN }}\n'
            f'  propagate_down: true propagate_down: false propagate_down: false\n'
            f'  yolo_param {{ num_classes: {CLASSES} {anchors()}\n'
            f'    {masks} ignore_thresh: 0.7 truth_thresh: 1 first_class_label: 1 }} }}\n')


def data_layers():
    annotated_data_param = f"annotated_data_param {{ {LABEL_MAP} }}"
    return (annotated_data("TRAIN",
                           "mirror: true scale: 0.00390625\n"
                           f"    jitter_param {{ jitter: 0.3 min_scale: 0.75 max_scale: 1.25"
                           f" height: {INPUT} width: {INPUT} }}\n"
                           "    emit_constraint { emit_type: CENTER }\n"
                           "    distort_param { brightness_prob: 0.5 brightness_delta: 32\n"
                           "                    contrast_prob: 0.5 contrast_lower: 0.5"
                           " contrast_upper: 1.5 }",
                           annotated_data_param)
            + annotated_data("TEST",
                             "scale: 0.00390625\n"
                             f"    resize_param {{ resize_mode: FIT_LARGE_SIZE_AND_PAD"
                             f" height: {INPUT} width: {INPUT}\n"
                             "                   pad_value: 127.5 }",
                             annotated_data_param))


def trunk():
    """The layers from data to the two heads' raw predictions."""
    text = conv_bn_leaky("conv1", "data", 16) + pool("pool1", "conv1")     # 48
    text += conv_bn_leaky("conv2", "pool1", 32) + pool("pool2", "conv2")    # 24
    text += conv_bn_leaky("conv3", "pool2", 64) + pool("pool3", "conv3")    # 12
    text += conv_bn_leaky("conv4", "pool3", 128) + pool("pool4", "conv4")   # 6 (conv4: route)
    text += conv_bn_leaky("conv5", "pool4", 256)
    text += conv_bn_leaky("conv6", "conv5", 128, kernel=1)                  # the bottleneck
    text += conv_bn_leaky("conv7", "conv6", 256)
    text += prediction("yolo1_pred", "conv7")                               # 6 x 6 head
    text += conv_bn_leaky("conv8", "conv6", 64, kernel=1)
    text += ('layer { name: "up8" type: "Upsample" bottom: "conv8" top: "up8"\n'
             '  upsample_param { scale: 2 } }\n'
             'layer { name: "route" type: "Concat" bottom: "up8" bottom: "conv4" top: "route" }\n')
    text += conv_bn_leaky("conv9", "route", 128)
    text += prediction("yolo2_pred", "conv9")                               # 12 x 12 head
    return text


def detection_output(include):
    return f'''layer {{
  name: "detection_out" type: "YoloDetectionOutput"
  bottom: "yolo1_pred" bottom: "yolo2_pred" bottom: "data" top: "detection_out"{include}
  yolo_param {{ num_classes: {CLASSES} {anchors()}
    mask: 3 mask: 4 mask: 5 mask: 0 mask: 1 mask: 2 first_class_label: 1
    confidence_threshold: 0.005 nms_param {{ nms_threshold: 0.45 }} keep_top_k: 100 }}
}}
'''


def train_test():
    text = 'name: "YOLOv3_tiny_Fashion"\n' + data_layers() + trunk()
    text += loss("yolo1_loss", "yolo1_pred", (3, 4, 5))
    text += loss("yolo2_loss", "yolo2_pred", (0, 1, 2))
    text += detection_output("\n  include { phase: TEST }")
    text += f'''layer {{
  name: "detection_eval" type: "DetectionEvaluate"
  bottom: "detection_out" bottom: "label" top: "detection_eval"
  include {{ phase: TEST }}
  detection_evaluate_param {{ num_classes: {CLASSES + 1} background_label_id: 0
    overlap_threshold: 0.5 evaluate_difficult_gt: false }}
}}
'''
    return text


def deploy():
    """For xtrain detect: one grey 96 x 96 image in, detections out."""
    return ('name: "YOLOv3_tiny_Fashion"\n'
            'layer { name: "data" type: "Input" top: "data"\n'
            f'  input_param {{ shape {{ dim: 1 dim: 1 dim: {INPUT} dim: {INPUT} }} }} }}\n'
            + trunk() + detection_output(""))


def main():
    stale = []
    for name, text in (("train_test.prototxt", train_test()), ("deploy.prototxt", deploy())):
        path = HERE / name
        text = "# Generated by examples/detection/yolo/generate.py; edit that, not this.\n" + text
        if "--check" in sys.argv:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path))
        else:
            path.write_text(text)
    if stale:
        sys.exit(f"out of date: {', '.join(stale)}: run {__file__}")


if __name__ == "__main__":
    main()
