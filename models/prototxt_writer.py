"""What the model generators (models/*/generate.py) share.

NetWriter collects the layer text of one net (train_val or deploy) and
writes the layers every generator writes the same way; main() writes
train_val.prototxt and deploy.prototxt next to the generator or, with
--check, writes nothing and exits 1 if they differ from what it would
write. Python 3 standard library only.
"""
import sys
from pathlib import Path


class NetWriter:
    """Collects layer text; `train` adds ParamSpecs and fillers."""

    def __init__(self, train):
        self.train = train
        self.parts = []

    def add(self, text):
        self.parts.append(text)

    def text(self):
        return "".join(self.parts)

    def add_inputs(self, data_layers, deploy_size):
        """train_val's data layers (the text data_layers() returns), or the
        deploy net's Input layer of `deploy_size` x `deploy_size` crops."""
        self.add(data_layers() if self.train else deploy_input_layer(deploy_size))

    @staticmethod
    def conv_shape(num_output, kernel, stride, pad):
        """convolution_param's geometry, leaving out the defaults."""
        shape = "num_output: %d" % num_output
        if pad:
            shape += "  pad: %d" % pad
        shape += "  kernel_size: %d" % kernel
        if stride != 1:
            shape += "  stride: %d" % stride
        return shape

    def learnable_layer(self, layer_type, param_field, name, bottom, specs, settings, fillers):
        """A layer with weights (Convolution, InnerProduct) writing the top
        `name`: its ParamSpecs `specs`, then `param_field` holding the line
        `settings` and the `fillers`; specs and fillers may be ""."""
        self.add('layer {\n'
                 '  name: "%s"  type: "%s"\n'
                 '  bottom: "%s"  top: "%s"\n'
                 '%s'
                 '  %s {\n'
                 '    %s\n'
                 '%s'
                 '  }\n'
                 '}\n' % (name, layer_type, bottom, name, specs, param_field, settings, fillers))
        return name

    def conv_layer(self, name, bottom, specs, shape, fillers):
        """A Convolution writing the top `name`; specs and fillers may be ""."""
        return self.learnable_layer("Convolution", "convolution_param", name, bottom, specs, shape,
                                    fillers)

    def relu(self, name, blob):
        """An in-place ReLU, on one line where it fits in 100 columns."""
        line = 'layer { name: "%s"  type: "ReLU"  bottom: "%s"  top: "%s" }\n' % (name, blob, blob)
        if len(line) > 100:
            line = ('layer {\n'
                    '  name: "%s"  type: "ReLU"\n'
                    '  bottom: "%s"  top: "%s"\n'
                    '}\n' % (name, blob, blob))
        self.add(line)
        return blob

    def pool(self, name, bottom, method, kernel, stride, pad=0):
        """A Pooling layer writing the top `name`; pad 0 is left out."""
        shape = "pool: %s  kernel_size: %d  stride: %d" % (method, kernel, stride)
        if pad:
            shape += "  pad: %d" % pad
        self.add('layer {\n'
                 '  name: "%s"  type: "Pooling"  bottom: "%s"  top: "%s"\n'
                 '  pooling_param { %s }\n'
                 '}\n' % (name, bottom, name, shape))
        return name

    def dropout(self, name, blob, ratio):
        self.add('layer {\n'
                 '  name: "%s"  type: "Dropout"  bottom: "%s"  top: "%s"\n'
                 '  dropout_param { dropout_ratio: %g }\n'
                 '}\n' % (name, blob, blob, ratio))
        return blob


def ilsvrc12_data_layers(transform, train_batch, train_note, test_batch, test_note):
    """The TRAIN and TEST Data layers reading data/ilsvrc12/{train,val}_lmdb.

    `transform` gives transform_param's lines for a phase:
    transform(train) -> "    crop_size: 224\n...". The notes ("" or a
    comment line) go before data_param.
    """
    text = ""
    for phase, source, batch, note in (
            ("TRAIN", "data/ilsvrc12/train_lmdb", train_batch, train_note),
            ("TEST", "data/ilsvrc12/val_lmdb", test_batch, test_note)):
        text += ('layer {\n'
                 '  name: "data"  type: "Data"\n'
                 '  top: "data"  top: "label"\n'
                 '  include { phase: %s }\n'
                 '  transform_param {\n'
                 '%s'
                 '  }\n'
                 '%s'
                 '  data_param { source: "%s"  batch_size: %d  backend: LMDB }\n'
                 '}\n' % (phase, transform(phase == "TRAIN"), note, source, batch))
    return text


def deploy_input_layer(size):
    """The deploy net's input: a batch of 10 `size` x `size` BGR crops."""
    return ('layer {\n'
            '  name: "data"  type: "Input"  top: "data"\n'
            '  input_param { shape { dim: 10 dim: 3 dim: %d dim: %d } }\n'
            '}\n' % (size, size))


def main(generator, build):
    """Writes (or with --check, checks) the two files `build(train)` makes,
    in the folder of `generator` (the generator's __file__)."""
    here = Path(generator).resolve().parent
    outputs = {"train_val.prototxt": build(train=True), "deploy.prototxt": build(train=False)}
    if "--check" in sys.argv[1:]:
        stale = [n for n, t in outputs.items()
                 if not (here / n).exists() or (here / n).read_text() != t]
        for name in stale:
            print("%s is out of date; run %s" % (here / name, Path(generator).name))
        return 1 if stale else 0
    for name, text in outputs.items():
        (here / name).write_text(text)
    return 0
