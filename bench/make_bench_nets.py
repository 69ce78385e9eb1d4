#!/usr/bin/env python3
"""Writes the benchmark nets in bench/nets/ from the models in models/.

Each bench net is its model's training net with the Data layers swapped for
one DummyData layer of the benchmark's batch size, so that `xtrain time`
needs no LMDB and measures the layers alone. Everything else, the losses
included, is copied from the model's text unchanged (comments too); the
layers that exist only in the TEST phase (Accuracy) are left out.

  python3 bench/make_bench_nets.py           write bench/nets/*.prototxt
  python3 bench/make_bench_nets.py --check   write nothing; exit 1 if stale

Also the small prototxt reader that bench/cpu_nets.py uses to count FLOPs
and parameters. Python 3 standard library only.
"""
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NETS_DIR = REPO / "bench" / "nets"


class BenchNet:
    """One benchmark: a model's training net at a fixed batch size."""

    def __init__(self, name, model, batch, image_shape, label):
        self.name = name
        self.model = model  # relative to the repo root
        self.batch = batch
        self.image_shape = image_shape  # channels, height, width as the net sees them
        self.label = label  # how the table names it

    @property
    def path(self):
        return NETS_DIR / (self.name + ".prototxt")


# The five nets of the CPU benchmark (xtrain issue 6). The image shapes are
# what the models' Data layers deliver: the LMDB image size, or the crop.
NETS = [
    BenchNet("lenet", "models/lenet/lenet_train_test.prototxt", 64, (1, 28, 28), "LeNet"),
    BenchNet("cifar10_quick", "models/cifar10_quick/cifar10_quick_train_test.prototxt", 100,
             (3, 32, 32), "CIFAR10-quick"),
    BenchNet("alexnet", "models/alexnet/train_val.prototxt", 32, (3, 227, 227), "AlexNet"),
    BenchNet("googlenet", "models/googlenet/train_val.prototxt", 16, (3, 224, 224), "GoogLeNet"),
    BenchNet("resnet50", "models/resnet50/train_val.prototxt", 16, (3, 224, 224), "ResNet-50"),
]

DATA_LAYER_TYPES = {"Data", "ImageData", "HDF5Data", "WindowData", "MemoryData", "Input",
                    "DummyData"}

# --- prototxt reader ---------------------------------------------------------

TOKEN = re.compile(r'''\s+|\#[^\n]*|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|[{}:;,]|[^\s{}:;,"'\#]+''')


class Message:
    """A parsed protobuf text message: its fields in order, as (name, value)
    pairs whose value is a str (quotes removed) or a nested Message."""

    def __init__(self):
        self.fields = []
        self.spans = []  # (start, end) offsets of each field in the text

    def all(self, name):
        return [value for key, value in self.fields if key == name]

    def get(self, name, default=None):
        values = self.all(name)
        return values[0] if values else default

    def number(self, name, default):
        """A numeric field as int (or float if it has a fraction)."""
        value = self.get(name)
        if value is None:
            return default
        return float(value) if re.search(r"[.eE]", value) else int(value)

    def flag(self, name, default):
        value = self.get(name)
        return default if value is None else value == "true"


def tokens_of(text, origin):
    position = 0
    while position < len(text):
        match = TOKEN.match(text, position)
        if match is None:
            line = text.count("\n", 0, position) + 1
            raise ValueError("%s:%d: cannot read %r" % (origin, line, text[position:position + 20]))
        token = match.group()
        if not token[0].isspace() and token[0] != "#":
            yield token, match.start(), match.end()
        position = match.end()


def read_prototxt(text, origin="<text>"):
    """Parses protobuf text format (the subset nets use: scalar and message
    fields, no lists in brackets) into a Message whose spans index `text`."""
    tokens = list(tokens_of(text, origin))
    index = 0

    def fail(why):
        offset = tokens[index][1] if index < len(tokens) else len(text)
        raise ValueError("%s:%d: %s" % (origin, text.count("\n", 0, offset) + 1, why))

    def message(closing):
        nonlocal index
        result = Message()
        while index < len(tokens) and tokens[index][0] != closing:
            name, start, _ = tokens[index]
            index += 1
            if index < len(tokens) and tokens[index][0] == ":":
                index += 1
            if index >= len(tokens):
                fail("field %s has no value" % name)
            if tokens[index][0] == "{":
                index += 1
                value = message("}")
                if index >= len(tokens):
                    fail("unclosed { of field %s" % name)
            else:
                value = tokens[index][0]
                if value in "{}[]:":
                    fail("unexpected %r after %s" % (value, name))
                if value[0] in "\"'":
                    value = value[1:-1]
            end = tokens[index][2]
            index += 1
            while index < len(tokens) and tokens[index][0] in ";,":
                index += 1
            result.fields.append((name, value))
            result.spans.append((start, end))
        return result

    net = message(None)
    if index < len(tokens):
        fail("unmatched }")
    return net


