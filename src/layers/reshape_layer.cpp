// Reshape (reshape_param: shape, axis, num_axes): gives the bottom's values a
// new shape without copying; the top shares the bottom's data and diff.
// The axes [axis, axis + num_axes) of the bottom (num_axes -1: through the
// last) are replaced by `shape`, in which
//   0  copies the bottom's size at the same position (axis + i), and
//   -1 (at most one) is inferred so that the count is unchanged.
// A negative axis counts from the end, with -1 meaning "after the last axis"
// (so axis: -1 num_axes: 0 appends axes), as in Caffe.
#include <algorithm>
#include <limits>
#include <vector>

#include "layers/builtin_layers.hpp"
#include "layers/view_layer.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

class ReshapeLayer : public ViewLayer {
 public:
  using ViewLayer::ViewLayer;
  const char* type() const override { return "Reshape"; }

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override {
    ViewLayer::layer_setup(bottom, top);
    const BlobShape& shape = param_.reshape_param().shape();
    copy_axes_.clear();
    inferred_axis_ = -1;
    for (int i = 0; i < shape.dim_size(); ++i) {
      const auto dim = shape.dim(i);
      XTRAIN_CHECK(dim >= -1 && dim <= std::numeric_limits<int>::max(), where(),
                   ": reshape_param.shape dimension ", i, " is ", dim,
                   "; use a positive size, 0 to copy the bottom's, or -1 to infer it");
      if (dim == 0) {
        copy_axes_.push_back(i);
      } else if (dim == -1) {
        XTRAIN_CHECK(inferred_axis_ == -1, where(),
                     ": reshape_param.shape has more than one -1; at most one size can be "
                     "inferred");
        inferred_axis_ = i;
      }
    }
  }

 protected:
  std::vector<int> view_shape(const Blob& input) const override {
    const ReshapeParameter& reshape_param = param_.reshape_param();
    const int axes = input.num_axes();
    const int axis = reshape_param.axis();
    const int start = axis >= 0 ? axis : axes + axis + 1;
    XTRAIN_CHECK(start >= 0 && start <= axes, where(), ": reshape_param.axis ", axis,
                 " is out of range for the bottom ", input.shape_string(), " (", axes, " axes)");
    const int num_axes = reshape_param.num_axes();
    XTRAIN_CHECK(num_axes >= -1, where(), ": reshape_param.num_axes must be >= 0, or -1 for all, ",
                 "got ", num_axes);
    const int end = num_axes == -1 ? axes : start + num_axes;
    XTRAIN_CHECK(end <= axes, where(), ": reshape_param.axis ", axis, " + num_axes ", num_axes,
                 " goes past the last axis of the bottom ", input.shape_string());

    const BlobShape& new_axes = reshape_param.shape();
    std::vector<int> shape(input.shape().begin(), input.shape().begin() + start);
    for (int i = 0; i < new_axes.dim_size(); ++i)
      shape.push_back(static_cast<int>(new_axes.dim(i)));
    shape.insert(shape.end(), input.shape().begin() + end, input.shape().end());

    for (int i : copy_axes_) {
      XTRAIN_CHECK(start + i < axes, where(), ": reshape_param.shape dimension ", i,
                   " is 0 (copy), but the bottom ", input.shape_string(), " has no axis ",
                   start + i, " to copy");
      shape[start + i] = input.shape(start + i);
    }
    if (inferred_axis_ >= 0) {
      // An empty bottom (an empty batch) says nothing through its count: the
      // -1 is then what it would be with one item on each empty axis, so an
      // empty batch keeps the shape its items would have (or 0 when no other
      // axis of the new shape is empty).
      const bool empty = input.count() == 0;
      const auto dimension = [empty](int dim) {
        return static_cast<std::size_t>(empty && dim == 0 ? 1 : dim);
      };
      std::size_t values = 1;
      for (int dim : input.shape()) values *= dimension(dim);
      if (!empty) values = input.count();
      std::size_t known = 1;
      for (std::size_t i = 0; i < shape.size(); ++i) {
        if (static_cast<int>(i) != start + inferred_axis_) known *= dimension(shape[i]);
      }
      XTRAIN_CHECK(known != 0 && values % known == 0, where(), ": cannot infer the -1 in ",
                   "reshape_param.shape: the bottom ", input.shape_string(),
                   " has a count not divisible by the product of the other dimensions (", known,
                   ")");
      shape[start + inferred_axis_] = static_cast<int>(values / known);
      // No other axis empty: only a -1 of 0 keeps the count 0.
      const bool another_empty = std::count(shape.begin(), shape.end(), 0) > 0;
      if (empty && !another_empty) shape[start + inferred_axis_] = 0;
    }
    std::size_t count = 1;
    for (int dim : shape) count *= static_cast<std::size_t>(dim);
    XTRAIN_CHECK(count == input.count(), where(), ": the new shape ", shape_to_string(shape),
                 " has ", count, " values but the bottom ", input.shape_string(), " has ",
                 input.count(), "; the counts must match");
    return shape;
  }

 private:
  std::vector<int> copy_axes_;  // positions in `shape` holding 0
  int inferred_axis_ = -1;      // position in `shape` holding -1, if any
};

}  // namespace

void register_reshape_layer(LayerRegistry& registry) {
  add_layer<ReshapeLayer>(registry, "Reshape");
}

}  // namespace xtrain
