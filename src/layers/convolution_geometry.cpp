#include "layers/convolution_geometry.hpp"

#include <array>
#include <cstdint>

#include "xtrain/error.hpp"

namespace xtrain {
namespace {

using SpatialField = google::protobuf::RepeatedField<std::uint32_t>;

// A per-axis setting of a 2-D convolution: from the repeated field (one value
// for both axes, or one per axis) or from its _h/_w pair. `fallback` < 0
// means the setting is required.
std::array<int, 2> per_axis(const std::string& where, const char* repeated_name,
                            const SpatialField& values, const char* pair_name, bool has_pair,
                            std::uint32_t h, std::uint32_t w, int fallback) {
  if (has_pair) {
    XTRAIN_CHECK(values.empty(), where, ": give either ", repeated_name, " or ", pair_name,
                 ", not both");
    return {static_cast<int>(h), static_cast<int>(w)};
  }
  if (values.empty()) {
    XTRAIN_CHECK(fallback >= 0, where, ": ", repeated_name, " (or ", pair_name,
                 ") is required in convolution_param");
    return {fallback, fallback};
  }
  XTRAIN_CHECK(values.size() <= 2, where, ": ", repeated_name, " has ", values.size(),
               " values; give one for both spatial axes or one per axis (2)");
  const int first = static_cast<int>(values.Get(0));
  return {first, values.size() == 2 ? static_cast<int>(values.Get(1)) : first};
}

}  // namespace

Im2colGeometry read_convolution_geometry(const ConvolutionParameter& conv,
                                         const std::string& here) {
  Im2colGeometry geometry;
  const auto kernel =
      per_axis(here, "kernel_size", conv.kernel_size(), "kernel_h/kernel_w",
               conv.has_kernel_h() || conv.has_kernel_w(), conv.kernel_h(), conv.kernel_w(), -1);
  const auto pad = per_axis(here, "pad", conv.pad(), "pad_h/pad_w",
                            conv.has_pad_h() || conv.has_pad_w(), conv.pad_h(), conv.pad_w(), 0);
  const auto stride =
      per_axis(here, "stride", conv.stride(), "stride_h/stride_w",
               conv.has_stride_h() || conv.has_stride_w(), conv.stride_h(), conv.stride_w(), 1);
  const auto dilation = per_axis(here, "dilation", conv.dilation(), "dilation", false, 0, 0, 1);
  XTRAIN_CHECK(kernel[0] > 0 && kernel[1] > 0, here, ": kernel size must be > 0 on both axes, got ",
               kernel[0], "x", kernel[1], " (with kernel_h, give kernel_w too)");
  XTRAIN_CHECK(stride[0] > 0 && stride[1] > 0, here, ": stride must be > 0, got ", stride[0], "x",
               stride[1]);
  XTRAIN_CHECK(pad[0] >= 0 && pad[1] >= 0, here, ": pad is too large: ", pad[0], "x", pad[1]);
  XTRAIN_CHECK(dilation[0] > 0 && dilation[1] > 0, here, ": dilation must be > 0, got ",
               dilation[0], "x", dilation[1]);

  geometry.kernel_h = kernel[0];
  geometry.kernel_w = kernel[1];
  geometry.pad_h = pad[0];
  geometry.pad_w = pad[1];
  geometry.stride_h = stride[0];
  geometry.stride_w = stride[1];
  geometry.dilation_h = dilation[0];
  geometry.dilation_w = dilation[1];
  return geometry;
}

}  // namespace xtrain
