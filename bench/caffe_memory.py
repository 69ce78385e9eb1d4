#!/usr/bin/env python3
"""Estimates the peak resident memory of BVLC Caffe 1.0's `caffe time`
(forward + backward, CPU) on a net, for xtrain issue 6 ("peak resident
memory <= 70% of Caffe's"). Caffe is not installable here, so this is a
model of Caffe 1.0's allocations, computed from the blob shapes that
`xtrain time` logs while it sets the net up.

  bench/caffe_memory.py NET.prototxt [--xtrain build/bin/xtrain | --log FILE]
                        [--baseline-mib M]

With --xtrain (the default: build/bin/xtrain) the script runs `xtrain time
--iterations=1` on the net for its setup log, and on a tiny net for the
process baseline; --log reads a saved log instead, and --baseline-mib gives
the baseline. Prints a per-category breakdown and the total in MiB.

The model (Caffe 1.0 source files named in brackets; all memory is the host
heap, float = 4 bytes, int = 4 bytes):

* Lazy allocation [src/caffe/syncedmem.cpp, src/caffe/blob.cpp]: a Blob
  reshape only records a size; a SyncedMemory allocates (and zeroes, so the
  pages are resident) the first time anybody asks for its pointer. A blob's
  data and diff are separate SyncedMemorys, so a diff nobody touches costs
  nothing.
* Every top a layer creates has data; in-place tops are the same blob as
  their bottom [src/caffe/net.cpp AppendTop]. Split tops share the bottom's
  data but own their diffs [src/caffe/layers/split_layer.cpp Reshape:
  ShareData only]; Flatten and Reshape tops share data and diff.
* A diff is allocated when backward writes it (a consumer that needs
  backward and propagates down to it), when the producer's backward reads it
  (producer needs backward), or when the blob is a loss (Layer::SetLossWeights
  writes the loss weight into the diff) [include/caffe/layer.hpp]. So in
  `caffe time` the data layer's tops have no diff: conv1 does not propagate
  down to the images, the loss not to the labels [tools/caffe.cpp time()
  calls every layer's Backward with bottom_need_backward].
* Parameters: data always (filled at setup); diff when lr_mult != 0
  (param_propagate_down, [src/caffe/net.cpp AppendParam]). BatchNorm's three
  statistics get lr_mult 0 [src/caffe/layers/batch_norm_layer.cpp
  LayerSetUp], so data only.
* Layer-internal buffers:
  - Convolution [src/caffe/layers/base_conv_layer.cpp]: one col_buffer_ per
    layer of one image's im2col size, (C_in * kh * kw) x (H_out * W_out)
    floats. It stays unallocated only for a 1x1, stride-1, pad-0 ("is_1x1_")
    convolution that does not propagate down: backward_cpu_gemm asks for
    col_buffer_.mutable_cpu_data() even when it then writes the bottom diff
    directly. bias_multiplier_: H_out * W_out floats with a bias.
  - Pooling [src/caffe/layers/pooling_layer.cpp]: MAX with one top keeps
    max_idx_, an int per top value; STOCHASTIC in TRAIN keeps rand_idx_.
  - LRN [src/caffe/layers/lrn_layer.cpp]: ACROSS_CHANNELS keeps scale_ (a
    float per bottom value) and makes one image's padded_square in forward
    and padded_ratio + accum_ratio in backward as temporaries (freed, so
    they count once, as the transient peak). WITHIN_CHANNEL runs five
    internal layers: split (two diffs), square, pool (AVE) and power tops
    (data + diff each), product (Eltwise PROD into the real top).
  - Dropout [src/caffe/layers/dropout_layer.cpp]: rand_vec_, an unsigned
    int per value, in TRAIN.
  - BatchNorm [src/caffe/layers/batch_norm_layer.cpp]: mean_, variance_ (C),
    temp_ and x_norm_ (bottom-sized, written every forward), x_norm_'s diff
    (bottom-sized, when in place: backward copies the top diff there first),
    batch_sum_multiplier_ (N), spatial_sum_multiplier_ (H*W), num_by_chans_
    (N*C).
  - Scale [src/caffe/layers/scale_layer.cpp]: temp_ (bottom-sized) when in
    place, sum_result_ (outer * scale_dim), sum_multiplier_ (max(outer,
    inner)); with bias_term its internal Bias layer's bias_multiplier_
    (inner) [src/caffe/layers/bias_layer.cpp].
  - SoftmaxWithLoss [src/caffe/layers/softmax_loss_layer.cpp]: prob_
    (bottom-sized) and its internal Softmax layer's sum_multiplier_
    (channels) and scale_ (outer * inner) [src/caffe/layers/softmax_layer.cpp].
  - InnerProduct [src/caffe/layers/inner_product_layer.cpp]: bias_multiplier_
    (M) with a bias.
  - Eltwise [src/caffe/layers/eltwise_layer.cpp]: max_idx_ (int per top
    value) for MAX only; SUM and PROD keep nothing.
  - Data layers [src/caffe/layers/base_data_layer.cpp]: Data/ImageData keep
    PREFETCH_COUNT = 3 batches (data + label) and one transformed image; the
    bench nets use DummyData, whose tops are all it has.
* Process baseline: the executable, its libraries, thread stacks and the
  BLAS library's own buffers. Caffe's cannot be measured here, so xtrain's own
  peak RSS on a tiny net stands in for it (say so when quoting the figure).
"""
import argparse
import collections
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_nets import XTRAIN_RSS, layer_shapes, product  # noqa: E402
from make_bench_nets import REPO, read_prototxt_file  # noqa: E402

