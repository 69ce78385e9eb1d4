// The values of an ONNX TensorProto, whichever field holds them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "interchange/onnx.pb.h"

namespace xtrain::interchange {

// FLOAT or DOUBLE tensors as floats; throws xtrain::Error naming the tensor
// for another type or a size that disagrees with its dims.
std::vector<float> float_values(const onnx::TensorProto& tensor);
// INT64 or INT32 tensors as int64.
std::vector<std::int64_t> int64_values(const onnx::TensorProto& tensor);
std::int64_t element_count(const onnx::TensorProto& tensor);

}  // namespace xtrain::interchange
