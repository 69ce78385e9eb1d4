"""xtrain.io: arrays to and from BlobProto, BlobProtoVector and Datum, and
images from files."""
import numpy as np
import pytest

from xtrain import io
from xtrain.proto import caffe_pb2


def test_blobproto_round_trip_with_diff():
    values = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7
    gradients = -values
    blob = io.array_to_blobproto(values, gradients)
    assert list(blob.shape.dim) == [2, 3, 4]
    np.testing.assert_array_equal(io.blobproto_to_array(blob), values)
    np.testing.assert_array_equal(io.blobproto_to_array(blob, return_diff=True), gradients)
    # And through the bytes of a file.
    again = caffe_pb2.BlobProto.FromString(blob.SerializeToString())
    np.testing.assert_array_equal(io.blobproto_to_array(again), values)


def test_blobproto_shapes():
    legacy = caffe_pb2.BlobProto(num=1, channels=2, height=1, width=3, data=range(6))
    assert io.blobproto_to_array(legacy).shape == (1, 2, 1, 3)
    scalar = caffe_pb2.BlobProto(data=[5])
    assert io.blobproto_to_array(scalar).shape == ()
    with pytest.raises(ValueError, match="no shape"):
        io.blobproto_to_array(caffe_pb2.BlobProto(data=[1, 2]))
    with pytest.raises(ValueError, match="holds 4"):
        io.blobproto_to_array(caffe_pb2.BlobProto(data=[1, 2], shape=dict(dim=[2, 2])))


def test_mean_file_idiom(tmp_path):
    # How pycaffe scripts read a .binaryproto mean.
    path = str(tmp_path / "mean.binaryproto")
    with open(path, "wb") as out:
        out.write(io.array_to_blobproto(np.full((1, 3, 2, 2), 0.5)).SerializeToString())
    blob = io.caffe_pb2.BlobProto()
    with open(path, "rb") as data:
        blob.ParseFromString(data.read())
    assert io.blobproto_to_array(blob)[0].shape == (3, 2, 2)


def test_blobprotovector_round_trip():
    arrays = [np.ones((2, 2), np.float32), np.arange(3, dtype=np.float32)]
    serialized = io.arraylist_to_blobprotovector_str(arrays)
    assert isinstance(serialized, bytes)
    back = io.blobprotovector_str_to_arraylist(serialized)
    assert len(back) == 2
    for original, copy in zip(arrays, back):
        np.testing.assert_array_equal(original, copy)


def test_datum_round_trips():
    pixels = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    datum = io.array_to_datum(pixels, label=7)
    assert (datum.channels, datum.height, datum.width, datum.label) == (2, 3, 4, 7)
    assert datum.data == pixels.tobytes() and len(datum.float_data) == 0
    back = io.datum_to_array(caffe_pb2.Datum.FromString(datum.SerializeToString()))
    assert back.dtype == np.uint8
    np.testing.assert_array_equal(back, pixels)

    values = pixels.astype(np.float32) / 3
    datum = io.array_to_datum(values)
    assert not datum.HasField("label") and len(datum.data) == 0
    np.testing.assert_allclose(io.datum_to_array(datum), values, rtol=1e-7)
    with pytest.raises(ValueError, match="C x H x W"):
        io.array_to_datum(np.zeros((2, 2)))


def test_load_image_colour_and_grey(tmp_path):
    from PIL import Image
    rgb = np.zeros((3, 5, 3), np.uint8)
    rgb[0, 0] = (255, 0, 51)
    Image.fromarray(rgb).save(str(tmp_path / "rgb.png"))
    image = io.load_image(str(tmp_path / "rgb.png"))
    assert image.dtype == np.float32 and image.shape == (3, 5, 3)
    np.testing.assert_allclose(image[0, 0], [1.0, 0.0, 0.2], atol=1e-6)
    assert image[1:].max() == 0
    grey = io.load_image(str(tmp_path / "rgb.png"), color=False)
    assert grey.shape == (3, 5, 1)
    # A greyscale file in colour repeats its one channel.
    Image.fromarray(np.full((2, 2), 102, np.uint8)).save(str(tmp_path / "grey.png"))
    np.testing.assert_allclose(io.load_image(str(tmp_path / "grey.png")), 0.4, atol=1e-6)


def test_resize_image():
    image = np.random.RandomState(0).rand(4, 6, 2).astype(np.float32) * 300 - 20
    nearest = io.resize_image(image, (8, 12), interp_order=0)
    assert nearest.shape == (8, 12, 2) and nearest.dtype == np.float32
    np.testing.assert_array_equal(nearest[::2, ::2], image)  # no clipping to 8 bits
    flat = io.resize_image(np.full((5, 5, 3), 0.25, np.float32), (2, 7))
    np.testing.assert_allclose(flat, 0.25, rtol=1e-6)
    with pytest.raises(ValueError, match="resize_image to 0x7: give a height and width of at least 1"):
        io.resize_image(image, (0, 7))
    with pytest.raises(ValueError, match=r"the image has no pixels \(shape \(0, 6, 2\)\)"):
        io.resize_image(image[:0], (8, 12))


def test_oversample_corners_centre_and_mirrors():
    image = np.arange(4 * 5, dtype=np.float32).reshape(4, 5, 1)
    crops = io.oversample([image, image + 100], (2, 3))
    assert crops.shape == (20, 2, 3, 1)
    expected = [image[0:2, 0:3], image[0:2, 2:5], image[2:4, 0:3], image[2:4, 2:5],
                image[1:3, 1:4]]
    for index, crop in enumerate(expected):
        np.testing.assert_array_equal(crops[index], crop)
        np.testing.assert_array_equal(crops[5 + index], crop[:, ::-1])
        np.testing.assert_array_equal(crops[10 + index], crop + 100)
