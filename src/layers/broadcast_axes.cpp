#include "layers/broadcast_axes.hpp"

#include "xtrain/error.hpp"

namespace xtrain {
namespace {

int checked_axis(const std::string& where, const char* param_name, const Blob& input, int axis) {
  XTRAIN_CHECK(axis >= -input.num_axes() && axis < input.num_axes(), where, ": ", param_name,
               ".axis ", axis, " is out of range for bottom[0] of shape ", input.shape_string(),
               " (", input.num_axes(), " axes)");
  return input.canonical_axis_index(axis);
}

}  // namespace

std::vector<int> learned_operand_shape(const std::string& where, const char* param_name,
                                       const Blob& input, int axis, int num_axes) {
  const int first = checked_axis(where, param_name, input, axis);
  XTRAIN_CHECK(num_axes >= -1, where, ": ", param_name, ".num_axes is ", num_axes,
               "; give a count of axes >= 0, or -1 for all axes from axis on");
  XTRAIN_CHECK(num_axes == -1 || first + num_axes <= input.num_axes(), where, ": ", param_name,
               " spans ", num_axes, " axes from axis ", first,
               ", past the end of bottom[0] of shape ", input.shape_string());
  const int end = num_axes == -1 ? input.num_axes() : first + num_axes;
  return std::vector<int>(input.shape().begin() + first, input.shape().begin() + end);
}

BroadcastAxes broadcast_axes(const std::string& where, const char* param_name, const Blob& input,
                             const Blob& operand, const char* operand_name, int axis) {
  const int first = operand.num_axes() == 0 ? 0 : checked_axis(where, param_name, input, axis);
  bool fits = first + operand.num_axes() <= input.num_axes();
  for (int i = 0; fits && i < operand.num_axes(); ++i) {
    fits = input.shape(first + i) == operand.shape(i);
  }
  XTRAIN_CHECK(fits, where, ": ", operand_name, " of shape ", operand.shape_string(),
               " does not line up with bottom[0] of shape ", input.shape_string(), " from axis ",
               first, "; its dimensions must equal bottom[0]'s axes ", first, " to ",
               first + operand.num_axes() - 1, " (check ", param_name, ".axis and the shapes)");
  BroadcastAxes axes;
  axes.outer = input.count(0, first);
  axes.dim = operand.count();
  axes.inner = input.count(first + operand.num_axes());
  return axes;
}

}  // namespace xtrain
