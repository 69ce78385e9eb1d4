#include "xtrain/precision.hpp"

#include <algorithm>
#include <cctype>

#include "core/cpu_isa.hpp"
#include "xtrain/error.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {
namespace {

// A proto Type as a type xtrain computes in; `field` names the setting for
// the error ("layer 'conv1' (Convolution): forward_type").
NumberType computing_type(Type type, const std::string& field) {
  switch (type) {
    case FLOAT:
      return NumberType::kFloat32;
    case FLOAT16:
      return NumberType::kFloat16;
    case BFLOAT16:
      return NumberType::kBfloat16;
    default:
      break;
  }
  throw Error(detail::concat(field, " is ", Type_Name(type),
                             ", which no layer computes in; use FLOAT, FLOAT16 or BFLOAT16"));
}

// The layer's own field if it has one, else the net's default, else FLOAT.
NumberType pick(bool layer_has, Type layer_value, bool net_has, Type net_value,
                const std::string& layer_field, const std::string& net_field) {
  if (layer_has) return computing_type(layer_value, layer_field);
  if (net_has) return computing_type(net_value, net_field);
  return NumberType::kFloat32;
}

}  // namespace

const char* number_type_name(NumberType type) {
  switch (type) {
    case NumberType::kFloat32:
      return "fp32";
    case NumberType::kFloat16:
      return "fp16";
    case NumberType::kBfloat16:
      return "bf16";
  }
  return "?";
}

NumberType parse_number_type(const std::string& text, const std::string& what) {
  std::string name = text;
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (name == "fp32" || name == "float32" || name == "float") return NumberType::kFloat32;
  if (name == "fp16" || name == "float16" || name == "half") return NumberType::kFloat16;
  if (name == "bf16" || name == "bfloat16") return NumberType::kBfloat16;
  throw Error(detail::concat(what, " '", text,
                             "' is not a precision xtrain computes in; use fp32, bf16 or fp16"));
}

int number_type_bytes(NumberType type) { return type == NumberType::kFloat32 ? 4 : 2; }

std::string LayerPrecision::to_string() const {
  if (forward_type == backward_type && forward_type == forward_math &&
      forward_type == backward_math) {
    return number_type_name(forward_type);
  }
  std::string text = detail::concat("forward ", number_type_name(forward_type), ", backward ",
                                    number_type_name(backward_type));
  if (forward_math == backward_math) {
    return detail::concat(text, ", math ", number_type_name(forward_math));
  }
  return detail::concat(text, ", math ", number_type_name(forward_math), "/",
                        number_type_name(backward_math));
}

LayerPrecision LayerPrecision::uniform(NumberType type) {
  return LayerPrecision{type, type, type, type};
}

bool operator==(const LayerPrecision& a, const LayerPrecision& b) {
  return a.forward_type == b.forward_type && a.backward_type == b.backward_type &&
         a.forward_math == b.forward_math && a.backward_math == b.backward_math;
}

LayerPrecision resolve_layer_precision(const NetParameter& net, const LayerParameter& layer,
                                       std::optional<NumberType> run_override) {
  const std::string where = detail::concat("layer '", layer.name(), "' (", layer.type(), "): ");
  LayerPrecision precision;
  precision.forward_type =
      pick(layer.has_forward_type(), layer.forward_type(), net.has_default_forward_type(),
           net.default_forward_type(), where + "forward_type", "the net's default_forward_type");
  precision.backward_type =
      pick(layer.has_backward_type(), layer.backward_type(), net.has_default_backward_type(),
           net.default_backward_type(), where + "backward_type", "the net's default_backward_type");
  precision.forward_math =
      pick(layer.has_forward_math(), layer.forward_math(), net.has_default_forward_math(),
           net.default_forward_math(), where + "forward_math", "the net's default_forward_math");
  precision.backward_math =
      pick(layer.has_backward_math(), layer.backward_math(), net.has_default_backward_math(),
           net.default_backward_math(), where + "backward_math", "the net's default_backward_math");
  // Checked above even when overridden: a file that says DOUBLE is wrong
  // whatever the command line says.
  if (run_override) return LayerPrecision::uniform(*run_override);
  return precision;
}

bool cpu_computes_bfloat16_natively() { return onednn_computes_bfloat16(); }

}  // namespace xtrain
