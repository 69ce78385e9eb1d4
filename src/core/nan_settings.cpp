#include "core/nan_settings.hpp"

#include <cmath>
#include <vector>

#include "xtrain/error.hpp"

namespace xtrain {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

std::string indexed(const FieldDescriptor& field, int index) {
  return field.is_repeated() ? detail::concat(field.name(), "[", index, "]") : field.name();
}

// The path below `field` of message that holds nan, "" if none.
std::string nan_in_field(const Message& message, const FieldDescriptor& field) {
  const Reflection& reflection = *message.GetReflection();
  const int count = field.is_repeated() ? reflection.FieldSize(message, &field) : 1;
  for (int i = 0; i < count; ++i) {
    switch (field.cpp_type()) {
      case FieldDescriptor::CPPTYPE_FLOAT: {
        const float value = field.is_repeated() ? reflection.GetRepeatedFloat(message, &field, i)
                                                : reflection.GetFloat(message, &field);
        if (std::isnan(value)) return indexed(field, i);
        break;
      }
      case FieldDescriptor::CPPTYPE_DOUBLE: {
        const double value = field.is_repeated() ? reflection.GetRepeatedDouble(message, &field, i)
                                                 : reflection.GetDouble(message, &field);
        if (std::isnan(value)) return indexed(field, i);
        break;
      }
      case FieldDescriptor::CPPTYPE_MESSAGE: {
        if (field.message_type() == BlobProto::descriptor()) return "";
        const Message& inner = field.is_repeated()
                                   ? reflection.GetRepeatedMessage(message, &field, i)
                                   : reflection.GetMessage(message, &field);
        const std::string below = first_nan_setting(inner);
        if (!below.empty()) return indexed(field, i) + "." + below;
        break;
      }
      default:
        return "";
    }
  }
  return "";
}

}  // namespace

std::string first_nan_setting(const Message& message) {
  std::vector<const FieldDescriptor*> fields;
  message.GetReflection()->ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    std::string path = nan_in_field(message, *field);
    if (!path.empty()) return path;
  }
  return "";
}

void check_no_nan_layer_settings(const NetParameter& net) {
  for (const LayerParameter& layer : net.layer()) {
    const std::string path = first_nan_setting(layer);
    XTRAIN_CHECK(path.empty(), "layer '", layer.name(), "' (", layer.type(), "): ", path,
                 " is nan, which no setting can be; give a number");
  }
  for (const V1LayerParameter& layer : net.layers()) {
    const std::string path = first_nan_setting(layer);
    XTRAIN_CHECK(path.empty(), "layer '", layer.name(), "': ", path,
                 " is nan, which no setting can be; give a number");
  }
}

}  // namespace xtrain
