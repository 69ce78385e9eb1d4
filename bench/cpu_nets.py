#!/usr/bin/env python3
"""CPU training speed of five nets (xtrain issue 6): `xtrain time` on the
bench nets (bench/nets/, written by make_bench_nets.py), PyTorch on the same
architectures (bench/pytorch/) when it is installed, and BVLC Caffe's
figures for reference, in one table.

  bench/cpu_nets.py [XTRAIN [RUNS [ITERATIONS]]] [--isa native|avx2] [--nets lenet,alexnet]
                    [--precision fp32|bf16|fp16 [--compare-fp32] [--compare-torch-fp32]]
                    [--no-torch] [--torch-python PY] [--torch-layouts nchw,channels_last]
                    [--env NAME=VALUE] [--torch-env NAME=VALUE] [--peak-gflops G]
                    [--json FILE]

XTRAIN defaults to build/bin/xtrain, RUNS to 3 (each a fresh process; the
table has the medians), ITERATIONS to a per-net count that takes a few
seconds. Run from anywhere. --nets picks a subset; --no-torch skips
PyTorch, --torch-python names the Python that has it (default: the first
of this one, /usr/bin/python3 and python3 on PATH that imports torch),
--torch-layouts the memory formats tried; --env sets a variable for both
frameworks (e.g. OMP_WAIT_POLICY=active, OMP_NUM_THREADS), --torch-env for
PyTorch alone; --json also writes every run's figures to FILE. The exit
status is 1 when a run failed (other than an expected failure, below) or
the parameter counts differ.

ISA level (--isa): both frameworks run at the same one, and the peak is
measured at it. avx2 caps every kernel at AVX2 (for xtrain
ONEDNN_MAX_CPU_ISA=AVX2 XTRAIN_MAX_CPU_ISA=avx2, for PyTorch
ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2: it embeds oneDNN), so an
AVX-512 machine measures what an AVX2-only one of the same clock would do.
native (the default) removes those variables and lets each framework use
the best it finds; PyTorch 1.13 then runs both with its default dispatch
and with ATEN_CPU_CAPABILITY=avx512, and the faster is shown. On a CPU
without AVX-512 (avx512f, bw, vl and dq in /proc/cpuinfo) that +avx512
variant is not run (it would die of SIGILL) and the header says so.

Precision (--precision, default fp32): fp32 runs the nets as written and
PyTorch in fp32, the table as it always was. bf16 and fp16 run `xtrain
time --precision=bf16|fp16` (16-bit storage, fp32 master weights; both the
forward-backward and the --training_step runs) and PyTorch under
torch.autocast("cpu", dtype=torch.bfloat16) around forward + loss,
backward outside it (bench/pytorch/time_training.py --precision bf16; the
header lists the oneDNN implementations its warm-up ran, e.g.
brgconv:avx512_core_amx_bf16). PyTorch 1.13's CPU autocast has no fp16
(it raises "AutocastCPU only support Bfloat16"), so at fp16 PyTorch is not
run and its columns show "-". At --isa avx2 there are no bf16
instructions: xtrain computes bf16 in emulation (fp32 arithmetic on
operands rounded to bf16; the header repeats its warning), and PyTorch
1.13 with oneDNN capped at AVX2 has no bf16 convolution at all (it fails
with "could not create a primitive descriptor iterator": noted, not
counted as a failure). --compare-fp32 also times xtrain in fp32 (forward +
backward, interleaved with the others) and --compare-torch-fp32 PyTorch in
fp32 (every layout and variant), for the ratio columns below; at bf16 with
--compare-fp32 the footer checks the issue's goals (bf16 at least 1.6x
xtrain's fp32 and 1.3x PyTorch's bf16 autocast).

The peak: bench/fma_peak.sh (independent multiply-add chains, built on
first use) measures it at that ISA level and thread count (the threads are
OMP_NUM_THREADS from --env or the environment, else every CPU this process
may use; PyTorch gets the same count), once before the runs and once after
them; the larger is used (a reading beside another process comes out low),
and a warning line says when the two differ by more than 10%. Which peak:
fp32: the FP32 FMA peak (--isa). bf16 at native on a CPU with AVX512-BF16:
the vdpbf16ps dot-product peak (--kind bf16), and where the CPU has
AMX-BF16 also the tdpbf16ps tile peak (--kind amx_bf16) for a second
column; fp16 at native with AVX512-FP16: the vfmadd231ph peak (--kind
fp16); otherwise (avx2, or a CPU without them) the FP32 peak at that level,
as the 16-bit formats then compute in fp32. --peak-gflops overrides the
first (the AMX one is still measured). The header names the CPU (model
name, family/model), the ISA level, the precision and each peak.

What the columns mean:
  ms/iter     forward + backward of the whole net, loss on top, as `xtrain
              time` reports it (no solver update: Caffe's `caffe time` has
              none either); the median of the runs; at --precision.
  step ms     a whole training iteration, forward, backward and the
              momentum-SGD update (`xtrain time --training_step`).
  img/s       the batch over ms/iter.
  GFLOP/iter  2 FLOPs per multiply-add of the convolution, deconvolution and
              inner-product layers, forward from the net's blob shapes,
              backward counted as twice the forward (data and weight
              gradients), so 3x forward in all. Every other layer (pooling,
              LRN, ReLU, BatchNorm, softmax, ...) and the bias additions
              count 0, so GFLOP/s is a lower bound of the work done.
  GFLOP/s     GFLOP/iter over ms/iter.
  %peak       GFLOP/s over the peak above (or --peak-gflops): at fp32,
              above 100 means the FLOP count or a timing is wrong, or a
              kernel does fewer multiplications (Winograd). At bf16 the
              AVX512-BF16 peak is no ceiling where oneDNN computes on AMX
              tiles: then above 100 is possible.
  %AMX        (bf16, CPUs with AMX-BF16) GFLOP/s over the AMX tile peak.
  torch ms    PyTorch's forward + loss + backward, median over the runs,
              the fastest of NCHW and channels_last (at native also with
              and without ATEN_CPU_CAPABILITY=avx512); at bf16 under
              autocast. "+step" adds the SGD step with momentum (and
              zeroing the gradients), i.e. a full training iteration.
  torch layout  the configuration torch ms comes from (layout+variant).
  x/t, step   torch ms over ms/iter (forward + backward with forward +
              backward), +step over step ms.
  x fp32, x32/x  (--compare-fp32) xtrain's forward + backward in fp32, and
              that over ms/iter: the speed-up of the 16-bit precision.
  t fp32, t32/t  (--compare-torch-fp32) PyTorch's fastest forward +
              backward in fp32, and that over torch ms.
  Caffe, x/C  BVLC Caffe 1.0's fp32 forward-backward ms (measured earlier,
              CAFFE_MS), and that over ms/iter.
  RSS MiB     the peak resident memory `xtrain time` prints.
  Caffe~, %C  bench/caffe_memory.py's model of Caffe 1.0's peak RSS for the
              same net, and RSS MiB over it.
  Every ratio is the other's ms over xtrain's (or fp32's over 16-bit's):
  above 1, xtrain (or the 16-bit precision) is faster.
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
# What PyTorch's AVX-512 dispatch needs; without them that variant dies of
# SIGILL, so it is not run.
TORCH_AVX512_FLAGS = ("avx512f", "avx512bw", "avx512vl", "avx512dq")
PRECISIONS = ("fp32", "bf16", "fp16")


def cpu_fields():
    """The first CPU's /proc/cpuinfo fields: {name: value}."""
    fields = {}
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if not line.strip():
                break  # the first CPU is enough
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
    return fields


