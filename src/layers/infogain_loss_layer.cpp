// InfogainLoss: a softmax loss weighted by an information-gain matrix H
// (K x K), Caffe 1.0's InfogainLossLayer, which applies the softmax itself.
// Scores x are (outer, K, inner) around infogain_loss_param.axis (default 1);
// labels hold outer * inner integers in [0, K). With p = softmax(x) over that
// axis and L the positions whose label is not loss_param.ignore_label:
//   loss = -1/D * sum_{(o,i) in L} sum_k H[l, k] log(max(p[o, k, i], 1e-20)),
//          l = label(o, i)
//   dE/dx[o, k, i] = w/D * (p[o, k, i] * sum_k' H[l, k'] - H[l, k])  on L, else 0
// (w: the loss weight). D follows loss_param.normalization (default VALID; the
// legacy `normalize` flag is refused, as in Caffe). H comes from
// infogain_loss_param.source (a binary BlobProto) or, if given, a third bottom;
// with H = identity this is SoftmaxWithLoss. An optional second top returns p.
// Neither the labels nor H get a gradient.
#include <algorithm>
#include <cmath>
#include <memory>

#include "layers/builtin_layers.hpp"
#include "layers/loss_layer.hpp"
#include "layers/loss_ops.hpp"
#include "layers/loss_softmax.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/loss_kernels.hpp"
#endif
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

class InfogainLossLayer : public LossLayer {
 public:
  using LossLayer::LossLayer;
  const char* type() const override { return "InfogainLoss"; }
  int exact_num_bottom_blobs() const override { return -1; }
  int min_bottom_blobs() const override { return 2; }
  int max_bottom_blobs() const override { return 3; }
  int exact_num_top_blobs() const override { return -1; }
  int min_top_blobs() const override { return 1; }
  int max_top_blobs() const override { return 2; }
  bool allow_force_backward(int bottom_index) const override { return bottom_index == 0; }

  void loss_setup(const BlobVec& bottom, const BlobVec&) override {
    const LossParameter& loss = param_.loss_param();
    XTRAIN_CHECK(!loss.has_normalize(), where(),
                 ": loss_param.normalize is not supported by InfogainLoss (as in Caffe); use "
                 "loss_param.normalization (VALID, FULL, BATCH_SIZE or NONE) instead");
    normalization_ = loss.normalization();
    has_ignore_label_ = loss.has_ignore_label();
    ignore_label_ = loss.ignore_label();

    const int axis = param_.infogain_loss_param().axis();
    softmax_.setup(param_, device(), bottom[0], &axis);

    if (bottom.size() < 3) read_infogain_file();
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    reshape_loss_top(bottom, top);
    softmax_.reshape(device(), bottom[0], *bottom[1], where(), bottom_name(1));
    const int axis = softmax_.axis();
    outer_num_ = softmax_.outer_num();
    inner_num_ = softmax_.inner_num();
    classes_ = softmax_.classes();
    const Blob& infogain = matrix(bottom);
    const std::size_t expected = static_cast<std::size_t>(classes_) * classes_;
    XTRAIN_CHECK(infogain.count() == expected, where(), ": the infogain matrix H from ",
                 matrix_origin(bottom), " has shape ", infogain.shape_string(), " (",
                 infogain.count(), " values) but the scores ", bottom[0]->shape_string(), " have ",
                 classes_, " classes on axis ", axis, ", so H must be ", classes_, " x ", classes_,
                 " (", expected, " values)");
    row_sums_.resize(classes_);
    if (top.size() >= 2) softmax_.share_as_top(top[1]);
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    softmax_.forward();
    const float* probability = softmax_.probability().cpu_data();
    const float* labels = bottom[1]->cpu_data();
    const float* infogain = matrix(bottom).cpu_data();
    const std::size_t sample_stride = static_cast<std::size_t>(classes_) * inner_num_;
    float loss = 0;
    std::size_t valid = 0;
    for (std::size_t o = 0; o < outer_num_; ++o) {
      for (std::size_t i = 0; i < inner_num_; ++i) {
        const std::size_t position = o * inner_num_ + i;
        if (is_ignored(labels[position])) continue;
        const float* row =
            infogain + checked_label(labels[position], classes_, position) * classes_;
        const float* p = probability + o * sample_stride + i;
        const ops::InfogainTerm term;
        for (int k = 0; k < classes_; ++k) loss -= term(row[k], p[k * inner_num_]);
        ++valid;
      }
    }
    top[0]->mutable_cpu_data()[0] =
        loss / loss_normalizer(normalization_, outer_num_, inner_num_, valid);
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    refuse_gradient_to(propagate_down, 1, "labels");
    refuse_gradient_to(propagate_down, 2, "infogain matrix");
    if (propagate_down.empty() || !propagate_down[0]) return;
    const float* probability = softmax_.probability().cpu_data();
    const float* labels = bottom[1]->cpu_data();
    const float* infogain = matrix(bottom).cpu_data();
    // H may be a bottom that changes between passes, so sum its rows each time.
    for (int row = 0; row < classes_; ++row) {
      float sum = 0;
      for (int k = 0; k < classes_; ++k) sum += infogain[row * classes_ + k];
      row_sums_[row] = sum;
    }
    const std::size_t sample_stride = static_cast<std::size_t>(classes_) * inner_num_;
    float* diff = bottom[0]->mutable_cpu_diff();
    std::size_t valid = 0;
    for (std::size_t o = 0; o < outer_num_; ++o) {
      for (std::size_t i = 0; i < inner_num_; ++i) {
        const std::size_t position = o * inner_num_ + i;
        const std::size_t offset = o * sample_stride + i;
        if (is_ignored(labels[position])) {
          for (int k = 0; k < classes_; ++k) diff[offset + k * inner_num_] = 0;
          continue;
        }
        const int label = checked_label(labels[position], classes_, position);
        const float* row = infogain + label * classes_;
        const ops::InfogainGradient gradient;
        for (int k = 0; k < classes_; ++k) {
          const std::size_t at = offset + k * inner_num_;
          diff[at] = gradient(probability[at], row_sums_[label], row[k]);
        }
        ++valid;
      }
    }
    const float scale =
        top[0]->cpu_diff()[0] / loss_normalizer(normalization_, outer_num_, inner_num_, valid);
    const std::size_t count = bottom[0]->count();
    for (std::size_t j = 0; j < count; ++j) diff[j] *= scale;
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    softmax_.forward();
    const cuda::LossTotals totals = cuda::infogain_forward(
        softmax_.probability().gpu_data(), bottom[1]->gpu_data(), matrix(bottom).gpu_data(),
        outer_num_, classes_, inner_num_, has_ignore_label_, ignore_label_, gpu_loss_scratch());
    if (totals.first_invalid >= 0) {
      const std::size_t position = static_cast<std::size_t>(totals.first_invalid);
      checked_label(bottom[1]->cpu_data()[position], classes_, position);
    }
    valid_ = static_cast<std::size_t>(totals.counted);
    // The CPU pass subtracts each term from the running loss.
    top[0]->mutable_cpu_data()[0] =
        -totals.sum / loss_normalizer(normalization_, outer_num_, inner_num_, valid_);
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    refuse_gradient_to(propagate_down, 1, "labels");
    refuse_gradient_to(propagate_down, 2, "infogain matrix");
    if (propagate_down.empty() || !propagate_down[0]) return;
    // The labels were checked and counted by forward_gpu.
    row_sums_gpu_.reshape(std::vector<int>{classes_});
    const float scale =
        top[0]->cpu_diff()[0] / loss_normalizer(normalization_, outer_num_, inner_num_, valid_);
    cuda::infogain_backward(softmax_.probability().gpu_data(), bottom[1]->gpu_data(),
                            matrix(bottom).gpu_data(), row_sums_gpu_.mutable_gpu_data(),
                            bottom[0]->mutable_gpu_diff(), outer_num_, classes_, inner_num_,
                            has_ignore_label_, ignore_label_, scale);
  }

