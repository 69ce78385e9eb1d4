"""Progress in step()/solve() (python/xtrain/progress.py), the training
events of solver.add_observer, and Ctrl-C: a snapshot, then
KeyboardInterrupt naming it."""
import os
import signal
import sys
import threading

import pytest

import xtrain
from conftest import LINEAR_EUCLIDEAN


def solver_file(write, tmp_path, max_iter=30, display=10, extra=""):
    net = write("net.prototxt", LINEAR_EUCLIDEAN)
    return write("solver.prototxt", """
        net: '%s'
        base_lr: 0.01
        lr_policy: 'fixed'
        max_iter: %d
        display: %d
        snapshot_prefix: '%s'
        %s
        """ % (net, max_iter, display, os.path.join(str(tmp_path), "snap"), extra))


@pytest.fixture
def no_tqdm(monkeypatch):
    """The plain line, whether or not tqdm is installed."""
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)


def test_step_shows_a_line_with_the_iterations_and_the_loss(write, tmp_path, capsys, no_tqdm):
    solver = xtrain.SGDSolver(solver_file(write, tmp_path))
    solver.step(30, progress=True)
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert "30/30 iterations (100%)" in last, err
    assert "loss " in last, err
    assert "elapsed " in last, err


def test_a_line_while_it_runs_has_an_eta(no_tqdm):
    from xtrain.progress import PlainLine

    class Stream:
        text = ""

        def write(self, text):
            Stream.text += text

        def flush(self):
            pass

    line = PlainLine(100, stream=Stream(), every=0)
    line.update(25)
    line.set_postfix({"loss": 0.5, "test accuracy": 0.75})
    assert "25/100 iterations (25%), loss 0.5, test accuracy 0.75, ETA " in Stream.text


def test_progress_off_for_a_call_or_for_all(write, tmp_path, capsys, no_tqdm):
    solver = xtrain.SGDSolver(solver_file(write, tmp_path))
    solver.step(5, progress=False)
    assert "iterations" not in capsys.readouterr().err
    assert xtrain.progress_enabled()
    xtrain.set_progress(False)
    try:
        solver.step(5)
        assert "iterations" not in capsys.readouterr().err
    finally:
        xtrain.set_progress(True)
    solver.step(5)
    assert "5/5 iterations" in capsys.readouterr().err  # this call's iterations
    assert solver.iter == 15


def test_solve_counts_from_where_it_resumes(write, tmp_path, capsys, no_tqdm):
    solver = xtrain.SGDSolver(solver_file(write, tmp_path, max_iter=20))
    solver.step(12, progress=False)
    solver.solve(progress=True)
    assert "8/8 iterations (100%)" in capsys.readouterr().err


def test_tqdm_when_installed(write, tmp_path, capsys):
    pytest.importorskip("tqdm")
    solver = xtrain.SGDSolver(solver_file(write, tmp_path))
    solver.step(30)
    err = capsys.readouterr().err
    assert "30/30" in err and "loss=" in err, err


def test_observers_hear_each_event(write, tmp_path):
    solver = xtrain.SGDSolver(solver_file(write, tmp_path, max_iter=20, extra="snapshot: 10"))
    heard = []
    solver.add_observer(lambda kind, event: heard.append((kind, event)))
    solver.solve(progress=False)
    kinds = [kind for kind, _ in heard]
    assert kinds[0] == "start" and kinds[-1] == "end", kinds
    assert [e["iteration"] for k, e in heard if k == "iteration"] == list(range(20))
    displays = [e for k, e in heard if k == "display"]
    assert [e["iteration"] for e in displays] == [0, 10, 20]
    assert "loss" in displays[0]["outputs"] and displays[0]["learning_rate"] == pytest.approx(0.01)
    snapshots = [e for k, e in heard if k == "snapshot"]
    assert [e["iteration"] for e in snapshots] == [10, 20]
    assert all(os.path.exists(p) for p in snapshots[0]["paths"])


def test_an_interrupt_snapshots_stops_and_says_where(write, tmp_path, no_tqdm):
    """KeyboardInterrupt raised in an observer (as in a notebook's cell):
    training stops after that iteration, snapshots, and raises it."""
    solver = xtrain.SGDSolver(solver_file(write, tmp_path, max_iter=1000))

    def interrupt(kind, event):
        if kind == "iteration" and event["iteration"] == 5:
            raise KeyboardInterrupt

    solver.add_observer(interrupt)
    with pytest.raises(KeyboardInterrupt, match="stopped at iteration 6; snapshot .*snap_iter_6"):
        solver.step(100)
    assert solver.iter == 6
    assert (tmp_path / "snap_iter_6.caffemodel").exists()
    assert (tmp_path / "snap_iter_6.solverstate").exists()
    # Resumable, and still usable.
    again = xtrain.SGDSolver(solver_file(write, tmp_path, max_iter=1000))
    again.restore(str(tmp_path / "snap_iter_6.solverstate"))
    assert again.iter == 6
    solver.step(2, progress=False)
    assert solver.iter == 8


def test_sigint_while_cpp_trains_snapshots_too(write, tmp_path, no_tqdm):
    solver = xtrain.SGDSolver(solver_file(write, tmp_path, max_iter=100000000, display=0))
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt, match="snapshot"):
        solver.step(100000000)
    timer.join()
    assert 0 < solver.iter < 100000000
    assert (tmp_path / ("snap_iter_%d.solverstate" % solver.iter)).exists()


def test_no_snapshot_when_snapshot_after_train_is_off(write, tmp_path, no_tqdm):
    solver = xtrain.SGDSolver(solver_file(write, tmp_path, max_iter=1000,
                                          extra="snapshot_after_train: false"))
    solver.add_observer(lambda kind, event: (_ for _ in ()).throw(KeyboardInterrupt)
                        if kind == "iteration" and event["iteration"] == 2 else None)
    with pytest.raises(KeyboardInterrupt, match="no snapshot"):
        solver.step(10)
    assert not list(tmp_path.glob("snap_iter_*"))
