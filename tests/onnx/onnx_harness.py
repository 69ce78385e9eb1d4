"""What the ONNX tests (tests/onnx) and the table of docs/onnx.md
(bench/onnx_table.py) share: the zoo's deploy nets at batch 1 with weights
from their fillers, `xtrain export` / `xtrain import`, ONNX Runtime and
xtrain forward passes, and the comparison of their outputs.

Needs the build's Python package (PYTHONPATH=build/python), its tools
(XTRAIN_TOOLS_DIR=build/bin) and onnx, onnxruntime and torch
(scripts/onnx_test_env.sh makes a virtual environment with them)."""
import os
import subprocess
import sys
import time

import numpy as np
import onnx
import onnxruntime
from google.protobuf import text_format

import xtrain
from xtrain.proto import xtrain_pb2

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS_DIR = os.environ.get("XTRAIN_TOOLS_DIR", os.path.join(SOURCE_DIR, "build", "bin"))

# Every deploy net of models/ (cifar10_quick and the autoencoder have none).
ZOO = {
    "lenet": "models/lenet/lenet_deploy.prototxt",
    "cifar10_full": "models/cifar10_full/deploy.prototxt",
    "alexnet": "models/alexnet/deploy.prototxt",
    "caffenet": "models/caffenet/deploy.prototxt",
    "squeezenet": "models/squeezenet/deploy.prototxt",
    "googlenet": "models/googlenet/deploy.prototxt",
    "vgg16": "models/vgg16/deploy.prototxt",
    "resnet50": "models/resnet50/deploy.prototxt",
}

# The largest |difference| relative to the reference output's largest |value|.
TOLERANCE = 1e-4


