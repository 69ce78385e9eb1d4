#!/usr/bin/env python3
"""CPU training speed of five nets (xtrain issue 6): `xtrain time` on the
bench nets (bench/nets/, written by make_bench_nets.py), PyTorch on the same
architectures (bench/pytorch/) when it is installed, and BVLC Caffe's
figures for reference, in one table.

  bench/cpu_nets.py [XTRAIN [RUNS [ITERATIONS]]] [--isa native|avx2] [--nets lenet,alexnet]
                    [--no-torch]

XTRAIN defaults to build/bin/xtrain, RUNS to 3 (each a fresh process; the
table has the medians), ITERATIONS to a per-net count that takes a few
seconds. Run from anywhere.

ISA level (--isa): both frameworks run at the same one, and the peak is
measured at it. avx2 caps every kernel at AVX2 (for xtrain
ONEDNN_MAX_CPU_ISA=AVX2 XTRAIN_MAX_CPU_ISA=avx2, for PyTorch
ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2: it embeds oneDNN), so an
AVX-512 machine measures what an AVX2-only one of the same clock would do.
native (the default) removes those variables and lets each framework use
the best it finds; PyTorch 1.13 then runs both with its default dispatch
and with ATEN_CPU_CAPABILITY=avx512, and the faster is shown.

The peak: at the start, bench/fma_peak.sh (independent FMA chains, built on
first use) measures the FP32 peak at that ISA level and thread count (the
threads are OMP_NUM_THREADS from --env or the environment, else every CPU
this process may use; PyTorch gets the same count); --peak-gflops
overrides it. The header names the CPU (model name, family/model) and the
ISA level.

What the columns mean:
  ms/iter     forward + backward of the whole net, loss on top, as `xtrain
              time` reports it (no solver update: Caffe's `caffe time` has
              none either); the median of the runs.
  GFLOP/iter  2 FLOPs per multiply-add of the convolution, deconvolution and
              inner-product layers, forward from the net's blob shapes,
              backward counted as twice the forward (data and weight
              gradients), so 3x forward in all. Every other layer (pooling,
              LRN, ReLU, BatchNorm, softmax, ...) and the bias additions
              count 0, so GFLOP/s is a lower bound of the work done.
  % peak      GFLOP/s over the FP32 peak measured at the start (or
              --peak-gflops): above 100 means the FLOP count or a timing
              is wrong, or a kernel does fewer multiplications (Winograd).
  RSS MiB     the peak resident memory `xtrain time` prints.
  torch ms    PyTorch's forward + loss + backward, median over the runs,
              the fastest of NCHW and channels_last (at native also with
              and without ATEN_CPU_CAPABILITY=avx512); "+step" adds the SGD
              step with momentum (and zeroing the gradients), i.e. a full
              training iteration. The ratio compares forward + backward with
              forward + backward.
  x/torch, x/Caffe  the other's ms over xtrain's: above 1, xtrain is faster.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_bench_nets import NETS, REPO, read_prototxt_file  # noqa: E402

PYTORCH_DIR = REPO / "bench" / "pytorch"
OPENBLAS_OPENMP = Path("/usr/lib/x86_64-linux-gnu/openblas-openmp")

# BVLC Caffe 1.0 with OpenBLAS, `caffe time` forward-backward ms per
# iteration at the same batch sizes, measured on this machine earlier (the
# table of xtrain issue 6; Caffe is not installed here).
CAFFE_MS = {"lenet": 19.6, "cifar10_quick": 182, "alexnet": 1620, "googlenet": 2164,
            "resnet50": 6034}

# Iterations per run: a few seconds each at Caffe's speed.
DEFAULT_ITERATIONS = {"lenet": 100, "cifar10_quick": 20, "alexnet": 4, "googlenet": 4,
                      "resnet50": 2}

# --- the CPU and the ISA level --------------------------------------------------

# What caps each framework at an ISA level; "native" removes all of them.
ISA_CAPS = {"avx2": {"xtrain": {"ONEDNN_MAX_CPU_ISA": "AVX2", "XTRAIN_MAX_CPU_ISA": "avx2"},
                     "torch": {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}},
            "native": {"xtrain": {}, "torch": {}}}
CAP_VARIABLES = ("ONEDNN_MAX_CPU_ISA", "XTRAIN_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY",
                 "DNNL_MAX_CPU_ISA")
# PyTorch 1.13's default dispatch need not pick AVX-512 kernels where the
# CPU has them: at native both are timed and the faster is shown.
TORCH_NATIVE_VARIANTS = ({}, {"ATEN_CPU_CAPABILITY": "avx512"})


def cpu_description():
    """'model name (family F, model M), N CPUs, flags' from /proc/cpuinfo."""
    fields = {}
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if not line.strip():
                break  # the first CPU is enough
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
    flags = fields.get("flags", "").split()
    vectors = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    return "%s (family %s, model %s), %d CPUs, %s" % (
        fields.get("model name", "unknown"), fields.get("cpu family", "?"),
        fields.get("model", "?"), os.cpu_count(), vectors)


def thread_count(env):
    """The threads both frameworks use: OMP_NUM_THREADS if set, else every
    CPU this process may run on (xtrain's own default)."""
    value = env.get("OMP_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS")
    return int(value.split(",")[0]) if value else len(os.sched_getaffinity(0))


def measured_peak_gflops(isa, threads):
    """bench/fma_peak.sh's FP32 peak at this ISA level and thread count."""
    env = {k: v for k, v in os.environ.items() if k not in CAP_VARIABLES}
    env.update(ISA_CAPS[isa]["xtrain"])
    done = subprocess.run([str(REPO / "bench" / "fma_peak.sh"), "--isa", isa, "--threads",
                           str(threads)], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit("cpu_nets.py: bench/fma_peak.sh failed: " + done.stderr.strip())
    if done.stderr.strip():
        print(done.stderr.strip().splitlines()[-1], file=sys.stderr)
    return float(done.stdout.split()[-1])


# --- what the net computes -----------------------------------------------------

LOG_LINE = re.compile(r"^[IWE]\d{4} [\d:.]+\s+\d+ net\.cpp:\d+\] (.*)$")


def layer_shapes(log):
    """From `xtrain time`'s setup log: per layer (in order) its name and the
    shapes of its bottoms and tops, as lists of ints."""
    layers = []
    blob_shapes = {}
    current = None
    for line in log.splitlines():
        match = LOG_LINE.match(line)
        if not match:
            continue
        message = match.group(1)
        if message.startswith("Creating layer "):
            current = {"name": message[len("Creating layer "):], "bottoms": [], "tops": [],
                       "bottom_shapes": [], "top_shapes": []}
            layers.append(current)
        elif current is None:
            continue
        elif message.startswith(current["name"] + " <- "):
            blob = message[len(current["name"]) + 4:]
            current["bottoms"].append(blob)
            current["bottom_shapes"].append(blob_shapes[blob])
        elif message.startswith(current["name"] + " -> "):
            current["tops"].append(message[len(current["name"]) + 4:].removesuffix(" (in-place)"))
        elif message.startswith("Top shape: "):
            dims = message[len("Top shape: "):].rsplit("(", 1)[0].split()
            shape = [int(d) for d in dims]
            blob_shapes[current["tops"][len(current["top_shapes"])]] = shape
            current["top_shapes"].append(shape)
    return layers


def product(values):
    result = 1
    for value in values:
        result *= value
    return result


def kernel_volume(param, spatial_axes):
    if param.get("kernel_h") is not None:
        return param.number("kernel_h", 1) * param.number("kernel_w", 1)
    sizes = [int(v) for v in param.all("kernel_size")]
    if len(sizes) == 1:
        sizes = sizes * spatial_axes
    return product(sizes)


def learned_size(size_of_weights, outputs, has_bias):
    return size_of_weights + (outputs if has_bias else 0)


def layer_work(layer_type, param_message, bottom, top):
    """(forward multiply-adds, learnable parameters) of one layer."""
    if layer_type in ("Convolution", "Deconvolution"):
        param = param_message.get("convolution_param")
        groups = param.number("group", 1)
        kernel = kernel_volume(param, len(top) - 2)
        has_bias = param.flag("bias_term", True)
        if layer_type == "Convolution":  # each output value sums in_channels/group x kernel
            per_output = bottom[1] // groups * kernel
            return product(top) * per_output, learned_size(top[1] * per_output, top[1], has_bias)
        per_input = top[1] // groups * kernel  # each input value spreads to these
        return product(bottom) * per_input, learned_size(bottom[1] * per_input, top[1], has_bias)
    if layer_type == "InnerProduct":
        param = param_message.get("inner_product_param")
        axis = param.number("axis", 1) % len(bottom)
        inputs, outputs = product(bottom[axis:]), param.number("num_output", 0)
        return (product(bottom[:axis]) * inputs * outputs,
                learned_size(inputs * outputs, outputs, param.flag("bias_term", True)))
    if layer_type in ("Scale", "Bias"):
        param = param_message.get(layer_type.lower() + "_param")
        axis = param.number("axis", 1) if param else 1
        axes = param.number("num_axes", 1) if param else 1
        size = product(bottom[axis:] if axes == -1 else bottom[axis:axis + axes])
        if layer_type == "Bias":
            return 0, size
        return 0, learned_size(size, size, param is not None and param.flag("bias_term", False))
    if layer_type == "PReLU":
        param = param_message.get("prelu_param")
        return 0, 1 if param is not None and param.flag("channel_shared", False) else bottom[1]
    return 0, 0  # BatchNorm's blobs are statistics, not learned


def net_work(net, log):
    """(forward multiply-adds, learnable parameters) of the whole net."""
    definitions = {layer.get("name"): layer for layer in read_prototxt_file(net.path).all("layer")}
    multiply_adds = parameters = 0
    for layer in layer_shapes(log):
        definition = definitions.get(layer["name"])
        if definition is None:  # the Split layers the net inserts
            continue
        bottom = layer["bottom_shapes"][0] if layer["bottom_shapes"] else []
        top = layer["top_shapes"][0] if layer["top_shapes"] else []
        macs, params = layer_work(definition.get("type"), definition, bottom, top)
        multiply_adds += macs
        parameters += params
    return multiply_adds, parameters


# --- running the engines -------------------------------------------------------

XTRAIN_TIMES = re.compile(r"forward-backward ([\d.]+) ms per iteration")
XTRAIN_RSS = re.compile(r"peak resident memory ([\d.]+) MiB")
XTRAIN_STEP = re.compile(r"training iteration \(forward, backward, SGD update\) ([\d.]+) ms")


def run_xtrain(xtrain, net, iterations, extra_env, training_step=False):
    """One `xtrain time` process: {ms, rss_mib, log} or {error}. With
    training_step, `xtrain time --training_step`: whole solver iterations
    (forward, backward and the momentum-SGD update)."""
    command = [xtrain, "time", "--model=" + str(net.path), "--iterations=%d" % iterations]
    if training_step:
        command.append("--training_step")
    env = {k: v for k, v in os.environ.items() if k not in CAP_VARIABLES}
    env.update(extra_env)
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, env=env)
    times = (XTRAIN_STEP if training_step else XTRAIN_TIMES).search(done.stdout)
    if done.returncode != 0 or times is None:
        lines = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()
        return {"error": "exit %d: %s" % (done.returncode, lines[-1])}
    rss = XTRAIN_RSS.search(done.stdout)
    result = {"ms": float(times.group(1)), "rss_mib": float(rss.group(1)) if rss else None}
    if not training_step:
        result["log"] = done.stderr
    return result


def caffe_memory_mib(net, log, baseline_mib):
    """bench/caffe_memory.py's estimate of Caffe 1.0's peak RSS for `caffe
    time` on the net, from xtrain's setup log."""
    import caffe_memory  # here: it imports this module's log parsing
    definitions = {layer.get("name"): layer
                   for layer in read_prototxt_file(net.path).all("layer")}
    ledger = caffe_memory.estimate(layer_shapes(log), definitions,
                                   caffe_memory.backward_needs(log))
    return (sum(ledger.bytes.values()) + ledger.transient) / caffe_memory.MIB + baseline_mib


def caffe_memory_baseline(xtrain, extra_env):
    """The process baseline for the Caffe memory model: xtrain's peak RSS on
    a net of a few bytes (see bench/caffe_memory.py)."""
    import caffe_memory
    os.environ.update(extra_env)  # the child xtrain inherits it
    return caffe_memory.measure_baseline_mib(xtrain)


def torch_environment():
    """The environment for PyTorch: its BLAS pointed at OpenBLAS (OpenMP
    build) when installed, as /work/shared/toolchain.md advises."""
    env = {k: v for k, v in os.environ.items() if k not in CAP_VARIABLES}
    if OPENBLAS_OPENMP.is_dir():
        env["LD_LIBRARY_PATH"] = ":".join(
            p for p in (str(OPENBLAS_OPENMP), env.get("LD_LIBRARY_PATH", "")) if p)
    return env


def find_torch_python(requested):
    """A Python that imports torch (Debian's python3-torch lives in
    /usr/bin/python3, which need not be the python3 on PATH), or None."""
    candidates = [requested] if requested else [sys.executable, "/usr/bin/python3",
                                                shutil.which("python3")]
    for python in candidates:
        if python and subprocess.run([python, "-c", "import torch"], capture_output=True,
                                     env=torch_environment()).returncode == 0:
            return python
    return None


def run_torch(python, net, iterations, layout, extra_env, threads):
    env = torch_environment()
    env.update(extra_env)
    command = [python, str(PYTORCH_DIR / "time_training.py"), net.name, "--batch",
               str(net.batch), "--iterations", str(iterations), "--layout", layout,
               "--threads", str(threads)]
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        lines = (done.stderr.strip() or "no output").splitlines()
        return {"error": "exit %d: %s" % (done.returncode, lines[-1])}
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- load of the machine -------------------------------------------------------


def busy_cpu_seconds():
    """CPU seconds spent by the whole machine (all processes) so far."""
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def our_cpu_seconds():
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def load_average():
    with open("/proc/loadavg") as loadavg:
        return " ".join(loadavg.read().split()[:3])


# --- the table -----------------------------------------------------------------


def median_of(results, key):
    values = [r[key] for r in results if r.get(key) is not None]
    return statistics.median(values) if values else None


def spread(results, key):
    values = sorted(r[key] for r in results if key in r)
    return " ".join("%.1f" % v for v in values) if values else "-"


def cell(value, pattern, width):
    return (pattern % value if value is not None else "-").rjust(width)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 2)[2])
    parser.add_argument("xtrain", nargs="?", default="build/bin/xtrain",
                        help="the xtrain binary (default build/bin/xtrain of this repo)")
    parser.add_argument("runs", nargs="?", type=int, default=3,
                        help="fresh processes per net and engine (default 3)")
    parser.add_argument("iterations", nargs="?", type=int,
                        help="timed iterations per run (default: per net, %s)" %
                        ", ".join("%s %d" % kv for kv in DEFAULT_ITERATIONS.items()))
    parser.add_argument("--nets", default=",".join(n.name for n in NETS),
                        help="comma-separated subset of: %(default)s")
    parser.add_argument("--no-torch", action="store_true", help="skip PyTorch")
    parser.add_argument("--torch-python", help="the Python with torch (default: found)")
    parser.add_argument("--torch-layouts", default="nchw,channels_last",
                        help="memory formats to try; the faster median is shown")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="environment for both xtrain and PyTorch, repeatable: e.g."
                        " OMP_WAIT_POLICY=active on a machine of one's own (xtrain's default"
                        " is passive unless set; PyTorch's is libgomp's spinning)")
    parser.add_argument("--torch-env", action="append", default=[], metavar="NAME=VALUE",
                        help="environment for PyTorch, repeatable: e.g. ATEN_CPU_CAPABILITY="
                        "avx512, OMP_WAIT_POLICY=PASSIVE (much faster when other processes"
                        " keep the cores busy)")
    parser.add_argument("--isa", choices=sorted(ISA_CAPS), default="native",
                        help="ISA level for both frameworks and the peak (default %(default)s;"
                        " see above)")
    parser.add_argument("--peak-gflops", type=float,
                        help="the FP32 peak for the %%peak column (default: measured by"
                        " bench/fma_peak.sh at --isa and the thread count)")
    parser.add_argument("--json", metavar="FILE", help="also write every run's figures here")
    args = parser.parse_args()

    xtrain = Path(args.xtrain).resolve()
    if not xtrain.exists():
        xtrain = REPO / args.xtrain
    if not os.access(xtrain, os.X_OK):
        sys.exit("cpu_nets.py: no xtrain binary at %s (build it, or pass its path)" % xtrain)
    chosen = args.nets.split(",")
    unknown = sorted(set(chosen) - {n.name for n in NETS})
    if unknown:
        sys.exit("cpu_nets.py: unknown nets %s; known: %s"
                 % (", ".join(unknown), ", ".join(n.name for n in NETS)))
    nets = [n for n in NETS if n.name in chosen]
    stale = subprocess.run([sys.executable, str(REPO / "bench" / "make_bench_nets.py"),
                            "--check"], capture_output=True, text=True)
    if stale.returncode != 0:
        print("warning: " + stale.stdout.strip().replace("\n", "\nwarning: "), file=sys.stderr)
    torch_python = None if args.no_torch else find_torch_python(args.torch_python)
    layouts = args.torch_layouts.split(",")
    def settings(option, values):
        parsed = {}
        for setting in values:
            name, equals, value = setting.partition("=")
            if not equals:
                sys.exit("cpu_nets.py: %s wants NAME=VALUE, got %r" % (option, setting))
            parsed[name] = value
        return parsed

    both_env = settings("--env", args.env)
    torch_env = dict(both_env, **settings("--torch-env", args.torch_env))
    threads = thread_count(both_env)
    cpu = cpu_description()
    peak_source = "--peak-gflops"
    if args.peak_gflops is None:
        args.peak_gflops = measured_peak_gflops(args.isa, threads)
        peak_source = "bench/fma_peak.sh --isa %s --threads %d" % (args.isa, threads)
    print("CPU: %s; ISA level: %s; FP32 peak %.1f GFLOP/s on %d threads (%s)"
          % (cpu, args.isa, args.peak_gflops, threads, peak_source), file=sys.stderr)
    xtrain_env = dict(ISA_CAPS[args.isa]["xtrain"], **both_env)
    # PyTorch's configurations: memory layout x environment, the fastest shown.
    torch_variants = [{}] if args.isa != "native" else list(TORCH_NATIVE_VARIANTS)
    torch_configs = {}
    for layout in layouts:
        for variant in torch_variants:
            label = layout + "".join("+%s" % v for v in variant.values())
            torch_configs[label] = (layout, dict(ISA_CAPS[args.isa]["torch"], **variant,
                                                 **torch_env))

    load_before = load_average()
    start_wall, start_busy, start_ours = time.time(), busy_cpu_seconds(), our_cpu_seconds()
    rows = []
    for net in nets:
        iterations = args.iterations or DEFAULT_ITERATIONS[net.name]
        row = {"net": net, "iterations": iterations, "xtrain": [], "xtrain_step": [],
               "torch": {label: [] for label in torch_configs}}
        for run in range(args.runs):
            # Interleaved, so that a change in the machine's load hits all alike.
            print("%s run %d/%d: xtrain" % (net.name, run + 1, args.runs), file=sys.stderr)
            row["xtrain"].append(run_xtrain(str(xtrain), net, iterations, xtrain_env))
            print("%s run %d/%d: xtrain --training_step" % (net.name, run + 1, args.runs),
                  file=sys.stderr)
            row["xtrain_step"].append(run_xtrain(str(xtrain), net, iterations, xtrain_env,
                                                 training_step=True))
            for label, (layout, env) in torch_configs.items() if torch_python else []:
                print("%s run %d/%d: torch %s" % (net.name, run + 1, args.runs, label),
                      file=sys.stderr)
                row["torch"][label].append(run_torch(torch_python, net, iterations, layout,
                                                     env, threads))
        rows.append(row)
    wall = time.time() - start_wall
    others = (busy_cpu_seconds() - start_busy) - (our_cpu_seconds() - start_ours)
    load_after = load_average()
    baseline_mib = caffe_memory_baseline(str(xtrain), xtrain_env)

    print("xtrain: %s; %d runs per net (medians shown); iterations per run: %s"
          % (xtrain, args.runs, ", ".join("%s %d" % (r["net"].name, r["iterations"]) for r in rows)))
    print("CPU: %s; ISA level: %s; FP32 peak %.1f GFLOP/s on %d threads (%s)"
          % (cpu, args.isa, args.peak_gflops, threads, peak_source))
    print("environment for xtrain: %s" % (" ".join("%s=%s" % kv for kv in xtrain_env.items())
                                           or "as is"))
    print("load average before: %s, after: %s; other processes used %.2f of the %d cores"
          " on average during the %.0f s" % (load_before, load_after, max(others, 0) / wall,
                                             os.cpu_count(), wall))
    torch_info = None
    for row in rows:
        for results in row["torch"].values():
            torch_info = torch_info or next((r for r in results if "torch" in r), None)
    if torch_info:
        print("PyTorch %s (%s), %d threads, environment %s, BLAS %s"
              % (torch_info["torch"], torch_python, torch_info["threads"],
                 "; ".join("%s: %s" % (label, " ".join("%s=%s" % kv for kv in env.items())
                                       or "as is")
                           for label, (_, env) in torch_configs.items()),
                 " ".join(torch_info["blas"]) or "none loaded"))
    elif not args.no_torch:
        print("PyTorch: not found (apt-get install python3-torch libopenblas0-openmp)")
    print()

    header = ("%-14s %5s %8s %8s %7s %10s %7s %6s | %8s %8s %-20s %6s %6s | %7s %6s | %7s %7s %5s"
              % ("net", "batch", "ms/iter", "step ms", "img/s", "GFLOP/iter", "GFLOP/s",
                 "%peak", "torch ms", "+step", "torch layout", "x/t", "step", "Caffe",
                 "x/C", "RSS MiB", "Caffe~", "%C"))
    print(header)
    print("-" * len(header))
    notes = []
    for row in rows:
        net = row["net"]
        ok = [r for r in row["xtrain"] if "ms" in r]
        errors = [r["error"] for r in row["xtrain"] + row["xtrain_step"] if "error" in r]
        if errors:
            notes.append("%s: xtrain failed: %s" % (net.name, errors[0]))
        ms = median_of(ok, "ms")
        step_ms = median_of(row["xtrain_step"], "ms")
        rss = median_of(ok, "rss_mib")
        multiply_adds = parameters = caffe_mib = None
        if ok:
            multiply_adds, parameters = net_work(net, ok[0]["log"])
            caffe_mib = caffe_memory_mib(net, ok[0]["log"], baseline_mib)
        gflop = 3 * 2 * multiply_adds / 1e9 if multiply_adds else None
        gflops = gflop / (ms / 1000) if gflop and ms else None
        best_layout, torch_ms, torch_step_ms, torch_params = None, None, None, None
        torch_capability = None
        for layout, results in row["torch"].items():
            good = [r for r in results if "forward_backward_ms" in r]
            for r in results:
                if "error" in r:
                    notes.append("%s: torch %s failed: %s" % (net.name, layout, r["error"]))
                    break
            fb = median_of(good, "forward_backward_ms")
            if fb is not None and (torch_ms is None or fb < torch_ms):
                best_layout, torch_ms = layout, fb
                torch_step_ms = median_of(good, "iteration_ms")
                torch_params = good[0]["parameters"]
                torch_capability = good[0].get("cpu_capability")
        caffe = CAFFE_MS.get(net.name)
        print("%-14s %5d %s %s %s %s %s %s | %s %s %-20s %s %s | %s %s | %s %s %s" % (
            net.label, net.batch, cell(ms, "%.1f", 8), cell(step_ms, "%.1f", 8),
            cell(net.batch * 1000 / ms if ms else None, "%.1f", 7), cell(gflop, "%.3f", 10),
            cell(gflops, "%.1f", 7),
            cell(100 * gflops / args.peak_gflops if gflops else None, "%.1f", 6),
            cell(torch_ms, "%.1f", 8), cell(torch_step_ms, "%.1f", 8), best_layout or "-",
            cell(torch_ms / ms if torch_ms and ms else None, "%.2f", 6),
            cell(torch_step_ms / step_ms if torch_step_ms and step_ms else None, "%.2f", 6),
            cell(caffe, "%.0f", 7), cell(caffe / ms if caffe and ms else None, "%.2f", 6),
            cell(rss, "%.0f", 7), cell(caffe_mib, "%.0f", 7),
            cell(100 * rss / caffe_mib if rss and caffe_mib else None, "%.0f", 5)))
        row.update(parameters=parameters, torch_params=torch_params,
                   torch_capability=torch_capability)

    print("\nms/iter: forward + backward (`xtrain time`); step ms: a whole training iteration"
          " with the momentum-SGD update (`xtrain time --training_step`). x/t: torch's"
          " forward + backward over xtrain's; step: torch's +step over xtrain's step; x/C:"
          " Caffe's over xtrain's forward + backward (above 1: xtrain is faster). GFLOP counts"
          " only convolution, deconvolution and inner-product layers (forward x3 for forward +"
          " backward); %%peak: over the FP32 peak, %.1f GFLOP/s."
          " RSS: xtrain's peak for forward + backward; Caffe~: bench/caffe_memory.py's model of"
          " Caffe 1.0's (process baseline %.0f MiB measured with xtrain); %%C: RSS over Caffe~."
          % (args.peak_gflops, baseline_mib))
    print("\nper run (ms/iter, sorted), learnable parameters, peak RSS:")
    for row in rows:
        net = row["net"]
        print("  %-14s xtrain %s; step %s; step peak RSS %s MiB" % (
            net.label, spread(row["xtrain"], "ms"), spread(row["xtrain_step"], "ms"),
            spread(row["xtrain_step"], "rss_mib")))
        for layout, results in row["torch"].items():
            if results:
                capability = next((r.get("cpu_capability") for r in results
                                   if "cpu_capability" in r), "?")
                print("  %-14s torch %-20s fwd+bwd %s; +step %s; peak RSS %s MiB;"
                      " CPU capability %s" % (
                          "", layout, spread(results, "forward_backward_ms"),
                          spread(results, "iteration_ms"), spread(results, "peak_rss_mib"),
                          capability))
        if row["torch_params"] is not None:
            same = "same" if row["torch_params"] == row["parameters"] else "DIFFERENT"
            print("  %-14s parameters: xtrain %s, torch %s (%s)"
                  % ("", format(row["parameters"], ","), format(row["torch_params"], ","), same))
            if row["torch_params"] != row["parameters"]:
                notes.append("%s: parameter counts differ" % net.name)
        elif row["parameters"] is not None:
            print("  %-14s parameters: xtrain %s" % ("", format(row["parameters"], ",")))
    for note in notes:
        print("note: " + note)
    if args.json:
        dump = [{"net": row["net"].name, "batch": row["net"].batch,
                 "iterations": row["iterations"], "parameters": row["parameters"],
                 "xtrain": [{k: v for k, v in r.items() if k != "log"} for r in row["xtrain"]],
                 "xtrain_step": row["xtrain_step"],
                 "torch": row["torch"], "caffe_ms": CAFFE_MS.get(row["net"].name)}
                for row in rows]
        Path(args.json).write_text(json.dumps({
            "xtrain": str(xtrain), "runs": args.runs, "cpu": cpu, "isa": args.isa,
            "threads": threads, "peak_gflops": args.peak_gflops, "peak_source": peak_source,
            "load_before": load_before,
            "load_after": load_after, "other_processes_cores": max(others, 0) / wall,
            "nets": dump}, indent=1) + "\n")
    return 1 if any("failed" in n or "differ" in n for n in notes) else 0


if __name__ == "__main__":
    sys.exit(main())
