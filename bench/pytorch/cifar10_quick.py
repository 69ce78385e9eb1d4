"""Caffe's CIFAR-10 "quick" net as in models/cifar10_quick: three padded 5x5
convolutions (32, 32, 64 filters), max pooling then ReLU after the first,
ReLU then average pooling after the others, inner products to 64 and 10 (no
ReLU between them). Pooling rounds up like Caffe's (ceil_mode)."""
from torch import nn

IMAGE_SHAPE = (3, 32, 32)


def build():
    return nn.Sequential(
        nn.Conv2d(3, 32, 5, padding=2),
        nn.MaxPool2d(3, 2, ceil_mode=True),
        nn.ReLU(inplace=True),
        nn.Conv2d(32, 32, 5, padding=2),
        nn.ReLU(inplace=True),
        nn.AvgPool2d(3, 2, ceil_mode=True),
        nn.Conv2d(32, 64, 5, padding=2),
        nn.ReLU(inplace=True),
        nn.AvgPool2d(3, 2, ceil_mode=True),
        nn.Flatten(),
        nn.Linear(64 * 4 * 4, 64),
        nn.Linear(64, 10),
    )
