"""AlexNet as BVLC laid it out for Caffe (models/alexnet): local response
normalisation after relu1 and relu2 and before pooling, conv2, conv4 and
conv5 split into two groups, 227x227 input, three inner products with 50%
dropout. torchvision's alexnet differs (no LRN, no groups, other widths), so
this is written out here."""
from torch import nn

IMAGE_SHAPE = (3, 227, 227)


def lrn():
    # Caffe's across-channel LRN: x / (1 + alpha/5 * sum of 5 squares)^beta.
    return nn.LocalResponseNorm(5, alpha=1e-4, beta=0.75, k=1.0)


def build():
    return nn.Sequential(
        nn.Conv2d(3, 96, 11, stride=4),
        nn.ReLU(inplace=True),
        lrn(),
        nn.MaxPool2d(3, 2, ceil_mode=True),
        nn.Conv2d(96, 256, 5, padding=2, groups=2),
        nn.ReLU(inplace=True),
        lrn(),
        nn.MaxPool2d(3, 2, ceil_mode=True),
        nn.Conv2d(256, 384, 3, padding=1),
        nn.ReLU(inplace=True),
        nn.Conv2d(384, 384, 3, padding=1, groups=2),
        nn.ReLU(inplace=True),
        nn.Conv2d(384, 256, 3, padding=1, groups=2),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(3, 2, ceil_mode=True),
        nn.Flatten(),
        nn.Linear(256 * 6 * 6, 4096),
        nn.ReLU(inplace=True),
        nn.Dropout(0.5),
        nn.Linear(4096, 4096),
        nn.ReLU(inplace=True),
        nn.Dropout(0.5),
        nn.Linear(4096, 1000),
    )
