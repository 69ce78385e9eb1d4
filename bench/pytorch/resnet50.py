"""ResNet-50 v1 as Kaiming He released it for Caffe (models/resnet50): the
first block of stages 3-5 downsamples with stride 2 on its first 1x1
convolution (torchvision's resnet50 is "v1.5", stride on the 3x3); conv1
has a bias, the other convolutions none; every convolution is followed by
batch normalisation with a learned scale and shift (Caffe's BatchNorm +
Scale pair); max pooling after conv1 without padding, rounding up."""
from torch import nn

IMAGE_SHAPE = (3, 224, 224)
STAGES = [(3, 64, 1), (4, 128, 2), (6, 256, 2), (3, 512, 2)]  # blocks, width, first stride


def conv_bn(inputs, outputs, kernel, stride=1, padding=0):
    return nn.Sequential(nn.Conv2d(inputs, outputs, kernel, stride, padding, bias=False),
                         nn.BatchNorm2d(outputs))


class Bottleneck(nn.Module):
    def __init__(self, inputs, width, stride, project):
        super().__init__()
        self.branch2 = nn.Sequential(
            conv_bn(inputs, width, 1, stride), nn.ReLU(inplace=True),
            conv_bn(width, width, 3, padding=1), nn.ReLU(inplace=True),
            conv_bn(width, 4 * width, 1))
        self.branch1 = conv_bn(inputs, 4 * width, 1, stride) if project else nn.Identity()
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.relu(self.branch1(x) + self.branch2(x))


def build():
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=True), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
              nn.MaxPool2d(3, 2, ceil_mode=True)]
    inputs = 64
    for blocks, width, stride in STAGES:
        for index in range(blocks):
            first = index == 0
            layers.append(Bottleneck(inputs, width, stride if first else 1, project=first))
            inputs = 4 * width
    layers += [nn.AvgPool2d(7, 1), nn.Flatten(), nn.Linear(inputs, 1000)]
    return nn.Sequential(*layers)
