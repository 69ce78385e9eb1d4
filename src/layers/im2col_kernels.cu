// The Im2col layer's kernels: one thread per column entry (im2col) or per
// pixel (col2im, which gathers the entries that read the pixel instead of
// scattering them, so no two threads write one value). The index rules are
// those of layers/im2col.hpp; col2im adds, from 0, in the CPU loop's order.
#include "cuda/cuda_context.hpp"
#include "layers/im2col_kernels.hpp"
#include "cuda/kernel_launch.cuh"

namespace xtrain::cuda {
namespace {

// The geometry as plain values a kernel can take (Im2colGeometry's helpers
// are host functions).
struct Geometry {
  int channels, height, width, kernel_h, kernel_w, pad_h, pad_w, stride_h, stride_w, dilation_h,
      dilation_w, out_h, out_w;
};

Geometry device_geometry(const Im2colGeometry& g) {
  return {g.channels, g.height,   g.width,      g.kernel_h,   g.kernel_w,   g.pad_h,     g.pad_w,
          g.stride_h, g.stride_w, g.dilation_h, g.dilation_w, g.output_h(), g.output_w()};
}

// columns[n][(c*kh + i)*kw + j][y][x] = images[n][c][y*sh - ph + i*dh][x*sw - pw + j*dw]
__global__ void im2col_kernel(std::size_t total, Geometry g, const float* images, float* columns) {
  for (std::size_t e = grid_start(); e < total; e += grid_stride()) {
    const int x = static_cast<int>(e % g.out_w);
    const int y = static_cast<int>((e / g.out_w) % g.out_h);
    const std::size_t row_of_all = e / (static_cast<std::size_t>(g.out_w) * g.out_h);
    const int rows = g.channels * g.kernel_h * g.kernel_w;
    const std::size_t n = row_of_all / rows;
    const int row = static_cast<int>(row_of_all % rows);
    const int j = row % g.kernel_w;
    const int i = (row / g.kernel_w) % g.kernel_h;
    const int c = row / (g.kernel_w * g.kernel_h);
    const int in_y = y * g.stride_h - g.pad_h + i * g.dilation_h;
    const int in_x = x * g.stride_w - g.pad_w + j * g.dilation_w;
    const bool inside = in_y >= 0 && in_y < g.height && in_x >= 0 && in_x < g.width;
    columns[e] = inside ? images[((n * g.channels + c) * g.height + in_y) * g.width + in_x] : 0.0f;
  }
}

// images[n][c][h][w] = sum over (i, j) in order of the entries that read it.
__global__ void col2im_kernel(std::size_t total, Geometry g, const float* columns, float* images) {
  const std::size_t plane = static_cast<std::size_t>(g.out_h) * g.out_w;
  for (std::size_t e = grid_start(); e < total; e += grid_stride()) {
    const int w = static_cast<int>(e % g.width);
    const int h = static_cast<int>((e / g.width) % g.height);
    const std::size_t image_channel = e / (static_cast<std::size_t>(g.width) * g.height);
    const int c = static_cast<int>(image_channel % g.channels);
    const std::size_t n = image_channel / g.channels;
    const float* image_columns =
        columns + n * static_cast<std::size_t>(g.channels) * g.kernel_h * g.kernel_w * plane;
    float sum = 0.0f;
    for (int i = 0; i < g.kernel_h; ++i) {
      const int y_stride = h + g.pad_h - i * g.dilation_h;  // = y * stride_h
      if (y_stride < 0 || y_stride % g.stride_h != 0) continue;
      const int y = y_stride / g.stride_h;
      if (y >= g.out_h) continue;
      for (int j = 0; j < g.kernel_w; ++j) {
        const int x_stride = w + g.pad_w - j * g.dilation_w;
        if (x_stride < 0 || x_stride % g.stride_w != 0) continue;
        const int x = x_stride / g.stride_w;
        if (x >= g.out_w) continue;
        const int row = (c * g.kernel_h + i) * g.kernel_w + j;
        sum += image_columns[static_cast<std::size_t>(row) * plane +
                             static_cast<std::size_t>(y) * g.out_w + x];
      }
    }
    images[e] = sum;
  }
}

}  // namespace

void im2col(const float* images, std::size_t images_count, const Im2colGeometry& geometry,
            float* columns) {
  const Geometry g = device_geometry(geometry);
  const std::size_t total = images_count * static_cast<std::size_t>(g.channels) * g.kernel_h *
                            g.kernel_w * g.out_h * g.out_w;
  launch_for(total, stream(), im2col_kernel, total, g, images, columns);
}

void col2im(const float* columns, std::size_t images_count, const Im2colGeometry& geometry,
            float* images) {
  const Geometry g = device_geometry(geometry);
  const std::size_t total =
      images_count * static_cast<std::size_t>(g.channels) * g.height * g.width;
  launch_for(total, stream(), col2im_kernel, total, g, columns, images);
}

}  // namespace xtrain::cuda
