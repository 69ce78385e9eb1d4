#include "interchange/darknet_model.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "interchange/darknet_cfg.hpp"
#include "interchange/darknet_maxpool.hpp"
#include "xtrain/error.hpp"

namespace xtrain::interchange {
namespace {

// Darknet normalizes by sqrt(var) + 1e-6, Caffe's BatchNorm by
// sqrt(var + eps). With eps = 1e-6^2 both agree at var = 0 and differ by
// less than 1e-6 / sqrt(var) relative elsewhere (1e-6 at var 1, 1e-4 at
// var 1e-4); tests/darknet_weights_test.cpp measures it.
constexpr float kBatchNormEps = 1e-12f;
// Darknet's running statistics: rolling = 0.99 rolling + 0.01 batch.
constexpr float kMovingAverageFraction = 0.99f;

struct LayerOutput {
  std::string blob;
  int channels = 0;
  int height = 0;
  int width = 0;
  bool yolo = false;  // a [yolo] section's, which no layer may read
};

class CfgConverter {
 public:
  CfgConverter(const std::string& text, const std::string& source) {
    model_.source = source;
    sections_ = parse_darknet_sections(text, source, &model_.notes);
  }

  DarknetModel convert() {
    DarknetSectionReader net(sections_[0], model_.source);
    read_net(net);
    for (std::size_t i = 1; i < sections_.size(); ++i) {
      DarknetSectionReader reader(sections_[i], model_.source);
      outputs_.push_back(convert_layer(reader));
      reader.finish();
    }
    XTRAIN_CHECK(!outputs_.empty(), "'", model_.source, "' has no layers after [net]");
    model_.output = outputs_.back().blob;
    return model_;
  }

 private:
  LayerOutput convert_layer(DarknetSectionReader& reader) {
    const std::string& type = reader.section().type;
    if (type == "convolutional") return convolutional(reader);
    if (type == "maxpool") return maxpool(reader);
    if (type == "avgpool") return avgpool(reader);
    if (type == "route") return route(reader);
    if (type == "shortcut") return shortcut(reader);
    if (type == "upsample") return upsample(reader);
    if (type == "yolo") return yolo(reader);
    return softmax(reader);
  }

  void read_net(DarknetSectionReader& net) {
    model_.channels = net.integer("channels", 0);
    model_.height = net.integer("height", 0);
    model_.width = net.integer("width", 0);
    XTRAIN_CHECK(model_.channels > 0 && model_.height > 0 && model_.width > 0, net.where(),
                 ": channels, height and width must be given and positive (got ", model_.channels,
                 ", ", model_.height, ", ", model_.width, "); they are the input's size");
    model_.batch = net.integer("batch", 1);
    model_.subdivisions = net.integer("subdivisions", 1);
    XTRAIN_CHECK(model_.batch >= 1 && model_.subdivisions >= 1, net.where(),
                 ": batch and subdivisions must be positive");
    std::string left_out;
    for (const auto& entry : net.section().options) {
      const std::string& key = entry.first;
      if (key != "channels" && key != "height" && key != "width" && key != "batch" &&
          key != "subdivisions") {
        left_out += (left_out.empty() ? "" : ", ") + key;
        net.skip(key);
      }
    }
    if (!left_out.empty()) {
      model_.notes.push_back("[net] " + left_out +
                             ": Darknet's training settings, not converted (a solver and the "
                             "data layers' transform_param say them in xtrain)");
    }
    input_ = {"data", model_.channels, model_.height, model_.width, false};
  }

  std::string name(const DarknetSectionReader& reader, const char* kind) const {
    return kind + std::to_string(reader.section().index);
  }

  LayerParameter& add_layer(const std::string& layer_name, const std::string& type,
                            const std::vector<std::string>& bottoms, const std::string& top) {
    LayerParameter& layer = *model_.layers.add_layer();
    layer.set_name(layer_name);
    layer.set_type(type);
    for (const std::string& bottom : bottoms) layer.add_bottom(bottom);
    layer.add_top(top);
    return layer;
  }