def cpu_flags():
    return set(cpu_fields().get("flags", "").split())


def cpu_description():
    """'model name (family F, model M), N CPUs, flags' from /proc/cpuinfo."""
    fields = cpu_fields()
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


class Peak:
    """One peak for a %peak column: what bench/fma_peak.sh measures (its
    arguments), what to call it, and its measurements (before and after the
    runs: one read beside another process reads low, so the larger is used)."""

    def __init__(self, name, arguments, column="%peak"):
        self.name = name  # e.g. "FP32 peak"
        self.arguments = arguments  # fma_peak.sh's, e.g. ["--isa", "native"]
        self.column = column
        self.readings = []
        self.given = None  # --peak-gflops

    @property
    def gflops(self):
        return self.given if self.given is not None else max(self.readings)

    def source(self, threads):
        if self.given is not None:
            return "--peak-gflops"
        text = "bench/fma_peak.sh %s --threads %d" % (" ".join(self.arguments), threads)
        if len(self.readings) > 1:
            text += "; before/after the runs %s" % "/".join("%.1f" % r for r in self.readings)
        return text

    def disagreement(self):
        """A warning when the readings differ by more than 10 %, else None."""
        if len(self.readings) < 2 or min(self.readings) * 1.1 >= max(self.readings):
            return None
        return ("warning: the %s read %s GFLOP/s before/after the runs (%.0f%% apart): another"
                " process was probably running; the larger is used"
                % (self.name, "/".join("%.1f" % r for r in self.readings),
                   100 * (max(self.readings) / min(self.readings) - 1)))


