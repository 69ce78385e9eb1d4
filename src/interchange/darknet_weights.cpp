#include "interchange/darknet_weights.hpp"

#include <cstring>
#include <fstream>
#include <map>

#include "xtrain/error.hpp"

namespace xtrain::interchange {
namespace {

std::string layer_where(const DarknetModel& model, const DarknetConvolution& conv) {
  return "layer " + std::to_string(conv.layer) + " ([convolutional] at '" + model.source +
         "' line " + std::to_string(conv.line) + ")";
}

void add_blob(LayerParameter& layer, const std::vector<int>& dims, const float* values) {
  BlobProto& blob = *layer.add_blobs();
  std::size_t count = 1;
  for (int dim : dims) {
    blob.mutable_shape()->add_dim(dim);
    count *= static_cast<std::size_t>(dim);
  }
  blob.mutable_data()->Add(values, values + count);
}

LayerParameter& add_layer(NetParameter& net, const std::string& name, const std::string& type) {
  LayerParameter& layer = *net.add_layer();
  layer.set_name(name);
  layer.set_type(type);
  return layer;
}

// The layers of one convolution from its floats in .weights order.
void add_convolution(NetParameter& net, const DarknetConvolution& conv,
                     const std::vector<float>& values) {
  const int n = conv.filters;
  const float* biases = values.data();
  const float* weights = values.data() + n * (conv.batch_normalize ? 4 : 1);
  LayerParameter& layer = add_layer(net, conv.convolution, "Convolution");
  add_blob(layer, {n, conv.channels / conv.groups, conv.size, conv.size}, weights);
  if (!conv.batch_normalize) {
    add_blob(layer, {n}, biases);
    return;
  }
  LayerParameter& bn = add_layer(net, conv.batch_norm, "BatchNorm");
  add_blob(bn, {n}, values.data() + 2 * n);  // rolling_mean
  add_blob(bn, {n}, values.data() + 3 * n);  // rolling_variance
  const float factor = 1.0f;
  add_blob(bn, {1}, &factor);
  LayerParameter& scale = add_layer(net, conv.scale, "Scale");
  add_blob(scale, {n}, values.data() + n);  // scales
  add_blob(scale, {n}, biases);
}

std::string cut_short_message(const DarknetModel& model, const std::string& path,
                              std::size_t available, std::size_t total, bool allow_partial) {
  std::string message = "'" + path + "' holds " + std::to_string(available) +
                        " floats after its header; the " +
                        std::to_string(model.convolutions.size()) + " convolutional layers of '" +
                        model.source + "' take " + std::to_string(total) + ": it ";
  std::size_t offset = 0;
  for (std::size_t i = 0; i < model.convolutions.size(); ++i) {
    const DarknetConvolution& conv = model.convolutions[i];
    if (offset + conv.float_count() > available) {
      if (offset == available) {
        return message + "ends right before " + layer_where(model, conv) + ", after " +
               std::to_string(i) + " convolutional layers" +
               (allow_partial ? ""
                              : ": a backbone's weights (such as darknet53.conv.74)? Allow "
                                "partial weights (xtrain import --darknet_partial) to load the "
                                "layers it covers");
      }
      return message + "ends inside " + layer_where(model, conv) + ", which takes " +
             std::to_string(conv.float_count()) + " floats from float " + std::to_string(offset) +
             " on: the weights belong to another cfg (or the file is cut short)";
    }
    offset += conv.float_count();
  }
  return message;
}

}  // namespace

NetParameter read_darknet_weights(const DarknetModel& model, const std::string& path,
                                  bool allow_partial, std::vector<std::string>* notes) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  XTRAIN_CHECK(file.good(), "cannot open '", path, "': no such file or not readable");
  const std::size_t file_bytes = static_cast<std::size_t>(file.tellg());
  file.seekg(0);
  std::int32_t version[3] = {0, 0, 0};
  XTRAIN_CHECK(file_bytes >= sizeof(version) + sizeof(std::int32_t), "'", path, "' has ",
               file_bytes, " bytes, fewer than a Darknet .weights header");
  file.read(reinterpret_cast<char*>(version), sizeof(version));
  const bool wide_seen =
      version[0] * 10 + version[1] >= 2 && version[0] < 1000 && version[1] < 1000;
  const std::size_t header_bytes = sizeof(version) + (wide_seen ? 8 : 4);
  XTRAIN_CHECK(file_bytes >= header_bytes, "'", path, "' has ", file_bytes,
               " bytes, fewer than its header's ", header_bytes);
  XTRAIN_CHECK((file_bytes - header_bytes) % sizeof(float) == 0, "'", path, "' holds ",
               file_bytes - header_bytes, " bytes after its ", header_bytes,
               "-byte header (version ", version[0], ".", version[1], ".", version[2],
               "), not a whole number of floats: not a Darknet .weights file");
  const std::size_t available = (file_bytes - header_bytes) / sizeof(float);
  std::size_t total = 0;
  for (const DarknetConvolution& conv : model.convolutions) total += conv.float_count();
  XTRAIN_CHECK(available <= total, "'", path, "' holds ", available, " floats after its header, ",
               available - total, " more than the ", total, " the ", model.convolutions.size(),
               " convolutional layers of '", model.source, "' take (the last, ",
               model.convolutions.empty() ? std::string("none")
                                          : layer_where(model, model.convolutions.back()),
               ", ends at float ", total, "): the weights belong to another cfg");
  file.seekg(static_cast<std::streamoff>(header_bytes));
  NetParameter net;
  net.set_name(model.source);
  std::size_t offset = 0;
  std::size_t loaded = 0;
  for (const DarknetConvolution& conv : model.convolutions) {
    if (offset == available && available < total) break;
    XTRAIN_CHECK(offset + conv.float_count() <= available,
                 cut_short_message(model, path, available, total, allow_partial));
    std::vector<float> values(conv.float_count());
    file.read(reinterpret_cast<char*>(values.data()),
              static_cast<std::streamsize>(values.size() * sizeof(float)));
    XTRAIN_CHECK(file.good(), "reading '", path, "' failed in ", layer_where(model, conv));
    add_convolution(net, conv, values);
    offset += conv.float_count();
    ++loaded;
  }
  if (loaded < model.convolutions.size()) {
    XTRAIN_CHECK(allow_partial && loaded > 0,
                 cut_short_message(model, path, available, total, allow_partial));
    notes->push_back("'" + path + "' covers the first " + std::to_string(loaded) + " of the " +
                     std::to_string(model.convolutions.size()) +
                     " convolutional layers (up to layer " +
                     std::to_string(model.convolutions[loaded - 1].layer) +
                     "); the others keep their fillers' values");
  }
  return net;
}

