"""`type: "Python"` layers: forward and backward through a Python class,
param_str and phase, parameter blobs the solver trains and snapshots keep,
a numerical gradient check, and errors that carry the Python traceback."""
import sys

import numpy as np
import pytest

import xtrain

LAYERS = '''
import numpy as np
import xtrain


class TimesTen(xtrain.Layer):
    def setup(self, bottom, top):
        self.factor = float(self.param_str or 10)

    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].shape)

    def forward(self, bottom, top):
        top[0].data[...] = self.factor * bottom[0].data

    def backward(self, top, propagate_down, bottom):
        if propagate_down[0]:
            bottom[0].diff[...] = self.factor * top[0].diff


class ScaledSquare(xtrain.Layer):
    """y = w * x**2 with one learnable w per channel."""

    def setup(self, bottom, top):
        self.blobs.add_blob(bottom[0].shape[1])
        self.blobs[0].data[...] = np.arange(1, bottom[0].shape[1] + 1)

    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].shape)

    def forward(self, bottom, top):
        top[0].data[...] = self.blobs[0].data * bottom[0].data ** 2

    def backward(self, top, propagate_down, bottom):
        x, dy = bottom[0].data, top[0].diff
        self.blobs[0].diff[...] += (dy * x ** 2).sum(axis=0)
        if propagate_down[0]:
            bottom[0].diff[...] = dy * 2 * self.blobs[0].data * x


class PhaseReporter(xtrain.Layer):
    def reshape(self, bottom, top):
        top[0].reshape(1)

    def forward(self, bottom, top):
        top[0].data[0] = 1.0 if self.phase == xtrain.TRAIN else 2.0


class Broken(xtrain.Layer):
    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].shape)

    def forward(self, bottom, top):
        raise ValueError("the forward of this layer is broken on purpose")


class ForgetsItsTop(xtrain.Layer):
    def reshape(self, bottom, top):
        pass

    def forward(self, bottom, top):
        top[0].data[...] = 1.0
'''


