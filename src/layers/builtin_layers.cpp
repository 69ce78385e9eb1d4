#include "layers/builtin_layers.hpp"

#include "xtrain/layer_registry.hpp"

namespace xtrain {

// Here rather than in core's layer_registry.cpp so that core includes no
// layer (docs/architecture.md). Filled on first use, not by static
// initialisers: no initialisation-order race, and a static link keeps every
// built-in layer because any caller of global() pulls this file in.
LayerRegistry& LayerRegistry::global() {
  static LayerRegistry* registry = [] {
    auto* created = new LayerRegistry();
    register_builtin_layers(*created);
    return created;
  }();
  return *registry;
}

void register_builtin_layers(LayerRegistry& registry) {
#define XTRAIN_REGISTER_LAYER(name) register_##name##_layer(registry);
  XTRAIN_FOR_EACH_BUILTIN_LAYER(XTRAIN_REGISTER_LAYER)
#undef XTRAIN_REGISTER_LAYER
}

}  // namespace xtrain
