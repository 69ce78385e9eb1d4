"""How the spatial coordinates of two blobs of a NetSpec relate, as pycaffe's
``caffe.coord_map``: used to align a feature map with the input it came
from, e.g. to crop a fully convolutional net's upsampled output back onto
its image (``crop(n.upscore, n.data)``).

A coordinate map is (axis, a, b): position x of the input blob lands at
a * x + b in the output, on every axis from `axis` on (None: any axis).
For a convolution (and pooling, im2col) of stride s, padding p and
effective kernel k (dilation counted), output position y covers input
positions s*y - p ... s*y - p + k - 1, whose centre is s*y - p + (k - 1)/2;
so an input x maps to y = x / s + (p - (k - 1)/2) / s. A deconvolution is
the inverse, a crop shifts by its offset, and pointwise layers are the
identity. Maps compose along a path of layers; the map between two blobs
goes back to a common ancestor from each and inverts one side.
"""
from __future__ import division

import numpy as np

from .net_spec import layers as L

# Layers whose output position i depends on input position i only.
PASS_THROUGH_LAYERS = ["AbsVal", "BatchNorm", "Bias", "BNLL", "Dropout", "Eltwise", "ELU",
                       "Log", "LRN", "Exp", "MVN", "Power", "ReLU", "PReLU", "Scale",
                       "Sigmoid", "Split", "TanH", "Threshold"]

IDENTITY = (None, 1, 0)


class UndefinedMapException(Exception):
    """The layer's type has no coordinate map (e.g. InnerProduct)."""


class AxisMismatchException(Exception):
    """Two maps along a path start at different axes."""


class CropError(AssertionError, ValueError):
    """crop() cannot make a Crop layer for these blobs. An AssertionError
    too, as pycaffe raised (and its tests expect)."""


def _values(params, name, default):
    return np.array(params.get(name, default), ndmin=1)


def conv_params(fn):
    """(axis, stride, effective kernel, pad) of a Convolution, Deconvolution,
    Im2col or Pooling layer, each an array over the spatial axes; the
    kernel_h/_w style is read too."""
    params = fn.params.get("convolution_param", fn.params.get("pooling_param", fn.params))
    if "kernel_h" in params or "kernel_w" in params:
        kernel = np.array([params["kernel_h"], params["kernel_w"]])
        stride = np.array([params.get("stride_h", 1), params.get("stride_w", 1)])
        pad = np.array([params.get("pad_h", 0), params.get("pad_w", 0)])
    else:
        if "kernel_size" not in params:
            raise ValueError("%s layer: coord_map needs its kernel_size (or kernel_h/kernel_w)"
                             % fn.type_name)
        kernel = _values(params, "kernel_size", 1)
        stride = _values(params, "stride", 1)
        pad = _values(params, "pad", 0)
    dilation = _values(params, "dilation", 1)
    return params.get("axis", 1), stride, (kernel - 1) * dilation + 1, pad


def crop_params(fn):
    """(axis, offset) of a Crop layer (axis 2 by default: H and W of
    N x C x H x W)."""
    params = fn.params.get("crop_param", fn.params)
    return params.get("axis", 2), _values(params, "offset", 0)


def coord_map(fn):
    """The map (axis, a, b) from the inputs of layer `fn` to its outputs."""
    if fn.type_name in ("Convolution", "Pooling", "Im2col"):
        axis, stride, kernel, pad = conv_params(fn)
        return axis, 1 / stride, (pad - (kernel - 1) / 2) / stride
    if fn.type_name == "Deconvolution":
        axis, stride, kernel, pad = conv_params(fn)
        return axis, stride, (kernel - 1) / 2 - pad
    if fn.type_name in PASS_THROUGH_LAYERS:
        return IDENTITY
    if fn.type_name == "Crop":
        axis, offset = crop_params(fn)
        # The map's axis counts from the first coordinate axis's predecessor.
        return axis - 1, 1, -offset
    raise UndefinedMapException("%s layers have no coordinate map" % fn.type_name)


def compose(base_map, next_map):
    """The map of `next_map` applied inside `base_map`: x -> a1 * (a2 x +
    b2) + b1."""
    axis1, a1, b1 = base_map
    axis2, a2, b2 = next_map
    if axis1 is not None and axis2 is not None and axis1 != axis2:
        raise AxisMismatchException("maps on axis %s and axis %s do not compose"
                                    % (axis1, axis2))
    return (axis2 if axis1 is None else axis1), a1 * a2, a1 * b2 + b1


def inverse(coord_map):
    """The map back: y -> (y - b) / a."""
    axis, a, b = coord_map
    return axis, 1 / a, -b / a


def _mapped_inputs(top):
    """The inputs of `top`'s layer that its map applies to: all, except a
    Crop's second input, which only gives the size."""
    inputs = top.fn.inputs
    return inputs[:1] if top.fn.type_name == "Crop" else inputs


def _one_layer_back(top, top_map):
    """[(input, its map)] for the inputs of `top`'s layer that `top`'s
    coordinates follow from, where `top_map` maps `top` onward and each
    input's map is the layer's map followed by it; [] for a layer without a
    map."""
    try:
        layer_map = coord_map(top.fn)
    except UndefinedMapException:
        return []
    return [(bottom, compose(top_map, layer_map)) for bottom in _mapped_inputs(top)]


def _maps_to_ancestors(top):
    """{ancestor Top: map from the ancestor to `top`}, walking back through
    layers that have maps."""
    maps = {top: IDENTITY}
    frontier = [top]
    while frontier:
        current = frontier.pop()
        for bottom, bottom_map in _one_layer_back(current, maps[current]):
            maps[bottom] = bottom_map
            frontier.append(bottom)
    return maps


def coord_map_from_to(top_from, top_to):
    """The map (axis, a, b) from coordinates of `top_from` to those of
    `top_to` (two Tops of one NetSpec): top_to's position = a * top_from's
    + b. A RuntimeError when no chain of spatial layers joins them."""
    from_maps = _maps_to_ancestors(top_from)
    to_maps = {top_to: IDENTITY}
    frontier = [top_to]
    while frontier:
        current = frontier.pop(0)
        if current in from_maps:
            return compose(to_maps[current], inverse(from_maps[current]))
        for bottom, bottom_map in _one_layer_back(current, to_maps[current]):
            to_maps[bottom] = bottom_map
            frontier.append(bottom)
    raise RuntimeError("no chain of spatial layers joins the two tops (an InnerProduct or "
                       "another layer without a coordinate map lies between them)")


def crop(top_from, top_to):
    """A Crop layer that cuts `top_from` to `top_to`'s size and position,
    with the axis and offsets their coordinate map gives."""
    axis, a, b = coord_map_from_to(top_from, top_to)
    if not np.all(np.asarray(a) == 1):
        raise CropError("cannot crop: the blobs differ in scale (a = %s), not just in offset"
                        % (a,))
    if not np.all(np.asarray(b) <= 0):
        raise CropError("cannot crop: the offset is negative (b = %s): the blob to crop is "
                        "smaller than the reference" % (b,))
    if not np.all(np.round(b) == b):
        raise CropError("cannot crop: the offset is not a whole number of pixels (b = %s)"
                        % (b,))
    offsets = [int(v) for v in -np.round(np.asarray(b, dtype=float).ravel())]
    return L.Crop(top_from, top_to, crop_param=dict(axis=axis + 1, offset=offsets))
