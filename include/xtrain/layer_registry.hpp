// Layer types by name ("Convolution" -> a factory). The built-in layers are
// registered explicitly on first use (not by static initialisers, which a
// static link can drop); applications add their own with add().
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "xtrain/export.hpp"
#include "xtrain/layer.hpp"

namespace xtrain {

class XTRAIN_API LayerRegistry {
 public:
  using Factory = std::function<std::unique_ptr<Layer>(const LayerParameter&)>;

  // The process-wide registry, with the built-in layers in it (defined by
  // the layers module, src/layers/builtin_layers.cpp).
  static LayerRegistry& global();

  // Throws xtrain::Error if `type` is already registered.
  void add(const std::string& type, Factory factory);
  bool has(const std::string& type) const;
  // Throws xtrain::Error naming the layer and listing the known types. A
  // type provided by a plugin ("Python") loads the plugin first.
  std::unique_ptr<Layer> create(const LayerParameter& param) const;
  std::vector<std::string> types() const;

 private:
  LayerRegistry() = default;
  // The factory of `type`, or an empty one.
  Factory find(const std::string& type) const;
  mutable std::mutex mutex_;
  std::map<std::string, Factory> factories_;
};

// Registers LayerClass under `type_name`:  add_layer<ReLULayer>(registry, "ReLU")
template <typename LayerClass>
void add_layer(LayerRegistry& registry, const std::string& type_name) {
  registry.add(type_name, [](const LayerParameter& param) {
    return std::unique_ptr<Layer>(new LayerClass(param));
  });
}

}  // namespace xtrain
