"""Arrays in and out of xtrain, as pycaffe's ``caffe.io``: images from files
(``load_image``, ``resize_image``, ``oversample``), arrays to and from the
stored messages (BlobProto, BlobProtoVector, Datum), and ``Transformer``,
which turns images into a net's input layout and back.

Images are float32 arrays H x W x C with values in [0, 1] (RGB for colour),
as pycaffe's are; a net's input is C x H x W. Reading and resizing images
uses Pillow (Debian's python3-pil), imported only when an image function
is called.
"""
import numpy as np

from .proto import xtrain_pb2
# pycaffe scripts read mean files with caffe.io.caffe_pb2.BlobProto().
from .proto import caffe_pb2  # noqa: F401
from .transformer import Transformer  # noqa: F401  (part of caffe.io's API)
from .images import load_image, oversample, resize_image  # noqa: F401


def _legacy_shape(blob):
    """(num, channels, height, width) when a blob uses Caffe's old 4-D
    fields, else None."""
    if any(blob.HasField(name) for name in ("num", "channels", "height", "width")):
        return (blob.num, blob.channels, blob.height, blob.width)
    return None


def blobproto_to_array(blob, return_diff=False):
    """The values (or, with `return_diff`, the gradients) of a BlobProto as
    a float32 array of the blob's shape: ``shape.dim``, or Caffe's old
    num/channels/height/width. A blob without a shape must hold one value,
    which comes back as a 0-d array; otherwise this is a ValueError."""
    values = blob.diff if return_diff else blob.data
    if len(values) == 0 and not return_diff and len(blob.double_data):
        values = blob.double_data
    array = np.asarray(values, dtype=np.float32)
    shape = _legacy_shape(blob)
    if shape is None:
        if blob.HasField("shape"):
            shape = tuple(blob.shape.dim)
        elif array.size == 1:
            shape = ()
        else:
            raise ValueError("the BlobProto has %d values but no shape (neither shape.dim "
                             "nor num/channels/height/width)" % array.size)
    if int(np.prod(shape, dtype=np.int64)) != array.size:
        raise ValueError("the BlobProto has %d values, but its shape %s holds %d"
                         % (array.size, shape, int(np.prod(shape, dtype=np.int64))))
    return array.reshape(shape)


def array_to_blobproto(array, diff=None):
    """A BlobProto with `array`'s shape (``shape.dim``) and values, and the
    gradients `diff` (an array of the same shape) if given."""
    array = np.asarray(array)
    blob = xtrain_pb2.BlobProto()
    blob.shape.dim.extend(array.shape)
    blob.data.extend(array.astype(np.float32).ravel().tolist())
    if diff is not None:
        diff = np.asarray(diff)
        if diff.shape != array.shape:
            raise ValueError("diff has shape %s, the array %s: they must match"
                             % (diff.shape, array.shape))
        blob.diff.extend(diff.astype(np.float32).ravel().tolist())
    return blob


def arraylist_to_blobprotovector_str(arrays):
    """A serialized BlobProtoVector (bytes) of the arrays, in order."""
    vector = xtrain_pb2.BlobProtoVector()
    vector.blobs.extend(array_to_blobproto(array) for array in arrays)
    return vector.SerializeToString()


def blobprotovector_str_to_arraylist(serialized):
    """The arrays of a serialized BlobProtoVector, in order."""
    vector = xtrain_pb2.BlobProtoVector()
    vector.ParseFromString(serialized)
    return [blobproto_to_array(blob) for blob in vector.blobs]


def array_to_datum(array, label=None):
    """A Datum of a C x H x W array: uint8 arrays go to ``data`` (bytes),
    others to ``float_data``; `label` is set only when given."""
    array = np.asarray(array)
    if array.ndim != 3:
        raise ValueError("a Datum holds a C x H x W array; this one has shape %s"
                         % (array.shape,))
    datum = xtrain_pb2.Datum()
    datum.channels, datum.height, datum.width = array.shape
    if array.dtype == np.uint8:
        datum.data = array.tobytes()
    else:
        datum.float_data.extend(array.astype(np.float32).ravel().tolist())
    if label is not None:
        datum.label = int(label)
    return datum


def datum_to_array(datum):
    """The C x H x W array of a Datum: uint8 from ``data``, else float32
    from ``float_data``. (The label is ``datum.label``.)"""
    shape = (datum.channels, datum.height, datum.width)
    if len(datum.data):
        return np.frombuffer(datum.data, dtype=np.uint8).reshape(shape).copy()
    return np.asarray(datum.float_data, dtype=np.float32).reshape(shape)
