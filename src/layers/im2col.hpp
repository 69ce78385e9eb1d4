// im2col / col2im: the patch rearrangement that turns a 2-D convolution into
// one matrix product.
//
// For an image of shape (C, H, W) and a kernel (kh, kw) applied with padding
// (ph, pw), stride (sh, sw) and dilation (dh, dw), the column matrix has
//   rows    = C * kh * kw,          row r = (c * kh + i) * kw + j
//   columns = out_h * out_w,        column = y * out_w + x
//   col[r][y, x] = image[c][y*sh - ph + i*dh][x*sw - pw + j*dw]   (0 outside)
// where out = (in + 2*pad - (dilation*(k-1) + 1)) / stride + 1.
// The row order matches a weight blob (num_output, C, kh, kw), so
// output = weights (num_output x C*kh*kw) * col.
//
// col2im is the adjoint: it scatters each column entry back onto the pixel it
// was read from, summing where patches overlap (the image is overwritten, not
// accumulated into).
#pragma once

namespace xtrain {

struct Im2colGeometry {
  int channels = 0;
  int height = 0;
  int width = 0;
  int kernel_h = 1;
  int kernel_w = 1;
  int pad_h = 0;
  int pad_w = 0;
  int stride_h = 1;
  int stride_w = 1;
  int dilation_h = 1;
  int dilation_w = 1;

  int kernel_extent_h() const { return dilation_h * (kernel_h - 1) + 1; }
  int kernel_extent_w() const { return dilation_w * (kernel_w - 1) + 1; }
  // May be <= 0 when the kernel does not fit; callers check.
  int output_h() const { return (height + 2 * pad_h - kernel_extent_h()) / stride_h + 1; }
  int output_w() const { return (width + 2 * pad_w - kernel_extent_w()) / stride_w + 1; }
};

// image: C*H*W values; columns: (C*kh*kw) x (out_h*out_w) values.
void im2col(const float* image, const Im2colGeometry& geometry, float* columns);
void col2im(const float* columns, const Im2colGeometry& geometry, float* image);

}  // namespace xtrain
