"""xtrain.Classifier and xtrain.Detector on LeNet's deploy net, with weights
saved from a Net, against the net's own forward pass."""
import numpy as np
import pytest

import xtrain


@pytest.fixture
def lenet(repository, tmp_path):
    """(deploy prototxt, .caffemodel of random weights)."""
    deploy = repository + "/models/lenet/lenet_deploy.prototxt"
    net = xtrain.Net(deploy, xtrain.TEST)
    for blobs in net.params.values():
        for blob in blobs:
            blob.data[...] = np.random.RandomState(blob.count).randn(*blob.shape) * 0.2
    weights = str(tmp_path / "lenet.caffemodel")
    net.save(weights)
    return deploy, weights


def scores_of(deploy, weights, batch):
    """The deploy net's probabilities for a batch 1 x 28 x 28 images."""
    net = xtrain.Net(deploy, weights, xtrain.TEST)
    return np.concatenate([net.forward(data=item[np.newaxis])["prob"].copy() for item in batch])


def test_predict_centre_crop_matches_forward(lenet):
    deploy, weights = lenet
    images = [np.random.RandomState(i).rand(28, 28, 1).astype(np.float32) for i in range(3)]
    classifier = xtrain.Classifier(deploy, weights, raw_scale=255, input_scale=1 / 256.)
    scores = classifier.predict(images, oversample=False)
    assert scores.shape == (3, 10)
    expected = scores_of(deploy, weights,
                         [image.transpose(2, 0, 1) * 255 / 256. for image in images])
    np.testing.assert_allclose(scores, expected, rtol=1e-4, atol=1e-6)


def test_predict_oversampled_is_the_mean_of_ten_crops(lenet):
    deploy, weights = lenet
    image = np.random.RandomState(5).rand(32, 32, 1).astype(np.float32)
    classifier = xtrain.Classifier(deploy, weights, image_dims=(32, 32))
    scores = classifier.predict([image], oversample=True)
    crops = xtrain.io.oversample([image], (28, 28))
    expected = scores_of(deploy, weights, [crop.transpose(2, 0, 1) for crop in crops])
    np.testing.assert_allclose(scores[0], expected.mean(axis=0), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(scores.sum(), 1.0, rtol=1e-5)


def test_detector_crops_and_scores_each_window(lenet, tmp_path):
    from PIL import Image
    deploy, weights = lenet
    pixels = (np.random.RandomState(9).rand(40, 50) * 255).astype(np.uint8)
    path = str(tmp_path / "scene.png")
    Image.fromarray(pixels).save(path)
    image = xtrain.io.load_image(path, color=False)
    windows = np.array([[0, 0, 28, 28], [10, 20, 38, 48]])

    plain = xtrain.Detector(deploy, weights)
    np.testing.assert_array_equal(plain.crop(image, windows[1]), image[10:38, 20:48])
    detections = plain.detect_windows([(path, windows)])
    assert [d["filename"] for d in detections] == [path, path]
    expected = scores_of(deploy, weights, [image[0:28, 0:28].transpose(2, 0, 1),
                                           image[10:38, 20:48].transpose(2, 0, 1)])
    np.testing.assert_allclose(np.stack([d["prediction"] for d in detections]), expected,
                               rtol=1e-4, atol=1e-6)

    padded = xtrain.Detector(deploy, weights, context_pad=2)
    crops = [padded.crop(image, window) for window in windows]
    assert all(crop.shape == (28, 28, 1) for crop in crops)
    # The border of a window at the image's corner lies outside the image:
    # it is the mean (none given: 0); inside the image it is the picture.
    assert crops[0][:2, :, 0].max() == 0 and crops[0][:, :2, 0].max() == 0
    assert crops[0][2:, 2:].max() > 0


def test_images_the_net_cannot_take_are_errors_naming_them(lenet):
    deploy, weights = lenet
    with pytest.raises(ValueError, match=r"image_dims \(20, 20\).*\(28, 28\)"):
        xtrain.Classifier(deploy, weights, image_dims=(20, 20))  # the crop would be cut short
    classifier = xtrain.Classifier(deploy, weights)
    grey = np.zeros((28, 28, 1), np.float32)
    with pytest.raises(ValueError, match=r"image 1 has shape \(28, 28\); .* H x W x C"):
        classifier.predict([grey, np.zeros((28, 28), np.float32)])
    with pytest.raises(ValueError, match="image 1 has 3 channels, but input 'data' takes 1"):
        classifier.predict([grey, np.zeros((28, 28, 3), np.float32)])  # was broadcast silently


def test_windows_outside_the_image_are_errors_naming_it(lenet, tmp_path):
    from PIL import Image
    deploy, weights = lenet
    path = str(tmp_path / "scene.png")
    Image.fromarray(np.full((40, 50), 128, np.uint8)).save(path)
    image = xtrain.io.load_image(path, color=False)
    plain = xtrain.Detector(deploy, weights)
    # Part of a window outside the image is clipped (negative numbers do not
    # count from the far edge, as a Python slice's would).
    np.testing.assert_array_equal(plain.crop(image, (-5, -5, 20, 20)), image[0:20, 0:20])
    for detector in (plain, xtrain.Detector(deploy, weights, context_pad=2)):
        with pytest.raises(ValueError, match=r"scene.png.*window \(60, 0, 90, 28\)"):
            detector.detect_windows([(path, [(0, 0, 28, 28), (60, 0, 90, 28)])])
    with pytest.raises(ValueError, match=r"window \(20, 20, 10, 30\).*empty"):
        xtrain.Detector(deploy, weights, context_pad=2).crop(image, (20, 20, 10, 30))
    with pytest.raises(ValueError, match="context_pad 14: .* fewer than half"):
        xtrain.Detector(deploy, weights, context_pad=14)
