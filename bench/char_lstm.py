#!/usr/bin/env python3
"""Time per training iteration of models/char_lstm (T = 50 steps x N = 32
streams, a 128-unit LSTM over 32-wide character embeddings, 76 classes)
against PyTorch's nn.LSTM of the same size, side by side in one run.

  bench/char_lstm.py [XTRAIN] [--rounds 5] [--iterations 20] [--threads 2]
                     [--env NAME=VALUE] [--xtrain-env NAME=VALUE] [--torch-env NAME=VALUE]

XTRAIN defaults to build/bin/xtrain. Run from the repository root after
models/char_lstm/make_data.py. Each round runs, one after the other, `xtrain
time` (forward + backward, no update), `xtrain time --training_step` (with a
momentum-SGD update) and bench/pytorch/char_lstm.py (forward + loss +
backward, then the same SGD step), each a fresh process with the same
thread count; the table shows the medians over the rounds, so a busy
machine slows both frameworks alike. --env sets a variable for both,
--xtrain-env for xtrain alone (XTRAIN_RECURRENT=unrolled times Caffe's
unrolled net instead of the fused layer), --torch-env for PyTorch alone
(OMP_WAIT_POLICY=passive: libgomp's default spinning costs PyTorch many
times its time when other processes keep the cores busy).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

sys.dont_write_bytecode = True
BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import cpu_nets  # noqa: E402  (the CPU's name, PyTorch's environment)

MODEL = "models/char_lstm/train_val.prototxt"


def xtrain_ms(xtrain, iterations, threads, training_step, env):
    command = [xtrain, "time", "--model", MODEL, "--iterations", str(iterations),
               "--threads", str(threads)]
    if training_step:
        command.append("--training_step")
    done = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ, **env))
    if done.returncode != 0:
        raise SystemExit("%s failed:\n%s" % (" ".join(command), done.stderr[-2000:]))
    pattern = (r"training iteration \(forward, backward, SGD update\) ([0-9.]+) ms"
               if training_step else r"forward-backward ([0-9.]+) ms per iteration")
    return float(re.search(pattern, done.stdout).group(1))


def torch_ms(python, iterations, threads, env):
    command = [python, str(BENCH / "pytorch" / "char_lstm.py"), "--iterations",
               str(iterations), "--threads", str(threads)]
    done = subprocess.run(command, capture_output=True, text=True,
                          env=dict(cpu_nets.torch_environment(), **env))
    if done.returncode != 0:
        raise SystemExit("%s failed:\n%s" % (" ".join(command), done.stderr[-2000:]))
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("xtrain", nargs="?", default="build/bin/xtrain")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    for option, what in (("--env", "both frameworks"), ("--xtrain-env", "xtrain"),
                         ("--torch-env", "PyTorch")):
        parser.add_argument(option, action="append", default=[], metavar="NAME=VALUE",
                            help="a variable of the environment of %s, repeatable" % what)
    args = parser.parse_args()

    def settings(option, values):
        parsed = {}
        for setting in values:
            name, equals, value = setting.partition("=")
            if not equals:
                raise SystemExit("char_lstm.py: %s wants NAME=VALUE, got %r" % (option, setting))
            parsed[name] = value
        return parsed

    both_env = settings("--env", args.env)
    xtrain_env = dict(both_env, **settings("--xtrain-env", args.xtrain_env))
    torch_env = dict(both_env, **settings("--torch-env", args.torch_env))
    python = cpu_nets.find_torch_python(None)
    if python is None:
        raise SystemExit("PyTorch not found (apt-get install python3-torch)")

    rows = {"xtrain fb": [], "xtrain it": [], "torch fb": [], "torch it": []}
    for _ in range(args.rounds):
        rows["xtrain fb"].append(
            xtrain_ms(args.xtrain, args.iterations, args.threads, False, xtrain_env))
        rows["xtrain it"].append(
            xtrain_ms(args.xtrain, args.iterations, args.threads, True, xtrain_env))
        torch = torch_ms(python, args.iterations, args.threads, torch_env)
        rows["torch fb"].append(torch["forward_backward_ms"])
        rows["torch it"].append(torch["iteration_ms"])
    median = {key: statistics.median(values) for key, values in rows.items()}
    print("CPU: %s; %d threads; PyTorch %s" % (cpu_nets.cpu_description(), args.threads,
                                                 torch["torch"]))
    for label, env in (("xtrain", xtrain_env), ("PyTorch", torch_env)):
        if env:
            print("%s environment: %s" % (label, " ".join("%s=%s" % item
                                                         for item in sorted(env.items()))))
    print("load average at the end: %.2f %.2f %.2f" % os.getloadavg())
    print("median of %d rounds of %d iterations (ms per iteration)" % (args.rounds,
                                                                         args.iterations))
    print("%-32s %10s %10s %12s" % ("", "xtrain", "PyTorch", "torch/xtrain"))
    for label, ours, theirs in (("forward + backward", "xtrain fb", "torch fb"),
                                ("training iteration (+ SGD step)", "xtrain it", "torch it")):
        print("%-32s %10.2f %10.2f %12.2f" % (label, median[ours], median[theirs],
                                               median[theirs] / median[ours]))


if __name__ == "__main__":
    main()