FLOAT = 4
INT = 4
MIB = 1024.0 * 1024.0
DATA_LAYER_PREFETCH = 3  # Caffe 1.0's PREFETCH_COUNT

BACKWARD_LINE = re.compile(r"net\.cpp:\d+\] (\S+) (needs|does not need) backward computation\.")

# A tiny net whose `xtrain time` RSS is the process baseline.
TINY_NET = """
name: "tiny"
layer { name: "data" type: "DummyData" top: "data" top: "label"
  dummy_data_param { shape { dim: 1 dim: 4 } shape { dim: 1 } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
  inner_product_param { num_output: 2 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
"""


def backward_needs(log):
    """{layer name: whether it needs backward}, from the setup log (xtrain
    decides it as Caffe's Net::Init does)."""
    return {m.group(1): m.group(2) == "needs" for m in BACKWARD_LINE.finditer(log)}


def spatial_pair(param, name, default, name_h=None, name_w=None):
    """(h, w) of a convolution/pooling field given as name_h and name_w, or
    as a value for both (repeated: one per spatial axis)."""
    name_h, name_w = name_h or name + "_h", name_w or name + "_w"
    if param is None:
        return default, default
    if param.get(name_h) is not None:
        return param.number(name_h, default), param.number(name_w, default)
    values = [int(v) for v in param.all(name)]
    if not values:
        return default, default
    return values[0], values[-1]


def kernel_pair(param):
    return spatial_pair(param, "kernel_size", 1, "kernel_h", "kernel_w")


class Ledger:
    """Bytes by category, and the largest transient (freed) buffer."""

    def __init__(self):
        self.bytes = collections.OrderedDict()
        self.transient = 0

    def add(self, category, size):
        self.bytes[category] = self.bytes.get(category, 0) + size

    def add_transient(self, size):
        self.transient = max(self.transient, size)


