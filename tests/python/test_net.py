"""xtrain.Net as pycaffe's: results against NumPy, blob arrays that are
views of the net's memory, forward/backward by name and range, weights
saved and loaded."""
import numpy as np
import pytest

import xtrain
from conftest import LINEAR_EUCLIDEAN, LINEAR_SOFTMAX, softmax


def test_names_and_shapes(write):
    net = xtrain.Net(write("net.prototxt", LINEAR_SOFTMAX), xtrain.TEST)
    assert list(net.blobs) == ["data", "ip", "prob"]
    assert list(net.params) == ["ip"]
    assert [p.shape for p in net.params["ip"]] == [(4, 3), (4,)]
    assert net.inputs == ["data"] and net.outputs == ["prob"]
    assert net.top_names["ip"] == ["ip"] and net.bottom_names["prob"] == ["ip"]
    assert net.layer_dict["ip"].type == "InnerProduct"
    assert net.blobs["data"].shape == (2, 3) and net.blobs["data"].count == 6
    assert net.blobs["prob"].num == 2 and net.blobs["prob"].channels == 4


def test_forward_is_softmax_of_the_linear_layer(write):
    net = xtrain.Net(write("net.prototxt", LINEAR_SOFTMAX), xtrain.TEST)
    x = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float32)
    weights, bias = (p.data for p in net.params["ip"])
    out = net.forward(data=x)
    assert set(out) == {"prob"}
    np.testing.assert_allclose(out["prob"], softmax(x @ weights.T + bias), rtol=1e-5)
    # Intermediate blobs stay readable after forward, as in Caffe.
    np.testing.assert_allclose(net.blobs["ip"].data, x @ weights.T + bias, rtol=1e-5)


def test_blob_arrays_are_views_of_the_net_memory(write):
    net = xtrain.Net(write("net.prototxt", LINEAR_SOFTMAX), xtrain.TEST)
    data = net.blobs["data"].data
    assert np.shares_memory(data, net.blobs["data"].data)
    data[...] = 0  # a write through the view is what forward reads
    weights = net.params["ip"][0].data
    weights[...] = 0  # the layer's own parameter memory
    net.params["ip"][1].data[...] = [0, 0, np.log(3.0), 0]
    out = net.forward()
    np.testing.assert_allclose(out["prob"], [[1 / 6, 1 / 6, 3 / 6, 1 / 6]] * 2, rtol=1e-6)
    # A view kept across a reshape still points at memory that lives.
    old = net.blobs["data"].data
    net.blobs["data"].reshape(50, 3)
    net.reshape()
    assert net.blobs["data"].shape == (50, 3) and old.shape == (2, 3)
    old[...] = 1.0  # no crash, no effect on the reallocated blob


