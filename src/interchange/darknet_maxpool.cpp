#include "interchange/darknet_maxpool.hpp"

#include "interchange/pooling_geometry.hpp"

namespace xtrain::interchange {

int darknet_pooled_length(const DarknetPoolingAxis& axis) {
  const int span = axis.input + axis.padding - axis.size;
  return span < 0 ? 0 : span / axis.stride + 1;
}

bool CaffePoolingPlan::needs_crop() const {
  return offset_h != 0 || offset_w != 0 || pooled_h != darknet_h || pooled_w != darknet_w;
}

std::optional<CaffePoolingPlan> caffe_pooling_for(const DarknetPoolingAxis& height,
                                                  const DarknetPoolingAxis& width) {
  const int darknet_h = darknet_pooled_length(height);
  const int darknet_w = darknet_pooled_length(width);
  if (darknet_h < 1 || darknet_w < 1) return std::nullopt;
  // Pads grow by whole strides (so the windows stay in step) up to the
  // kernel size; the fewest extra windows first.
  const int most_h = height.size / height.stride + 1;
  const int most_w = width.size / width.stride + 1;
  for (int extra = 0; extra <= most_h + most_w; ++extra) {
    for (int m_h = 0; m_h <= extra; ++m_h) {
      const int m_w = extra - m_h;
      CaffePoolingPlan plan;
      plan.pad_h = height.padding / 2 + m_h * height.stride;
      plan.pad_w = width.padding / 2 + m_w * width.stride;
      if (plan.pad_h >= height.size || plan.pad_w >= width.size) continue;
      const bool layer_pads = plan.pad_h > 0 || plan.pad_w > 0;
      plan.pooled_h =
          caffe_pooled_length({height.input, height.size, height.stride, plan.pad_h, layer_pads});
      plan.pooled_w =
          caffe_pooled_length({width.input, width.size, width.stride, plan.pad_w, layer_pads});
      if (plan.pooled_h - m_h < darknet_h || plan.pooled_w - m_w < darknet_w) continue;
      plan.offset_h = m_h;
      plan.offset_w = m_w;
      plan.darknet_h = darknet_h;
      plan.darknet_w = darknet_w;
      return plan;
    }
  }
  return std::nullopt;
}

}  // namespace xtrain::interchange
