"""xtrain.io.Transformer against arrays computed by hand."""
import numpy as np
import pytest

from xtrain.io import Transformer


def caffe_style_transformer():
    transformer = Transformer({"data": (1, 3, 2, 2)})
    transformer.set_transpose("data", (2, 0, 1))
    transformer.set_channel_swap("data", (2, 1, 0))
    transformer.set_raw_scale("data", 255)
    transformer.set_mean("data", np.array([10.0, 20.0, 30.0]))
    transformer.set_input_scale("data", 0.5)
    return transformer


def test_preprocess_steps_in_order():
    image = np.zeros((2, 2, 3), np.float32)
    image[..., 0], image[..., 1], image[..., 2] = 0.1, 0.2, 0.4  # R, G, B
    result = caffe_style_transformer().preprocess("data", image)
    assert result.shape == (3, 2, 2) and result.dtype == np.float32
    # Channels become B, G, R; then x255, - mean (per channel), x0.5.
    expected = [(0.4 * 255 - 10) * 0.5, (0.2 * 255 - 20) * 0.5, (0.1 * 255 - 30) * 0.5]
    for channel, value in enumerate(expected):
        np.testing.assert_allclose(result[channel], value, rtol=1e-5)


def test_deprocess_inverts_preprocess():
    transformer = caffe_style_transformer()
    image = np.random.RandomState(3).rand(2, 2, 3).astype(np.float32)
    back = transformer.deprocess("data", transformer.preprocess("data", image)[np.newaxis])
    np.testing.assert_allclose(back, image, atol=1e-5)


def test_resizes_to_the_input_and_takes_an_image_mean():
    transformer = Transformer({"data": (4, 1, 3, 3)})
    transformer.set_transpose("data", (2, 0, 1))
    transformer.set_mean("data", np.full((1, 6, 6), 0.5))  # resized to 3 x 3
    result = transformer.preprocess("data", np.ones((6, 6, 1), np.float32))
    assert result.shape == (1, 3, 3)
    np.testing.assert_allclose(result, 0.5, rtol=1e-6)


def test_rejects_what_does_not_fit():
    transformer = Transformer({"data": (1, 3, 2, 2)})
    with pytest.raises(Exception, match="not one of the net inputs"):
        transformer.set_raw_scale("image", 255)
    with pytest.raises(ValueError, match="channels"):
        transformer.set_channel_swap("data", (1, 0))
    with pytest.raises(ValueError, match="axes"):
        transformer.set_transpose("data", (1, 0))
    with pytest.raises(ValueError, match="mean has 2 values"):
        transformer.set_mean("data", np.zeros(2))