def measure_peak(peak, isa, threads, required=True):
    """Adds one bench/fma_peak.sh reading (GFLOP/s per CPU-second at this
    ISA level and thread count) to peak; False when it could not run and
    the peak is optional (its message on stderr), exit when required."""
    env = {k: v for k, v in os.environ.items() if k not in CAP_VARIABLES}
    env.update(ISA_CAPS[isa]["xtrain"])
    done = subprocess.run([str(REPO / "bench" / "fma_peak.sh")] + peak.arguments +
                          ["--threads", str(threads)], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        if required:
            sys.exit("cpu_nets.py: bench/fma_peak.sh failed: " + done.stderr.strip())
        print("cpu_nets.py: no %s: %s" % (peak.name, done.stderr.strip()), file=sys.stderr)
        return False
    if done.stderr.strip():
        print(done.stderr.strip().splitlines()[-1], file=sys.stderr)
    peak.readings.append(float(done.stdout.split()[-1]))
    return True


def precision_peaks(precision, isa, flags):
    """(the peak %peak divides by, the AMX one for %AMX or None, a sentence
    on the choice) for a precision at an ISA level on a CPU with these
    /proc/cpuinfo flags."""
    fp32 = Peak("FP32 peak", ["--isa", isa])
    if precision == "fp32":
        return fp32, None, ""
    if isa != "native":
        return fp32, None, (
            "no %s instructions at ISA level %s: %%peak is over the FP32 %s peak (what an"
            " emulation that converts to fp32 and computes in fp32 can reach)"
            % (precision, isa, isa.upper()))
    if precision == "fp16":
        if "avx512_fp16" not in flags:
            return fp32, None, ("this CPU has no AVX512-FP16: %peak is over the FP32 peak (fp16"
                                " computes in fp32)")
        return Peak("AVX512-FP16 FMA peak (vfmadd231ph)", ["--kind", "fp16"]), None, (
            "%peak is over the AVX512-FP16 FMA peak (vfmadd231ph, twice FP32's FLOPs per"
            " instruction)")
    if "avx512_bf16" not in flags:
        return fp32, None, ("this CPU has no AVX512-BF16: %peak is over the FP32 peak (bf16"
                            " computes in fp32 on bf16-rounded operands)")
    amx = None
    if "amx_bf16" in flags:
        amx = Peak("AMX-BF16 tile peak (tdpbf16ps)", ["--kind", "amx_bf16"], column="%AMX")
    return Peak("AVX512-BF16 dot-product peak (vdpbf16ps)", ["--kind", "bf16"]), amx, (
        "%peak is over the AVX512-BF16 dot-product peak (vdpbf16ps: 4 FLOPs per fp32 lane, but a"
        " CPU may issue it at half the rate of an FP32 FMA: see bench/fma_peak.sh)" +
        ("; %AMX over the AMX-BF16 tile peak (tdpbf16ps), which oneDNN may use for bf16"
         " convolutions and matrix products, so %peak may pass 100" if amx else ""))


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
# The warning of src/core/net_precision.cpp when bf16 runs in emulation.
XTRAIN_BF16_EMULATED = "(emulation)"


def run_xtrain(xtrain, net, iterations, extra_env, training_step=False, precision=None):
    """One `xtrain time` process: {ms, rss_mib, log, emulated} or {error}.
    With training_step, `xtrain time --training_step`: whole solver
    iterations (forward, backward and the momentum-SGD update). precision
    (bf16, fp16) adds --precision=...; None runs the net as written (fp32)."""
    command = [xtrain, "time", "--model=" + str(net.path), "--iterations=%d" % iterations]
    if training_step:
        command.append("--training_step")
    if precision:
        command.append("--precision=" + precision)
    env = {k: v for k, v in os.environ.items() if k not in CAP_VARIABLES}
    env.update(extra_env)
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, env=env)
    times = (XTRAIN_STEP if training_step else XTRAIN_TIMES).search(done.stdout)
    if done.returncode != 0 or times is None:
        lines = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()
        return {"error": "exit %d: %s" % (done.returncode, lines[-1])}
    rss = XTRAIN_RSS.search(done.stdout)
    result = {"ms": float(times.group(1)), "rss_mib": float(rss.group(1)) if rss else None}
    if precision:
        result["emulated"] = XTRAIN_BF16_EMULATED in done.stderr
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


