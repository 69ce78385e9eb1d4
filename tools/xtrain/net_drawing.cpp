#include "net_drawing.hpp"

#include <set>
#include <sstream>
#include <utility>

namespace xtrain::cli {
namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string text;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) text += separator;
    text += parts[i];
  }
  return text;
}

std::string number_text(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

// "5x5" from a convolution's repeated field, or its _h/_w pair when given.
template <typename Repeated>
std::string spatial_text(const Repeated& values, bool has_hw, unsigned height, unsigned width,
                         unsigned fallback) {
  if (has_hw) return std::to_string(height) + "x" + std::to_string(width);
  if (values.empty()) return std::to_string(fallback) + "x" + std::to_string(fallback);
  if (values.size() == 1) return std::to_string(values[0]) + "x" + std::to_string(values[0]);
  std::vector<std::string> parts;
  for (unsigned value : values) parts.push_back(std::to_string(value));
  return join(parts, "x");
}

std::vector<std::string> convolution_lines(const ConvolutionParameter& conv) {
  std::vector<std::string> lines;
  lines.push_back(
      "kernel " +
      spatial_text(conv.kernel_size(), conv.has_kernel_h(), conv.kernel_h(), conv.kernel_w(), 0) +
      ", stride " +
      spatial_text(conv.stride(), conv.has_stride_h(), conv.stride_h(), conv.stride_w(), 1) +
      ", pad " +
      spatial_text(conv.pad(), conv.has_pad_h() || conv.has_pad_w(), conv.pad_h(), conv.pad_w(),
                   0));
  std::string outputs = "outputs " + std::to_string(conv.num_output());
  if (conv.group() != 1) outputs += ", group " + std::to_string(conv.group());
  if (!conv.dilation().empty()) {
    outputs += ", dilation " + spatial_text(conv.dilation(), false, 0, 0, 1);
  }
  if (!conv.bias_term()) outputs += ", no bias";
  lines.push_back(outputs);
  return lines;
}

std::string pooling_line(const PoolingParameter& pool) {
  const std::string method = PoolingParameter_PoolMethod_Name(pool.pool());
  if (pool.global_pooling()) return "global " + method;
  const auto pair = [](bool has_hw, unsigned height, unsigned width, bool has_size, unsigned size) {
    if (has_hw) return std::to_string(height) + "x" + std::to_string(width);
    const unsigned value = has_size ? size : 0;
    return std::to_string(value) + "x" + std::to_string(value);
  };
  const bool has_pad_hw = pool.has_pad_h() || pool.has_pad_w();
  return method + " " +
         pair(pool.has_kernel_h(), pool.kernel_h(), pool.kernel_w(), pool.has_kernel_size(),
              pool.kernel_size()) +
         ", stride " +
         pair(pool.has_stride_h(), pool.stride_h(), pool.stride_w(), true, pool.stride()) +
         ", pad " + pair(has_pad_hw, pool.pad_h(), pool.pad_w(), true, pool.pad());
}

struct Producer {
  std::string node;
  std::string blob;
  bool consumed = false;
};

}  // namespace

LayerFamily layer_family(const std::string& type) {
  static const std::set<std::string> data = {"Data",      "ImageData",  "HDF5Data", "MemoryData",
                                             "DummyData", "WindowData", "Input",    "Python"};
  static const std::set<std::string> convolution = {"Convolution", "Deconvolution", "Im2col"};
  static const std::set<std::string> pooling = {"Pooling", "SPP"};
  static const std::set<std::string> activation = {
      "ReLU", "PReLU", "ELU",       "Sigmoid", "TanH",    "AbsVal", "BNLL", "Power",
      "Exp",  "Log",   "Threshold", "Dropout", "Softmax", "Clip",   "Swish"};
  static const std::set<std::string> normalization = {"BatchNorm", "LRN", "MVN", "Scale", "Bias"};
  static const std::set<std::string> inner_product = {"InnerProduct", "Embed"};
  if (data.count(type)) return LayerFamily::kData;
  if (convolution.count(type)) return LayerFamily::kConvolution;
  if (pooling.count(type)) return LayerFamily::kPooling;
  if (activation.count(type)) return LayerFamily::kActivation;
  if (normalization.count(type)) return LayerFamily::kNormalization;
  if (inner_product.count(type)) return LayerFamily::kInnerProduct;
  // Accuracy scores the output as the loss does: drawn alike.
  if (ends_with(type, "Loss") || type == "Accuracy") return LayerFamily::kLoss;
  return LayerFamily::kOther;
}

const char* family_colour(LayerFamily family) {
  // Convolution, pooling, inner product and activation keep draw_net's colours.
  switch (family) {
    case LayerFamily::kData:
      return "#8DD3C7";
    case LayerFamily::kConvolution:
      return "#FF5050";
    case LayerFamily::kPooling:
      return "#FF9900";
    case LayerFamily::kActivation:
      return "#6495ED";
    case LayerFamily::kNormalization:
      return "#B3DE69";
    case LayerFamily::kInnerProduct:
      return "#CC33FF";
    case LayerFamily::kLoss:
      return "#FFD700";
    case LayerFamily::kOther:
      break;
  }
  return "#D9D9D9";
}

std::string dot_quoted(const std::string& text) {
  std::string quoted;
  for (char c : text) {
    switch (c) {
      case '\\':
        quoted += "\\\\";
        break;
      case '"':
        quoted += "\\\"";
        break;
      case '\n':
        quoted += "\\n";
        break;
      case '\r':
        break;
      default:
        quoted += c;
    }
  }
  return quoted;
}

std::string shape_text(const std::vector<int>& shape) {
  if (shape.empty()) return "scalar";
  std::vector<std::string> parts;
  for (int dim : shape) parts.push_back(std::to_string(dim));
  return join(parts, "x");
}