  const LayerOutput& previous(const DarknetSectionReader& reader) const {
    const LayerOutput& output = outputs_.empty() ? input_ : outputs_.back();
    XTRAIN_CHECK(!output.yolo, reader.where(),
                 ": reads the [yolo] layer before it; Darknet's "
                 "[yolo] output (its logistic-activated predictions) is not converted, only read "
                 "as a head: route past it (layers=-2 and the like)");
    return output;
  }

  // Layer `index` as [route] and [shortcut] name it: from this layer back
  // when negative, else Darknet's layer number.
  const LayerOutput& reference(const DarknetSectionReader& reader, const std::string& key,
                               int index) const {
    const int here = reader.section().index;
    const int absolute = index < 0 ? here + index : index;
    XTRAIN_CHECK(absolute >= 0 && absolute < here, reader.where(key), ": layer ", index, " (",
                 absolute, ") is not an earlier layer; give one of 0 to ", here - 1, " or -1 to -",
                 here);
    const LayerOutput& output = outputs_[absolute];
    XTRAIN_CHECK(!output.yolo, reader.where(key), ": layer ", absolute,
                 " is a [yolo] layer, whose output is not converted; name the layer before it");
    return output;
  }

  void require_image(const DarknetSectionReader& reader, const LayerOutput& input) const {
    XTRAIN_CHECK(input.height > 0 && input.width > 0 && input.channels > 0, reader.where(),
                 ": its input '", input.blob, "' is not an image");
  }

  void add_activation(const DarknetSectionReader& reader, const std::string& activation,
                      const std::string& blob) {
    const std::string prefix = blob + "_";
    if (activation == "linear") return;
    if (activation == "leaky") {
      add_layer(prefix + "leaky", "ReLU", {blob}, blob)
          .mutable_relu_param()
          ->set_negative_slope(0.1f);
    } else if (activation == "relu") {
      add_layer(prefix + "relu", "ReLU", {blob}, blob);
    } else if (activation == "logistic") {
      add_layer(prefix + "logistic", "Sigmoid", {blob}, blob);
    } else if (activation == "tanh") {
      add_layer(prefix + "tanh", "TanH", {blob}, blob);
    } else {
      XTRAIN_CHECK(false, reader.where("activation"), ": activation '", activation,
                   "' is not converted; xtrain converts linear, leaky, relu, logistic and tanh");
    }
  }

  LayerOutput convolutional(DarknetSectionReader& reader) {
    const LayerOutput& input = previous(reader);
    require_image(reader, input);
    DarknetConvolution conv;
    conv.layer = reader.section().index;
    conv.line = reader.section().line;
    conv.filters = reader.integer("filters", 1);
    conv.size = reader.integer("size", 1);
    const int stride = reader.integer("stride", 1);
    int padding = reader.integer("padding", 0);
    if (reader.integer("pad", 0) != 0) padding = conv.size / 2;
    conv.groups = reader.integer("groups", 1);
    conv.batch_normalize = reader.integer("batch_normalize", 0) != 0;
    conv.channels = input.channels;
    const std::string activation = reader.text("activation", "logistic");
    XTRAIN_CHECK(conv.filters > 0 && conv.size > 0 && stride > 0 && padding >= 0 && conv.groups > 0,
                 reader.where(), ": filters, size, stride and groups must be positive and padding ",
                 "not negative");
    XTRAIN_CHECK(conv.channels % conv.groups == 0 && conv.filters % conv.groups == 0,
                 reader.where("groups"), ": groups=", conv.groups, " must divide the ",
                 conv.channels, " input channels and the ", conv.filters, " filters");
    const int height = (input.height + 2 * padding - conv.size) / stride + 1;
    const int width = (input.width + 2 * padding - conv.size) / stride + 1;
    XTRAIN_CHECK(input.height + 2 * padding >= conv.size && input.width + 2 * padding >= conv.size,
                 reader.where("size"), ": size=", conv.size, " does not fit the ", input.height,
                 "x", input.width, " input with padding ", padding);
    const std::string blob = name(reader, "conv");
    conv.convolution = blob;
    LayerParameter& layer = add_layer(blob, "Convolution", {input.blob}, blob);
    ConvolutionParameter& param = *layer.mutable_convolution_param();
    param.set_num_output(conv.filters);
    param.add_kernel_size(conv.size);
    if (stride != 1) param.add_stride(stride);
    if (padding != 0) param.add_pad(padding);
    if (conv.groups != 1) param.set_group(conv.groups);
    param.set_bias_term(!conv.batch_normalize);
    if (conv.batch_normalize) {
      conv.batch_norm = blob + "_bn";
      conv.scale = blob + "_scale";
      BatchNormParameter& bn =
          *add_layer(conv.batch_norm, "BatchNorm", {blob}, blob).mutable_batch_norm_param();
      bn.set_eps(kBatchNormEps);
      bn.set_moving_average_fraction(kMovingAverageFraction);
      add_layer(conv.scale, "Scale", {blob}, blob).mutable_scale_param()->set_bias_term(true);
    }
    add_activation(reader, activation, blob);
    model_.convolutions.push_back(conv);
    return {blob, conv.filters, height, width, false};
  }

