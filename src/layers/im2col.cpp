#include "layers/im2col.hpp"

#include <algorithm>
#include <cstddef>

namespace xtrain {
namespace {

// The output columns x whose input column x*stride + offset lies inside
// [0, width): a contiguous range [begin, end), so the inner loops run without
// a bounds test per element and padding becomes two zero fills.
struct ValidRange {
  int begin;
  int end;
};

ValidRange valid_outputs(int offset, int stride, int input_size, int output_size) {
  int begin = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  const int last_input = input_size - 1 - offset;
  int end = last_input < 0 ? 0 : last_input / stride + 1;
  begin = std::min(begin, output_size);
  end = std::clamp(end, begin, output_size);
  return {begin, end};
}

// visit(column_row, channel, in_y, col_offset, xs) for every row of the
// column buffer in its order: channel c, kernel offset (i, j), output row y.
// The row starts at columns + column_row; it reads input row in_y (outside
// [0, height) in the padding) of the channel plane at image + channel, at
// columns x * stride_w + col_offset for x in xs.
template <typename Visit>
void for_each_column_row(const Im2colGeometry& g, Visit visit) {
  const int out_h = g.output_h();
  const int out_w = g.output_w();
  const std::size_t plane = static_cast<std::size_t>(g.height) * g.width;
  std::size_t column_row = 0;
  for (int c = 0; c < g.channels; ++c) {
    for (int i = 0; i < g.kernel_h; ++i) {
      const int row_offset = i * g.dilation_h - g.pad_h;
      for (int j = 0; j < g.kernel_w; ++j) {
        const int col_offset = j * g.dilation_w - g.pad_w;
        const ValidRange xs = valid_outputs(col_offset, g.stride_w, g.width, out_w);
        for (int y = 0; y < out_h; ++y, column_row += out_w) {
          visit(column_row, c * plane, y * g.stride_h + row_offset, col_offset, xs);
        }
      }
    }
  }
}

}  // namespace

void im2col(const float* image, const Im2colGeometry& g, float* columns) {
  const int out_w = g.output_w();
  for_each_column_row(g, [&](std::size_t column_row, std::size_t channel, int in_y, int col_offset,
                             const ValidRange& xs) {
    float* out = columns + column_row;
    if (in_y < 0 || in_y >= g.height) {
      std::fill(out, out + out_w, 0.0f);
      return;
    }
    const float* in = image + channel + static_cast<std::size_t>(in_y) * g.width;
    std::fill(out, out + xs.begin, 0.0f);
    if (g.stride_w == 1 && xs.end > xs.begin) {
      std::copy(in + xs.begin + col_offset, in + xs.end + col_offset, out + xs.begin);
    } else {
      for (int x = xs.begin; x < xs.end; ++x) out[x] = in[x * g.stride_w + col_offset];
    }
    std::fill(out + xs.end, out + out_w, 0.0f);
  });
}

void col2im(const float* columns, const Im2colGeometry& g, float* image) {
  std::fill(image, image + g.channels * static_cast<std::size_t>(g.height) * g.width, 0.0f);
  for_each_column_row(g, [&](std::size_t column_row, std::size_t channel, int in_y, int col_offset,
                             const ValidRange& xs) {
    if (in_y < 0 || in_y >= g.height) return;
    const float* in = columns + column_row;
    float* out = image + channel + static_cast<std::size_t>(in_y) * g.width;
    for (int x = xs.begin; x < xs.end; ++x) out[x * g.stride_w + col_offset] += in[x];
  });
}

}  // namespace xtrain
