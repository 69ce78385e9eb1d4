"""xtrain.draw: a NetParameter to DOT text and to a picture through dot."""
import shutil

import pytest
from google.protobuf import text_format

import xtrain
import xtrain.draw
from xtrain.proto import caffe_pb2


def lenet(repository):
    with open(repository + "/models/lenet/lenet_train_test.prototxt") as text:
        return text_format.Parse(text.read(), caffe_pb2.NetParameter())


def test_dot_text_has_layers_blobs_and_phase(repository):
    net = lenet(repository)
    everything = xtrain.draw.net_to_dot(net, "LR")
    assert everything.startswith('digraph "LeNet"') and "rankdir=LR;" in everything
    assert '"conv1\\n(Convolution)\\nkernel 5, stride 1, pad 0"' in everything
    assert everything.count("shape=octagon") >= 10
    training = xtrain.draw.net_to_dot(net, "TB", phase=xtrain.TRAIN)
    assert "(Accuracy)" in everything and "(Accuracy)" not in training
    with pytest.raises(ValueError, match="rankdir"):
        xtrain.draw.net_to_dot(net, "UP")


def test_in_place_layer_makes_a_chain_not_a_loop(repository):
    dot = xtrain.draw.net_to_dot(lenet(repository), "LR")
    # relu1 reads one 'ip1' octagon and writes another.
    assert dot.count('[label="ip1", shape=octagon') == 2


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_draw_net_to_file(repository, tmp_path):
    png = str(tmp_path / "lenet.png")
    xtrain.draw.draw_net_to_file(lenet(repository), png, "TB", phase=xtrain.TEST)
    with open(png, "rb") as picture:
        assert picture.read(8) == b"\x89PNG\r\n\x1a\n"
    svg = xtrain.draw.draw_net(lenet(repository), "LR", ext="svg")
    assert b"<svg" in svg and b"conv1" in svg
