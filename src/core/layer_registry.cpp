// The registry's bookkeeping. LayerRegistry::global(), the registry with the
// built-in layers in it, is defined by the layers module
// (src/layers/builtin_layers.cpp): core knows no layer.
#include "xtrain/layer_registry.hpp"

#include "core/layer_plugins.hpp"
#include "xtrain/error.hpp"

namespace xtrain {

void LayerRegistry::add(const std::string& type, Factory factory) {
  std::lock_guard<std::mutex> lock(mutex_);
  XTRAIN_CHECK(factories_.count(type) == 0, "layer type '", type, "' is registered twice");
  factories_[type] = std::move(factory);
}

bool LayerRegistry::has(const std::string& type) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return factories_.count(type) > 0;
}

std::vector<std::string> LayerRegistry::types() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> names;
  for (const auto& entry : factories_) names.push_back(entry.first);
  return names;
}

std::unique_ptr<Layer> LayerRegistry::create(const LayerParameter& param) const {
  Factory factory = find(param.type());
  std::string why_not;
  if (!factory && load_layer_plugin_for(param.type(), &why_not)) factory = find(param.type());
  if (!factory) {
    XTRAIN_CHECK(why_not.empty(), "layer '", param.name(), "' has type '", param.type(),
                 "': ", why_not);
    std::string known;
    for (const std::string& type : types()) known += (known.empty() ? "" : ", ") + type;
    throw Error("layer '" + param.name() + "' has unknown type '" + param.type() +
                "' (known types: " + known + ")");
  }
  return factory(param);
}

LayerRegistry::Factory LayerRegistry::find(const std::string& type) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = factories_.find(type);
  return found == factories_.end() ? Factory() : found->second;
}

}  // namespace xtrain
