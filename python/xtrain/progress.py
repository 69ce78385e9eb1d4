"""Progress of ``solver.step(n)`` and ``solver.solve()``: the iteration, the
loss, the last test score and the time left, as a tqdm bar when tqdm is
installed (``tqdm.auto``, a widget in Jupyter) and as one plain line
otherwise.

``solver.step(n, progress=False)`` turns it off for one call,
``xtrain.set_progress(False)`` (or ``XTRAIN_PROGRESS=0`` in the environment
when ``xtrain`` is imported) for all. Ctrl-C, or the notebook's interrupt,
stops training after the current iteration and writes a snapshot (as
``xtrain train`` does on SIGINT); step()/solve() then raise
KeyboardInterrupt saying where the snapshot is.
"""
import os
import sys
import time

_enabled = os.environ.get("XTRAIN_PROGRESS", "1").strip().lower() not in ("0", "false", "no", "off")


def set_progress(enabled):
    """Show progress in step()/solve() (True) or not (False) from now on."""
    global _enabled
    _enabled = bool(enabled)


def progress_enabled():
    """Whether step()/solve() show progress when not told otherwise."""
    return _enabled


def _in_notebook():
    return "ipykernel" in sys.modules


def _format_seconds(seconds):
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"


def _test_score(outputs):
    """The score a progress line shows for a test: accuracy when the net has
    it, else its first output."""
    for name, value in outputs.items():
        if name.startswith("accuracy"):
            return name, value
    return next(iter(outputs.items()), (None, None))


class PlainLine:
    """One line, rewritten in place on a terminal or in a notebook, printed
    anew at most every `every` seconds elsewhere (a log file)."""

    def __init__(self, total, stream=None, every=10.0):
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", lambda: False)
        self.in_place = isatty() or _in_notebook()
        self.every = 0.2 if self.in_place else every
        self.total = total
        self.done = 0
        self.postfix = {}
        self.start = time.monotonic()
        self.last_write = None
        self.width = 0

    def update(self, n):
        self.done += n
        self._write(force=False)

    def set_postfix(self, values):
        self.postfix.update(values)
        self._write(force=False)

    def text(self):
        elapsed = time.monotonic() - self.start
        parts = [f"{self.done}/{self.total} iterations"]
        if self.total > 0:
            parts[0] += f" ({100.0 * self.done / self.total:.0f}%)"
        parts += [f"{name} {value:.4g}" for name, value in self.postfix.items()]
        if 0 < self.done < self.total and elapsed > 0:
            parts.append("ETA " + _format_seconds(elapsed / self.done * (self.total - self.done)))
        parts.append("elapsed " + _format_seconds(elapsed))
        return ", ".join(parts)

    def _write(self, force):
        now = time.monotonic()
        if not force and self.last_write is not None and now - self.last_write < self.every:
            return
        self.last_write = now
        line = self.text()
        if self.in_place:
            self.stream.write("\r" + line.ljust(self.width))
            self.width = len(line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self):
        self._write(force=True)
        if self.in_place:
            self.stream.write("\n")
            self.stream.flush()


def _make_bar(total, use_tqdm):
    if use_tqdm:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            pass
        else:
            return tqdm(total=total, unit="it", dynamic_ncols=True)
    return PlainLine(total)


class Progress:
    """The observer (solver.add_observer) behind the progress of one
    solver; a bar exists only during a step()/solve() that shows one."""

    def __init__(self):
        self.bar = None
        self.iteration = None  # the last iteration the bar counted

    def begin(self, total, start_iteration, use_tqdm=True):
        self.bar = _make_bar(total, use_tqdm)
        self.iteration = start_iteration

    def end(self):
        if self.bar is not None:
            self.bar.close()
        self.bar = None

    def __call__(self, kind, event):
        if self.bar is None:
            return
        if kind == "start":
            # solve() knows where it starts only once it has resumed.
            self.iteration = event["iteration"]
            self.bar.total = event["max_iter"] - event["iteration"]
            if hasattr(self.bar, "refresh"):
                self.bar.refresh()
        elif kind == "iteration":
            # Each iteration reports as it starts: the one before is done.
            if event["iteration"] > self.iteration:
                self.bar.update(event["iteration"] - self.iteration)
                self.iteration = event["iteration"]
        elif kind == "display":
            self.bar.set_postfix({"loss": event["loss"]})
        elif kind == "test" and event["test_net"] == 0:
            name, value = _test_score(event["outputs"])
            if name is not None:
                self.bar.set_postfix({"test " + name: value})

    def finish(self, iteration):
        """Counts the last iteration, which no 'iteration' event follows."""
        if self.bar is not None and iteration > self.iteration:
            self.bar.update(iteration - self.iteration)
            self.iteration = iteration


def _progress_of(solver):
    progress = getattr(solver, "_progress", None)
    if progress is None:
        progress = Progress()
        solver.add_observer(progress)
        solver._progress = progress
    return progress


def _interrupted(solver, error):
    """KeyboardInterrupt with where training stopped and its snapshot."""
    paths = [p for p in solver.last_snapshot_paths if p.endswith(".solverstate")]
    if solver.last_snapshot_iter == solver.iter and paths:
        message = (f"training stopped at iteration {solver.iter}; snapshot {paths[0]} "
                   f"(resume with solver.restore('{paths[0]}') or solver.solve('{paths[0]}'))")
    else:
        message = f"training stopped at iteration {solver.iter} (no snapshot: snapshot_after_train is off)"
    return KeyboardInterrupt(message)


def _train(solver, train, total, progress, use_tqdm=True):
    show = progress_enabled() if progress is None else bool(progress)
    tracker = _progress_of(solver) if show else None
    if tracker is not None:
        tracker.begin(total, solver.iter, use_tqdm)
    try:
        train()
    except KeyboardInterrupt as error:
        if tracker is not None:
            tracker.finish(solver.iter)
            tracker.end()
            tracker = None
        raise _interrupted(solver, error) from None
    finally:
        if tracker is not None:
            tracker.finish(solver.iter)
            tracker.end()


def install(solver_class):
    """Gives the C++ Solver's step() and solve() a progress argument."""
    cpp_step = solver_class.step
    cpp_solve = solver_class.solve

    def step(self, iters, progress=None):
        """Train `iters` iterations. progress: show a progress bar (None: as
        set_progress says). Ctrl-C snapshots, stops and raises
        KeyboardInterrupt."""
        _train(self, lambda: cpp_step(self, iters), iters, progress)

    def solve(self, resume_file=None, progress=None):
        """Train to max_iter (resuming from a .solverstate if given),
        snapshot and test. progress: as step()'s."""
        _train(self, lambda: cpp_solve(self, resume_file), max(self.max_iter - self.iter, 0),
               progress)

    step.__name__, solve.__name__ = "step", "solve"
    solver_class.step = step
    solver_class.solve = solve
