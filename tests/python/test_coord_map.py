"""xtrain.coord_map: maps between blobs of a NetSpec, computed by hand."""
import numpy as np
import pytest

import xtrain
from xtrain import layers as L
from xtrain import params as P
from xtrain.coord_map import coord_map_from_to, crop


def fcn_like(pad=0, pool=2, deconv_pad=0):
    n = xtrain.NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 1, 32, 32]))
    n.conv = L.Convolution(n.data, num_output=2, kernel_size=3, pad=pad)
    n.pool = L.Pooling(n.conv, pool=P.Pooling.MAX, kernel_size=pool, stride=pool)
    n.up = L.Deconvolution(n.pool, num_output=2, kernel_size=2 * pool, stride=pool, pad=deconv_pad)
    return n


def test_maps_by_hand():
    # data -> up, as positions map forward: conv 3x3 pad 3: x -> x + 2; pool
    # 2: x -> x/2 - 1/4; deconv 4 stride 2: x -> 2x + 3/2; in all x -> x + 3,
    # so a position of up is 3 more than data's: up -> data is x - 3.
    n = fcn_like(pad=3)
    axis, a, b = coord_map_from_to(n.up, n.data)
    assert axis == 1 and np.all(a == 1) and np.all(b == -3)
    n = fcn_like()
    axis, a, b = coord_map_from_to(n.pool, n.data)
    assert np.all(a == 2) and np.all(b == 1.5)


def test_crop_layer_from_the_map(write):
    n = fcn_like(pad=3)
    n.score = crop(n.up, n.data)
    layer = n.to_proto().layer[-1]
    assert layer.type == "Crop" and list(layer.bottom) == ["up", "data"]
    assert layer.crop_param.axis == 2 and list(layer.crop_param.offset) == [3]
    net = xtrain.Net(write("fcn.prototxt", str(n.to_proto())), xtrain.TEST)
    assert net.blobs["score"].data.shape == (1, 2, 32, 32)


def test_errors():
    n = fcn_like()
    n.ip = L.InnerProduct(n.up, num_output=3)
    with pytest.raises(RuntimeError, match="no chain"):
        coord_map_from_to(n.ip, n.data)
    n = fcn_like(deconv_pad=5)  # up is data shifted by 5: smaller than data
    with pytest.raises(ValueError, match="negative"):
        crop(n.up, n.data)
    n = fcn_like()
    n.half = L.Pooling(n.up, kernel_size=2, stride=2)
    with pytest.raises(ValueError, match="scale"):
        crop(n.half, n.data)
