#include "core/net_name_limits.hpp"

#include <string>

#include "xtrain/error.hpp"

namespace xtrain {
namespace {

void check(const std::string& name, const std::string& what) {
  if (name.size() <= kLongestName) return;
  throw Error(detail::concat(what, " is ", name.size(), " characters long (it starts '",
                             name.substr(0, 40), "...'); names are limited to ", kLongestName,
                             " characters: is the prototxt damaged or badly generated?"));
}

}  // namespace

void check_name_lengths(const NetParameter& net) {
  check(net.name(), "the net's name");
  for (int i = 0; i < net.layer_size(); ++i) {
    const LayerParameter& layer = net.layer(i);
    const std::string which = detail::concat("layer #", i + 1);
    check(layer.name(), "the name of " + which);
    const std::string named = which + " ('" + layer.name() + "')";
    for (const std::string& bottom : layer.bottom()) check(bottom, "a bottom of " + named);
    for (const std::string& top : layer.top()) check(top, "a top of " + named);
    for (const ParamSpec& param : layer.param()) check(param.name(), "a param name of " + named);
  }
}

}  // namespace xtrain
