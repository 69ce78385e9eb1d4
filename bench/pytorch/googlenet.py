"""GoogLeNet as BVLC trained it for Caffe (models/googlenet): the 7x7 stem
with local response normalisation (torchvision's version has batch
normalisation instead), nine inception modules, and in training the two
auxiliary classifiers after inception 4a and 4d, whose losses weigh 0.3.
forward() returns the three heads' scores; LOSS_WEIGHTS says how they add
up."""
import importlib.util
from pathlib import Path

import torch
from torch import nn

IMAGE_SHAPE = (3, 224, 224)
LOSS_WEIGHTS = (0.3, 0.3, 1.0)  # loss1, loss2 (auxiliary), loss3 (main)


def caffe_generator():
    """models/googlenet/generate.py, whose INCEPTION table (per module: 1x1,
    3x3 reduce, 3x3, 5x5 reduce, 5x5, pool projection) both nets are built from."""
    path = Path(__file__).resolve().parents[2] / "models" / "googlenet" / "generate.py"
    spec = importlib.util.spec_from_file_location("googlenet_generate", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


INCEPTION = caffe_generator().INCEPTION


def conv_relu(inputs, outputs, kernel, stride=1, padding=0):
    return nn.Sequential(nn.Conv2d(inputs, outputs, kernel, stride, padding), nn.ReLU(inplace=True))


def max_pool(kernel, stride, padding=0):
    return nn.MaxPool2d(kernel, stride, padding, ceil_mode=True)  # Caffe rounds up


def lrn():
    return nn.LocalResponseNorm(5, alpha=1e-4, beta=0.75, k=1.0)


class Inception(nn.Module):
    def __init__(self, inputs, name):
        super().__init__()
        c1, r3, c3, r5, c5, proj = INCEPTION[name]
        self.branch1 = conv_relu(inputs, c1, 1)
        self.branch3 = nn.Sequential(conv_relu(inputs, r3, 1), conv_relu(r3, c3, 3, padding=1))
        self.branch5 = nn.Sequential(conv_relu(inputs, r5, 1), conv_relu(r5, c5, 5, padding=2))
        self.branch_pool = nn.Sequential(max_pool(3, 1, 1), conv_relu(inputs, proj, 1))
        self.outputs = c1 + c3 + c5 + proj

    def forward(self, x):
        return torch.cat([self.branch1(x), self.branch3(x), self.branch5(x), self.branch_pool(x)], 1)


def auxiliary_head(inputs):
    """14x14 -> 5x5/3 average pool -> 4x4x128 -> 1024 (70% dropout) -> 1000."""
    return nn.Sequential(
        nn.AvgPool2d(5, 3, ceil_mode=True),
        conv_relu(inputs, 128, 1),
        nn.Flatten(),
        nn.Linear(128 * 4 * 4, 1024),
        nn.ReLU(inplace=True),
        nn.Dropout(0.7),
        nn.Linear(1024, 1000),
    )


def inception_chain(inputs, names):
    modules = []
    for name in names:
        modules.append(Inception(inputs, name))
        inputs = modules[-1].outputs
    return nn.Sequential(*modules), inputs


class GoogLeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(
            conv_relu(3, 64, 7, stride=2, padding=3), max_pool(3, 2), lrn(),
            conv_relu(64, 64, 1), conv_relu(64, 192, 3, padding=1), lrn(), max_pool(3, 2))
        self.stage3, width = inception_chain(192, ["3a", "3b"])
        self.pool3 = max_pool(3, 2)
        self.inception_4a, width = inception_chain(width, ["4a"])
        self.loss1 = auxiliary_head(width)
        self.inception_4bcd, width = inception_chain(width, ["4b", "4c", "4d"])
        self.loss2 = auxiliary_head(width)
        self.inception_4e, width = inception_chain(width, ["4e"])
        self.pool4 = max_pool(3, 2)
        self.stage5, width = inception_chain(width, ["5a", "5b"])
        self.classifier = nn.Sequential(
            nn.AvgPool2d(7, 1), nn.Dropout(0.4), nn.Flatten(), nn.Linear(width, 1000))

    def forward(self, x):
        x = self.inception_4a(self.pool3(self.stage3(self.stem(x))))
        scores1 = self.loss1(x)
        x = self.inception_4bcd(x)
        scores2 = self.loss2(x)
        x = self.stage5(self.pool4(self.inception_4e(x)))
        return scores1, scores2, self.classifier(x)


def build():
    return GoogLeNet()