  // A blob of Darknet's pooled size for the Crop to take its size from: the
  // pooling's input when the pooling keeps the size (stride 1), an earlier
  // blob of that size, or else a pooling of the input without pad whose
  // kernel (n - (out - 1) stride) gives exactly out windows.
  std::string crop_size_blob(const DarknetSectionReader& reader, const LayerOutput& input,
                             const CaffePoolingPlan& plan, int stride, const std::string& blob) {
    const auto has_size = [&](const LayerOutput& output) {
      return !output.yolo && output.height == plan.darknet_h && output.width == plan.darknet_w;
    };
    if (has_size(input)) return input.blob;
    for (auto it = outputs_.rbegin(); it != outputs_.rend(); ++it) {
      if (has_size(*it)) return it->blob;
    }
    const int kernel_h = input.height - (plan.darknet_h - 1) * stride;
    const int kernel_w = input.width - (plan.darknet_w - 1) * stride;
    XTRAIN_CHECK(kernel_h >= 1 && kernel_w >= 1, reader.where(), ": Caffe's pooling gives ",
                 plan.pooled_h, "x", plan.pooled_w, " windows where Darknet keeps ", plan.darknet_h,
                 "x", plan.darknet_w, ", more than a crop of the ", input.height, "x", input.width,
                 " input can be sized by");
    const std::string size_blob = blob + "_size";
    PoolingParameter& size_pooling =
        *add_layer(size_blob, "Pooling", {input.blob}, size_blob).mutable_pooling_param();
    size_pooling.set_pool(PoolingParameter::MAX);
    size_pooling.set_kernel_h(kernel_h);
    size_pooling.set_kernel_w(kernel_w);
    size_pooling.set_stride(stride);
    return size_blob;
  }

  LayerOutput maxpool(DarknetSectionReader& reader) {
    const LayerOutput input = previous(reader);
    require_image(reader, input);
    const int stride = reader.integer("stride", 1);
    const int size = reader.integer("size", stride);
    const int padding = reader.integer("padding", size - 1);
    XTRAIN_CHECK(stride > 0 && size > 0 && padding >= 0, reader.where(),
                 ": size and stride must be positive and padding not negative");
    const auto plan = caffe_pooling_for({input.height, size, stride, padding},
                                        {input.width, size, stride, padding});
    XTRAIN_CHECK(plan.has_value(), reader.where(), ": size=", size, " stride=", stride,
                 " padding=", padding, " on a ", input.height, "x", input.width,
                 " input keeps windows no Caffe pooling (pad below the size) has");
    const std::string blob = name(reader, "maxpool");
    const std::string pooled = plan->needs_crop() ? blob + "_uncropped" : blob;
    PoolingParameter& param =
        *add_layer(blob, "Pooling", {input.blob}, pooled).mutable_pooling_param();
    param.set_pool(PoolingParameter::MAX);
    param.set_kernel_size(size);
    param.set_stride(stride);
    if (plan->pad_h == plan->pad_w) {
      if (plan->pad_h != 0) param.set_pad(plan->pad_h);
    } else {
      param.set_pad_h(plan->pad_h);
      param.set_pad_w(plan->pad_w);
    }
    if (plan->needs_crop()) {
      const std::string size_blob = crop_size_blob(reader, input, *plan, stride, blob);
      CropParameter& crop =
          *add_layer(blob + "_crop", "Crop", {pooled, size_blob}, blob).mutable_crop_param();
      crop.set_axis(2);
      crop.add_offset(plan->offset_h);
      crop.add_offset(plan->offset_w);
    }
    return {blob, input.channels, plan->darknet_h, plan->darknet_w, false};
  }