@pytest.fixture
def layers_module(tmp_path, monkeypatch):
    """The layers above as module `pylayers` on sys.path."""
    (tmp_path / "pylayers.py").write_text(LAYERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("pylayers", None)
    return "pylayers"


def python_net(write, layer, param_str="", force_backward=True, shape=(2, 3)):
    dims = " ".join("dim: %d" % d for d in shape)
    return write("net.prototxt", """
        name: 'python_layer'
        force_backward: %s
        layer { name: 'data' type: 'Input' top: 'data' input_param { shape { %s } } }
        layer { name: 'py' type: 'Python' bottom: 'data' top: 'out'
          python_param { module: 'pylayers' layer: '%s' param_str: '%s' } }
        """ % ("true" if force_backward else "false", dims, layer, param_str))


def test_forward_and_backward_run_the_python_methods(write, layers_module):
    net = xtrain.Net(python_net(write, "TimesTen"), xtrain.TRAIN)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(net.forward(data=x)["out"], 10 * x)
    net.blobs["out"].diff[...] = 1.0
    np.testing.assert_array_equal(net.backward()["data"], np.full((2, 3), 10.0))
    three = xtrain.Net(python_net(write, "TimesTen", param_str="3"), xtrain.TRAIN)
    np.testing.assert_array_equal(three.forward(data=x)["out"], 3 * x)


def test_the_layer_knows_its_phase(write, layers_module):
    for phase, expected in ((xtrain.TRAIN, 1.0), (xtrain.TEST, 2.0)):
        net = xtrain.Net(python_net(write, "PhaseReporter"), phase)
        assert net.forward()["out"][0] == expected


def test_gradient_of_a_python_layer_matches_finite_differences(write, layers_module):
    net = xtrain.Net(python_net(write, "ScaledSquare", shape=(2, 3)), xtrain.TRAIN)
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    probe = rng.uniform(-1, 1, (2, 3)).astype(np.float32)  # loss = sum(probe * y)

    def loss(values):
        return float((probe * net.forward(data=values)["out"]).sum())

    net.forward(data=x)
    net.params["py"][0].diff[...] = 0
    net.blobs["out"].diff[...] = probe
    analytic_x = net.backward()["data"].copy()
    analytic_w = net.params["py"][0].diff.copy()
    step = 1e-2
    for index in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[index] += step
        minus[index] -= step
        numeric = (loss(plus) - loss(minus)) / (2 * step)
        assert abs(numeric - analytic_x[index]) <= 1e-3 * max(1.0, abs(numeric))
    weights = net.params["py"][0].data
    for c in range(3):
        saved = weights[c]
        weights[c] = saved + step
        up = loss(x)
        weights[c] = saved - step
        down = loss(x)
        weights[c] = saved
        numeric = (up - down) / (2 * step)
        assert abs(numeric - analytic_w[c]) <= 1e-3 * max(1.0, abs(numeric))


def test_python_parameters_are_trained_and_saved(write, layers_module, tmp_path):
    net_path = write("train.prototxt", """
        name: 'fit'
        layer { name: 'data' type: 'Input' top: 'data' input_param { shape { dim: 4 dim: 2 } } }
        layer { name: 'target' type: 'Input' top: 'target'
                input_param { shape { dim: 4 dim: 2 } } }
        layer { name: 'py' type: 'Python' bottom: 'data' top: 'y'
          python_param { module: 'pylayers' layer: 'ScaledSquare' } }
        layer { name: 'loss' type: 'EuclideanLoss' bottom: 'y' bottom: 'target' top: 'loss' }
        """)
    solver_path = write("solver.prototxt", """
        net: '%s'
        base_lr: 0.2
        lr_policy: 'fixed'
        max_iter: 100
        snapshot_prefix: '%s'
        """ % (net_path, tmp_path / "fit"))
    solver = xtrain.SGDSolver(solver_path)
    x = np.array([[1, 2], [0.5, 1], [1, 0.5], [2, 1]], np.float32)
    solver.net.blobs["data"].data[...] = x
    solver.net.blobs["target"].data[...] = np.array([3.0, -1.0], np.float32) * x ** 2
    solver.step(100)  # w goes from (1, 2) to (3, -1)
    np.testing.assert_allclose(solver.net.params["py"][0].data, [3.0, -1.0], atol=1e-3)
    weights = solver.snapshot()[0]
    deploy = xtrain.Net(net_path, xtrain.TEST, weights=weights)
    np.testing.assert_array_equal(deploy.params["py"][0].data, solver.net.params["py"][0].data)


def test_a_python_exception_names_the_layer_with_its_traceback(write, layers_module):
    net = xtrain.Net(python_net(write, "Broken"), xtrain.TEST)
    with pytest.raises(xtrain.XtrainError) as raised:
        net.forward()
    message = str(raised.value)
    assert "layer 'py' (Python)" in message
    assert "pylayers.Broken raised in forward()" in message
    assert "Traceback" in message and "broken on purpose" in message


def test_a_top_left_without_a_shape_is_an_error_naming_the_layer(write, layers_module):
    # The layers after it read the top: a forward crashed (SIGSEGV) before.
    with pytest.raises(xtrain.XtrainError,
                       match=r"layer 'py' \(Python\) gave top 0 no shape: .*top\[0\].reshape"):
        xtrain.Net(python_net(write, "ForgetsItsTop"), xtrain.TEST)


def test_a_missing_module_or_class_is_named(write, layers_module):
    with pytest.raises(xtrain.XtrainError, match="pylayers.NoSuchLayer"):
        xtrain.Net(python_net(write, "NoSuchLayer"), xtrain.TEST)


def test_the_command_line_tool_runs_python_layers(write, layers_module, tmp_path):
    """`xtrain train` is not Python: it loads libxtrain_python, which starts
    an interpreter, for the net's Python layer."""
    import os
    import subprocess

    tools = os.environ.get("XTRAIN_TOOLS_DIR")
    if not tools:
        pytest.skip("XTRAIN_TOOLS_DIR (set by CTest) names the built tools")
    net_path = write("train.prototxt", """
        name: 'fit'
        layer { name: 'data' type: 'DummyData' top: 'data' top: 'target'
          dummy_data_param { shape { dim: 4 dim: 3 } shape { dim: 4 dim: 3 }
                             data_filler { type: 'gaussian' } data_filler { type: 'constant' value: 1 } } }
        layer { name: 'py' type: 'Python' bottom: 'data' top: 'y'
          python_param { module: 'pylayers' layer: 'TimesTen' param_str: '2' } }
        layer { name: 'ip' type: 'InnerProduct' bottom: 'y' top: 'ip'
          inner_product_param { num_output: 3 weight_filler { type: 'gaussian' std: 0.1 } } }
        layer { name: 'loss' type: 'EuclideanLoss' bottom: 'ip' bottom: 'target' top: 'loss' }
        """)
    solver_path = write("solver.prototxt", """
        net: '%s'
        base_lr: 0.01
        lr_policy: 'fixed'
        max_iter: 5
        solver_mode: CPU
        snapshot_prefix: '%s'
        """ % (net_path, tmp_path / "fit"))
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    run = subprocess.run([os.path.join(tools, "xtrain"), "train", "--solver=" + solver_path],
                         env=environment, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    assert (tmp_path / "fit_iter_5.caffemodel").exists()

    environment["PYTHONPATH"] = ""  # the layers' module is not to be found
    run = subprocess.run([os.path.join(tools, "xtrain"), "train", "--solver=" + solver_path],
                         env=environment, capture_output=True, text=True, timeout=120,
                         cwd=str(tmp_path.parent))
    assert run.returncode == 1
    assert "cannot load the Python layer pylayers.TimesTen" in run.stderr
    assert "No module named 'pylayers'" in run.stderr
