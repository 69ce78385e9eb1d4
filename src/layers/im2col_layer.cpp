// Im2col (convolution_param: kernel, pad, stride, dilation, axis): the
// patches a convolution would read, laid out as its column matrix. For a
// bottom (N, C, H, W) (axis 1; the axes before `axis` all count as N) the
// top is (N, C*kh*kw, out_h, out_w), with
//   top[n][(c*kh + i)*kw + j][y][x] = bottom[n][c][y*sh - ph + i*dh][x*sw - pw + j*dw]
// (0 where that falls in the padding), out = (in + 2p - (d(k-1) + 1)) / s + 1:
// the im2col of layers/im2col.hpp that the GEMM convolution uses, per image.
// Backward is its adjoint, col2im: each bottom pixel's gradient is the sum of
// the top gradients of the entries that read it.
//
// Like Caffe's 2-D path; Caffe's N-D im2col (force_nd_im2col, or other than
// two spatial axes) is refused with an error. num_output, group, bias and the
// fillers are ignored, as in Caffe.
#include <string>
#include <vector>

#include "layers/builtin_layers.hpp"
#include "layers/convolution_geometry.hpp"
#include "layers/im2col.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/im2col_kernels.hpp"
#endif

namespace xtrain {
namespace {

class Im2colLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Im2col"; }
  int exact_num_bottom_blobs() const override { return 1; }
  int exact_num_top_blobs() const override { return 1; }

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override {
    XTRAIN_CHECK(top[0] != bottom[0], where(),
                 " cannot run in place; give its top a name different from its bottom");
    const ConvolutionParameter& conv = param_.convolution_param();
    const Blob& input = *bottom[0];
    XTRAIN_CHECK(conv.axis() >= -input.num_axes() && conv.axis() < input.num_axes(), where(),
                 ": convolution_param.axis ", conv.axis(),
                 " is out of range for the input of shape ", input.shape_string());
    channel_axis_ = input.canonical_axis_index(conv.axis());
    const int spatial_axes = input.num_axes() - channel_axis_ - 1;
    XTRAIN_CHECK(spatial_axes == 2 && !conv.force_nd_im2col(), where(), ": the input ",
                 input.shape_string(), " has ", spatial_axes,
                 " spatial axes after the channel axis ", channel_axis_,
                 conv.force_nd_im2col() ? " and force_nd_im2col is set" : "",
                 "; only 2-D im2col (two spatial axes, force_nd_im2col false) is supported");
    geometry_ = read_convolution_geometry(conv, where());
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& input = *bottom[0];
    XTRAIN_CHECK(input.num_axes() == channel_axis_ + 3, where(), ": the input ",
                 input.shape_string(), " must keep the ", channel_axis_ + 3,
                 " axes it was set up with");
    geometry_.channels = input.shape(channel_axis_);
    geometry_.height = input.shape(channel_axis_ + 1);
    geometry_.width = input.shape(channel_axis_ + 2);
    const int out_h = geometry_.output_h();
    const int out_w = geometry_.output_w();
    XTRAIN_CHECK(out_h > 0 && out_w > 0, where(), ": a ", geometry_.kernel_extent_h(), "x",
                 geometry_.kernel_extent_w(), " kernel (after dilation) with pad ", geometry_.pad_h,
                 "x", geometry_.pad_w, " does not fit the ", geometry_.height, "x", geometry_.width,
                 " input ", input.shape_string(), "; use a smaller kernel or more padding");
    std::vector<int> shape = input.shape();
    shape[channel_axis_] = geometry_.channels * geometry_.kernel_h * geometry_.kernel_w;
    shape[channel_axis_ + 1] = out_h;
    shape[channel_axis_ + 2] = out_w;
    top[0]->reshape(shape);
    images_ = input.count(0, channel_axis_);
    image_size_ = input.count(channel_axis_);
    columns_size_ = top[0]->count(channel_axis_);
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* images = bottom[0]->cpu_data();
    float* columns = top[0]->mutable_cpu_data();
    for (std::size_t n = 0; n < images_; ++n) {
      im2col(images + n * image_size_, geometry_, columns + n * columns_size_);
    }
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* columns = top[0]->cpu_diff();
    float* images = bottom[0]->mutable_cpu_diff();
    for (std::size_t n = 0; n < images_; ++n) {
      col2im(columns + n * columns_size_, geometry_, images + n * image_size_);
    }
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    cuda::im2col(bottom[0]->gpu_data(), images_, geometry_, top[0]->mutable_gpu_data());
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    cuda::col2im(top[0]->gpu_diff(), images_, geometry_, bottom[0]->mutable_gpu_diff());
  }
#endif

 private:
  int channel_axis_ = 1;
  Im2colGeometry geometry_;       // of one image; channels, height and width set in reshape()
  std::size_t images_ = 0;        // N: the product of the axes before channel_axis_
  std::size_t image_size_ = 0;    // C*H*W
  std::size_t columns_size_ = 0;  // C*kh*kw * out_h*out_w
};

}  // namespace

void register_im2col_layer(LayerRegistry& registry) { add_layer<Im2colLayer>(registry, "Im2col"); }

}  // namespace xtrain
