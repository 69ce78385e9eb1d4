"""``Detector``: class scores for windows of images, as pycaffe's
``caffe.Detector`` (R-CNN style): each window is cut out, optionally with a
border of surrounding context, warped to the net's input size, and
classified.
"""
import numpy as np

from ._xtrain import TEST, Net
from .classifier import _input_transformer
from .images import load_image, resize_image


class Detector(Net):
    """A Net in the TEST phase that classifies windows of images.

    mean, input_scale, raw_scale, channel_swap: as io.Transformer's set_*
    take them. context_pad: the width in pixels of the border, in the net's
    input, that shows context around the window (as R-CNN's features do);
    the part of it outside the image is the mean."""

    def __init__(self, model_file, pretrained_file, mean=None, input_scale=None,
                 raw_scale=None, channel_swap=None, context_pad=None):
        Net.__init__(self, model_file, TEST, weights=pretrained_file)
        self.transformer = _input_transformer(self, mean, input_scale, raw_scale, channel_swap)
        self.configure_crop(context_pad)

    def configure_crop(self, context_pad):
        """Sets the crop size (the input's H x W x C) and the context border,
        with the mean in image terms to fill what lies outside the image."""
        name = self.inputs[0]
        channels, height, width = self.blobs[name].data.shape[1:]
        self.crop_dims = np.array((height, width, channels))
        if context_pad and not 0 < 2 * context_pad < min(height, width):
            raise ValueError("context_pad %r: give a border of fewer than half the input's "
                             "%dx%d pixels (and more than 0), so that the window keeps some"
                             % (context_pad, height, width))
        self.context_pad = context_pad
        self.crop_mean = np.zeros(self.crop_dims, dtype=np.float32)
        mean = self.transformer.mean.get(name)
        if context_pad and mean is not None:
            # The mean is in the net's terms (C x H x W, channels swapped,
            # raw-scaled): bring it back to the image's.
            image_mean = np.array(mean, dtype=np.float32)
            swap = self.transformer.channel_swap.get(name)
            if swap is not None:
                image_mean = image_mean[list(np.argsort(swap))]
            raw_scale = self.transformer.raw_scale.get(name)
            if raw_scale is not None:
                image_mean = image_mean / raw_scale
            self.crop_mean = np.broadcast_to(image_mean.transpose(1, 2, 0),
                                             self.crop_dims).astype(np.float32)

    def crop(self, image, window):
        """The part of `image` (H x W x C) in window = (ymin, xmin, ymax,
        xmax) (ends excluded), with the context border when context_pad is
        set (then already at the input's size)."""
        ymin, xmin, ymax, xmax = (int(round(v)) for v in window)
        if not self.context_pad:
            # Clipped to the image, as R-CNN's windows are; never Python's
            # negative indices, which count from the far edge.
            top, bottom = max(ymin, 0), min(ymax, image.shape[0])
            left, right = max(xmin, 0), min(xmax, image.shape[1])
            if bottom <= top or right <= left:
                raise ValueError("window %s (ymin, xmin, ymax, xmax) holds no pixel of the "
                                 "image (%dx%d)" % (tuple(int(v) for v in window), image.shape[0], image.shape[1]))
            return image[top:bottom, left:right]
        if ymax <= ymin or xmax <= xmin:
            raise ValueError("window %s (ymin, xmin, ymax, xmax) is empty: each end must lie "
                             "past its start" % (tuple(int(v) for v in window),))
        out_height, out_width = int(self.crop_dims[0]), int(self.crop_dims[1])
        # Grow the window about its centre so that, once warped to the
        # input's size, the window proper leaves context_pad pixels each side.
        box = []
        for low, high, size in ((ymin, ymax, out_height), (xmin, xmax, out_width)):
            grow = size / float(size - 2 * self.context_pad)
            centre, half = (low + high) / 2.0, (high - low) * grow / 2.0
            box.append((int(round(centre - half)), int(round(centre + half))))
        (top, bottom), (left, right) = box
        scale_y = out_height / float(bottom - top)
        scale_x = out_width / float(right - left)
        # What of the grown box lies in the image, and where it goes.
        inside_top, inside_bottom = max(top, 0), min(bottom, image.shape[0])
        inside_left, inside_right = max(left, 0), min(right, image.shape[1])
        if inside_bottom <= inside_top or inside_right <= inside_left:
            raise ValueError("window %s lies outside the image (%dx%d)"
                             % (tuple(int(v) for v in window), image.shape[0], image.shape[1]))
        out_top = min(int(round((inside_top - top) * scale_y)), out_height - 1)
        out_left = min(int(round((inside_left - left) * scale_x)), out_width - 1)
        out_bottom = min(max(int(round((inside_bottom - top) * scale_y)), out_top + 1), out_height)
        out_right = min(max(int(round((inside_right - left) * scale_x)), out_left + 1), out_width)
        result = np.array(self.crop_mean, dtype=np.float32, copy=True)
        result[out_top:out_bottom, out_left:out_right] = resize_image(
            image[inside_top:inside_bottom, inside_left:inside_right],
            (out_bottom - out_top, out_right - out_left))
        return result

    def detect_windows(self, images_windows):
        """Scores for windows: images_windows is a list of (image file,
        windows), each window (ymin, xmin, ymax, xmax); images are loaded in
        colour, or in grey for a net of one input channel. Returns a list of
        {'filename', 'window', 'prediction'} in the same order."""
        images_windows = [(filename, list(windows)) for filename, windows in images_windows]
        name = self.inputs[0]
        # A net of one input channel gets the images in grey (pycaffe always
        # loaded colour, which such nets could not take).
        colour = self.blobs[name].data.shape[1] != 1
        batch = []
        for filename, windows in images_windows:
            image = load_image(filename, color=colour)
            for window in windows:
                try:
                    crop = self.crop(image, window)
                except ValueError as error:
                    raise ValueError("'%s': %s" % (filename, error))
                batch.append(self.transformer.preprocess(name, crop))
        if not batch:
            return []
        scores = self.forward_all(**{name: np.stack(batch)})[self.outputs[0]]
        detections = []
        for filename, windows in images_windows:
            for window in windows:
                detections.append({"filename": filename, "window": window,
                                   "prediction": scores[len(detections)]})
        return detections

    def detect_selective_search(self, image_fnames):
        """pycaffe ran the external selective_search_ijcv_with_python
        (MATLAB) here; xtrain does not. Compute windows yourself and call
        detect_windows."""
        raise NotImplementedError("Detector.detect_selective_search needs the external "
                                  "selective-search MATLAB code; give windows to detect_windows")