def run_torch(python, net, iterations, layout, extra_env, threads, precision="fp32"):
    """One time_training.py process: its JSON, or {error}. At bf16 it runs
    under CPU autocast and reports the oneDNN kernels of its warm-up."""
    env = torch_environment()
    env.update(extra_env)
    command = [python, str(PYTORCH_DIR / "time_training.py"), net.name, "--batch",
               str(net.batch), "--iterations", str(iterations), "--layout", layout,
               "--threads", str(threads)]
    if precision != "fp32":
        command += ["--precision", precision, "--onednn-kernels"]
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


def cell(value, pattern):
    return pattern % value if value is not None else "-"


def ratio(numerator, denominator):
    return numerator / denominator if numerator and denominator else None


def table_line(groups, texts):
    """One line of the table: groups of columns (title, width, left-aligned)
    separated by " | ", each cell texts[title]."""
    return " | ".join(" ".join(texts[title].ljust(width) if left else texts[title].rjust(width)
                               for title, width, left in group) for group in groups)


def fastest_torch(results_by_label):
    """The PyTorch configuration with the fastest median forward + backward:
    {label, ms, step_ms, parameters} (None values when none ran), and the
    first error of each configuration that failed: [(label, error)]."""
    best = {"label": None, "ms": None, "step_ms": None, "parameters": None}
    errors = []
    for label, results in results_by_label.items():
        good = [r for r in results if "forward_backward_ms" in r]
        error = next((r["error"] for r in results if "error" in r), None)
        if error:
            errors.append((label, error))
        fb = median_of(good, "forward_backward_ms")
        if fb is not None and (best["ms"] is None or fb < best["ms"]):
            best = {"label": label, "ms": fb, "step_ms": median_of(good, "iteration_ms"),
                    "parameters": good[0]["parameters"]}
    return best, errors


