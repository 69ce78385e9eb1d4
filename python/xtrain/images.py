"""Images as float32 H x W x C arrays in [0, 1], as pycaffe's ``caffe.io``
gives them: loading, resizing, and the ten crops of ``oversample``.

Pillow (Debian's python3-pil) reads and resizes; it is much lighter than
scikit-image, which pycaffe used. Resizing works on each channel as a
32-bit float image, so values keep their range (no clipping to 8 bits) and
any number of channels works.
"""
import numpy as np


def _pillow():
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("xtrain.io's image functions need Pillow: install Debian's "
                          "python3-pil (scripts/install_deps.sh does)")
    return Image


def _gray_values(image):
    """A greyscale array in [0, 1] from a Pillow image of any depth."""
    if image.mode in ("I;16", "I;16B", "I;16L", "I"):
        # 16-bit (and 32-bit integer) greyscale: scale by the type's range
        # rather than squeezing through 8 bits.
        values = np.asarray(image, dtype=np.float64)
        top = 65535.0 if image.mode.startswith("I;16") or values.max() <= 65535 else 2.0**31 - 1
        return values / top
    if image.mode == "F":
        return np.asarray(image, dtype=np.float64)
    return np.asarray(image.convert("L"), dtype=np.float64) / 255.0


def load_image(filename, color=True):
    """Reads an image file into a float32 array H x W x C in [0, 1]: C = 3
    (RGB; greyscale repeated, alpha dropped) with `color`, else C = 1."""
    Image = _pillow()
    with Image.open(filename) as image:
        if color:
            if image.mode in ("I;16", "I;16B", "I;16L", "I", "F"):
                gray = _gray_values(image)
                values = np.repeat(gray[:, :, np.newaxis], 3, axis=2)
            else:
                values = np.asarray(image.convert("RGB"), dtype=np.float64) / 255.0
        else:
            values = _gray_values(image)[:, :, np.newaxis]
    return values.astype(np.float32)


# interp_order, as pycaffe's (spline order): 0 nearest, 1 bilinear, 2-3 bicubic.
_RESAMPLE_BY_ORDER = {0: "NEAREST", 1: "BILINEAR", 2: "BICUBIC", 3: "BICUBIC"}


def resize_image(image, new_dims, interp_order=1):
    """`image` (H x W x C) resized to new_dims = (height, width), as a float32
    array; interp_order 0 is nearest neighbour, 1 bilinear, 2 or 3 bicubic."""
    Image = _pillow()
    image = np.asarray(image, dtype=np.float32)
    if image.ndim != 3:
        raise ValueError("resize_image takes an H x W x C array; this one has shape %s"
                         % (image.shape,))
    height, width = int(new_dims[0]), int(new_dims[1])
    if height < 1 or width < 1:
        raise ValueError("resize_image to %dx%d: give a height and width of at least 1"
                         % (height, width))
    if image.shape[0] < 1 or image.shape[1] < 1:
        raise ValueError("resize_image: the image has no pixels (shape %s)" % (image.shape,))
    if image.shape[:2] == (height, width):
        return image.copy()
    if interp_order not in _RESAMPLE_BY_ORDER:
        raise ValueError("interp_order must be 0, 1, 2 or 3, not %r" % (interp_order,))
    resample = getattr(Image, _RESAMPLE_BY_ORDER[interp_order])
    resized = np.empty((height, width, image.shape[2]), dtype=np.float32)
    for channel in range(image.shape[2]):
        plane = Image.fromarray(np.ascontiguousarray(image[:, :, channel]), mode="F")
        resized[:, :, channel] = np.asarray(plane.resize((width, height), resample))
    return resized


def oversample(images, crop_dims):
    """Ten crops of crop_dims = (height, width) from each image (H x W x C):
    the four corners and the centre, then the same five mirrored left to
    right. Returns an array (10 * N) x height x width x C, the ten crops of
    each image together."""
    crop_height, crop_width = int(crop_dims[0]), int(crop_dims[1])
    images = [np.asarray(image) for image in images]
    if not images:
        raise ValueError("oversample needs at least one image")
    image_height, image_width = images[0].shape[:2]
    if crop_height > image_height or crop_width > image_width:
        raise ValueError("crops of %dx%d do not fit in images of %dx%d"
                         % (crop_height, crop_width, image_height, image_width))
    # Top-left corners: top-left, top-right, bottom-left, bottom-right, centre.
    corners = [(y, x) for y in (0, image_height - crop_height)
               for x in (0, image_width - crop_width)]
    corners.append(((image_height - crop_height) // 2, (image_width - crop_width) // 2))
    crops = np.empty((10 * len(images), crop_height, crop_width, images[0].shape[-1]),
                     dtype=np.float32)
    for index, image in enumerate(images):
        if image.shape[:2] != (image_height, image_width):
            raise ValueError("oversample: image %d is %dx%d, the first %dx%d; resize them alike"
                             % (index, image.shape[0], image.shape[1], image_height,
                                image_width))
        first = 10 * index
        for offset, (y, x) in enumerate(corners):
            crops[first + offset] = image[y:y + crop_height, x:x + crop_width]
        crops[first + 5:first + 10] = crops[first:first + 5, :, ::-1, :]
    return crops