def xtrain_tool(*arguments):
    """Runs build/bin/xtrain; returns its wall time in seconds."""
    start = time.perf_counter()
    result = subprocess.run([os.path.join(TOOLS_DIR, "xtrain"), *arguments],
                            capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise RuntimeError(f"xtrain {' '.join(arguments)} failed:\n{result.stderr}")
    return elapsed


def train_val_of(deploy_path):
    """The training net beside a zoo deploy net (its fillers)."""
    folder = os.path.dirname(deploy_path)
    for name in ("train_val.prototxt", "lenet_train_test.prototxt"):
        if os.path.exists(os.path.join(folder, name)):
            return os.path.join(folder, name)
    raise FileNotFoundError(f"no training net beside {deploy_path}")


def read_net(path):
    net = xtrain_pb2.NetParameter()
    with open(path) as file:
        text_format.Merge(file.read(), net)
    return net


def zoo_deploy_for_test(deploy_path, output_path):
    """The deploy net with each Input's first axis 1, and the weight and bias
    fillers of the training net's layers of the same names (deploy nets
    have none: their weights would all be 0, and every comparison vacuous)."""
    net = read_net(deploy_path)
    trained = {layer.name: layer for layer in read_net(train_val_of(deploy_path)).layer}
    for layer in net.layer:
        if layer.type == "Input":
            for shape in layer.input_param.shape:
                shape.dim[0] = 1
        source = trained.get(layer.name)
        if source is None or source.type != layer.type:
            continue
        for field in ("convolution_param", "inner_product_param"):
            if source.HasField(field):
                for filler in ("weight_filler", "bias_filler"):
                    if getattr(source, field).HasField(filler):
                        getattr(getattr(layer, field), filler).CopyFrom(
                            getattr(getattr(source, field), filler))
    with open(output_path, "w") as file:
        file.write(text_format.MessageToString(net))
    return output_path


def weights_from_fillers(deploy_path, weights_path, seed=1, random_statistics=False):
    """The net's filler values saved as a .caffemodel; returns the net. BatchNorm's stored
    statistics start at 0 (scale factor 0: mean 0, variance 0, so x divided
    by sqrt(eps)), which blows up through 50 layers; they are set to mean
    0, variance 1, factor 1 instead, or (random_statistics) to sums of
    random means and variances with factor 2, as a trained net stores them."""
    xtrain.set_random_seed(seed)
    generator = np.random.default_rng(seed)
    net = xtrain.Net(deploy_path, xtrain.TEST)
    for name, layer in zip(net._layer_names, net.layers):
        if layer.type == "BatchNorm":
            mean, variance, factor = net.params[name]
            if random_statistics:
                mean.data[...] = generator.uniform(-0.4, 0.4, mean.data.shape)
                variance.data[...] = generator.uniform(1.0, 3.0, variance.data.shape)
                factor.data[...] = 2
            else:
                mean.data[...] = 0
                variance.data[...] = 1
                factor.data[...] = 1
    net.save(weights_path)
    return net


def random_inputs(session, seed=0):
    """{input name: standard normal values} for an ONNX Runtime session."""
    generator = np.random.default_rng(seed)
    return {value.name: generator.standard_normal(
        [d if isinstance(d, int) else 1 for d in value.shape]).astype(np.float32)
        for value in session.get_inputs()}


def session_of(onnx_path, extra_outputs=()):
    """An ONNX Runtime session (CPU), with `extra_outputs` (intermediate
    values) added to the graph's outputs."""
    model = onnx.load(onnx_path)
    for name in extra_outputs:
        model.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = int(os.environ.get("OMP_NUM_THREADS", "0") or 0)
    return onnxruntime.InferenceSession(model.SerializeToString(), options,
                                        providers=["CPUExecutionProvider"])


def run_onnx(session, inputs, names=None):
    names = names or [output.name for output in session.get_outputs()]
    return dict(zip(names, session.run(names, inputs)))


def run_xtrain(deploy_path, weights_path, inputs, blobs=(), net=None):
    """{output or blob name: values} of an xtrain forward pass (of `net`, if
    given, which has those weights already)."""
    net = net or xtrain.Net(deploy_path, weights_path, xtrain.TEST)
    outputs = net.forward(**inputs)
    result = {name: np.array(values) for name, values in outputs.items()}
    for name in blobs:
        result[name] = np.array(net.blobs[name].data)
    return result


def relative_difference(actual, expected):
    """max |actual - expected| / max |expected|."""
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    scale = np.abs(expected).max()
    return float(np.abs(actual - expected).max() / (scale if scale > 0 else 1.0))


def softmax_bottoms(deploy_path):
    """The blobs that Softmax layers read (the scores before them, which the
    comparison checks too: probabilities near 1/1000 say little)."""
    return [layer.bottom[0] for layer in read_net(deploy_path).layer if layer.type == "Softmax"]


def check_model(onnx_path):
    """onnx.checker's verdict: "ok" or its message's first line."""
    try:
        onnx.checker.check_model(onnx_path, full_check=True)
        return "ok"
    except onnx.checker.ValidationError as error:
        return str(error).splitlines()[0]


def export_and_compare(deploy, workdir, stem, random_statistics=False, export_flags=()):
    """Exports `deploy` with weights from its fillers and compares ONNX
    Runtime's outputs (and the scores before each softmax) with xtrain's.
    Returns (export seconds, ONNX path, checker verdict, largest relative
    difference, {output: difference})."""
    weights = os.path.join(workdir, f"{stem}.caffemodel")
    net = weights_from_fillers(deploy, weights, random_statistics=random_statistics)
    onnx_path = os.path.join(workdir, f"{stem}.onnx")
    seconds = xtrain_tool("export", f"--model={deploy}", f"--weights={weights}",
                          f"--output={onnx_path}", *export_flags)
    verdict = check_model(onnx_path)
    scores = softmax_bottoms(deploy)
    session = session_of(onnx_path, scores)
    inputs = random_inputs(session)
    expected = run_xtrain(deploy, weights, inputs, scores, net=net)
    actual = run_onnx(session, inputs)
    differences = {key: relative_difference(actual[key], expected[key]) for key in expected}
    for key in scores:  # all-equal scores would make the comparison say nothing
        assert np.ptp(expected[key]) > 0, f"{stem}: the scores '{key}' are all equal"
    return seconds, onnx_path, verdict, max(differences.values()), differences


def compare_export(name, workdir, log=print):
    """Zoo net `name` (zoo_deploy_for_test) through export_and_compare. Returns a row:
    name, export seconds, file bytes, checker verdict, largest relative
    difference."""
    deploy = zoo_deploy_for_test(os.path.join(SOURCE_DIR, ZOO[name]),
                                 os.path.join(workdir, f"{name}_deploy.prototxt"))
    seconds, onnx_path, verdict, worst, _ = export_and_compare(deploy, workdir, name)
    size = os.path.getsize(onnx_path)
    log(f"{name}: export {seconds:.2f} s, {size} bytes, checker {verdict}, "
        f"largest relative difference {worst:.2e}")
    return name, seconds, size, verdict, worst


def import_and_compare(onnx_path, reference, workdir, stem):
    """`xtrain import` of `onnx_path`, then xtrain's forward pass on the
    inputs of `reference` ({"inputs": {...}, "outputs": {...}}). Returns the
    import seconds and the largest relative difference from the reference
    outputs."""
    prototxt = os.path.join(workdir, f"{stem}_imported.prototxt")
    weights = os.path.join(workdir, f"{stem}_imported.caffemodel")
    seconds = xtrain_tool("import", f"--onnx={onnx_path}", f"--output_model={prototxt}",
                          f"--output_weights={weights}")
    actual = run_xtrain(prototxt, weights, reference["inputs"], reference["outputs"].keys())
    worst = max(relative_difference(actual[key], value)
                for key, value in reference["outputs"].items())
    return seconds, worst, prototxt, weights


if __name__ == "__main__":
    sys.exit("import this module; bench/onnx_table.py and tests/onnx use it")
