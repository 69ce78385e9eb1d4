"""Fixtures of the Python package's tests: small nets written to a
temporary folder, with every value known, so that results can be checked
against NumPy."""
import os
import textwrap

import numpy as np
import pytest

import xtrain

# A linear layer and a softmax: prob = softmax(W x + b) for 2 items of 3
# values, 4 classes.
LINEAR_SOFTMAX = """
name: 'linear'
layer { name: 'data' type: 'Input' top: 'data' input_param { shape { dim: 2 dim: 3 } } }
layer { name: 'ip' type: 'InnerProduct' bottom: 'data' top: 'ip'
  inner_product_param { num_output: 4 weight_filler { type: 'gaussian' std: 0.5 }
                        bias_filler { type: 'uniform' min: -1 max: 1 } } }
layer { name: 'prob' type: 'Softmax' bottom: 'ip' top: 'prob' }
"""

# A linear layer under a Euclidean loss against a target input (with
# gradients down to the inputs, which Caffe computes only when asked).
LINEAR_EUCLIDEAN = """
name: 'regression'
force_backward: true
layer { name: 'data' type: 'Input' top: 'data' input_param { shape { dim: 4 dim: 3 } } }
layer { name: 'target' type: 'Input' top: 'target' input_param { shape { dim: 4 dim: 2 } } }
layer { name: 'ip' type: 'InnerProduct' bottom: 'data' top: 'ip'
  inner_product_param { num_output: 2 weight_filler { type: 'gaussian' std: 0.5 }
                        bias_filler { type: 'constant' value: 0.1 } } }
layer { name: 'loss' type: 'EuclideanLoss' bottom: 'ip' bottom: 'target' top: 'loss' }
"""


@pytest.fixture
def write(tmp_path):
    """write(name, text) -> path of a file in the test's folder."""
    def writer(name, text):
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return str(path)
    return writer


@pytest.fixture(autouse=True)
def cpu_mode():
    xtrain.set_mode_cpu()
    xtrain.set_random_seed(1701)


@pytest.fixture
def repository():
    """The source tree (models/, examples/)."""
    return os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))


def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