def test_backward_gives_the_euclidean_gradient(write):
    net = xtrain.Net(write("net.prototxt", LINEAR_EUCLIDEAN), xtrain.TRAIN)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    t = rng.standard_normal((4, 2)).astype(np.float32)
    weights, bias = (p.data.copy() for p in net.params["ip"])
    loss = net.forward(data=x, target=t)["loss"]
    y = x @ weights.T + bias
    np.testing.assert_allclose(loss, ((y - t) ** 2).sum() / (2 * 4), rtol=1e-5)
    net.clear_param_diffs()
    grads = net.backward()
    dy = (y - t) / 4
    np.testing.assert_allclose(grads["data"], dy @ weights, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(net.params["ip"][0].diff, dy.T @ x, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(net.params["ip"][1].diff, dy.sum(axis=0), rtol=1e-5, atol=1e-7)


def test_forward_and_backward_over_a_range(write):
    net = xtrain.Net(write("net.prototxt", LINEAR_SOFTMAX), xtrain.TEST)
    net.blobs["data"].data[...] = 1.0
    out = net.forward(end="ip")
    assert set(out) == {"ip"}
    before = net.blobs["prob"].data.copy()
    net.blobs["ip"].data[...] = 0.0
    out = net.forward(start="prob")
    np.testing.assert_allclose(out["prob"], 0.25)
    assert not np.allclose(before, 0.25)
    with pytest.raises(KeyError, match="no layer named 'nope'"):
        net.forward(start="nope")


def test_weights_saved_and_loaded(write, tmp_path):
    path = write("net.prototxt", LINEAR_SOFTMAX)
    net = xtrain.Net(path, xtrain.TEST)
    net.params["ip"][0].data[...] = np.arange(12, dtype=np.float32).reshape(4, 3)
    weights = str(tmp_path / "w.caffemodel")
    net.save(weights)
    for loaded in (xtrain.Net(path, xtrain.TEST, weights=weights),
                   xtrain.Net(path, weights, xtrain.TEST)):
        np.testing.assert_array_equal(loaded.params["ip"][0].data,
                                      net.params["ip"][0].data)
        np.testing.assert_array_equal(loaded.params["ip"][1].data,
                                      net.params["ip"][1].data)
    fresh = xtrain.Net(path, xtrain.TEST)
    fresh.copy_from(weights)
    np.testing.assert_array_equal(fresh.params["ip"][0].data, net.params["ip"][0].data)
    shared = xtrain.Net(path, xtrain.TEST)
    shared.share_with(net)
    net.params["ip"][0].data[0, 0] = -7.0
    assert shared.params["ip"][0].data[0, 0] == -7.0


def test_forward_all_in_batches(write):
    net = xtrain.Net(write("net.prototxt", LINEAR_SOFTMAX), xtrain.TEST)
    x = np.linspace(-1, 1, 5 * 3, dtype=np.float32).reshape(5, 3)
    weights, bias = (p.data for p in net.params["ip"])
    out = net.forward_all(data=x)  # batches of 2: the last one padded
    assert out["prob"].shape == (5, 4)
    np.testing.assert_allclose(out["prob"], softmax(x @ weights.T + bias), rtol=1e-5)


def test_forward_all_refuses_arrays_of_different_lengths(write):
    net = xtrain.Net(write("net.prototxt", LINEAR_EUCLIDEAN), xtrain.TEST)
    data, target = np.zeros((5, 3), np.float32), np.zeros((3, 2), np.float32)
    with pytest.raises(ValueError, match="different numbers of items .*'data': 5, 'target': 3"):
        net.forward_all(data=data, target=target)  # item i of one has no partner in the other
    with pytest.raises(ValueError, match="'target' is a single value"):
        net.forward_all(data=data, target=np.float32(1))
    with pytest.raises(KeyError, match=r"\['dta'\] are neither inputs nor outputs"):
        net.forward_backward_all(dta=data)  # a misspelt name was dropped without a word
    with pytest.raises(KeyError, match="no blob named 'dta'"):
        net.forward_all(dta=data)


def test_a_phase_that_is_neither_train_nor_test_is_an_error(write):
    path = write("net.prototxt", LINEAR_SOFTMAX)
    with pytest.raises(xtrain.XtrainError, match="phase 7, which is neither TRAIN"):
        xtrain.Net(path, 7)


def test_errors_name_the_file(write):
    with pytest.raises(xtrain.XtrainError, match="absent.prototxt"):
        xtrain.Net("absent.prototxt", xtrain.TEST)
    broken = write("broken.prototxt", "layer { name: 'x' type: 'Input' ")
    with pytest.raises(RuntimeError, match="broken.prototxt"):
        xtrain.Net(broken, xtrain.TEST)
    net = xtrain.Net(write("net.prototxt", LINEAR_SOFTMAX), xtrain.TEST)
    with pytest.raises(ValueError, match="has shape"):
        net.forward(data=np.zeros((3, 3), np.float32))


def test_layer_type_list():
    types = xtrain.layer_type_list()
    assert types == sorted(types)
    assert {"Convolution", "InnerProduct", "SoftmaxWithLoss", "Data"} <= set(types)


def test_hdf5_weights_round_trip_and_numeric_phase(write, tmp_path):
    path = write("net.prototxt", LINEAR_SOFTMAX)
    net = xtrain.Net(path, 1)  # pycaffe scripts pass caffe_pb2.TEST, a number
    assert net.phase == xtrain.TEST
    net.params["ip"][0].data[...] = np.arange(12, dtype=np.float32).reshape(4, 3)
    weights = str(tmp_path / "w.caffemodel.h5")
    net.save_hdf5(weights)
    loaded = xtrain.Net(path, xtrain.TEST)
    loaded.load_hdf5(weights)
    for mine, theirs in zip(net.params["ip"], loaded.params["ip"]):
        np.testing.assert_array_equal(mine.data, theirs.data)
    assert not xtrain.has_nccl()