def estimate(layers, definitions, needs_backward, phase="TRAIN"):
    """Caffe 1.0's bytes by category for the net whose setup is `layers`
    (cpu_nets.layer_shapes), `definitions` ({name: prototxt Message}) and
    `needs_backward` ({layer name: bool}); the Split layers xtrain inserts
    are recognised by having no definition."""
    ledger = Ledger()
    train = phase == "TRAIN"
    shapes = {}
    # Which blob's storage a name uses (Split tops: the bottom's data;
    # Flatten/Reshape tops: the bottom's data and diff).
    data_owner, diff_owner = {}, {}
    diff_touched = set()
    blob_needs_backward = collections.defaultdict(bool)
    order = []  # blobs with their own data, in creation order

    for layer in layers:
        definition = definitions.get(layer["name"])
        kind = definition.get("type") if definition is not None else "Split"
        backward = train and needs_backward.get(layer["name"], False)
        bottoms, tops = layer["bottoms"], layer["tops"]
        bottom_shapes, top_shapes = layer["bottom_shapes"], layer["top_shapes"]
        propagate = [True] * len(bottoms)
        if definition is not None and definition.all("propagate_down"):
            propagate = [v == "true" for v in definition.all("propagate_down")]
        propagate_down = [backward and blob_needs_backward[b] and p
                          for b, p in zip(bottoms, propagate)]

        for name, shape in zip(tops, top_shapes):
            if name in shapes:  # in place: the bottom's blob
                continue
            shapes[name] = shape
            if kind == "Split":
                data_owner[name], diff_owner[name] = data_owner[bottoms[0]], name
            elif kind in ("Flatten", "Reshape"):
                data_owner[name], diff_owner[name] = data_owner[bottoms[0]], diff_owner[bottoms[0]]
            else:
                data_owner[name], diff_owner[name] = name, name
                order.append(name)
        for name in tops:
            blob_needs_backward[name] |= backward
        # Diffs: written by a consumer that propagates down, read by a
        # producer that runs backward, or holding a loss weight.
        for name, down in zip(bottoms, propagate_down):
            if down:
                diff_touched.add(diff_owner[name])
        if backward:
            for name in tops:
                diff_touched.add(diff_owner[name])
        if kind.endswith("Loss") or (definition is not None and definition.all("loss_weight")):
            weights = definition.all("loss_weight") if definition is not None else []
            for i, name in enumerate(tops):
                weight = float(weights[i]) if i < len(weights) else (1.0 if i == 0 else 0.0)
                if weight != 0:
                    diff_touched.add(diff_owner[name])

        layer_buffers(ledger, kind, definition, bottom_shapes, top_shapes, bottoms, tops,
                      backward, propagate_down, train)
        layer_params(ledger, kind, definition, bottom_shapes, backward)

    for name in order:
        ledger.add("activations data", product(shapes[name]) * FLOAT)
    for name in diff_touched:
        ledger.add("activations diff", product(shapes[name]) * FLOAT)
    return ledger


def conv_geometry(definition):
    """(convolution_param, kh, kw, is_1x1) as BaseConvolutionLayer sees it."""
    param = definition.get("convolution_param")
    kh, kw = kernel_pair(param)
    strides = spatial_pair(param, "stride", 1)
    pads = spatial_pair(param, "pad", 0)
    dilation = [int(v) for v in param.all("dilation")] or [1]
    is_1x1 = (kh, kw) == (1, 1) and strides == (1, 1) and pads == (0, 0) and set(dilation) == {1}
    return param, kh, kw, is_1x1


