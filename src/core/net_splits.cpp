// Inserting Split layers: a blob read by several layers gets a Split layer
// with one top per reader, so that each reader's gradient is summed into the
// producer's diff instead of overwriting it. Names follow Caffe's, so
// .caffemodel files that contain split layers match ours.
#include <map>

#include "xtrain/error.hpp"
#include "xtrain/net.hpp"

namespace xtrain {

std::string split_layer_name(const std::string& layer_name, const std::string& blob_name,
                             int blob_index) {
  return blob_name + "_" + layer_name + "_" + std::to_string(blob_index) + "_split";
}

std::string split_blob_name(const std::string& layer_name, const std::string& blob_name,
                            int blob_index, int split_index) {
  return split_layer_name(layer_name, blob_name, blob_index) + "_" + std::to_string(split_index);
}

namespace {
using TopRef = std::pair<int, int>;  // (layer index, top index)

LayerParameter make_split_layer(const std::string& layer_name, const std::string& blob_name,
                                int blob_index, int split_count, float loss_weight) {
  LayerParameter split;
  split.set_name(split_layer_name(layer_name, blob_name, blob_index));
  split.set_type("Split");
  split.add_bottom(blob_name);
  for (int k = 0; k < split_count; ++k) {
    split.add_top(split_blob_name(layer_name, blob_name, blob_index, k));
    // A loss output that is also read by other layers: the loss stays on the
    // first split top only.
    if (loss_weight != 0) split.add_loss_weight(k == 0 ? loss_weight : 0.0f);
  }
  return split;
}
}  // namespace

NetParameter insert_splits(const NetParameter& param) {
  std::map<std::string, TopRef> last_producer;
  std::map<TopRef, int> reader_count;
  std::map<TopRef, float> loss_weight_of;
  std::map<std::pair<int, int>, TopRef> source_of_bottom;

  for (int i = 0; i < param.layer_size(); ++i) {
    const LayerParameter& layer = param.layer(i);
    for (int j = 0; j < layer.bottom_size(); ++j) {
      auto found = last_producer.find(layer.bottom(j));
      XTRAIN_CHECK(found != last_producer.end(), "layer '", layer.name(), "' (", layer.type(),
                   ") reads bottom blob '", layer.bottom(j),
                   "', which no earlier layer produces (check the spelling, the layer order, "
                   "and the include/exclude rules for this phase)");
      source_of_bottom[{i, j}] = found->second;
      ++reader_count[found->second];
    }
    for (int j = 0; j < layer.top_size(); ++j) last_producer[layer.top(j)] = {i, j};
    // A top used as a loss counts as one more reader.
    for (int j = 0; j < layer.loss_weight_size() && j < layer.top_size(); ++j) {
      if (layer.loss_weight(j) != 0) {
        ++reader_count[{i, j}];
        loss_weight_of[{i, j}] = layer.loss_weight(j);
      }
    }
  }

  NetParameter result(param);
  result.clear_layer();
  std::map<TopRef, int> next_split_index;
  for (int i = 0; i < param.layer_size(); ++i) {
    LayerParameter* layer = result.add_layer();
    *layer = param.layer(i);
    for (int j = 0; j < layer->bottom_size(); ++j) {
      const TopRef source = source_of_bottom[{i, j}];
      if (reader_count[source] > 1) {
        const std::string& producer = param.layer(source.first).name();
        layer->set_bottom(j, split_blob_name(producer, layer->bottom(j), source.second,
                                             next_split_index[source]++));
      }
    }
    for (int j = 0; j < layer->top_size(); ++j) {
      const TopRef top{i, j};
      const int readers = reader_count[top];
      if (readers <= 1) continue;
      const float loss_weight = loss_weight_of.count(top) ? loss_weight_of[top] : 0.0f;
      LayerParameter split =
          make_split_layer(layer->name(), layer->top(j), j, readers, loss_weight);
      // A Split only copies its producer's top: it stores in the producer's
      // types (xtrain/precision.hpp), whatever the net's defaults say.
      if (layer->has_forward_type()) split.set_forward_type(layer->forward_type());
      if (layer->has_backward_type()) split.set_backward_type(layer->backward_type());
      if (layer->has_forward_math()) split.set_forward_math(layer->forward_math());
      if (layer->has_backward_math()) split.set_backward_math(layer->backward_math());
      if (loss_weight != 0) {
        layer->clear_loss_weight();
        ++next_split_index[top];  // split top 0 carries the loss
      }
      // RepeatedPtrField keeps element addresses stable, so `layer` stays valid.
      *result.add_layer() = split;
    }
  }
  return result;
}

}  // namespace xtrain
