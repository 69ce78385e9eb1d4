// Net::save_resume_state / restore_resume_state: the per-layer part of an
// exact resume, matched by layer name so that a state survives a net whose
// layers were reordered (but not renamed).
#include <unordered_map>

#include "xtrain/error.hpp"
#include "xtrain/net.hpp"

namespace xtrain {

void Net::save_resume_state(NetResumeState* state) const {
  state->Clear();
  for (const auto& layer : layers_) layer->save_resume_state(state->add_layer());
}

std::vector<std::string> Net::restore_resume_state(const NetResumeState& state) {
  std::unordered_map<std::string, const LayerResumeState*> by_name;
  for (const LayerResumeState& layer_state : state.layer()) {
    by_name[layer_state.name()] = &layer_state;
  }
  std::vector<std::string> missing;
  for (const auto& layer : layers_) {
    auto found = by_name.find(layer->name());
    if (found == by_name.end()) {
      missing.push_back(layer->name());
      continue;
    }
    layer->restore_resume_state(*found->second);
  }
  return missing;
}

}  // namespace xtrain