def read_prototxt_file(path):
    return read_prototxt(Path(path).read_text(), str(path))


def only_in_test_phase(layer):
    phases = [rule.get("phase") for rule in layer.all("include")]
    return bool(phases) and all(phase == "TEST" for phase in phases)


# --- generator ---------------------------------------------------------------


def header(net):
    channels, height, width = net.image_shape
    return ("# Benchmark net written by bench/make_bench_nets.py from\n"
            "# %s -- edit that model or the script, not this file.\n"
            "# The model's Data layers are replaced by one DummyData layer: a batch\n"
            "# of %d constant %dx%dx%d images with label 0, filled once (constant\n"
            "# fillers are not refilled), so that `xtrain time` measures the layers\n"
            "# and no data loading. The TEST-only layers are left out; all else,\n"
            "# the loss included, is the model's own.\n"
            % (net.model, net.batch, channels, height, width))


def dummy_data_layer(net, tops):
    dims = " ".join("dim: %d" % d for d in (net.batch,) + tuple(net.image_shape))
    return ('layer {\n'
            '  name: "data"  type: "DummyData"\n'
            '  top: "%s"  top: "%s"\n'
            '  dummy_data_param {\n'
            '    shape { %s }\n'
            '    shape { dim: %d }\n'
            '    data_filler { type: "constant"  value: 0.5 }\n'
            '    data_filler { type: "constant"  value: 0 }\n'
            '  }\n'
            '}\n' % (tops[0], tops[1], dims, net.batch))


def check_crop(net, data_layer):
    """The model's training crop must be the image size NETS gives."""
    transform = data_layer.get("transform_param")
    crop = transform.number("crop_size", None) if transform else None
    if crop is not None and (crop, crop) != tuple(net.image_shape[1:]):
        raise ValueError("%s crops %dx%d but NETS in %s says %dx%d"
                         % (net.model, crop, crop, Path(__file__).name, *net.image_shape[1:]))


def bench_net_text(net):
    source_path = REPO / net.model
    text = source_path.read_text()
    model = read_prototxt(text, str(source_path))
    data_tops = None
    kept = []  # (field index, is a layer)
    for i, (name, value) in enumerate(model.fields):
        if name == "layers":
            raise ValueError("%s uses V1 'layers'; upgrade it first (xtrain upgrade)" % net.model)
        if name != "layer":
            kept.append((i, False))
            continue
        if value.get("type") in DATA_LAYER_TYPES:
            if data_tops is None or not only_in_test_phase(value):
                data_tops = value.all("top")
                check_crop(net, value)
            continue
        if only_in_test_phase(value):
            continue
        kept.append((i, True))
    if data_tops is None or len(data_tops) != 2:
        raise ValueError("%s: expected a data layer with two tops (data, label), found %r"
                         % (net.model, data_tops))

    out = [header(net)]
    kept_indices = {i for i, _ in kept}
    data_written = False
    for i, is_layer in kept:
        start, end = model.spans[i]
        # The comments and blank lines between two fields stay with the one
        # after them; those before a dropped field go with it.
        gap = text[model.spans[i - 1][1]:start] if i > 0 else ""
        if i > 0 and i - 1 not in kept_indices:
            gap = gap[gap.index("\n") + 1:] if "\n" in gap else ""
        if is_layer and not data_written:
            if not out[-1].endswith("\n"):
                out.append("\n")
            out.append(dummy_data_layer(net, data_tops))
            data_written = True
        out.append(gap + text[start:end])
        if i + 1 < len(model.fields) and i + 1 not in kept_indices:
            # The rest of this field's last line (a trailing comment).
            after = text[end:model.spans[i + 1][0]]
            out.append(after[:after.index("\n") + 1] if "\n" in after else "\n")
    if not out[-1].endswith("\n"):
        out.append("\n")
    return "".join(out)


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    for net in NETS:
        text = bench_net_text(net)
        if check:
            if not net.path.exists() or net.path.read_text() != text:
                stale.append(net.path)
            continue
        NETS_DIR.mkdir(parents=True, exist_ok=True)
        net.path.write_text(text)
        print("wrote %s" % net.path.relative_to(REPO))
    for path in stale:
        print("%s is out of date; run bench/make_bench_nets.py" % path.relative_to(REPO))
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
