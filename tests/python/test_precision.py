"""Mixed precision from Python: set_precision for the nets and solvers made
afterwards, blobs that still read and write float32 NumPy arrays whatever
the storage, values stored as bf16, and the solver's loss scale."""
import numpy as np
import pytest

import xtrain
from conftest import LINEAR_EUCLIDEAN, LINEAR_SOFTMAX


@pytest.fixture(autouse=True)
def back_to_the_fields():
    yield
    xtrain.set_precision(None)


def bf16(values):
    """values rounded to bfloat16 (to nearest, ties to even), as float32."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


def test_set_precision_takes_the_flags_spellings_and_refuses_others():
    assert xtrain.get_precision() is None
    xtrain.set_precision("BF16")
    assert xtrain.get_precision() == "bf16"
    xtrain.set_precision("float16")
    assert xtrain.get_precision() == "fp16"
    with pytest.raises(xtrain.XtrainError, match="'int8' is not a precision"):
        xtrain.set_precision("int8")
    xtrain.set_precision(None)
    assert xtrain.get_precision() is None


def test_a_bf16_net_stores_its_activations_in_bf16_and_reads_as_float32(write):
    path = write("net.prototxt", LINEAR_SOFTMAX)
    xtrain.set_precision("bf16")
    net = xtrain.Net(path, xtrain.TEST)
    x = np.random.default_rng(3).standard_normal((2, 3)).astype(np.float32)
    net.blobs["data"].data[...] = x
    net.forward()
    scores = net.blobs["ip"].data
    assert scores.dtype == np.float32
    np.testing.assert_array_equal(scores, bf16(scores))  # stored as bf16 values
    # The product of bf16-rounded operands, accumulated in fp32.
    weights, bias = (p.data for p in net.params["ip"])
    expected = bf16(bf16(x) @ bf16(weights).T + bias)
    np.testing.assert_allclose(scores, expected, rtol=2 ** -7, atol=1e-3)
    # The weights themselves stay fp32 (the master copy).
    assert not np.array_equal(weights, bf16(weights))
    # The output (the softmax, nothing reads it) is not rounded.
    prob = net.blobs["prob"].data
    np.testing.assert_allclose(prob.sum(axis=1), 1, rtol=1e-6)


def test_a_solver_made_after_set_precision_trains_with_the_nets_loss_scale(write, tmp_path):
    net = write("net.prototxt", "global_grad_scale: 1024\n" + LINEAR_EUCLIDEAN)
    solver_path = write("solver.prototxt", """
        net: '%s' base_lr: 0.1 lr_policy: 'fixed' max_iter: 10
        snapshot_prefix: '%s/snap'
        """ % (net, tmp_path))
    xtrain.set_precision("fp16")
    solver = xtrain.get_solver(solver_path)
    assert solver.loss_scale == 1024 and solver.skipped_updates == 0
    rng = np.random.default_rng(1)
    solver.net.blobs["data"].data[...] = rng.standard_normal((4, 3))
    solver.net.blobs["target"].data[...] = rng.standard_normal((4, 2))
    first = float(solver.net.forward()["loss"])
    solver.step(10)
    assert float(solver.net.forward()["loss"]) < first