  LayerOutput avgpool(DarknetSectionReader& reader) {
    const LayerOutput& input = previous(reader);
    require_image(reader, input);
    const std::string blob = name(reader, "avgpool");
    PoolingParameter& param =
        *add_layer(blob, "Pooling", {input.blob}, blob).mutable_pooling_param();
    param.set_pool(PoolingParameter::AVE);
    param.set_global_pooling(true);
    return {blob, input.channels, 1, 1, false};
  }

  LayerOutput route(DarknetSectionReader& reader) {
    const std::vector<int> indices = reader.integers("layers");
    XTRAIN_CHECK(!indices.empty(), reader.where(), ": layers= names no layer");
    std::vector<const LayerOutput*> sources;
    for (int index : indices) sources.push_back(&reference(reader, "layers", index));
    if (sources.size() == 1) return *sources[0];
    LayerOutput output = *sources[0];
    output.blob = name(reader, "route");
    std::vector<std::string> bottoms;
    for (std::size_t i = 0; i < sources.size(); ++i) {
      const LayerOutput& source = *sources[i];
      XTRAIN_CHECK(source.height == output.height && source.width == output.width,
                   reader.where("layers"), ": layer ", indices[i], " is ", source.height, "x",
                   source.width, " but layer ", indices[0], " is ", output.height, "x",
                   output.width, "; a route joins maps of one size");
      if (i > 0) output.channels += source.channels;
      bottoms.push_back(source.blob);
    }
    add_layer(output.blob, "Concat", bottoms, output.blob);
    return output;
  }

  LayerOutput shortcut(DarknetSectionReader& reader) {
    const LayerOutput& input = previous(reader);
    XTRAIN_CHECK(reader.has("from"), reader.where(), ": from= (the layer to add) is missing");
    const int from_index = reader.integer("from", 0);
    const LayerOutput& from = reference(reader, "from", from_index);
    XTRAIN_CHECK(reader.number("alpha", 1) == 1 && reader.number("beta", 1) == 1, reader.where(),
                 ": alpha and beta other than 1 are not converted");
    const std::string activation = reader.text("activation", "linear");
    XTRAIN_CHECK(
        from.channels == input.channels && from.height == input.height && from.width == input.width,
        reader.where("from"), ": layer ", from_index, " (layer ",
        from_index < 0 ? reader.section().index + from_index : from_index, ") is ", from.channels,
        "x", from.height, "x", from.width, " and the previous layer ", input.channels, "x",
        input.height, "x", input.width, "; xtrain converts shortcuts between maps of one shape");
    const std::string blob = name(reader, "shortcut");
    add_layer(blob, "Eltwise", {input.blob, from.blob}, blob)
        .mutable_eltwise_param()
        ->set_operation(EltwiseParameter::SUM);
    add_activation(reader, activation, blob);
    return {blob, input.channels, input.height, input.width, false};
  }

  LayerOutput upsample(DarknetSectionReader& reader) {
    const LayerOutput& input = previous(reader);
    require_image(reader, input);
    const int stride = reader.integer("stride", 2);
    XTRAIN_CHECK(stride >= 1, reader.where("stride"), ": stride=", stride,
                 " (Darknet's downsampling when negative) is not converted; give 1 or more");
    XTRAIN_CHECK(reader.number("scale", 1) == 1, reader.where("scale"),
                 ": a scale other than 1 is not converted");
    const std::string blob = name(reader, "upsample");
    add_layer(blob, "Upsample", {input.blob}, blob).mutable_upsample_param()->set_scale(stride);
    return {blob, input.channels, input.height * stride, input.width * stride, false};
  }

