// How Scale and Bias line a smaller operand (their learned blob, or their
// second bottom) up with the axes of bottom[0], Caffe's way: the operand's
// shape must equal bottom[0]'s axes [axis, axis + operand axes). Viewing
// bottom[0] as (outer, dim, inner) with dim = the operand's count,
//   top[o, d, i] = bottom[o, d, i] (*|+) operand[d].
// A scalar operand (no axes) lines up at axis 0 whatever `axis` says.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "xtrain/blob.hpp"

namespace xtrain {

struct BroadcastAxes {
  std::size_t outer = 1;  // bottom[0]'s count before the operand's axes
  std::size_t dim = 1;    // the operand's count
  std::size_t inner = 1;  // bottom[0]'s count after the operand's axes
};

// The shape of a learned operand spanning num_axes axes of `input` from
// `axis` on (num_axes -1: to the end). `where` and `param_name` ("scale_param")
// go into the errors.
std::vector<int> learned_operand_shape(const std::string& where, const char* param_name,
                                       const Blob& input, int axis, int num_axes);

// Checks that `operand` lines up with `input` from `axis` and returns the
// (outer, dim, inner) view; `operand_name` says what the operand is
// ("bottom[1]", "the learned scale") for the error.
BroadcastAxes broadcast_axes(const std::string& where, const char* param_name, const Blob& input,
                             const Blob& operand, const char* operand_name, int axis);

}  // namespace xtrain
