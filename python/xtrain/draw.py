"""A picture of a net, as pycaffe's ``caffe.draw``: ``draw_net_to_file(net,
'lenet.png')`` where `net` is a NetParameter (``text_format.Merge`` of a
prototxt into ``xtrain.proto.caffe_pb2.NetParameter()``).

Layers are boxes (name, type and key parameters, coloured by family as
``xtrain draw`` colours them), blobs are grey octagons, edges run from a
blob to the layers that read it and from a layer to the blobs it writes. An
in-place layer (top = bottom) writes a new octagon of the same name, so the
picture stays a chain rather than a loop. The DOT text is written here
(``net_to_dot``) and rendered by Graphviz's ``dot`` (Debian's graphviz),
run without a shell; pydot is not needed.
"""
import os
import subprocess

from .proto import xtrain_pb2

# Fill colours by layer family, those of `xtrain draw` (docs/tools/draw.md).
_FAMILY_COLOURS = [
    ("#8DD3C7", {"Data", "ImageData", "HDF5Data", "MemoryData", "DummyData", "WindowData",
                 "Input", "Python"}),
    ("#FF5050", {"Convolution", "Deconvolution", "Im2col"}),
    ("#FF9900", {"Pooling", "SPP"}),
    ("#6495ED", {"ReLU", "PReLU", "ELU", "Sigmoid", "TanH", "AbsVal", "BNLL", "Power", "Exp",
                 "Log", "Threshold", "Dropout", "Softmax"}),
    ("#B3DE69", {"BatchNorm", "LRN", "MVN", "Scale", "Bias"}),
    ("#CC33FF", {"InnerProduct", "Embed"}),
]
_LOSS_COLOUR = "#FFD700"
_OTHER_COLOUR = "#D9D9D9"
_BLOB_COLOUR = "#E0E0E0"


def _colour(layer_type):
    if layer_type.endswith("Loss") or layer_type == "Accuracy":
        return _LOSS_COLOUR
    for colour, types in _FAMILY_COLOURS:
        if layer_type in types:
            return colour
    return _OTHER_COLOUR


def _quote(text):
    """A DOT string literal."""
    return '"%s"' % str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _first(values, default):
    return values[0] if len(values) else default


def _spatial(param, name):
    """kernel/stride/pad of a convolution or pooling message, as `k`, or
    `h x w` where the _h/_w fields are set."""
    if param.HasField(name + "_h") or param.HasField(name + "_w"):
        return "%dx%d" % (getattr(param, name + "_h"), getattr(param, name + "_w"))
    value = getattr(param, name if name != "kernel" else "kernel_size")
    if isinstance(value, int):
        return str(value)
    return "x".join(str(v) for v in value) if len(value) else None


def _details(layer, display_lrm):
    """The lines under a layer's name and type: its key parameters."""
    lines = []
    if layer.type in ("Convolution", "Deconvolution"):
        conv = layer.convolution_param
        lines.append("kernel %s, stride %s, pad %s" % (
            _spatial(conv, "kernel") or "?", _spatial(conv, "stride") or "1",
            _spatial(conv, "pad") or "0"))
    elif layer.type == "Pooling":
        pool = layer.pooling_param
        method = xtrain_pb2.PoolingParameter.PoolMethod.Name(pool.pool)
        if pool.global_pooling:
            lines.append("%s, global" % method)
        else:
            lines.append("%s, kernel %s, stride %s, pad %s" % (
                method, _spatial(pool, "kernel") or "?", _spatial(pool, "stride") or "1",
                _spatial(pool, "pad") or "0"))
    if display_lrm and layer.type in ("Convolution", "Deconvolution", "InnerProduct"):
        multipliers = [spec.lr_mult if spec.HasField("lr_mult") else 1.0 for spec in layer.param]
        while len(multipliers) < 2:
            multipliers.append(1.0)
        lines.append("lr mult %g, %g" % tuple(multipliers[:2]))
    return lines


def _edge_label(layer):
    """What the edge from a layer to its output says: the batch of a data
    layer, the outputs of a convolution or inner product."""
    if layer.type == "Data":
        return "batch %d" % layer.data_param.batch_size
    if layer.type in ("Convolution", "Deconvolution"):
        return str(layer.convolution_param.num_output)
    if layer.type == "InnerProduct":
        return str(layer.inner_product_param.num_output)
    return None


