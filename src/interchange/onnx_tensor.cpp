#include "interchange/onnx_tensor.hpp"

#include <cstring>
#include <string>

#include "xtrain/error.hpp"

namespace xtrain::interchange {

namespace {

// raw_data holds fixed-width little-endian values (this host's order; see
// onnx_graph_builder.cpp).
template <typename T>
std::vector<T> raw_values(const onnx::TensorProto& tensor) {
  const std::string& raw = tensor.raw_data();
  XTRAIN_CHECK(static_cast<std::int64_t>(raw.size()) ==
                   element_count(tensor) * static_cast<std::int64_t>(sizeof(T)),
               "ONNX tensor '", tensor.name(), "' has ", raw.size(), " bytes of raw data for ",
               element_count(tensor), " values of ", sizeof(T), " bytes");
  std::vector<T> values(raw.size() / sizeof(T));
  std::memcpy(values.data(), raw.data(), raw.size());
  return values;
}

template <typename T, typename Field>
std::vector<T> field_values(const onnx::TensorProto& tensor, const Field& field) {
  XTRAIN_CHECK(field.size() == element_count(tensor), "ONNX tensor '", tensor.name(), "' has ",
               field.size(), " values for its ", element_count(tensor), " elements");
  return std::vector<T>(field.begin(), field.end());
}

std::string dims_text(const onnx::TensorProto& tensor) {
  std::string text = "(";
  for (int i = 0; i < tensor.dims_size(); ++i) {
    text += (i ? ", " : "") + std::to_string(tensor.dims(i));
  }
  return text + ")";
}

}  // namespace

std::int64_t element_count(const onnx::TensorProto& tensor) {
  // The dims come from the file: each must be >= 0, and their product is
  // kept far below int64's range (found by the onnx_import fuzzer: dims
  // whose product overflowed, undefined behaviour). 2^40 values is more than
  // an ONNX file without external data (2 GB) can hold.
  constexpr std::int64_t kMostValues = std::int64_t{1} << 40;
  std::int64_t count = 1;
  for (std::int64_t dim : tensor.dims()) {
    XTRAIN_CHECK(dim >= 0 && (dim == 0 || count <= kMostValues / dim), "ONNX tensor '",
                 tensor.name(), "' has dims ", dims_text(tensor),
                 dim < 0 ? ": a negative dim" : ": more values than an ONNX file can hold",
                 "; the model is damaged");
    count *= dim;
  }
  return count;
}

std::vector<float> float_values(const onnx::TensorProto& tensor) {
  switch (tensor.data_type()) {
    case onnx::TensorProto::FLOAT:
      return tensor.has_raw_data() ? raw_values<float>(tensor)
                                   : field_values<float>(tensor, tensor.float_data());
    case onnx::TensorProto::DOUBLE: {
      const std::vector<double> values = tensor.has_raw_data()
                                             ? raw_values<double>(tensor)
                                             : field_values<double>(tensor, tensor.double_data());
      return std::vector<float>(values.begin(), values.end());
    }
    default:
      XTRAIN_CHECK(false, "ONNX tensor '", tensor.name(), "' holds data type ", tensor.data_type(),
                   " where floats are expected (FLOAT = 1 or DOUBLE = 11)");
  }
  return {};
}

std::vector<std::int64_t> int64_values(const onnx::TensorProto& tensor) {
  switch (tensor.data_type()) {
    case onnx::TensorProto::INT64:
      return tensor.has_raw_data() ? raw_values<std::int64_t>(tensor)
                                   : field_values<std::int64_t>(tensor, tensor.int64_data());
    case onnx::TensorProto::INT32: {
      const std::vector<std::int32_t> values =
          tensor.has_raw_data() ? raw_values<std::int32_t>(tensor)
                                : field_values<std::int32_t>(tensor, tensor.int32_data());
      return std::vector<std::int64_t>(values.begin(), values.end());
    }
    default:
      XTRAIN_CHECK(false, "ONNX tensor '", tensor.name(), "' holds data type ", tensor.data_type(),
                   " where integers are expected (INT64 = 7 or INT32 = 6)");
  }
  return {};
}

}  // namespace xtrain::interchange
