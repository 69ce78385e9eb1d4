// The layers whose ONNX form is several nodes, or needs the input's shape:
// MVN (ReduceMean, Sub, and for the variance Mul, ReduceMean, Sqrt, Add,
// Div), GELU (Div, Erf, Add, Mul, Mul) and Slice (our exports' Crop, as
// Caffe Slice layers).
#include <algorithm>
#include <cmath>
#include <vector>

#include "interchange/onnx_node_import.hpp"
#include "interchange/onnx_tensor.hpp"
#include "xtrain/error.hpp"

namespace xtrain::interchange {
namespace {

bool is_graph_output(const onnx::GraphProto& graph, const std::string& value) {
  for (const onnx::ValueInfoProto& output : graph.output()) {
    if (output.name() == value) return true;
  }
  return false;
}

// The nodes after `from` that read `value`.
std::vector<int> readers(const onnx::GraphProto& graph, const std::string& value, int from) {
  std::vector<int> found;
  for (int i = from + 1; i < graph.node_size(); ++i) {
    const auto& inputs = graph.node(i).input();
    if (std::find(inputs.begin(), inputs.end(), value) != inputs.end()) found.push_back(i);
  }
  return found;
}

// The one node after `from` that reads `value` (not a graph output: it
// would have to stay a blob), or -1.
int only_reader(const onnx::GraphProto& graph, const std::string& value, int from) {
  const std::vector<int> found = readers(graph, value, from);
  return found.size() == 1 && !is_graph_output(graph, value) ? found[0] : -1;
}

// Whether `node` is `op` of the default domain whose first inputs are
// `inputs`, with an output.
bool reads(const onnx::NodeProto& node, const std::string& op,
           const std::vector<std::string>& inputs) {
  if (node.op_type() != op || node.output_size() < 1 || !node.domain().empty() ||
      node.input_size() < static_cast<int>(inputs.size())) {
    return false;
  }
  return std::equal(inputs.begin(), inputs.end(), node.input().begin());
}

// The axes a ReduceMean (keepdims 1) averages over, sorted, for a value of
// `rank` axes; empty when it drops them or gives none.
std::vector<std::int64_t> kept_mean_axes(const NodeImport& mean, int rank) {
  if (mean.node.op_type() != "ReduceMean" || mean.int_attribute("keepdims", 1) != 1) return {};
  std::vector<std::int64_t> axes = mean.ints_attribute("axes");
  if (axes.empty() && mean.constant(1) != nullptr) axes = int64_values(*mean.constant(1));
  for (std::int64_t& axis : axes) axis = axis < 0 ? axis + rank : axis;
  std::sort(axes.begin(), axes.end());
  return axes;
}

// The variance part of MVN's pattern after c = Sub(x, mu): Mul(c, c),
// ReduceMean over `axes`, Sqrt, Add of one constant, Div(c, that), each the
// only reader of the one before and c read by the Mul and the Div only.
// The nodes in that order, or empty when they are not there; `eps` the
// constant.
std::vector<int> variance_nodes(NodeImport& node, int sub, const std::vector<std::int64_t>& axes,
                                float* eps) {
  const onnx::GraphProto& graph = *node.state.graph;
  const std::string& centred = graph.node(sub).output(0);
  const std::vector<int> of_centred = readers(graph, centred, sub);
  if (of_centred.size() != 2 || is_graph_output(graph, centred)) return {};
  const int square = of_centred[0];
  if (!reads(graph.node(square), "Mul", {centred, centred})) return {};
  std::vector<int> chain = {square};
  const char* const ops[] = {"ReduceMean", "Sqrt", "Add", "Div"};
  for (const char* op : ops) {
    const std::string& previous = graph.node(chain.back()).output(0);
    const int next = only_reader(graph, previous, chain.back());
    const std::vector<std::string> inputs = std::string(op) == "Div"
                                                ? std::vector<std::string>{centred, previous}
                                                : std::vector<std::string>{previous};
    if (next < 0 || !reads(graph.node(next), op, inputs)) return {};
    chain.push_back(next);
  }
  const NodeImport mean{graph.node(chain[1]), node.state, "", chain[1]};
  const NodeImport add{graph.node(chain[3]), node.state, "", chain[3]};
  const onnx::TensorProto* constant = add.constant(1);
  if (kept_mean_axes(mean, 4) != axes || chain[4] != of_centred[1] || constant == nullptr ||
      add.node.input_size() != 2 || element_count(*constant) != 1) {
    return {};
  }
  *eps = float_values(*constant)[0];
  return chain;
}

}  // namespace

// mu = ReduceMean(x), c = Sub(x, mu): MVN without the variance, whose top
// is c. With c read only by Mul(c, c) -> ReduceMean (the same axes) -> Sqrt
// -> Add of one constant eps -> Div(c, that): MVN with normalize_variance,
// c / (sqrt(mean(c^2)) + eps), Caffe's arithmetic. The axes are (H, W), or
// (C, H, W) across_channels, of a 4-d value (Caffe's MVN gives 4-d tops).
bool import_mvn_pattern(NodeImport& node) {
  const onnx::GraphProto& graph = *node.state.graph;
  const std::string& x = node.node.input(0);
  const std::string& mu = node.node.output(0);
  const std::vector<std::int64_t> axes = kept_mean_axes(node, node.input_rank(0));
  const bool across = axes == std::vector<std::int64_t>{1, 2, 3};
  if (node.input_rank(0) != 4 || (!across && axes != std::vector<std::int64_t>{2, 3})) {
    return false;
  }
  const int sub = only_reader(graph, mu, node.index);
  if (sub < 0 || !reads(graph.node(sub), "Sub", {x, mu})) return false;
  float eps = 0.0f;
  std::vector<int> absorbed = variance_nodes(node, sub, axes, &eps);
  const bool normalize_variance = !absorbed.empty();
  const std::string top =
      normalize_variance ? graph.node(absorbed.back()).output(0) : graph.node(sub).output(0);
  absorbed.push_back(sub);
  MVNParameter* mvn = node.add_layer("MVN", {x}, {top}).mutable_mvn_param();
  mvn->set_across_channels(across);
  mvn->set_normalize_variance(normalize_variance);
  if (normalize_variance) mvn->set_eps(eps);
  node.state.ranks[top] = 4;
  node.state.absorbed.insert(absorbed.begin(), absorbed.end());
  return true;
}

namespace {

// Whether `node`'s input `input` is a constant of one value near `value`:
// an initializer, a constant known so far, or the value of a Constant node
// not yet imported (a pattern looks ahead of the walk over the nodes).
bool is_scalar_constant(const onnx::GraphProto& graph, ImportState& state, int node, int input,
                        double value) {
  const onnx::NodeProto& reader = graph.node(node);
  if (input >= reader.input_size()) return false;
  const onnx::TensorProto* constant = NodeImport{reader, state, "", node}.constant(input);
  for (int i = 0; constant == nullptr && i < node; ++i) {
    const onnx::NodeProto& maker = graph.node(i);
    if (maker.op_type() != "Constant" || maker.output_size() != 1 ||
        maker.output(0) != reader.input(input)) {
      continue;
    }
    for (const onnx::AttributeProto& attribute : maker.attribute()) {
      if (attribute.name() == "value" && attribute.has_t()) constant = &attribute.t();
    }
  }
  return constant != nullptr && element_count(*constant) == 1 &&
         std::abs(float_values(*constant)[0] - value) <= 1e-6 * std::abs(value);
}

}  // namespace

// GELU as torch.onnx.export writes nn.GELU() (opsets 9 to 19): d = Div(x,
// sqrt(2)), e = Erf(d), a = Add(e, 1), m = Mul(x, a), y = Mul(m, 0.5), each
// value read only by the next node (either operand order of the Add and
// Muls). Imported from the Div as one GELU layer (xtrain's, beyond Caffe's
// set); false when the nodes after it are not that.
bool import_gelu_pattern(NodeImport& node) {
  const onnx::GraphProto& graph = *node.state.graph;
  if (node.node.op_type() != "Div" || node.node.input_size() != 2 ||
      !is_scalar_constant(graph, node.state, node.index, 1, std::sqrt(2.0))) {
    return false;
  }
  const std::string& x = node.node.input(0);
  const int erf = only_reader(graph, node.node.output(0), node.index);
  if (erf < 0 || !reads(graph.node(erf), "Erf", {node.node.output(0)})) return false;
  const std::string& e = graph.node(erf).output(0);
  const int add = only_reader(graph, e, erf);
  if (add < 0 || graph.node(add).op_type() != "Add" || graph.node(add).input_size() != 2) {
    return false;
  }
  const int one_at = graph.node(add).input(0) == e ? 1 : 0;
  if (!is_scalar_constant(graph, node.state, add, one_at, 1.0)) return false;
  const std::string& a = graph.node(add).output(0);
  const int times_x = only_reader(graph, a, add);
  if (times_x < 0 ||
      !(reads(graph.node(times_x), "Mul", {x, a}) || reads(graph.node(times_x), "Mul", {a, x}))) {
    return false;
  }
  const std::string& m = graph.node(times_x).output(0);
  const int half = only_reader(graph, m, times_x);
  if (half < 0 || graph.node(half).op_type() != "Mul" || graph.node(half).input_size() != 2) {
    return false;
  }
  const int half_at = graph.node(half).input(0) == m ? 1 : 0;
  if (!is_scalar_constant(graph, node.state, half, half_at, 0.5)) return false;
  const std::string& y = graph.node(half).output(0);
  node.add_layer("GELU", {x}, {y});
  const int rank = node.input_rank(0);
  if (rank >= 0) node.state.ranks[y] = rank;
  node.state.absorbed.insert({erf, add, times_x, half});
  return true;
}

// Slice with constant starts, ends, axes and steps of 1: along each axis it
// cuts, a Caffe Slice at the start and end whose middle top goes on and
// whose other parts a Silence takes (Caffe's Crop needs a second bottom of
// the cropped shape, which an ONNX Slice does not have).
void import_slice(NodeImport& node) {
  XTRAIN_CHECK(node.state.opset >= 10, node.where(),
               ": before opset 10 Slice takes attributes; re-export with opset 13 or later");
  const std::vector<std::int64_t> starts = int64_values(node.required_constant(1, "starts"));
  const std::vector<std::int64_t> ends = int64_values(node.required_constant(2, "ends"));
  std::vector<std::int64_t> axes;
  if (node.has_input(3)) axes = int64_values(node.required_constant(3, "axes"));
  if (node.has_input(4)) {
    for (std::int64_t step : int64_values(node.required_constant(4, "steps"))) {
      XTRAIN_CHECK(step == 1, node.where(), ": a step of ", step,
                   "; only steps of 1 (Caffe's Crop) are imported");
    }
  }
  const std::string& input = node.node.input(0);
  bool computed = false;
  for (const LayerParameter& layer : node.state.net.layer()) {
    computed = computed || std::count(layer.top().begin(), layer.top().end(), input) > 0;
  }
  XTRAIN_CHECK(computed, node.where(), ": its input '", input,
               "' is computed by no earlier node (a constant, or missing)");
  const std::vector<int> shape = imported_blob_shape(node.state, input);
  const int rank = static_cast<int>(shape.size());
  if (axes.empty()) {
    for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
  }
  XTRAIN_CHECK(starts.size() == axes.size() && ends.size() == axes.size(), node.where(), ": ",
               starts.size(), " starts, ", ends.size(), " ends and ", axes.size(),
               " axes; they must be as many");
  // [begin, end) kept along each axis, ONNX's negative and clamped values resolved.
  std::vector<std::int64_t> begin(rank, 0), end(shape.begin(), shape.end());
  std::vector<bool> seen(rank, false);
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const std::int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i];
    XTRAIN_CHECK(axis >= 0 && axis < rank && !seen[axis], node.where(), ": axis ", axes[i],
                 " is repeated or outside the input's ", rank, " axes");
    seen[axis] = true;
    const std::int64_t dim = shape[axis];
    auto resolve = [dim](std::int64_t value) {
      return std::clamp<std::int64_t>(value < 0 ? value + dim : value, 0, dim);
    };
    begin[axis] = resolve(starts[i]);
    end[axis] = resolve(ends[i]);
    XTRAIN_CHECK(begin[axis] < end[axis], node.where(), ": along axis ", axis, " it keeps ",
                 begin[axis], " to ", end[axis], " of ", dim,
                 ", nothing; Caffe's blobs are "
                 "never empty");
  }
  std::string current = input;
  std::vector<std::string> discarded;
  int last_cut = -1;
  for (int axis = 0; axis < rank; ++axis) {
    if (begin[axis] > 0 || end[axis] < shape[axis]) last_cut = axis;
  }
  for (int axis = 0; axis <= last_cut; ++axis) {
    if (begin[axis] == 0 && end[axis] == shape[axis]) continue;
    const std::string kept = axis == last_cut
                                 ? node.node.output(0)
                                 : node.node.output(0) + "/axis" + std::to_string(axis);
    std::vector<std::string> tops;
    SliceParameter slice;
    slice.set_axis(axis);
    if (begin[axis] > 0) {
      slice.add_slice_point(static_cast<std::uint32_t>(begin[axis]));
      tops.push_back(kept + "/before");
      discarded.push_back(tops.back());
    }
    tops.push_back(kept);
    if (end[axis] < shape[axis]) {
      slice.add_slice_point(static_cast<std::uint32_t>(end[axis]));
      tops.push_back(kept + "/after");
      discarded.push_back(tops.back());
    }
    *node.add_layer("Slice", {current}, tops, node.name + "/axis" + std::to_string(axis))
         .mutable_slice_param() = slice;
    current = kept;
  }
  if (last_cut < 0) {
    node.add_layer("Split", {input}, {node.node.output(0)});
  } else {
    node.add_layer("Silence", discarded, {}, node.name + "/discarded");
  }
  node.state.ranks[node.node.output(0)] = rank;
}

}  // namespace xtrain::interchange