def layer_params(ledger, kind, definition, bottom_shapes, backward):
    """The learnable (and statistics) blobs: data always, diff when the
    backward pass accumulates into it (lr_mult != 0)."""
    if definition is None or not bottom_shapes:
        return
    bottom = bottom_shapes[0]
    sizes = []
    if kind in ("Convolution", "Deconvolution"):
        param = definition.get("convolution_param")
        groups = param.number("group", 1)
        kh, kw = kernel_pair(param)
        outputs = param.number("num_output", 0)
        if kind == "Convolution":
            sizes.append(outputs * bottom[1] // groups * kh * kw)
        else:
            sizes.append(bottom[1] * outputs // groups * kh * kw)
        if param.flag("bias_term", True):
            sizes.append(outputs)
    elif kind == "InnerProduct":
        param = definition.get("inner_product_param")
        axis = param.number("axis", 1) % len(bottom)
        outputs = param.number("num_output", 0)
        sizes.append(outputs * product(bottom[axis:]))
        if param.flag("bias_term", True):
            sizes.append(outputs)
    elif kind == "BatchNorm":
        channels = bottom[1] if len(bottom) > 1 else 1
        for size in (channels, channels, 1):
            ledger.add("BatchNorm statistics", size * FLOAT)
        return
    elif kind in ("Scale", "Bias"):
        param = definition.get(kind.lower() + "_param")
        axis = param.number("axis", 1) if param else 1
        axes = param.number("num_axes", 1) if param else 1
        size = product(bottom[axis:] if axes == -1 else bottom[axis:axis + axes])
        sizes.append(size)
        if kind == "Scale" and param is not None and param.flag("bias_term", False):
            sizes.append(size)
    elif kind == "PReLU":
        param = definition.get("prelu_param")
        sizes.append(1 if param is not None and param.flag("channel_shared", False) else bottom[1])
    specs = definition.all("param")
    for i, size in enumerate(sizes):
        ledger.add("params data", size * FLOAT)
        lr_mult = specs[i].number("lr_mult", 1) if i < len(specs) else 1
        if backward and lr_mult != 0:
            ledger.add("params diff", size * FLOAT)


def layer_buffers(ledger, kind, definition, bottom_shapes, top_shapes, bottoms, tops, backward,
                  propagate_down, train):
    """Each layer type's internal buffers, as Caffe 1.0's layers allocate them."""
    bottom = bottom_shapes[0] if bottom_shapes else []
    top = top_shapes[0] if top_shapes else []
    in_place = bool(bottoms) and bool(tops) and bottoms[0] == tops[0]
    if kind in ("Convolution", "Deconvolution"):
        param, kh, kw, is_1x1 = conv_geometry(definition)
        image_in = bottom if kind == "Convolution" else top
        image_out = top if kind == "Convolution" else bottom
        if not is_1x1 or (propagate_down and propagate_down[0]):
            ledger.add("conv col_buffer_", image_in[1] * kh * kw * product(image_out[2:]) * FLOAT)
        if param.flag("bias_term", True):
            ledger.add("multipliers", product(top[2:]) * FLOAT)
    elif kind == "Pooling":
        param = definition.get("pooling_param")
        method = param.get("pool", "MAX") if param else "MAX"
        if method == "MAX" and len(tops) == 1:
            ledger.add("pooling max_idx_", product(top) * INT)
        elif method == "STOCHASTIC" and train:
            ledger.add("pooling rand_idx_", product(top) * FLOAT)
    elif kind == "LRN":
        param = definition.get("lrn_param")
        size = param.number("local_size", 5) if param else 5
        region = param.get("norm_region", "ACROSS_CHANNELS") if param else "ACROSS_CHANNELS"
        plane = product(bottom[2:])
        if region == "ACROSS_CHANNELS":
            ledger.add("LRN scale_", product(bottom) * FLOAT)
            padded = (bottom[1] + size - 1) * plane * FLOAT
            ledger.add_transient(padded + (plane * FLOAT if backward else 0))
        else:
            count = product(bottom)
            internal = 3 * count * FLOAT  # square, pool, power outputs
            if backward:
                internal += 3 * count * FLOAT + 2 * count * FLOAT  # their diffs, split diffs
            ledger.add("LRN internal layers", internal)
    elif kind == "Dropout" and train:
        ledger.add("Dropout rand_vec_", product(bottom) * INT)
    elif kind == "BatchNorm":
        channels = bottom[1] if len(bottom) > 1 else 1
        count = product(bottom)
        ledger.add("BatchNorm temp_ + x_norm_", 2 * count * FLOAT)
        if in_place and backward:
            ledger.add("BatchNorm x_norm_ diff", count * FLOAT)
        ledger.add("multipliers", (2 * channels + bottom[0] + product(bottom[2:]) +
                                   bottom[0] * channels) * FLOAT)
    elif kind == "Scale":
        param = definition.get("scale_param")
        axis = param.number("axis", 1) if param else 1
        axes = param.number("num_axes", 1) if param else 1
        outer = product(bottom[:axis])
        dim = product(bottom[axis:] if axes == -1 else bottom[axis:axis + axes])
        inner = product(bottom[axis + axes:]) if axes != -1 else 1
        if in_place:
            ledger.add("Scale temp_", product(bottom) * FLOAT)
        ledger.add("multipliers", max(outer, inner) * FLOAT)
        if backward and outer != 1 and inner != 1 and outer * dim != 1:
            ledger.add("multipliers", outer * dim * FLOAT)  # sum_result_
        if param is not None and param.flag("bias_term", False):
            ledger.add("multipliers", inner * FLOAT)  # the Bias layer's bias_multiplier_
    elif kind == "Bias":
        param = definition.get("bias_param")
        axis = param.number("axis", 1) if param else 1
        axes = param.number("num_axes", 1) if param else 1
        ledger.add("multipliers", (product(bottom[axis + axes:]) if axes != -1 else 1) * FLOAT)
    elif kind in ("SoftmaxWithLoss", "Softmax"):
        param = definition.get("softmax_param")
        axis = (param.number("axis", 1) if param else 1) % len(bottom)
        if kind == "SoftmaxWithLoss":
            ledger.add("SoftmaxWithLoss prob_", product(bottom) * FLOAT)
        ledger.add("multipliers", (bottom[axis] + product(bottom[:axis]) *
                                   product(bottom[axis + 1:])) * FLOAT)
    elif kind == "InnerProduct":
        param = definition.get("inner_product_param")
        axis = param.number("axis", 1) % len(bottom)
        if param.flag("bias_term", True):
            ledger.add("multipliers", product(bottom[:axis]) * FLOAT)
    elif kind == "Eltwise":
        param = definition.get("eltwise_param")
        if param is not None and param.get("operation") == "MAX" and len(tops) == 1:
            ledger.add("Eltwise max_idx_", product(top) * INT)
    elif kind in ("Data", "ImageData"):
        batch = sum(product(shape) for shape in top_shapes)
        ledger.add("data layer prefetch", DATA_LAYER_PREFETCH * batch * FLOAT +
                   product(top[1:]) * FLOAT)


def run(command, cwd=REPO):
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        lines = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()
        sys.exit("%s failed: %s" % (" ".join(command), lines[-1]))
    return done


def measure_baseline_mib(xtrain):
    """xtrain's own peak RSS on a net of a few bytes: the stand-in for the
    process baseline (libraries, threads, BLAS buffers)."""
    with tempfile.NamedTemporaryFile("w", suffix=".prototxt") as net:
        net.write(TINY_NET)
        net.flush()
        done = run([xtrain, "time", "--model=" + net.name, "--iterations=1"])
    return float(XTRAIN_RSS.search(done.stdout).group(1))


def report(ledger, baseline_mib, out=sys.stdout):
    total = sum(ledger.bytes.values()) + ledger.transient
    width = max([len(k) for k in ledger.bytes] + [28])
    for category, size in sorted(ledger.bytes.items(), key=lambda item: -item[1]):
        out.write("%-*s %10.1f MiB\n" % (width, category, size / MIB))
    if ledger.transient:
        out.write("%-*s %10.1f MiB\n" % (width, "largest temporary (LRN)", ledger.transient / MIB))
    out.write("%-*s %10.1f MiB\n" % (width, "blobs and buffers", total / MIB))
    if baseline_mib is not None:
        out.write("%-*s %10.1f MiB  (xtrain's RSS on a tiny net, as a stand-in)\n"
                  % (width, "process baseline", baseline_mib))
        out.write("%-*s %10.1f MiB\n" % (width, "Caffe 1.0 peak RSS estimate",
                                         total / MIB + baseline_mib))
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("net", help="the net prototxt (a TRAIN net, as `caffe time` runs it)")
    parser.add_argument("--xtrain", default=str(REPO / "build" / "bin" / "xtrain"))
    parser.add_argument("--log", help="a saved `xtrain time` log of the net's setup")
    parser.add_argument("--baseline-mib", type=float,
                        help="process baseline in MiB (default: measured with --xtrain)")
    args = parser.parse_args()
    net_path = Path(args.net).resolve()
    if args.log:
        log = Path(args.log).read_text()
    else:
        log = run([args.xtrain, "time", "--model=" + str(net_path), "--iterations=1"]).stderr
    baseline = args.baseline_mib
    if baseline is None and not args.log:
        baseline = measure_baseline_mib(args.xtrain)
    definitions = {layer.get("name"): layer
                   for layer in read_prototxt_file(net_path).all("layer")}
    ledger = estimate(layer_shapes(log), definitions, backward_needs(log))
    print("BVLC Caffe 1.0 `caffe time` memory model for %s" % net_path.name)
    report(ledger, baseline)


if __name__ == "__main__":
    main()