def _in_phase(layer, phase):
    """Whether the net built for `phase` (None: any) has the layer, by its
    include/exclude rules' phases (levels and stages are not considered)."""
    if phase is None:
        return True
    phase = int(phase)

    def matches(rule):
        return not rule.HasField("phase") or rule.phase == phase
    if len(layer.include) and not any(matches(rule) for rule in layer.include):
        return False
    return not any(matches(rule) for rule in layer.exclude)


def _layers(net):
    """The net's layers; the V1 `layers` of an old prototxt get their type
    name from the V1 enum (drawing only needs names and links)."""
    if len(net.layer) or not len(net.layers):
        return list(net.layer)
    converted = []
    for old in net.layers:
        layer = xtrain_pb2.LayerParameter(name=old.name, bottom=old.bottom, top=old.top)
        layer.type = xtrain_pb2.V1LayerParameter.LayerType.Name(old.type).title().replace("_", "")
        layer.include.extend(old.include)
        layer.exclude.extend(old.exclude)
        converted.append(layer)
    return converted


def net_to_dot(caffe_net, rankdir="LR", label_edges=True, phase=None, display_lrm=False):
    """The DOT text of a NetParameter's picture. rankdir: LR, TB, BT or RL;
    phase: TRAIN or TEST to draw only that phase's layers (None: all)."""
    if rankdir not in ("LR", "TB", "BT", "RL"):
        raise ValueError("rankdir must be LR, TB, BT or RL, not %r" % (rankdir,))
    lines = ["digraph %s {" % _quote(caffe_net.name or "net"),
             "  rankdir=%s;" % rankdir,
             '  node [fontname="Helvetica", fontsize=10];',
             '  edge [fontname="Helvetica", fontsize=9];']
    blob_nodes = {}  # blob name -> id of its latest octagon
    node_count = [0]

    def new_blob_node(name):
        node_count[0] += 1
        node = "blob%d" % node_count[0]
        lines.append("  %s [label=%s, shape=octagon, style=filled, fillcolor=%s];"
                     % (node, _quote(name), _quote(_BLOB_COLOUR)))
        blob_nodes[name] = node
        return node

    for index, layer in enumerate(_layers(caffe_net)):
        if not _in_phase(layer, phase):
            continue
        layer_node = "layer%d" % index
        label = "\n".join([layer.name, "(%s)" % layer.type] + _details(layer, display_lrm))
        lines.append("  %s [label=%s, shape=box, style=\"filled,rounded\", fillcolor=%s];"
                     % (layer_node, _quote(label), _quote(_colour(layer.type))))
        for bottom in layer.bottom:
            source = blob_nodes.get(bottom) or new_blob_node(bottom)
            lines.append("  %s -> %s;" % (source, layer_node))
        edge_label = _edge_label(layer) if label_edges else None
        for top in layer.top:
            target = new_blob_node(top)
            attributes = " [label=%s]" % _quote(edge_label) if edge_label else ""
            lines.append("  %s -> %s%s;" % (layer_node, target, attributes))
    lines.append("}")
    return "\n".join(lines) + "\n"


def _render(dot_text, output_format):
    """`dot_text` rendered by Graphviz's dot in `output_format` (png, svg,
    pdf, ...), as bytes."""
    try:
        result = subprocess.run(["dot", "-T" + output_format], input=dot_text.encode("utf-8"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    except FileNotFoundError:
        raise RuntimeError("drawing a net needs Graphviz's dot: install Debian's graphviz "
                           "(or use net_to_dot for the DOT text)")
    if result.returncode != 0:
        raise RuntimeError("dot -T%s failed (exit %d): %s" % (
            output_format, result.returncode, result.stderr.decode("utf-8", "replace").strip()))
    return result.stdout


def draw_net(caffe_net, rankdir, ext="png", phase=None, display_lrm=False):
    """The picture of a NetParameter, as bytes in format `ext` (png, svg,
    pdf, ..., or dot for the DOT text itself)."""
    dot_text = net_to_dot(caffe_net, rankdir, phase=phase, display_lrm=display_lrm)
    if ext in ("dot", "gv"):
        return dot_text.encode("utf-8")
    return _render(dot_text, ext)


def draw_net_to_file(caffe_net, filename, rankdir="LR", phase=None, display_lrm=False):
    """Writes the picture of a NetParameter to `filename`, in the format its
    extension names (.png, .svg, .pdf, .dot; none: png)."""
    ext = os.path.splitext(filename)[1].lstrip(".") or "png"
    data = draw_net(caffe_net, rankdir, ext, phase, display_lrm)
    with open(filename, "wb") as output:
        output.write(data)
