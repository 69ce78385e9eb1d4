#include "xtrain/weights_coverage.hpp"

#include <set>

#include "core/weights_file.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"

namespace xtrain {

std::vector<std::string> layers_without_weights(const Net& net,
                                                const std::vector<NetParameter>& trained) {
  std::set<std::string> covered;
  for (const NetParameter& weights : trained) {
    for (const LayerParameter& layer : weights.layer()) {
      if (layer.blobs_size() > 0) covered.insert(layer.name());
    }
  }
  std::vector<std::string> missing;
  for (std::size_t i = 0; i < net.layers().size(); ++i) {
    const std::string& name = net.layer_names()[i];
    if (!net.layers()[i]->blobs().empty() && covered.count(name) == 0) missing.push_back(name);
  }
  return missing;
}

std::vector<std::string> copy_weights_reporting_missing(
    Net& net, const std::vector<std::string>& weights_paths) {
  std::vector<NetParameter> trained;
  for (const std::string& path : weights_paths) {
    trained.push_back(read_weights_file(path));
    try {
      net.copy_trained_layers_from(trained.back());
    } catch (const Error& error) {
      throw Error("'" + path + "': " + error.what());
    }
  }
  return layers_without_weights(net, trained);
}

std::string describe_missing_weights(const Net& net, const std::vector<std::string>& layers,
                                     const std::vector<std::string>& weights_paths) {
  constexpr std::size_t kNamed = 5;
  std::string names;
  for (std::size_t i = 0; i < layers.size() && i < kNamed; ++i) {
    names += (i == 0 ? "'" : ", '") + layers[i] + "'";
  }
  if (layers.size() > kNamed) names += " and " + std::to_string(layers.size() - kNamed) + " more";
  std::string files;
  for (const std::string& path : weights_paths) files += (files.empty() ? "'" : ", '") + path + "'";
  return detail::concat(layers.size() == 1 ? "layer " : "layers ", names, " of net '", net.name(),
                        "' ", layers.size() == 1 ? "has" : "have", " no weights in ", files,
                        layers.size() == 1 ? " and keeps its" : " and keep their",
                        " random initial values");
}

}  // namespace xtrain
