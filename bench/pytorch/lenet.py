"""LeNet as in models/lenet: two 5x5 convolutions (20, 50 filters), each
followed by 2x2 max pooling, a 500-unit inner product with ReLU, 10 classes."""
from torch import nn

IMAGE_SHAPE = (1, 28, 28)


def build():
    return nn.Sequential(
        nn.Conv2d(1, 20, 5),
        nn.MaxPool2d(2, 2, ceil_mode=True),
        nn.Conv2d(20, 50, 5),
        nn.MaxPool2d(2, 2, ceil_mode=True),
        nn.Flatten(),
        nn.Linear(50 * 4 * 4, 500),
        nn.ReLU(inplace=True),
        nn.Linear(500, 10),
    )
