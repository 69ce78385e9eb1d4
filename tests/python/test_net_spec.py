"""xtrain.NetSpec / layers / params: prototxt written from Python, checked
field by field and built by xtrain.Net."""
import numpy as np
import pytest

import xtrain
from xtrain import layers as L
from xtrain import params as P


def small_lenet(batch):
    n = xtrain.NetSpec()
    n.data, n.label = L.DummyData(shape=[dict(dim=[batch, 1, 28, 28]), dict(dim=[batch, 1, 1, 1])],
                                  transform_param=dict(scale=1. / 255), ntop=2)
    n.conv1 = L.Convolution(n.data, kernel_size=5, num_output=4,
                            weight_filler=dict(type="xavier"),
                            param=[dict(lr_mult=1), dict(lr_mult=2)])
    n.pool1 = L.Pooling(n.conv1, kernel_size=2, stride=2, pool=P.Pooling.MAX)
    n.ip1 = L.InnerProduct(n.pool1, num_output=10, weight_filler=dict(type="xavier"))
    n.relu1 = L.ReLU(n.ip1, in_place=True)
    n.loss = L.SoftmaxWithLoss(n.relu1, n.label)
    return n


def test_names_params_and_order():
    net = small_lenet(3).to_proto()
    assert [layer.name for layer in net.layer] == ["data", "conv1", "pool1", "ip1", "relu1",
                                                   "loss"]
    data, conv, pool, ip, relu, loss = net.layer
    assert list(data.top) == ["data", "label"]
    assert [list(shape.dim) for shape in data.dummy_data_param.shape] == [[3, 1, 28, 28],
                                                                        [3, 1, 1, 1]]
    assert data.transform_param.scale == pytest.approx(1. / 255)
    # A single value for a repeated field is a list of one.
    assert list(conv.convolution_param.kernel_size) == [5]
    assert conv.convolution_param.weight_filler.type == "xavier"
    assert [spec.lr_mult for spec in conv.param] == [1, 2]
    assert pool.pooling_param.pool == xtrain.proto.caffe_pb2.PoolingParameter.MAX
    # In place: the ReLU's top is its bottom, and the next layer reads that.
    assert list(relu.bottom) == list(relu.top) == ["ip1"]
    assert list(loss.bottom) == ["ip1", "label"]


def test_automatic_names():
    data = L.Input(shape=dict(dim=[1, 2]))
    first = L.InnerProduct(data, num_output=3)
    second = L.InnerProduct(first, num_output=3)
    net = L.Softmax(second).to_proto()
    assert [layer.name for layer in net.layer] == ["Input1", "InnerProduct1", "InnerProduct2",
                                                   "Softmax1"]
    assert list(net.layer[2].bottom) == ["InnerProduct1"]


def test_enums_by_name_and_layer_fields():
    n = xtrain.NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 1, 4, 4]))
    n.pool = L.Pooling(n.data, pool="AVE", kernel_size=2, include=dict(phase=xtrain.TEST))
    n.loss = L.EuclideanLoss(n.pool, n.pool, loss_weight=0.5)
    net = n.to_proto()
    assert net.layer[1].pooling_param.pool == P.Pooling.AVE
    assert net.layer[1].include[0].phase == 1
    assert list(net.layer[2].loss_weight) == [0.5]


def test_zero_tops_and_errors():
    n = xtrain.NetSpec()
    n.a, n.b = L.DummyData(shape=dict(dim=[2]), ntop=2)
    n.quiet = L.Silence(n.a, n.b, ntop=0)
    net = n.to_proto()
    assert net.layer[1].name == "quiet" and len(net.layer[1].top) == 0
    with pytest.raises(TypeError, match="Silence input 0 is not a Top"):
        L.Silence(L.DummyData(ntop=2), ntop=0)
    with pytest.raises(AttributeError, match="no field 'kernel_sise'"):
        L.Convolution(n.a, kernel_sise=3).to_proto()
    with pytest.raises(ValueError, match="not a value"):
        L.Pooling(n.a, pool="MAXIMUM").to_proto()
    with pytest.raises(AttributeError, match="MEDIAN"):
        P.Pooling.MEDIAN


def test_written_prototxt_builds_and_runs(write):
    path = write("lenet.prototxt", str(small_lenet(2).to_proto()))
    net = xtrain.Net(path, xtrain.TRAIN)
    assert list(net._layer_names) == ["data", "conv1", "pool1", "ip1", "relu1", "loss"]
    assert net.blobs["conv1"].data.shape == (2, 4, 24, 24)
    assert net.params["conv1"][0].data.shape == (4, 1, 5, 5)
    loss = net.forward()["loss"]
    assert np.isfinite(loss).all()
