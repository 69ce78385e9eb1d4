"""``Transformer``: an image (H x W x C, values in [0, 1]) to a net input
(C x H x W, the net's scale and mean) and back, as pycaffe's
``caffe.io.Transformer`` does.

``preprocess`` applies, in this order, each step that was set for the input:

    resize to the input's H x W -> transpose -> channel swap
        -> x raw_scale -> - mean -> x input_scale

``deprocess`` undoes them in the opposite order (without the resize). A
model trained on Caffe's BGR 0..255 images takes, e.g.,
``set_transpose('data', (2, 0, 1))``, ``set_channel_swap('data', (2, 1, 0))``,
``set_raw_scale('data', 255)`` and ``set_mean('data', mean_bgr)``.
"""
import numpy as np

from .images import resize_image


class Transformer(object):
    """Preprocessing for the inputs of a net: `inputs` maps each input's
    name to its blob shape (N x C x H x W), e.g. ``{'data':
    net.blobs['data'].data.shape}``."""

    def __init__(self, inputs):
        self.inputs = {name: tuple(int(d) for d in shape) for name, shape in inputs.items()}
        self.transpose = {}
        self.channel_swap = {}
        self.raw_scale = {}
        self.mean = {}
        self.input_scale = {}

    def _check_input(self, name):
        if name not in self.inputs:
            raise Exception("%s is not one of the net inputs: %s" % (name, list(self.inputs)))

    def set_transpose(self, name, order):
        """The axis order from the image's to the input's, e.g. (2, 0, 1)
        for H x W x C to C x H x W."""
        self._check_input(name)
        if len(order) != len(self.inputs[name]) - 1:
            raise ValueError("transpose order %s has %d axes, but input '%s' has %d per item"
                             % (tuple(order), len(order), name, len(self.inputs[name]) - 1))
        self.transpose[name] = tuple(order)

    def set_channel_swap(self, name, order):
        """The channels' order after the transpose, e.g. (2, 1, 0) for RGB
        to BGR."""
        self._check_input(name)
        if len(order) != self.inputs[name][1]:
            raise ValueError("channel order %s has %d channels, but input '%s' has %d"
                             % (tuple(order), len(order), name, self.inputs[name][1]))
        self.channel_swap[name] = tuple(order)

    def set_raw_scale(self, name, scale):
        """A factor for the image's values before the mean is taken off,
        e.g. 255 for a model trained on 0..255 values."""
        self._check_input(name)
        self.raw_scale[name] = scale

    def set_mean(self, name, mean):
        """The mean taken off: one value per channel (an array of C) or a
        whole C x H x W image (resized to the input's H x W if it differs)."""
        self._check_input(name)
        mean = np.asarray(mean, dtype=np.float32)
        channels, height, width = self.inputs[name][1:]
        if mean.ndim == 1:
            if mean.shape[0] != channels:
                raise ValueError("the mean has %d values, but input '%s' has %d channels"
                                 % (mean.shape[0], name, channels))
            mean = mean[:, np.newaxis, np.newaxis]
        else:
            if mean.ndim == 2:
                mean = mean[np.newaxis]
            if mean.ndim != 3 or mean.shape[0] != channels:
                raise ValueError("the mean has shape %s; give one value per channel (%d) or a "
                                 "C x H x W image with C = %d" % (mean.shape, channels, channels))
            if mean.shape[1:] != (height, width):
                mean = resize_image(mean.transpose(1, 2, 0), (height, width)).transpose(2, 0, 1)
        self.mean[name] = mean

    def set_input_scale(self, name, scale):
        """A factor applied last, after the mean is taken off (e.g. 1/255 or
        the inverse of a standard deviation)."""
        self._check_input(name)
        self.input_scale[name] = scale

    def preprocess(self, name, data):
        """One image (H x W x C) as input `name` takes it (C x H x W),
        float32."""
        self._check_input(name)
        values = np.asarray(data, dtype=np.float32)
        input_size = self.inputs[name][2:]
        if values.shape[:2] != input_size:
            values = resize_image(values, input_size)
        if name in self.transpose:
            values = values.transpose(self.transpose[name])
        if name in self.channel_swap:
            values = values[list(self.channel_swap[name]), :, :]
        values = np.array(values, dtype=np.float32)  # a copy: the steps below write
        if self.raw_scale.get(name) is not None:
            values *= self.raw_scale[name]
        if name in self.mean:
            values -= self.mean[name]
        if self.input_scale.get(name) is not None:
            values *= self.input_scale[name]
        return values

    def deprocess(self, name, data):
        """The inverse of preprocess: an item of input `name` (C x H x W, or
        1 x C x H x W) back to an image H x W x C."""
        self._check_input(name)
        values = np.array(data, dtype=np.float32).squeeze()
        if self.input_scale.get(name) is not None:
            values /= self.input_scale[name]
        if name in self.mean:
            values += self.mean[name]
        if self.raw_scale.get(name) is not None:
            values /= self.raw_scale[name]
        if name in self.channel_swap:
            values = values[list(np.argsort(self.channel_swap[name])), :, :]
        if name in self.transpose:
            values = values.transpose(np.argsort(self.transpose[name]))
        return values
