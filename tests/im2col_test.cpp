// im2col against its defining formula, and col2im as its exact adjoint.
#include "layers/im2col.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "xtrain/random.hpp"

namespace xtrain {
namespace {

Im2colGeometry make_geometry(int channels, int height, int width, int kernel_h, int kernel_w,
                             int pad_h, int pad_w, int stride_h, int stride_w, int dilation_h,
                             int dilation_w) {
  Im2colGeometry g;
  g.channels = channels;
  g.height = height;
  g.width = width;
  g.kernel_h = kernel_h;
  g.kernel_w = kernel_w;
  g.pad_h = pad_h;
  g.pad_w = pad_w;
  g.stride_h = stride_h;
  g.stride_w = stride_w;
  g.dilation_h = dilation_h;
  g.dilation_w = dilation_w;
  return g;
}

std::vector<Im2colGeometry> geometries() {
  return {
      make_geometry(1, 4, 4, 1, 1, 0, 0, 1, 1, 1, 1),
      make_geometry(3, 5, 6, 3, 3, 0, 0, 1, 1, 1, 1),
      make_geometry(2, 5, 5, 3, 3, 1, 1, 2, 2, 1, 1),
      make_geometry(2, 7, 6, 3, 2, 2, 1, 1, 3, 1, 1),
      make_geometry(2, 9, 8, 3, 3, 2, 2, 1, 2, 2, 3),
      make_geometry(1, 3, 3, 5, 5, 2, 2, 1, 1, 1, 1),  // every patch holds padding
      make_geometry(1, 2, 2, 3, 3, 0, 0, 2, 2, 1, 1),  // kernel past the edge (Caffe: 1x1)
      make_geometry(2, 4, 5, 2, 2, 3, 1, 3, 2, 1, 1),  // rows of pure padding
  };
}

// col[(c*kh + i)*kw + j][y*out_w + x] = image[c][y*sh - ph + i*dh][x*sw - pw + j*dw]
float expected_column_entry(const std::vector<float>& image, const Im2colGeometry& g, int row,
                            int column) {
  const int out_w = g.output_w();
  const int j = row % g.kernel_w;
  const int i = (row / g.kernel_w) % g.kernel_h;
  const int c = row / (g.kernel_w * g.kernel_h);
  const int y = column / out_w;
  const int x = column % out_w;
  const int in_y = y * g.stride_h - g.pad_h + i * g.dilation_h;
  const int in_x = x * g.stride_w - g.pad_w + j * g.dilation_w;
  if (in_y < 0 || in_y >= g.height || in_x < 0 || in_x >= g.width) return 0.0f;
  return image[(c * g.height + in_y) * g.width + in_x];
}

std::vector<float> random_values(std::size_t n, std::uint64_t seed) {
  std::vector<float> values(n);
  RandomStream random(seed);
  random.uniform(n, -1.0f, 1.0f, values.data());
  return values;
}

TEST(Im2col, MatchesTheDefiningFormula) {
  for (const Im2colGeometry& g : geometries()) {
    ASSERT_GT(g.output_h(), 0);
    ASSERT_GT(g.output_w(), 0);
    const int rows = g.channels * g.kernel_h * g.kernel_w;
    const int columns = g.output_h() * g.output_w();
    const std::vector<float> image = random_values(g.channels * g.height * g.width, 7);
    std::vector<float> col(rows * columns, 123.0f);
    im2col(image.data(), g, col.data());
    for (int r = 0; r < rows; ++r) {
      for (int k = 0; k < columns; ++k) {
        ASSERT_EQ(col[r * columns + k], expected_column_entry(image, g, r, k))
            << "geometry c" << g.channels << " " << g.height << "x" << g.width << " kernel "
            << g.kernel_h << "x" << g.kernel_w << " pad " << g.pad_h << "x" << g.pad_w << " stride "
            << g.stride_h << "x" << g.stride_w << ", row " << r << ", column " << k;
      }
    }
  }
}

TEST(Im2col, KnownSmallCase) {
  // 1 channel 3x3 image, 2x2 kernel, stride 1: four patches.
  const Im2colGeometry g = make_geometry(1, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1);
  const std::vector<float> image = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<float> col(4 * 4);
  im2col(image.data(), g, col.data());
  const std::vector<float> expected = {1, 2, 4, 5,   // kernel (0,0)
                                       2, 3, 5, 6,   // kernel (0,1)
                                       4, 5, 7, 8,   // kernel (1,0)
                                       5, 6, 8, 9};  // kernel (1,1)
  EXPECT_EQ(col, expected);
}

TEST(Col2im, IsTheAdjointOfIm2col) {
  // <im2col(a), b> == <a, col2im(b)> for every a, b.
  for (const Im2colGeometry& g : geometries()) {
    const std::size_t image_size = g.channels * g.height * g.width;
    const std::size_t col_size = g.channels * g.kernel_h * g.kernel_w * g.output_h() * g.output_w();
    const std::vector<float> a = random_values(image_size, 11);
    const std::vector<float> b = random_values(col_size, 13);
    std::vector<float> col(col_size);
    std::vector<float> image(image_size, 42.0f);  // col2im must overwrite, not add
    im2col(a.data(), g, col.data());
    col2im(b.data(), g, image.data());
    double left = 0;
    double right = 0;
    for (std::size_t k = 0; k < col_size; ++k) left += static_cast<double>(col[k]) * b[k];
    for (std::size_t k = 0; k < image_size; ++k) right += static_cast<double>(a[k]) * image[k];
    EXPECT_NEAR(left, right, 1e-4 * (1 + std::abs(left)));
  }
}

TEST(Col2im, SumsOverlappingPatches) {
  // 3x3 image, 2x2 kernel, stride 1, all-ones columns: each pixel is counted
  // once per patch that covers it.
  const Im2colGeometry g = make_geometry(1, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1);
  const std::vector<float> col(16, 1.0f);
  std::vector<float> image(9);
  col2im(col.data(), g, image.data());
  const std::vector<float> expected = {1, 2, 1, 2, 4, 2, 1, 2, 1};
  EXPECT_EQ(image, expected);
}

}  // namespace
}  // namespace xtrain
