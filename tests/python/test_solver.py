"""The solvers from Python: an SGD step checked against the update worked
out with NumPy, snapshot and restore, the solver classes and get_solver,
the gradients-ready callback and pycaffe's add_callback."""
import os

import numpy as np
import pytest

import xtrain
from conftest import LINEAR_EUCLIDEAN


def solver_file(write, tmp_path, extra="", base_lr=0.1, max_iter=10, display=0):
    net = write("net.prototxt", LINEAR_EUCLIDEAN)
    return write("solver.prototxt", """
        net: '%s'
        base_lr: %g
        lr_policy: 'fixed'
        max_iter: %d
        display: %d
        snapshot_prefix: '%s'
        %s
        """ % (net, base_lr, max_iter, display, os.path.join(str(tmp_path), "snap"), extra))


def feed(net, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    t = rng.standard_normal((4, 2)).astype(np.float32)
    net.blobs["data"].data[...] = x
    net.blobs["target"].data[...] = t
    return x, t


def test_sgd_step_is_the_hand_computed_update(write, tmp_path):
    solver = xtrain.SGDSolver(solver_file(write, tmp_path))
    assert solver.iter == 0 and solver.type == "SGD"
    net = solver.net
    x, t = feed(net, 5)
    weights, bias = (p.data.copy() for p in net.params["ip"])
    solver.step(1)
    dy = (x @ weights.T + bias - t) / 4  # the Euclidean loss's gradient
    np.testing.assert_allclose(net.params["ip"][0].data, weights - 0.1 * (dy.T @ x),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(net.params["ip"][1].data, bias - 0.1 * dy.sum(axis=0),
                               rtol=1e-5, atol=1e-7)
    assert solver.iter == 1


def test_training_lowers_the_loss(write, tmp_path):
    solver = xtrain.get_solver(solver_file(write, tmp_path, "type: 'Adam'", base_lr=0.05))
    assert solver.type == "Adam"
    feed(solver.net, 7)
    first = float(solver.net.forward()["loss"])
    solver.step(50)
    assert float(solver.net.forward()["loss"]) < first / 2


def test_snapshot_and_restore(write, tmp_path):
    path = solver_file(write, tmp_path, "momentum: 0.9")
    solver = xtrain.SGDSolver(path)
    feed(solver.net, 11)
    solver.step(3)
    written = solver.snapshot()
    assert [os.path.basename(p) for p in written] == ["snap_iter_3.caffemodel",
                                                      "snap_iter_3.solverstate"]
    solver.step(2)
    after_five = solver.net.params["ip"][0].data.copy()

    resumed = xtrain.SGDSolver(path)
    resumed.restore(written[1])
    assert resumed.iter == 3
    feed(resumed.net, 11)
    resumed.step(2)  # the momentum history came back with the state
    np.testing.assert_allclose(resumed.net.params["ip"][0].data, after_five, rtol=1e-6)


def test_every_update_rule_has_its_class(write, tmp_path):
    for name in ("SGD", "Nesterov", "AdaGrad", "RMSProp", "AdaDelta", "Adam"):
        solver = getattr(xtrain, name + "Solver")(solver_file(write, tmp_path))
        assert solver.type == name


def test_gradients_ready_callback(write, tmp_path):
    solver = xtrain.SGDSolver(solver_file(write, tmp_path))
    feed(solver.net, 2)
    seen = []

    def zero_the_gradients():
        seen.append(solver.iter)
        for blob in solver.net.params["ip"]:
            blob.diff[...] = 0

    solver.add_gradients_ready_callback(zero_the_gradients)
    before = solver.net.params["ip"][0].data.copy()
    solver.step(2)
    assert seen == [0, 1]
    np.testing.assert_array_equal(solver.net.params["ip"][0].data, before)


def test_add_callback_starts_each_iteration_before_forward(write, tmp_path):
    # pycaffe's add_callback(on_start, on_gradients_ready): on_start feeds
    # each iteration its own batch, so the loss seen once the gradients are
    # ready must be that batch's loss under the weights at the start.
    solver = xtrain.SGDSolver(solver_file(write, tmp_path))
    net = solver.net
    events, expected_losses = [], []

    def on_start():
        events.append(("start", solver.iter))
        x, t = feed(net, 10 + solver.iter)
        weights, bias = (p.data for p in net.params["ip"])
        residual = x @ weights.T + bias - t
        expected_losses.append((residual ** 2).sum() / (2 * len(x)))

    def on_gradients_ready():
        events.append(("ready", solver.iter))
        assert net.blobs["loss"].data[()] == pytest.approx(expected_losses[-1], rel=1e-5)

    solver.add_callback(on_start, on_gradients_ready)
    solver.step(3)
    assert events == [("start", 0), ("ready", 0), ("start", 1), ("ready", 1),
                      ("start", 2), ("ready", 2)]


def test_an_exception_in_a_callback_stops_training(write, tmp_path):
    solver = xtrain.SGDSolver(solver_file(write, tmp_path))
    feed(solver.net, 1)

    def on_start():
        if solver.iter == 1:
            raise ValueError("stop here")

    solver.add_callback(on_start, lambda: None)
    with pytest.raises(ValueError, match="stop here"):
        solver.step(3)
    assert solver.iter == 1


def test_a_bad_solver_file_is_an_error(write):
    with pytest.raises(xtrain.XtrainError, match="base_lr"):
        xtrain.SGDSolver(write("bad.prototxt",
                               "net: 'x.prototxt'\nbase_lr: -1\nlr_policy: 'fixed'\nmax_iter: 1"))


def test_apply_update_uses_the_diffs_as_they_are(write, tmp_path):
    # A loop written in Python: set the gradients by hand, then update.
    solver = xtrain.SGDSolver(solver_file(write, tmp_path, "momentum: 0.9", base_lr=0.5))
    weights = solver.net.params["ip"][0]
    weights.data[...] = 1
    weights.diff[...] = np.arange(6, dtype=np.float32).reshape(2, 3)
    solver.apply_update()
    np.testing.assert_allclose(weights.data, 1 - 0.5 * np.arange(6).reshape(2, 3), rtol=1e-6)
    assert solver.iter == 0  # only step() advances the iteration


def test_load_hdf5_reads_an_hdf5_snapshot(write, tmp_path):
    solver = xtrain.SGDSolver(solver_file(write, tmp_path, "snapshot_format: HDF5"))
    feed(solver.net, 3)
    solver.step(2)
    solver.snapshot()
    weights = str(tmp_path / "snap_iter_2.caffemodel.h5")
    assert os.path.exists(weights)
    net = xtrain.Net(write("again.prototxt", LINEAR_EUCLIDEAN), xtrain.TRAIN)
    net.load_hdf5(weights)
    for mine, trained in zip(net.params["ip"], solver.net.params["ip"]):
        np.testing.assert_array_equal(mine.data, trained.data)


def test_solve_writes_the_metrics_and_report_of_xtrain_train(write, tmp_path):
    solver = xtrain.SGDSolver(solver_file(write, tmp_path, max_iter=4, display=1))
    feed(solver.net, 3)
    solver.solve()
    assert solver.iter == 4
    lines = (tmp_path / "snap_metrics.jsonl").read_text().splitlines()
    assert len(lines) >= 4 and all(line.startswith("{") for line in lines)
    assert (tmp_path / "snap_report.html").exists()
    assert (tmp_path / "snap_iter_4.caffemodel").exists()


def test_ctrl_c_stops_training_after_the_iteration_and_raises(write, tmp_path):
    """SIGINT while C++ trains (the GIL released): the loop asks Python once an
    iteration, stops, and step() raises KeyboardInterrupt."""
    import signal
    import threading

    solver = xtrain.SGDSolver(solver_file(write, tmp_path, max_iter=100000000))
    feed(solver.net, 4)
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        solver.step(100000000)
    timer.join()
    assert 0 < solver.iter < 100000000
    solver.step(1)  # the solver is still usable


def test_the_log_level_follows_glog_numbers_and_quiets_training(write, tmp_path):
    """set_log_level (and GLOG_minloglevel, read at import, as pycaffe users
    set it) decides which log lines reach stderr: the C++ writes them, so a
    child process shows what the terminal would."""
    import subprocess
    import sys

    path = solver_file(write, tmp_path)
    script = (
        "import xtrain\n"
        "print(xtrain.log_level())\n"
        "xtrain.set_log_level(LEVEL)\n"
        "print(xtrain.log_level())\n"
        "xtrain.SGDSolver(%r)\n" % str(path)
    )
    without_glog = {k: v for k, v in os.environ.items() if k != "GLOG_minloglevel"}
    quiet = subprocess.run([sys.executable, "-c", script.replace("LEVEL", "1")],
                           capture_output=True, text=True,
                           env=dict(without_glog, GLOG_minloglevel="2"), check=True)
    assert quiet.stdout.split() == ["2", "1"]
    assert "Initializing solver" not in quiet.stderr  # an INFO line
    loud = subprocess.run([sys.executable, "-c", script.replace("LEVEL", "0")],
                          capture_output=True, text=True, env=without_glog, check=True)
    assert loud.stdout.split() == ["0", "0"]
    assert "Initializing solver" in loud.stderr
    with pytest.raises(xtrain.XtrainError, match="glog"):
        xtrain.set_log_level(7)