  LayerOutput yolo(DarknetSectionReader& reader) {
    const LayerOutput& input = previous(reader);
    require_image(reader, input);
    DarknetHead head;
    head.layer = reader.section().index;
    head.line = reader.section().line;
    head.predictions = input.blob;
    head.height = input.height;
    head.width = input.width;
    head.classes = reader.integer("classes", 20);
    const int total = reader.integer("num", 1);
    head.anchors = reader.numbers("anchors");
    head.mask = reader.integers("mask");
    head.jitter = reader.number("jitter", 0.2f);
    head.ignore_thresh = reader.number("ignore_thresh", 0.5f);
    head.truth_thresh = reader.number("truth_thresh", 1.0f);
    XTRAIN_CHECK(head.classes > 0 && total > 0, reader.where(),
                 ": classes and num must be positive");
    if (head.mask.empty()) {
      for (int i = 0; i < total; ++i) head.mask.push_back(i);
    }
    XTRAIN_CHECK(head.anchors.size() == static_cast<std::size_t>(2 * total),
                 reader.where("anchors"), ": num=", total, " needs ", 2 * total,
                 " numbers (width,height of each anchor), got ", head.anchors.size());
    for (int anchor : head.mask) {
      XTRAIN_CHECK(anchor >= 0 && anchor < total, reader.where("mask"), ": anchor ", anchor,
                   " is not one of the num=", total, " anchors (0 to ", total - 1, ")");
    }
    const int expected = static_cast<int>(head.mask.size()) * (5 + head.classes);
    XTRAIN_CHECK(input.channels == expected, reader.where(), ": the layer before it gives ",
                 input.channels, " channels; ", head.mask.size(), " anchors (mask) x (5 + ",
                 head.classes, " classes) = ", expected, " are needed (its filters=)");
    if (reader.integer("random", 0) != 0) {
      note(
          "[yolo] random=1 (Darknet's multi-scale training, a new input size every 10 batches) "
          "is not converted: the nets keep [net]'s size");
    }
    if (reader.has("max")) {
      reader.skip("max");
      note(
          "[yolo] max (Darknet's cap of boxes per image) is not converted: every box of an "
          "image is a label");
    }
    model_.heads.push_back(head);
    return {input.blob, input.channels, input.height, input.width, true};
  }

  LayerOutput softmax(DarknetSectionReader& reader) {
    const LayerOutput& input = previous(reader);
    XTRAIN_CHECK(reader.integer("groups", 1) == 1 && reader.number("temperature", 1) == 1,
                 reader.where(), ": groups and temperature other than 1 are not converted");
    XTRAIN_CHECK(input.height == 1 && input.width == 1, reader.where(),
                 ": Darknet's softmax spans the whole ", input.channels, "x", input.height, "x",
                 input.width,
                 " input, Caffe's the channels; xtrain converts it on a 1x1 map "
                 "(after [avgpool])");
    const std::string blob = name(reader, "softmax");
    add_layer(blob, "Softmax", {input.blob}, blob);
    return {blob, input.channels, 1, 1, false};
  }

  void note(const std::string& text) {
    if (std::find(model_.notes.begin(), model_.notes.end(), text) == model_.notes.end()) {
      model_.notes.push_back(text);
    }
  }

  std::vector<DarknetSection> sections_;
  DarknetModel model_;
  LayerOutput input_;
  std::vector<LayerOutput> outputs_;
};

}  // namespace

DarknetModel convert_darknet_cfg(const std::string& text, const std::string& source) {
  return CfgConverter(text, source).convert();
}

DarknetModel read_darknet_cfg(const std::string& path) {
  std::ifstream file(path);
  XTRAIN_CHECK(file.good(), "cannot open '", path, "': no such file or not readable");
  std::ostringstream text;
  text << file.rdbuf();
  return convert_darknet_cfg(text.str(), path);
}

}  // namespace xtrain::interchange
