// Choosing the layers of a net for its state (phase, level, stages).
#include <algorithm>

#include "xtrain/error.hpp"
#include "xtrain/net.hpp"

namespace xtrain {
namespace {
bool has_stage(const NetState& state, const std::string& stage) {
  return std::find(state.stage().begin(), state.stage().end(), stage) != state.stage().end();
}
}  // namespace

bool state_meets_rule(const NetState& state, const NetStateRule& rule) {
  if (rule.has_phase() && rule.phase() != state.phase()) return false;
  if (rule.has_min_level() && state.level() < rule.min_level()) return false;
  if (rule.has_max_level() && state.level() > rule.max_level()) return false;
  for (const std::string& stage : rule.stage()) {
    if (!has_stage(state, stage)) return false;
  }
  for (const std::string& stage : rule.not_stage()) {
    if (has_stage(state, stage)) return false;
  }
  return true;
}

NetParameter filter_net(const NetParameter& param) {
  NetParameter filtered(param);
  filtered.clear_layer();
  for (const LayerParameter& layer : param.layer()) {
    XTRAIN_CHECK(layer.include_size() == 0 || layer.exclude_size() == 0, "layer '", layer.name(),
                 "' has both include and exclude rules; give only one kind");
    // No include rules: in unless an exclude rule matches. Include rules: in
    // only if one of them matches.
    bool included = layer.include_size() == 0;
    for (const NetStateRule& rule : layer.exclude()) {
      if (state_meets_rule(param.state(), rule)) included = false;
    }
    for (const NetStateRule& rule : layer.include()) {
      if (state_meets_rule(param.state(), rule)) included = true;
    }
    if (included) *filtered.add_layer() = layer;
  }
  return filtered;
}

}  // namespace xtrain