def onednn_kernels_seen(rows, key="torch"):
    """{primitive kind: implementations} over every PyTorch run that reported them."""
    seen = {}
    for row in rows:
        for results in row[key].values():
            for result in results:
                for kind, names in result.get("onednn_kernels", {}).items():
                    seen.setdefault(kind, set()).update(names)
    return {kind: sorted(names) for kind, names in sorted(seen.items())}


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
                        " spins long while the other CPUs are idle and briefly while they are"
                        " busy; PyTorch's is libgomp's spinning)")
    parser.add_argument("--torch-env", action="append", default=[], metavar="NAME=VALUE",
                        help="environment for PyTorch, repeatable: e.g. ATEN_CPU_CAPABILITY="
                        "avx512, OMP_WAIT_POLICY=PASSIVE (much faster when other processes"
                        " keep the cores busy)")
    parser.add_argument("--isa", choices=sorted(ISA_CAPS), default="native",
                        help="ISA level for both frameworks and the peak (default %(default)s;"
                        " see above)")
    parser.add_argument("--precision", choices=PRECISIONS, default="fp32",
                        help="what both frameworks compute in (default %(default)s; see above)")
    parser.add_argument("--compare-fp32", action="store_true",
                        help="with --precision bf16|fp16: also time xtrain in fp32 (columns"
                        " x fp32, x32/x)")
    parser.add_argument("--compare-torch-fp32", action="store_true",
                        help="with --precision bf16|fp16: also time PyTorch in fp32 (columns"
                        " t fp32, t32/t)")
    parser.add_argument("--peak-gflops", type=float,
                        help="the peak for the %%peak column (default: measured by"
                        " bench/fma_peak.sh at --isa, --precision and the thread count)")
    parser.add_argument("--json", metavar="FILE", help="also write every run's figures here")
    args = parser.parse_args()
    if args.precision == "fp32" and (args.compare_fp32 or args.compare_torch_fp32):
        parser.error("--compare-fp32 and --compare-torch-fp32 compare --precision bf16 or fp16"
                     " with fp32")

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
    flags = cpu_flags()
    peak, amx_peak, peak_note = precision_peaks(args.precision, args.isa, flags)
    if args.peak_gflops is not None:
        peak.given = args.peak_gflops
    else:
        measure_peak(peak, args.isa, threads)
    if amx_peak and not measure_peak(amx_peak, args.isa, threads, required=False):
        amx_peak = None

    def peak_line():
        text = "CPU: %s; ISA level: %s; " % (cpu, args.isa)
        if args.precision != "fp32":
            text += "precision: %s; " % args.precision
        text += "%s %.1f GFLOP/s on %d threads (%s)" % (peak.name, peak.gflops, threads,
                                                       peak.source(threads))
        if amx_peak:
            text += "; %s %.1f GFLOP/s (%s)" % (amx_peak.name, amx_peak.gflops,
                                               amx_peak.source(threads))
        return text

    print(peak_line(), file=sys.stderr)
    xtrain_env = dict(ISA_CAPS[args.isa]["xtrain"], **both_env)
    xtrain_precision = None if args.precision == "fp32" else args.precision
    # PyTorch 1.13's CPU autocast has bf16 only: at fp16 it is not run.
    torch_precision = None if args.precision == "fp16" else args.precision
    # PyTorch's configurations: memory layout x environment, the fastest shown.
    torch_variants = [{}] if args.isa != "native" else list(TORCH_NATIVE_VARIANTS)
    missing_avx512 = [flag for flag in TORCH_AVX512_FLAGS if flag not in flags]
    skipped_variants = []
    if missing_avx512:
        skipped_variants = [variant for variant in torch_variants
                            if variant.get("ATEN_CPU_CAPABILITY", "").startswith("avx512")]
        torch_variants = [variant for variant in torch_variants if variant not in skipped_variants]
    torch_configs = {}
    for layout in layouts:
        for variant in torch_variants:
            label = layout + "".join("+%s" % v for v in variant.values())
            torch_configs[label] = (layout, dict(ISA_CAPS[args.isa]["torch"], **variant,
                                                 **torch_env))
    run_torch_at_precision = bool(torch_python and torch_precision)
    run_torch_fp32 = bool(torch_python and args.compare_torch_fp32)

    load_before = load_average()
    start_wall, start_busy, start_ours = time.time(), busy_cpu_seconds(), our_cpu_seconds()
    rows = []
    at = "" if args.precision == "fp32" else " " + args.precision
    for net in nets:
        iterations = args.iterations or DEFAULT_ITERATIONS[net.name]
        row = {"net": net, "iterations": iterations, "xtrain": [], "xtrain_step": [],
               "xtrain_fp32": [],
               "torch": {label: [] for label in torch_configs if run_torch_at_precision},
               "torch_fp32": {label: [] for label in torch_configs if run_torch_fp32}}
        for run in range(args.runs):
            # Interleaved, so that a change in the machine's load hits all alike.
            progress = "%s run %d/%d: %%s" % (net.name, run + 1, args.runs)
            print(progress % ("xtrain" + ("" if xtrain_precision is None
                                          else " --precision=" + xtrain_precision)),
                  file=sys.stderr)
            row["xtrain"].append(run_xtrain(str(xtrain), net, iterations, xtrain_env,
                                            precision=xtrain_precision))
            print(progress % ("xtrain --training_step" + (
                "" if xtrain_precision is None else " --precision=" + xtrain_precision)),
                  file=sys.stderr)
            row["xtrain_step"].append(run_xtrain(str(xtrain), net, iterations, xtrain_env,
                                                 training_step=True, precision=xtrain_precision))
            if args.compare_fp32:
                print(progress % "xtrain fp32", file=sys.stderr)
                row["xtrain_fp32"].append(run_xtrain(str(xtrain), net, iterations, xtrain_env))
            for label, (layout, env) in torch_configs.items() if run_torch_at_precision else []:
                print(progress % ("torch %s%s" % (label, at)), file=sys.stderr)
                row["torch"][label].append(run_torch(torch_python, net, iterations, layout,
                                                     env, threads, precision=torch_precision))
            for label, (layout, env) in torch_configs.items() if run_torch_fp32 else []:
                print(progress % ("torch %s fp32" % label), file=sys.stderr)
                row["torch_fp32"][label].append(run_torch(torch_python, net, iterations,
                                                          layout, env, threads))
        rows.append(row)
    wall = time.time() - start_wall
    others = (busy_cpu_seconds() - start_busy) - (our_cpu_seconds() - start_ours)
    load_after = load_average()
    # The peaks again, after the runs: the larger reading is used.
    if args.peak_gflops is None:
        measure_peak(peak, args.isa, threads)
    if amx_peak:
        measure_peak(amx_peak, args.isa, threads, required=False)
    baseline_mib = caffe_memory_baseline(str(xtrain), xtrain_env)

    print("xtrain: %s; %d runs per net (medians shown); iterations per run: %s"
          % (xtrain, args.runs, ", ".join("%s %d" % (r["net"].name, r["iterations"]) for r in rows)))
    print(peak_line())
    for warning in filter(None, (peak.disagreement(), amx_peak and amx_peak.disagreement())):
        print(warning)
        print(warning, file=sys.stderr)
    print("environment for xtrain: %s" % (" ".join("%s=%s" % kv for kv in xtrain_env.items())
                                           or "as is"))
    print("load average before: %s, after: %s; other processes used %.2f of the %d cores"
          " on average during the %.0f s" % (load_before, load_after, max(others, 0) / wall,
                                             os.cpu_count(), wall))
    torch_info = None
    for row in rows:
        for results in list(row["torch"].values()) + list(row["torch_fp32"].values()):
            torch_info = torch_info or next((r for r in results if "torch" in r), None)
    if torch_info:
        print("PyTorch %s (%s), %d threads, environment %s, BLAS %s"
              % (torch_info["torch"], torch_python, torch_info["threads"],
                 "; ".join("%s: %s" % (label, " ".join("%s=%s" % kv for kv in env.items())
                                       or "as is")
                           for label, (_, env) in torch_configs.items()),
                 " ".join(torch_info["blas"]) or "none loaded"))
    elif not args.no_torch and not torch_python:
        print("PyTorch: not found (apt-get install python3-torch libopenblas0-openmp)")
    if skipped_variants and torch_python:
        print("PyTorch: %s not run: this CPU lacks %s (PyTorch's AVX-512 kernels would die of"
              " SIGILL)" % (", ".join("+" + "+".join(v.values()) for v in skipped_variants),
                            ", ".join(missing_avx512)))
    if args.precision != "fp32":
        emulated = any(r.get("emulated") for row in rows
                       for r in row["xtrain"] + row["xtrain_step"])
        print("precision %s: xtrain `time --precision=%s` (16-bit storage, fp32 master weights)%s"
              % (args.precision, args.precision,
                 ": it warned that it emulates (no bf16 instructions here or they are capped:"
                 " fp32 arithmetic on operands rounded to bf16)" if emulated else ""))
        if torch_precision is None:
            print("PyTorch at %s: not run (PyTorch 1.13's CPU autocast has bf16 only:"
                  " \"AutocastCPU only support Bfloat16\"); its columns show -%s"
                  % (args.precision, "; t fp32 is its fp32" if run_torch_fp32 else ""))
        elif run_torch_at_precision:
            kernels = onednn_kernels_seen(rows)
            print("PyTorch at %s: torch.autocast(\"cpu\", dtype=torch.bfloat16) around forward +"
                  " loss, backward outside it, fp32 weights; oneDNN ran (warm-up iterations): %s"
                  % (args.precision, "; ".join("%s %s" % (kind, ", ".join(names))
                                               for kind, names in kernels.items())
                     or ("nothing reported" if any(
                         "forward_backward_ms" in r for row in rows
                         for results in row["torch"].values() for r in results)
                         else "nothing: every run failed (the notes say why)")))
        print(peak_note)
    print()

    first = [("net", 14, True), ("batch", 5, False), ("ms/iter", 8, False),
             ("step ms", 8, False), ("img/s", 7, False), ("GFLOP/iter", 10, False),
             ("GFLOP/s", 7, False), ("%peak", 6, False)]
    if amx_peak:
        first.append(("%AMX", 6, False))
    groups = [first, [("torch ms", 8, False), ("+step", 8, False), ("torch layout", 20, True),
                      ("x/t", 6, False), ("step", 6, False)]]
    compare = []
    if args.compare_fp32:
        compare += [("x fp32", 8, False), ("x32/x", 6, False)]
    if args.compare_torch_fp32:
        compare += [("t fp32", 8, False), ("t32/t", 6, False)]
    if compare:
        groups.append(compare)
    groups += [[("Caffe", 7, False), ("x/C", 6, False)],
               [("RSS MiB", 7, False), ("Caffe~", 7, False), ("%C", 5, False)]]
    header = table_line(groups, {title: title for group in groups for title, _, _ in group})
    print(header)
    print("-" * len(header))
    notes = []  # (text, whether it makes the exit status 1)
    goals = []
    for row in rows:
        net = row["net"]
        ok = [r for r in row["xtrain"] if "ms" in r]
        errors = [r["error"] for r in row["xtrain"] + row["xtrain_step"] + row["xtrain_fp32"]
                  if "error" in r]
        if errors:
            notes.append(("%s: xtrain failed: %s" % (net.name, errors[0]), True))
        ms = median_of(ok, "ms")
        step_ms = median_of(row["xtrain_step"], "ms")
        fp32_ms = median_of(row["xtrain_fp32"], "ms")
        rss = median_of(ok, "rss_mib")
        multiply_adds = parameters = caffe_mib = None
        if ok:
            multiply_adds, parameters = net_work(net, ok[0]["log"])
            caffe_mib = caffe_memory_mib(net, ok[0]["log"], baseline_mib)
        gflop = 3 * 2 * multiply_adds / 1e9 if multiply_adds else None
        gflops = gflop / (ms / 1000) if gflop and ms else None
        torch, torch_errors = fastest_torch(row["torch"])
        torch32, torch32_errors = fastest_torch(row["torch_fp32"])
        for label, error in torch_errors:
            if args.precision == "bf16" and args.isa == "avx2":
                notes.append(("%s: torch %s bf16 failed, as expected at --isa avx2 (PyTorch 1.13"
                              " with oneDNN capped at AVX2 has no bf16 convolution): %s"
                              % (net.name, label, error), False))
            else:
                notes.append(("%s: torch %s%s failed: %s" % (net.name, label, at, error), True))
        for label, error in torch32_errors:
            notes.append(("%s: torch %s fp32 failed: %s" % (net.name, label, error), True))
        if args.precision == "bf16":
            dtypes = {r["output_dtype"] for results in row["torch"].values() for r in results
                      if "output_dtype" in r}
            if dtypes - {"bfloat16"}:
                notes.append(("%s: PyTorch's autocast produced %s, not bfloat16"
                              % (net.name, ", ".join(sorted(dtypes))), True))
        caffe = CAFFE_MS.get(net.name)
        texts = {
            "net": net.label, "batch": "%d" % net.batch, "ms/iter": cell(ms, "%.1f"),
            "step ms": cell(step_ms, "%.1f"),
            "img/s": cell(net.batch * 1000 / ms if ms else None, "%.1f"),
            "GFLOP/iter": cell(gflop, "%.3f"), "GFLOP/s": cell(gflops, "%.1f"),
            "%peak": cell(100 * gflops / peak.gflops if gflops else None, "%.1f"),
            "%AMX": cell(100 * gflops / amx_peak.gflops if gflops and amx_peak else None,
                         "%.1f"),
            "torch ms": cell(torch["ms"], "%.1f"), "+step": cell(torch["step_ms"], "%.1f"),
            "torch layout": torch["label"] or "-", "x/t": cell(ratio(torch["ms"], ms), "%.2f"),
            "step": cell(ratio(torch["step_ms"], step_ms), "%.2f"),
            "x fp32": cell(fp32_ms, "%.1f"), "x32/x": cell(ratio(fp32_ms, ms), "%.2f"),
            "t fp32": cell(torch32["ms"], "%.1f"),
            "t32/t": cell(ratio(torch32["ms"], torch["ms"]), "%.2f"),
            "Caffe": cell(caffe, "%.0f"), "x/C": cell(ratio(caffe, ms), "%.2f"),
            "RSS MiB": cell(rss, "%.0f"), "Caffe~": cell(caffe_mib, "%.0f"),
            "%C": cell(100 * rss / caffe_mib if rss and caffe_mib else None, "%.0f")}
        print(table_line(groups, texts))
        torch_params = torch["parameters"] or torch32["parameters"]
        row.update(parameters=parameters, torch_params=torch_params)
        if args.precision == "bf16" and args.compare_fp32:
            speedup, over_torch = ratio(fp32_ms, ms), ratio(torch["ms"], ms)
            goals.append("  %-14s x32/x %s (%s), x/t %s (%s)" % (
                net.label, cell(speedup, "%.2f"),
                "-" if speedup is None else "met" if speedup >= 1.6 else "NOT met",
                cell(over_torch, "%.2f"),
                "-" if over_torch is None else "met" if over_torch >= 1.3 else "NOT met"))

    print("\nms/iter: forward + backward (`xtrain time`); step ms: a whole training iteration"
          " with the momentum-SGD update (`xtrain time --training_step`). x/t: torch's"
          " forward + backward over xtrain's; step: torch's +step over xtrain's step; x/C:"
          " Caffe's over xtrain's forward + backward (above 1: xtrain is faster). GFLOP counts"
          " only convolution, deconvolution and inner-product layers (forward x3 for forward +"
          " backward); %%peak: over the %s, %.1f GFLOP/s."
          " RSS: xtrain's peak for forward + backward; Caffe~: bench/caffe_memory.py's model of"
          " Caffe 1.0's (process baseline %.0f MiB measured with xtrain); %%C: RSS over Caffe~."
          % (peak.name, peak.gflops, baseline_mib))
    if args.precision != "fp32":
        print("At %s: ms/iter, step ms, RSS and the torch columns are at that precision (PyTorch:"
              " bf16 autocast%s); Caffe's figures are fp32.%s%s%s" % (
                  args.precision, ", not run at fp16" if torch_precision is None else "",
                  " %%AMX: over the %s, %.1f GFLOP/s." % (amx_peak.name, amx_peak.gflops)
                  if amx_peak else "",
                  " x fp32: xtrain's forward + backward in fp32 (no --precision); x32/x: x fp32"
                  " over ms/iter (the speed-up of %s; above 1: faster)." % args.precision
                  if args.compare_fp32 else "",
                  " t fp32: PyTorch's fastest forward + backward in fp32; t32/t: t fp32 over"
                  " torch ms (its own speed-up)." if args.compare_torch_fp32 else ""))
    if goals:
        print("\nissue goals at bf16 (x32/x >= 1.6: bf16 faster than xtrain's fp32; x/t >= 1.3:"
              " faster than PyTorch's bf16 autocast):")
        for goal in goals:
            print(goal)
    print("\nper run (ms/iter, sorted), learnable parameters, peak RSS:")
    def run_name(key, layout):
        return layout if key == "torch" and not at else "%s %s" % (
            layout, at.strip() if key == "torch" else "fp32")

    name_width = max([20] + [len(run_name(key, layout)) for row in rows
                             for key in ("torch", "torch_fp32") for layout in row[key]])
    for row in rows:
        net = row["net"]
        print("  %-14s xtrain %s; step %s; step peak RSS %s MiB%s" % (
            net.label, spread(row["xtrain"], "ms"), spread(row["xtrain_step"], "ms"),
            spread(row["xtrain_step"], "rss_mib"),
            "; fp32 %s" % spread(row["xtrain_fp32"], "ms") if args.compare_fp32 else ""))
        for key in ("torch", "torch_fp32"):
            for layout, results in row[key].items():
                if not results:
                    continue
                capability = next((r.get("cpu_capability") for r in results
                                   if "cpu_capability" in r), "?")
                print("  %-14s torch %s fwd+bwd %s; +step %s; peak RSS %s MiB;"
                      " CPU capability %s" % (
                          "", run_name(key, layout).ljust(name_width),
                          spread(results, "forward_backward_ms"),
                          spread(results, "iteration_ms"), spread(results, "peak_rss_mib"),
                          capability))
                kernels = next((r["onednn_kernels"] for r in results if "onednn_kernels" in r),
                               None)
                if kernels:
                    print("  %-14s   oneDNN: %s" % ("", "; ".join(
                        "%s %s" % (kind, ", ".join(names)) for kind, names in kernels.items())))
        if row["torch_params"] is not None:
            same = "same" if row["torch_params"] == row["parameters"] else "DIFFERENT"
            print("  %-14s parameters: xtrain %s, torch %s (%s)"
                  % ("", format(row["parameters"], ","), format(row["torch_params"], ","), same))
            if row["torch_params"] != row["parameters"]:
                notes.append(("%s: parameter counts differ" % net.name, True))
        elif row["parameters"] is not None:
            print("  %-14s parameters: xtrain %s" % ("", format(row["parameters"], ",")))
    for note, _ in notes:
        print("note: " + note)
    if args.json:
        dump = [{"net": row["net"].name, "batch": row["net"].batch,
                 "iterations": row["iterations"], "parameters": row["parameters"],
                 "xtrain": [{k: v for k, v in r.items() if k != "log"} for r in row["xtrain"]],
                 "xtrain_step": row["xtrain_step"],
                 "xtrain_fp32": [{k: v for k, v in r.items() if k != "log"}
                                 for r in row["xtrain_fp32"]],
                 "torch": row["torch"], "torch_fp32": row["torch_fp32"],
                 "caffe_ms": CAFFE_MS.get(row["net"].name)}
                for row in rows]
        Path(args.json).write_text(json.dumps({
            "xtrain": str(xtrain), "runs": args.runs, "cpu": cpu, "isa": args.isa,
            "precision": args.precision, "threads": threads, "peak_name": peak.name,
            "peak_gflops": peak.gflops, "peak_readings": peak.readings,
            "peak_source": peak.source(threads),
            "amx_peak_gflops": amx_peak.gflops if amx_peak else None,
            "amx_peak_readings": amx_peak.readings if amx_peak else None,
            "load_before": load_before,
            "load_after": load_after, "other_processes_cores": max(others, 0) / wall,
            "nets": dump}, indent=1) + "\n")
    return 1 if any(counts for _, counts in notes) else 0


if __name__ == "__main__":
    sys.exit(main())
