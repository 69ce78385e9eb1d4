#!/usr/bin/env python3
"""Writes train_test.prototxt: a small SSD for the Fashion-MNIST
detection task of examples/detection (96 x 96 grey canvases, 10 classes plus
background). A five-stage VGG-like base; detection sources at 24 x 24
(through Normalize, as SSD's conv4_3), 12 x 12 and 6 x 6 with priors of
16-64 pixels, the sizes the generator draws items at (20-48). Run it from
anywhere: python3 examples/detection/ssd/generate.py [--check]."""
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from fashion_layers import LABEL_MAP, annotated_data, pool  # noqa: E402

NUM_CLASSES = 11


def conv(name, bottom, outputs, kernel=3, pad=1):
    return (f'layer {{ name: "{name}" type: "Convolution" bottom: "{bottom}" top: "{name}"\n'
            f'  param {{ lr_mult: 1 decay_mult: 1 }} param {{ lr_mult: 2 decay_mult: 0 }}\n'
            f'  convolution_param {{ num_output: {outputs} kernel_size: {kernel} pad: {pad}\n'
            f'    weight_filler {{ type: "xavier" }} bias_filler {{ type: "constant" value: 0 }} }} }}\n')


def relu(blob):
    return f'layer {{ name: "{blob}_relu" type: "ReLU" bottom: "{blob}" top: "{blob}" }}\n'


def data_layers():
    samplers = ("batch_sampler { max_sample: 1 max_trials: 1 }\n"
                "    batch_sampler { sampler { min_scale: 0.5 max_scale: 1 min_aspect_ratio: 0.5"
                " max_aspect_ratio: 2 }\n"
                "                    sample_constraint { min_jaccard_overlap: 0.5 }"
                " max_sample: 1 max_trials: 50 }")
    return (annotated_data("TRAIN",
                           "mirror: true scale: 0.00390625\n"
                           "                    resize_param"
                           " { height: 96 width: 96 resize_mode: WARP }\n"
                           "                    emit_constraint { emit_type: CENTER }\n"
                           "                    expand_param { prob: 0.5 max_expand_ratio: 2 }",
                           f"annotated_data_param {{\n    {samplers}\n    {LABEL_MAP}\n  }}")
            + annotated_data("TEST",
                             "scale: 0.00390625"
                             " resize_param { height: 96 width: 96 resize_mode: WARP }",
                             f"annotated_data_param {{ batch_sampler {{ }} {LABEL_MAP} }}"))


def head(source, priors, prior_box):
    text = ""
    for kind, per_prior in (("loc", 4), ("conf", NUM_CLASSES)):
        name = f"{source}_mbox_{kind}"
        text += conv(name, source, priors * per_prior)
        text += (f'layer {{ name: "{name}_perm" type: "Permute" bottom: "{name}" top: "{name}_perm"\n'
                 f'  permute_param {{ order: 0 order: 2 order: 3 order: 1 }} }}\n'
                 f'layer {{ name: "{name}_flat" type: "Flatten" bottom: "{name}_perm" top: "{name}_flat"\n'
                 f'  flatten_param {{ axis: 1 }} }}\n')
    text += (f'layer {{ name: "{source}_mbox_priorbox" type: "PriorBox" bottom: "{source}" bottom: "data"\n'
             f'  top: "{source}_mbox_priorbox"\n'
             f'  prior_box_param {{ {prior_box} flip: true clip: false\n'
             f'    variance: 0.1 variance: 0.1 variance: 0.2 variance: 0.2 offset: 0.5 }} }}\n')
    return text


def concat(name, sources, suffix, axis):
    bottoms = " ".join(f'bottom: "{s}{suffix}"' for s in sources)
    return (f'layer {{ name: "{name}" type: "Concat" {bottoms} top: "{name}"\n'
            f'  concat_param {{ axis: {axis} }} }}\n')


