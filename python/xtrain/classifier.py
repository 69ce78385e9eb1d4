"""``Classifier``: class scores for images, as pycaffe's
``caffe.Classifier``: each image is resized, cropped (the centre, or the ten
crops of ``io.oversample``, whose scores are averaged), preprocessed by an
``io.Transformer`` and run through the net in batches.
"""
import numpy as np

from ._xtrain import TEST, Net
from .images import oversample as _ten_crops
from .images import resize_image
from .transformer import Transformer


def _input_transformer(net, mean, input_scale, raw_scale, channel_swap):
    """The Transformer of the net's first input: H x W x C images to
    C x H x W, with the scales, mean and channel order given (None: none)."""
    name = net.inputs[0]
    transformer = Transformer({name: net.blobs[name].data.shape})
    transformer.set_transpose(name, (2, 0, 1))
    if mean is not None:
        transformer.set_mean(name, mean)
    if input_scale is not None:
        transformer.set_input_scale(name, input_scale)
    if raw_scale is not None:
        transformer.set_raw_scale(name, raw_scale)
    if channel_swap is not None:
        transformer.set_channel_swap(name, channel_swap)
    return transformer


class Classifier(Net):
    """A Net in the TEST phase that classifies images.

    model_file, pretrained_file: the deploy prototxt and its .caffemodel.
    image_dims: (height, width) the images are resized to before cropping
    (default: the input's size, so no crop). mean, input_scale, raw_scale,
    channel_swap: as io.Transformer's set_* take them."""

    def __init__(self, model_file, pretrained_file, image_dims=None, mean=None,
                 input_scale=None, raw_scale=None, channel_swap=None):
        Net.__init__(self, model_file, TEST, weights=pretrained_file)
        self.transformer = _input_transformer(self, mean, input_scale, raw_scale, channel_swap)
        self.crop_dims = np.array(self.blobs[self.inputs[0]].data.shape[2:])
        self.image_dims = np.array(image_dims if image_dims is not None else self.crop_dims)
        if len(self.image_dims) != 2 or np.any(self.image_dims < self.crop_dims):
            # A smaller image has no crop of the input's size: the crop
            # would be cut short and stretched to fit without a word.
            raise ValueError("image_dims %s: give (height, width) at least the net's input size "
                             "%s, which the crops take" % (tuple(self.image_dims.tolist()),
                                                           tuple(self.crop_dims.tolist())))

    def _check_images(self, images):
        """Each image H x W x C with the channels of the net's input."""
        channels = self.blobs[self.inputs[0]].data.shape[1]
        for index, image in enumerate(images):
            shape = np.shape(image)
            if len(shape) != 3:
                raise ValueError("image %d has shape %s; predict takes H x W x C images, as "
                                 "io.load_image gives them (grey: load_image(f, color=False), "
                                 "H x W x 1)" % (index, shape))
            if shape[2] != channels:
                raise ValueError("image %d has %d channels, but input '%s' takes %d: load the "
                                 "images with io.load_image(f, color=%s)"
                                 % (index, shape[2], self.inputs[0], channels, channels != 1))

    def predict(self, inputs, oversample=True):
        """Class scores (N x classes: the first output) of `inputs`, a list
        of H x W x C images (io.load_image's). With `oversample`, each
        image's score is the mean over its ten crops; without, the centre
        crop's."""
        inputs = list(inputs)
        if not inputs:
            raise ValueError("predict needs at least one image")
        self._check_images(inputs)
        height, width = (int(d) for d in self.image_dims)
        images = np.zeros((len(inputs), height, width, np.shape(inputs[0])[2]), dtype=np.float32)
        for index, image in enumerate(inputs):
            images[index] = resize_image(image, (height, width))
        if oversample:
            crops = _ten_crops(images, self.crop_dims)
        else:
            top, left = ((self.image_dims - self.crop_dims) // 2).astype(int)
            crop_height, crop_width = (int(d) for d in self.crop_dims)
            crops = images[:, top:top + crop_height, left:left + crop_width, :]
        name = self.inputs[0]
        batch = np.stack([self.transformer.preprocess(name, crop) for crop in crops])
        scores = self.forward_all(**{name: batch})[self.outputs[0]]
        if oversample:
            scores = scores.reshape((len(scores) // 10, 10, -1)).mean(axis=1)
        return scores
