#include "layers/onednn_inner_product.hpp"

#if XTRAIN_HAVE_ONEDNN

#include <array>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <unordered_map>

#include "layers/onednn_boundary.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

using namespace onednn;
using dnnl::memory;
using Tag = memory::format_tag;
using DataType = memory::data_type;

class OnednnBfloat16InnerProduct final : public Bfloat16InnerProduct {
 public:
  explicit OnednnBfloat16InnerProduct(const InnerProductShape& shape)
      : shape_(shape), stream_(cpu_engine()) {
    const memory::dim m = shape.rows, k = shape.inputs, n = shape.outputs;
    src_plain_ = memory::desc({m, k}, DataType::f32, Tag::nc);
    dst_plain_ = memory::desc({m, n}, DataType::f32, Tag::nc);
    weights_plain_ = memory::desc({n, k}, DataType::f32, shape.transposed ? Tag::io : Tag::oi);
    bias_plain_ = memory::desc({n}, DataType::f32, Tag::x);
    const memory::desc src({m, k}, DataType::bf16, Tag::any);
    const memory::desc weights({n, k}, DataType::bf16, Tag::any);
    const memory::desc diff_dst({m, n}, DataType::bf16, Tag::any);
    const memory::desc diff_weights({n, k}, DataType::f32, Tag::any);
    constexpr auto training = dnnl::prop_kind::forward_training;
    const auto forward =
        shape.bias
            ? dnnl::inner_product_forward::desc(training, src, weights, bias_plain_, dst_plain_)
            : dnnl::inner_product_forward::desc(training, src, weights, dst_plain_);
    forward_pd_ = dnnl::inner_product_forward::primitive_desc(forward, user_scratchpad(), cpu_engine());
    // Backward-data takes the weights in the forward kernel's layout, so
    // that it multiplies the bf16 copy forward made (see forward()).
    const dnnl::inner_product_backward_data::desc backward_data(
        src_plain_, forward_pd_.weights_desc(), diff_dst);
    backward_data_pd_ = dnnl::inner_product_backward_data::primitive_desc(
        backward_data, user_scratchpad(), cpu_engine(), forward_pd_);
    const auto backward_weights =
        shape.bias
            ? dnnl::inner_product_backward_weights::desc(src, diff_weights, bias_plain_, diff_dst)
            : dnnl::inner_product_backward_weights::desc(src, diff_weights, diff_dst);
    backward_weights_pd_ = dnnl::inner_product_backward_weights::primitive_desc(
        backward_weights, user_scratchpad(), cpu_engine(), forward_pd_);
  }

  std::string why_not() const {
    for (const std::string& kernel : kernels()) {
      if (kernel.rfind("ref", 0) == 0)
        return "oneDNN has only its reference kernel (" + kernel + ")";
    }
    return {};
  }

  const InnerProductShape& shape() const override { return shape_; }

  std::string name() const override {
    const auto k = kernels();
    return "onednn bf16 (forward " + k[0] + ", backward-data " + k[1] + ", backward-weights " +
           k[2] + ")";
  }

  void forward(const float* bottom, const float* weights, const float* bias, float* top) override {
    run([&] {
      make_bf16_weights(weights);
      std::unordered_map<int, memory> args = {
          {DNNL_ARG_SRC, forward_->src.in(bottom, stream_)},
          {DNNL_ARG_WEIGHTS, forward_->weights},
          {DNNL_ARG_DST, memory(dst_plain_, cpu_engine(), top)}};
      if (shape_.bias) {
        args.emplace(DNNL_ARG_BIAS, memory(bias_plain_, cpu_engine(), const_cast<float*>(bias)));
      }
      add_scratchpad(forward_pd_, &args);
      forward_->primitive.execute(stream_, args);
    });
  }

  void backward(const float* bottom, const float* top_diff, const float* weights,
                float* weight_diff, float* bias_diff, float* bottom_diff) override {
    run([&] {
      if (!backward_) backward_.emplace(this);
      Backward& pass = *backward_;
      const bool same_top_diff =
          backward_weights_pd_.diff_dst_desc() == backward_data_pd_.diff_dst_desc();
      if (weight_diff != nullptr || (bias_diff != nullptr && shape_.bias)) {
        std::unordered_map<int, memory> args = {
            {DNNL_ARG_SRC, pass.src.in(bottom, stream_)},
            {DNNL_ARG_DIFF_DST, pass.weights_top_diff.in(top_diff, stream_)},
            {DNNL_ARG_DIFF_WEIGHTS, pass.weight_diff.out(weight_diff)}};
        if (shape_.bias) args.emplace(DNNL_ARG_DIFF_BIAS, pass.bias_diff->out(bias_diff));
        add_scratchpad(backward_weights_pd_, &args);
        pass.weights_primitive.execute(stream_, args);
        pass.weight_diff.finish(stream_);
        if (shape_.bias) pass.bias_diff->finish(stream_);
      }
      if (bottom_diff == nullptr) return;
      // The weight pass's bf16 copy of top_diff serves here when the layouts
      // agree (it is still in its scratch buffer).
      const memory& diff_dst = same_top_diff && (weight_diff != nullptr || bias_diff != nullptr)
                                   ? pass.weights_top_diff.last_in()
                                   : pass.data_top_diff.in(top_diff, stream_);
      std::unordered_map<int, memory> data_args = {
          {DNNL_ARG_DIFF_DST, diff_dst},
          {DNNL_ARG_WEIGHTS, bf16_weights(weights)},
          {DNNL_ARG_DIFF_SRC, memory(src_plain_, cpu_engine(), bottom_diff)}};
      add_scratchpad(backward_data_pd_, &data_args);
      pass.data_primitive.execute(stream_, data_args);
    });
  }