std::vector<std::string> layer_parameter_lines(const LayerParameter& layer) {
  const std::string& type = layer.type();
  std::vector<std::string> lines;
  if (type == "Convolution" || type == "Deconvolution") {
    lines = convolution_lines(layer.convolution_param());
  } else if (type == "Pooling") {
    lines.push_back(pooling_line(layer.pooling_param()));
  } else if (type == "InnerProduct") {
    lines.push_back("outputs " + std::to_string(layer.inner_product_param().num_output()));
  } else if (type == "Embed") {
    lines.push_back("outputs " + std::to_string(layer.embed_param().num_output()) +
                    ", vocabulary " + std::to_string(layer.embed_param().input_dim()));
  } else if (type == "LRN") {
    const LRNParameter& lrn = layer.lrn_param();
    lines.push_back("size " + std::to_string(lrn.local_size()) + ", alpha " +
                    number_text(lrn.alpha()) + ", beta " + number_text(lrn.beta()));
  } else if (type == "Dropout") {
    lines.push_back("ratio " + number_text(layer.dropout_param().dropout_ratio()));
  } else if (type == "Data") {
    lines.push_back("batch " + std::to_string(layer.data_param().batch_size()) + ", " +
                    DataParameter_DB_Name(layer.data_param().backend()));
    lines.push_back(layer.data_param().source());
  } else if (type == "ImageData") {
    lines.push_back("batch " + std::to_string(layer.image_data_param().batch_size()));
    lines.push_back(layer.image_data_param().source());
  } else if (type == "HDF5Data") {
    lines.push_back("batch " + std::to_string(layer.hdf5_data_param().batch_size()));
    lines.push_back(layer.hdf5_data_param().source());
  } else if (type == "Eltwise") {
    lines.push_back(EltwiseParameter_EltwiseOp_Name(layer.eltwise_param().operation()));
  } else if (type == "Concat" && layer.concat_param().axis() != 1) {
    lines.push_back("axis " + std::to_string(layer.concat_param().axis()));
  }
  if (!layer.loss_weight().empty()) {
    std::vector<std::string> weights;
    for (float weight : layer.loss_weight()) weights.push_back(number_text(weight));
    lines.push_back("loss weight " + join(weights, ", "));
  }
  return lines;
}

std::string net_to_dot(const NetParameter& net,
                       const std::map<std::string, std::vector<int>>& blob_shapes,
                       const NetDrawingOptions& options) {
  std::ostringstream dot;
  const auto edge_label = [&](const std::string& blob, bool with_name) {
    const auto shape = blob_shapes.find(blob);
    std::string label = with_name ? blob : "";
    if (shape != blob_shapes.end()) {
      label += (label.empty() ? "" : "\n") + shape_text(shape->second);
    }
    return dot_quoted(label);
  };
  const auto edge = [&](const std::string& from, const std::string& to, const std::string& blob,
                        bool with_name) {
    dot << "  " << from << " -> " << to << " [label=\"" << edge_label(blob, with_name) << "\"];\n";
  };

  dot << "digraph \"" << dot_quoted(net.name().empty() ? "net" : net.name()) << "\" {\n";
  dot << "  graph [rankdir=" << options.rankdir << ", fontname=\"Helvetica\", fontsize=11";
  if (!options.caption.empty()) {
    dot << ", label=\"" << dot_quoted(options.caption) << "\", labelloc=b";
  }
  dot << "];\n";
  dot << "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n";
  dot << "  edge [fontname=\"Helvetica\", fontsize=9];\n";

  std::vector<Producer> produced;                      // in the order the tops appear
  std::map<std::string, std::size_t> latest_producer;  // blob -> index into `produced`
  int input_count = 0;
  for (int i = 0; i < net.layer_size(); ++i) {
    const LayerParameter& layer = net.layer(i);
    const std::string node = "layer" + std::to_string(i);
    bool in_place = false;
    for (const std::string& top : layer.top()) {
      for (const std::string& bottom : layer.bottom()) in_place = in_place || top == bottom;
    }
    std::vector<std::string> lines = {layer.name(), layer.type() + (in_place ? " (in place)" : "")};
    for (const std::string& line : layer_parameter_lines(layer)) lines.push_back(line);
    dot << "  " << node << " [label=\"" << dot_quoted(join(lines, "\n")) << "\", fillcolor=\""
        << family_colour(layer_family(layer.type())) << "\"];\n";

    for (const std::string& bottom : layer.bottom()) {
      const auto source = latest_producer.find(bottom);
      if (source == latest_producer.end()) {
        // Fed from outside the net (or by no layer: the net cannot be built,
        // but the picture shows where).
        const std::string input = "input" + std::to_string(input_count++);
        dot << "  " << input << " [label=\"" << dot_quoted(bottom)
            << "\", shape=octagon, style=filled, fillcolor=\"#E0E0E0\"];\n";
        edge(input, node, bottom, false);
        continue;
      }
      Producer& producer = produced[source->second];
      producer.consumed = true;
      edge(producer.node, node, bottom, true);
    }
    for (const std::string& top : layer.top()) {
      latest_producer[top] = produced.size();
      produced.push_back({node, top, false});
    }
  }
  int output_count = 0;
  for (const Producer& producer : produced) {
    if (producer.consumed) continue;
    const std::string output = "output" + std::to_string(output_count++);
    dot << "  " << output << " [label=\"" << dot_quoted(producer.blob)
        << "\", shape=octagon, style=filled, fillcolor=\"#E0E0E0\"];\n";
    edge(producer.node, output, producer.blob, false);
  }
  dot << "}\n";
  return dot.str();
}

}  // namespace xtrain::cli
