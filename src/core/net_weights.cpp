// Weights into and out of a built net: copied by layer name from a
// NetParameter or a weights file (.caffemodel, .caffemodel.h5), shared with
// another net, written as Caffe's HDF5 layout.
#include <cmath>

#include "core/hdf5_snapshot.hpp"
#include "core/weights_file.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/net.hpp"

namespace xtrain {
namespace {

// Values of a stored blob that are nan or inf: a net whose weights hold one
// computes nan everywhere it reaches (a snapshot written after training
// diverged).
std::size_t non_finite_values(const BlobProto& blob) {
  std::size_t count = 0;
  for (float value : blob.data()) count += !std::isfinite(value);
  for (double value : blob.double_data()) count += !std::isfinite(value);
  return count;
}

}  // namespace

void Net::copy_trained_layers_from(const NetParameter& trained) {
  // Check every layer before copying any, and report every mismatch at once:
  // fine-tuning usually renames several layers, and one error per run would
  // make the user find them one by one.
  std::vector<std::string> mismatches;
  std::vector<std::string> not_finite;
  std::vector<std::pair<const LayerParameter*, Layer*>> copies;
  for (const LayerParameter& source : trained.layer()) {
    auto target = layer_names_index_.find(source.name());
    if (target == layer_names_index_.end()) {
      XLOG(INFO) << "Ignoring source layer " << source.name();
      continue;
    }
    Layer& layer = *layers_[target->second];
    const auto& target_blobs = layer.blobs();
    if (static_cast<int>(target_blobs.size()) != source.blobs_size()) {
      mismatches.push_back("layer '" + source.name() + "': the weights file has " +
                           std::to_string(source.blobs_size()) +
                           " blobs for it but the net's layer has " +
                           std::to_string(target_blobs.size()));
      continue;
    }
    bool fits = true;
    for (int j = 0; j < source.blobs_size(); ++j) {
      const std::size_t bad = non_finite_values(source.blobs(j));
      if (bad != 0) {
        not_finite.push_back(
            "layer '" + source.name() + "' param " + std::to_string(j) + " (" +
            std::to_string(bad) + " of " +
            std::to_string(source.blobs(j).data_size() + source.blobs(j).double_data_size()) +
            " values)");
      }
      if (!target_blobs[j]->shape_equals(source.blobs(j))) {
        mismatches.push_back("layer '" + source.name() + "' param " + std::to_string(j) +
                             ": the weights file has shape " +
                             shape_to_string(blob_proto_shape(source.blobs(j))) +
                             " but the net needs " + shape_to_string(target_blobs[j]->shape()));
        fits = false;
      }
    }
    if (fits) copies.emplace_back(&source, &layer);
  }
  if (!mismatches.empty()) {
    std::string list;
    for (const std::string& mismatch : mismatches) list += (list.empty() ? "" : "; ") + mismatch;
    throw Error("cannot copy the trained weights into net '" + name_ +
                "': " + std::to_string(mismatches.size()) + " layer(s) do not fit (" + list +
                "). To learn such a layer from scratch instead (fine-tuning), rename it in the "
                "net; layers are copied by name");
  }
  if (!not_finite.empty()) {
    std::string list;
    for (const std::string& blob : not_finite) list += (list.empty() ? "" : "; ") + blob;
    throw Error("the trained weights hold values that are nan or inf: " + list +
                ". A net with them computes nan; they were saved after training diverged, so "
                "use an earlier snapshot");
  }
  for (const auto& [source, layer] : copies) {
    for (int j = 0; j < source->blobs_size(); ++j) {
      layer->blobs()[j]->from_proto(source->blobs(j), false);
    }
  }
}

void Net::copy_trained_layers_from(const std::string& weights_path) {
  try {
    copy_trained_layers_from(read_weights_file(weights_path));
  } catch (const Error& error) {
    const std::string what = error.what();
    if (what.find(weights_path) != std::string::npos) throw;
    throw Error("'" + weights_path + "': " + what);
  }
}

void Net::share_trained_layers_with(const Net& other) {
  for (std::size_t i = 0; i < other.layers_.size(); ++i) {
    auto target = layer_names_index_.find(other.layer_names_[i]);
    if (target == layer_names_index_.end()) continue;
    auto& target_blobs = layers_[target->second]->blobs();
    const auto& source_blobs = other.layers_[i]->blobs();
    // "the TRAIN net 'LeNet'": which net is which, when the train and test
    // nets share a layer but disagree on its shapes.
    const std::string source_net = detail::concat("the ", Phase_Name(other.phase_), " net '",
                                                  other.name_, "'");
    const std::string target_net = detail::concat("the ", Phase_Name(phase_), " net '", name_, "'");
    const std::string agree =
        "; layers of one name share their parameters, so both nets must give them the same "
        "shapes (e.g. the same input channels: both colour or both grey)";
    XTRAIN_CHECK(target_blobs.size() == source_blobs.size(), "layer '", other.layer_names_[i],
                 "' has ", source_blobs.size(), " learnable blobs in ", source_net, " and ",
                 target_blobs.size(), " in ", target_net, agree);
    for (std::size_t j = 0; j < source_blobs.size(); ++j) {
      XTRAIN_CHECK(target_blobs[j]->shape() == source_blobs[j]->shape(), "layer '",
                   other.layer_names_[i], "' param ", j, " has shape ",
                   source_blobs[j]->shape_string(), " in ", source_net, " and ",
                   target_blobs[j]->shape_string(), " in ", target_net, agree);
      target_blobs[j]->share_data(*source_blobs[j]);
    }
  }
}

void Net::to_hdf5(const std::string& path, bool write_diff) const {
  NetParameter weights;
  to_proto(&weights, write_diff);
  write_net_hdf5(weights, path, write_diff);
}

}  // namespace xtrain