def net():
    text = 'name: "SSD_Fashion"\n' + data_layers()
    text += conv("conv1", "data", 16) + relu("conv1") + pool("pool1", "conv1")        # 48
    text += conv("conv2", "pool1", 32) + relu("conv2") + pool("pool2", "conv2")       # 24
    text += conv("conv3", "pool2", 64) + relu("conv3")                                # 24
    text += ('layer { name: "conv3_norm" type: "Normalize" bottom: "conv3" top: "conv3_norm"\n'
             '  norm_param { across_spatial: false channel_shared: false\n'
             '    scale_filler { type: "constant" value: 20 } } }\n')
    text += pool("pool3", "conv3") + conv("conv4", "pool3", 64) + relu("conv4")       # 12
    text += pool("pool4", "conv4") + conv("conv5", "pool4", 64) + relu("conv5")       # 6
    sources = ["conv3_norm", "conv4", "conv5"]
    # Priors per cell: 1 + 1 (max_size) + 2 per flipped aspect ratio.
    text += head("conv3_norm", 4, "min_size: 16 max_size: 28 aspect_ratio: 2 step: 4")
    text += head("conv4", 6, "min_size: 28 max_size: 44 aspect_ratio: 2 aspect_ratio: 3 step: 8")
    text += head("conv5", 4, "min_size: 44 max_size: 64 aspect_ratio: 2 step: 16")
    text += concat("mbox_loc", sources, "_mbox_loc_flat", 1)
    text += concat("mbox_conf", sources, "_mbox_conf_flat", 1)
    text += concat("mbox_priorbox", sources, "_mbox_priorbox", 2)
    text += f'''layer {{
  name: "mbox_loss" type: "MultiBoxLoss"
  bottom: "mbox_loc" bottom: "mbox_conf" bottom: "mbox_priorbox" bottom: "label" top: "mbox_loss"
  include {{ phase: TRAIN }}
  propagate_down: true propagate_down: true propagate_down: false propagate_down: false
  loss_param {{ normalization: VALID }}
  multibox_loss_param {{ loc_loss_type: SMOOTH_L1 conf_loss_type: SOFTMAX loc_weight: 1
    num_classes: {NUM_CLASSES} share_location: true match_type: PER_PREDICTION overlap_threshold: 0.5
    use_prior_for_matching: true background_label_id: 0 use_difficult_gt: true
    neg_pos_ratio: 3 neg_overlap: 0.5 code_type: CENTER_SIZE
    ignore_cross_boundary_bbox: false mining_type: MAX_NEGATIVE }}
}}
layer {{ name: "mbox_conf_reshape" type: "Reshape" bottom: "mbox_conf" top: "mbox_conf_reshape"
  include {{ phase: TEST }} reshape_param {{ shape {{ dim: 0 dim: -1 dim: {NUM_CLASSES} }} }} }}
layer {{ name: "mbox_conf_softmax" type: "Softmax" bottom: "mbox_conf_reshape" top: "mbox_conf_softmax"
  include {{ phase: TEST }} softmax_param {{ axis: 2 }} }}
layer {{ name: "mbox_conf_flatten" type: "Flatten" bottom: "mbox_conf_softmax" top: "mbox_conf_flatten"
  include {{ phase: TEST }} flatten_param {{ axis: 1 }} }}
layer {{
  name: "detection_out" type: "DetectionOutput"
  bottom: "mbox_loc" bottom: "mbox_conf_flatten" bottom: "mbox_priorbox" top: "detection_out"
  include {{ phase: TEST }}
  detection_output_param {{ num_classes: {NUM_CLASSES} share_location: true background_label_id: 0
    nms_param {{ nms_threshold: 0.45 top_k: 200 }} code_type: CENTER_SIZE keep_top_k: 50
    confidence_threshold: 0.01 }}
}}
layer {{
  name: "detection_eval" type: "DetectionEvaluate"
  bottom: "detection_out" bottom: "label" top: "detection_eval"
  include {{ phase: TEST }}
  detection_evaluate_param {{ num_classes: {NUM_CLASSES} background_label_id: 0
    overlap_threshold: 0.5 evaluate_difficult_gt: false }}
}}
'''
    return text


def main():
    path = HERE / "train_test.prototxt"
    text = ("# Generated by examples/detection/ssd/generate.py; edit that, not this.\n" + net())
    if "--check" in sys.argv:
        if path.read_text() != text:
            sys.exit(f"{path} is out of date: run {__file__}")
        return
    path.write_text(text)


if __name__ == "__main__":
    main()
