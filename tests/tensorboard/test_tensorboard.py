"""TensorBoard event files of `xtrain train --tensorboard` and of the Python
solvers, read back by TensorBoard's own reader (event_accumulator, from
PyPI: scripts/tensorboard_test_env.sh) and checked against the metrics file
of the same run and the weights themselves.

Run by CTest as TensorBoardEvents, with XTRAIN_TOOLS_DIR the tools' folder
and the build's Python package on PYTHONPATH."""
import json
import math
import os
import subprocess
import time

import pytest
from tensorboard.backend.event_processing import event_accumulator

TOOLS = os.environ.get("XTRAIN_TOOLS_DIR", "build/bin")

# Random inputs, 3 classes: a net that trains in milliseconds.
SOLVER = """
net_param {{
  name: "tiny"
  layer {{ name: "data" type: "DummyData" top: "data" top: "label"
    dummy_data_param {{ shape {{ dim: 8 dim: 6 }} shape {{ dim: 8 }}
      data_filler {{ type: "gaussian" std: 1 }} data_filler {{ type: "uniform" min: 0 max: 2.99 }} }} }}
  layer {{ name: "ip1" type: "InnerProduct" bottom: "data" top: "ip1"
    inner_product_param {{ num_output: 5 weight_filler {{ type: "gaussian" std: 0.3 }} }} }}
  layer {{ name: "relu" type: "ReLU" bottom: "ip1" top: "ip1" }}
  layer {{ name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2"
    inner_product_param {{ num_output: 3 weight_filler {{ type: "gaussian" std: 0.3 }} }} }}
  layer {{ name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" }}
  layer {{ name: "accuracy" type: "Accuracy" bottom: "ip2" bottom: "label" top: "accuracy"
    include {{ phase: TEST }} }}
}}
base_lr: 0.1 lr_policy: "step" gamma: 0.5 stepsize: 20 momentum: 0.9
max_iter: 40 display: 10 test_interval: 20 test_iter: 2 snapshot: 20
snapshot_prefix: "{prefix}" random_seed: 1 solver_mode: CPU
"""


def write_solver(folder):
    path = folder / "solver.prototxt"
    path.write_text(SOLVER.format(prefix=folder / "tiny"))
    return path


def train(*args):
    result = subprocess.run([os.path.join(TOOLS, "xtrain"), "train", *args],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def read_events(folder):
    accumulator = event_accumulator.EventAccumulator(
        str(folder), size_guidance={event_accumulator.SCALARS: 0,
                                    event_accumulator.HISTOGRAMS: 0})
    accumulator.Reload()
    return accumulator


def scalars(events, tag):
    return [(point.step, point.value) for point in events.Scalars(tag)]


def metrics(path):
    with open(path) as lines:
        return [json.loads(line) for line in lines]


def close(a, b):
    return math.isclose(a, b, rel_tol=2e-6, abs_tol=1e-7)


def test_cli_events_hold_what_the_metrics_file_holds(tmp_path):
    solver = write_solver(tmp_path)
    train(f"--solver={solver}", f"--tensorboard={tmp_path / 'tb'}")
    events = read_events(tmp_path / "tb")
    records = metrics(tmp_path / "tiny_metrics.jsonl")
    tags = events.Tags()

    for tag in ["train/loss", "solver/learning_rate", "solver/loss_scale",
                "speed/images_per_second", "speed/iterations_per_second", "test/accuracy",
                "test/loss", "weight_norm/ip1/0", "weight_norm/ip1/1", "weight_norm/ip2/0",
                "gradient_norm/ip1/0", "gradient_norm/ip2/1"]:
        assert tag in tags["scalars"], (tag, tags["scalars"])

    # Every train line of the metrics file, point for point (the last display
    # is the final weights' loss).
    train_lines = [r for r in records if r["kind"] == "train"]
    assert [r["iteration"] for r in train_lines] == [s for s, _ in scalars(events, "train/loss")]
    for record, (_, value) in zip(train_lines, scalars(events, "train/loss")):
        assert close(record["loss"], value), (record, value)
    # The loss output as each displayed iteration computed it.
    raw = dict(scalars(events, "train/outputs/loss"))
    for record in train_lines:
        assert close(record["outputs"]["loss"], raw[record["iteration"]]), record
    rates = dict(scalars(events, "solver/learning_rate"))
    for record in train_lines:
        if "lr" in record:
            assert close(record["lr"], rates[record["iteration"]]), record
    assert sorted(set(rates.values())) == pytest.approx([0.05, 0.1])
    assert all(v == 1 for _, v in scalars(events, "solver/loss_scale"))

    test_lines = [r for r in records if r["kind"] == "test"]
    accuracy = scalars(events, "test/accuracy")
    assert [r["iteration"] for r in test_lines] == [s for s, _ in accuracy] == [0, 20, 40]
    for record, (_, value) in zip(test_lines, accuracy):
        assert close(record["outputs"]["accuracy"], value)
        assert close(record["outputs"]["loss"], dict(scalars(events, "test/loss"))[record["iteration"]])

    # Histograms of the weights at the snapshots; at iteration 20 the display
    # (before that iteration's update) saw the weights the snapshot holds.
    assert "weights/ip1/0" in tags["histograms"], tags["histograms"]
    histograms = events.Histograms("weights/ip1/0")
    assert [h.step for h in histograms] == [20, 40]
    at_20 = histograms[0].histogram_value
    assert at_20.num == 5 * 6
    assert sum(at_20.bucket) == 5 * 6
    assert at_20.min <= at_20.max
    norms = dict(scalars(events, "weight_norm/ip1/0"))
    assert math.isclose(math.sqrt(at_20.sum_squares), norms[20], rel_tol=1e-5)
    assert all(v > 0 for _, v in scalars(events, "gradient_norm/ip1/0"))


def test_a_resumed_run_replaces_the_points_past_its_snapshot(tmp_path):
    solver = write_solver(tmp_path)
    train(f"--solver={solver}", f"--tensorboard={tmp_path / 'tb'}")
    first = dict(scalars(read_events(tmp_path / "tb"), "train/loss"))
    time.sleep(1.1)  # event files are named (and read) in the order of their start second
    train(f"--solver={solver}", f"--snapshot={tmp_path / 'tiny_iter_20.solverstate'}",
          "--max_iter=40", f"--tensorboard={tmp_path / 'tb'}")
    assert len(list((tmp_path / "tb").glob("events.out.tfevents.*"))) == 2
    events = read_events(tmp_path / "tb")
    steps = [s for s, _ in scalars(events, "train/loss")]
    assert steps == sorted(set(steps)) == sorted(first) == [0, 10, 20, 30, 40]
    # The points before the restart are the first run's.
    assert close(dict(scalars(events, "train/loss"))[10], first[10])


def test_python_solver_writes_events(tmp_path):
    import xtrain
    solver = xtrain.get_solver(str(write_solver(tmp_path)), tensorboard=str(tmp_path / "py"))
    solver.step(25, progress=False)
    events = read_events(tmp_path / "py")
    assert [s for s, _ in scalars(events, "train/loss")] == [0, 10, 20]
    assert [s for s, _ in scalars(events, "test/accuracy")] == [0, 20]
    assert [h.step for h in events.Histograms("weights/ip2/0")] == [20]
    # add_tensorboard: a second directory from now on.
    solver.add_tensorboard(str(tmp_path / "later"))
    solver.step(10, progress=False)
    assert [s for s, _ in scalars(read_events(tmp_path / "later"), "train/loss")] == [30]
