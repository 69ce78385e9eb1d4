"""The base class of Python layers (``type: "Python"`` in a prototxt).

A Python layer is a class derived from ``xtrain.Layer`` (pycaffe's
``caffe.Layer``) in a module on ``PYTHONPATH``, named by the layer's
``python_param { module: '...' layer: '...' param_str: '...' }``. The C++
side makes one with no arguments, sets ``self.param_str``, ``self.phase``
(``xtrain.TRAIN`` or ``xtrain.TEST``) and ``self.blobs`` (the layer's
parameter blobs: ``self.blobs.add_blob(*shape)`` adds one, which the solver
then trains and snapshots save), and calls:

- ``setup(bottom, top)`` once, then ``reshape(bottom, top)``;
- ``forward(bottom, top)`` and ``backward(top, propagate_down, bottom)``.

``bottom`` and ``top`` are lists of ``xtrain.Blob``, whose ``data`` and
``diff`` are NumPy views of the net's memory. An exception raised in any of
them stops the net with an error naming the layer, with the traceback.
"""
from abc import ABCMeta

from . import _xtrain


class Layer(metaclass=ABCMeta):
    """Derive from this class and override what the layer needs."""

    def setup(self, bottom, top):
        """Check the parameters (self.param_str) and the blobs; add
        parameter blobs."""

    def reshape(self, bottom, top):
        """Shape the tops from the bottoms (top[0].reshape(*dims))."""

    def forward(self, bottom, top):
        """Compute top[i].data from bottom[i].data."""

    def backward(self, top, propagate_down, bottom):
        """Compute bottom[i].diff (where propagate_down[i]) and the
        parameters' diffs from top[i].diff."""


# The net's own layers (net.layers) count as layers too.
Layer.register(_xtrain.Layer)