namespace {

class WeightsWriter {
 public:
  WeightsWriter(const NetParameter& weights, const std::string& source) : source_(source) {
    for (const LayerParameter& layer : weights.layer()) layers_[layer.name()] = &layer;
  }

  // Blob `index` of layer `name`, which must hold `count` floats.
  const float* blob(const std::string& name, int index, std::size_t count,
                    const std::string& what) const {
    const auto found = layers_.find(name);
    XTRAIN_CHECK(
        found != layers_.end(), "'", source_, "' has no layer '", name, "' (", what,
        "); the weights belong to another net, or the net was not converted from this cfg");
    const LayerParameter& layer = *found->second;
    XTRAIN_CHECK(index < layer.blobs_size(), "'", source_, "': layer '", name, "' has ",
                 layer.blobs_size(), " blobs, no ", what);
    const BlobProto& blob = layer.blobs(index);
    XTRAIN_CHECK(static_cast<std::size_t>(blob.data_size()) == count, "'", source_, "': the ", what,
                 " of layer '", name, "' holds ", blob.data_size(), " floats, the cfg says ",
                 count);
    return blob.data().data();
  }

  void append(const float* values, std::size_t count) {
    bytes_.append(reinterpret_cast<const char*>(values), count * sizeof(float));
  }
  template <typename Value>
  void append_value(Value value) {
    bytes_.append(reinterpret_cast<const char*>(&value), sizeof(value));
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string source_;
  std::map<std::string, const LayerParameter*> layers_;
  std::string bytes_;
};

}  // namespace

std::string darknet_weights_bytes(const DarknetModel& model, const NetParameter& weights,
                                  const std::string& weights_source, std::uint64_t images_seen) {
  WeightsWriter writer(weights, weights_source);
  // Version 0.2.0: the images seen as a uint64, as Darknet writes it.
  writer.append_value(std::int32_t{0});
  writer.append_value(std::int32_t{2});
  writer.append_value(std::int32_t{0});
  writer.append_value(images_seen);
  for (const DarknetConvolution& conv : model.convolutions) {
    const std::size_t n = static_cast<std::size_t>(conv.filters);
    const float* kernel = writer.blob(conv.convolution, 0, conv.weight_count(), "weights");
    if (!conv.batch_normalize) {
      writer.append(writer.blob(conv.convolution, 1, n, "bias"), n);
      writer.append(kernel, conv.weight_count());
      continue;
    }
    writer.append(writer.blob(conv.scale, 1, n, "bias (Darknet's biases)"), n);
    writer.append(writer.blob(conv.scale, 0, n, "scale (Darknet's scales)"), n);
    // BatchNorm keeps sums weighted by its factor: mean = factor' * sum with
    // factor' = 1 / factor (0 when the factor is 0), as the layer computes it.
    const float stored = *writer.blob(conv.batch_norm, 2, 1, "moving-average factor");
    const float factor = stored == 0 ? 0.0f : 1.0f / stored;
    for (int statistic = 0; statistic < 2; ++statistic) {
      const float* sums =
          writer.blob(conv.batch_norm, statistic, n, statistic == 0 ? "mean" : "variance");
      for (std::size_t c = 0; c < n; ++c) writer.append_value(factor * sums[c]);
    }
    writer.append(kernel, conv.weight_count());
  }
  return writer.bytes();
}

}  // namespace xtrain::interchange