 private:
  std::array<std::string, 3> kernels() const {
    return {forward_pd_.impl_info_str(), backward_data_pd_.impl_info_str(),
            backward_weights_pd_.impl_info_str()};
  }

  struct Forward {
    explicit Forward(OnednnBfloat16InnerProduct* e)
        : primitive(e->forward_pd_),
          src(e->src_plain_, e->forward_pd_.src_desc(), kSourceRole),
          weights(e->forward_pd_.weights_desc(), cpu_engine()),
          to_bf16(dnnl::reorder::primitive_desc(cpu_engine(), e->weights_plain_, cpu_engine(),
                                                e->forward_pd_.weights_desc())) {}
    dnnl::inner_product_forward primitive;
    Boundary src;
    memory weights;  // the layer's own: it lives on until the backward pass
    dnnl::reorder to_bf16;
  };

  // The weights in bf16, in the forward kernel's layout, kept for the
  // backward pass that follows: the gradient is that of the product forward
  // computed, and a fully connected layer's weights are what its passes
  // stream most (AlexNet's fc6: 151 MB in fp32, read once here instead of
  // once per pass).
  void make_bf16_weights(const float* weights) {
    if (!forward_) forward_.emplace(this);
    memory plain(weights_plain_, cpu_engine(), const_cast<float*>(weights));
    forward_->to_bf16.execute(stream_, plain, forward_->weights);
    weights_in_bf16_ = weights;
  }
  // Those of the last forward pass, when it multiplied these weights.
  const memory& bf16_weights(const float* weights) {
    if (!forward_ || weights_in_bf16_ != weights) make_bf16_weights(weights);
    return forward_->weights;
  }
  struct Backward {
    explicit Backward(OnednnBfloat16InnerProduct* e)
        : data_primitive(e->backward_data_pd_),
          weights_primitive(e->backward_weights_pd_),
          src(e->src_plain_, e->backward_weights_pd_.src_desc(), kSourceRole),
          weights_top_diff(e->dst_plain_, e->backward_weights_pd_.diff_dst_desc(),
                           kDestinationRole),
          data_top_diff(e->dst_plain_, e->backward_data_pd_.diff_dst_desc(), kDestinationRole),
          weight_diff(e->weights_plain_, e->backward_weights_pd_.diff_weights_desc(),
                      kWeightDiffRole, /*accumulate=*/true) {
      if (e->shape_.bias) {
        bias_diff.emplace(e->bias_plain_, e->backward_weights_pd_.diff_bias_desc(), kBiasDiffRole,
                          /*accumulate=*/true);
      }
    }
    dnnl::inner_product_backward_data data_primitive;
    dnnl::inner_product_backward_weights weights_primitive;
    Boundary src, weights_top_diff, data_top_diff, weight_diff;
    std::optional<Boundary> bias_diff;
  };

  template <typename Body>
  void run(Body body) {
    try {
      body();
      stream_.wait();
    } catch (const dnnl::error& error) {
      throw Error(detail::concat("oneDNN bf16 inner product (", shape_.rows, " x ", shape_.inputs,
                                 " -> ", shape_.outputs, ") failed: ", error.what()));
    }
  }

  InnerProductShape shape_;
  dnnl::stream stream_;
  memory::desc src_plain_, dst_plain_, weights_plain_, bias_plain_;
  dnnl::inner_product_forward::primitive_desc forward_pd_;
  dnnl::inner_product_backward_data::primitive_desc backward_data_pd_;
  dnnl::inner_product_backward_weights::primitive_desc backward_weights_pd_;
  std::optional<Forward> forward_;
  std::optional<Backward> backward_;
  const float* weights_in_bf16_ = nullptr;  // what forward_->weights holds
};

}  // namespace

std::unique_ptr<Bfloat16InnerProduct> make_bfloat16_inner_product(const InnerProductShape& shape,
                                                                  std::string* why_not) {
  return make_engine_or_say_why_not<OnednnBfloat16InnerProduct>(why_not, "bf16 inner product",
                                                                shape);
}

}  // namespace xtrain

#else  // !XTRAIN_HAVE_ONEDNN

namespace xtrain {

std::unique_ptr<Bfloat16InnerProduct> make_bfloat16_inner_product(const InnerProductShape&,
                                                                  std::string* why_not) {
  *why_not = "this build of xtrain has no oneDNN";
  return nullptr;
}

}  // namespace xtrain

#endif