  std::size_t valid_ = 0;  // labelled positions of the last forward_gpu
  Blob row_sums_gpu_;      // sum_k H[l, k]
#endif

 private:
  void read_infogain_file() {
    const InfogainLossParameter& infogain = param_.infogain_loss_param();
    XTRAIN_CHECK(infogain.has_source() && !infogain.source().empty(), where(),
                 ": no infogain matrix H: set infogain_loss_param.source to a binary BlobProto "
                 "file (.binaryproto) holding the K x K matrix, or give H as a third bottom");
    BlobProto proto;
    try {
      read_proto_from_binary_file(infogain.source(), &proto);
      infogain_.from_proto(proto);
    } catch (const Error& error) {
      throw Error(where() +
                  ": cannot read the infogain matrix H from infogain_loss_param.source '" +
                  infogain.source() +
                  "' (expected a binary BlobProto holding a K x K matrix): " + error.what());
    }
  }

  const Blob& matrix(const BlobVec& bottom) const {
    return bottom.size() >= 3 ? *bottom[2] : infogain_;
  }

  std::string matrix_origin(const BlobVec& bottom) const {
    if (bottom.size() >= 3) return bottom_name(2);
    return "'" + param_.infogain_loss_param().source() + "'";
  }

  // Caffe compares the label truncated to int with the ignore label.
  bool is_ignored(float raw_label) const {
    return has_ignore_label_ && label_equals(raw_label, ignore_label_);
  }

  LossSoftmax softmax_;
  Blob infogain_;  // H from the source file
  std::vector<float> row_sums_;
  bool has_ignore_label_ = false;
  int ignore_label_ = 0;
  LossParameter::NormalizationMode normalization_ = LossParameter::VALID;
  std::size_t outer_num_ = 0;
  std::size_t inner_num_ = 0;
  int classes_ = 0;
};

}  // namespace

void register_infogain_loss_layer(LayerRegistry& registry) {
  add_layer<InfogainLossLayer>(registry, "InfogainLoss");
}

}  // namespace xtrain
