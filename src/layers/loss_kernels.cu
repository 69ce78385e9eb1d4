// The kernels of the loss layers: a per-position term (src/layers/loss_ops.hpp)
// summed by loss_reduce.cuh, Accuracy's per-class counts, and elementwise
// gradients.
#include "layers/loss_kernels.hpp"
#include "layers/loss_reduce.cuh"
#include "layers/loss_ops.hpp"

namespace xtrain::cuda {
namespace {

// The loss of position p, labelled rule(labels[p]): invalid for a label the
// rule rejects, nothing for an ignored one, else term(p, label), counted.
template <typename Term>
struct LabelledPosition {
  const float* labels;
  ops::LabelRule rule;
  Term term;
  __device__ PositionLoss operator()(std::size_t p) const {
    PositionLoss loss;
    const int label = rule(labels[p]);
    if (label == ops::kInvalidLabel) {
      loss.invalid = true;
    } else if (label != ops::kIgnoredLabel) {
      loss.value = term(p, label);
      loss.counted = true;
    }
    return loss;
  }
};

// Position p = o * inner + i of a (outer, classes, inner) array of
// probabilities; the label's probability is at (o * classes + label) * inner + i.
struct SoftmaxLossAt {
  const float* prob;
  int classes;
  std::size_t inner;
  __device__ float operator()(std::size_t p, int label) const {
    const std::size_t o = p / inner;
    const std::size_t i = p % inner;
    return static_cast<float>(ops::SoftmaxLossTerm{}(prob[(o * classes + label) * inner + i]));
  }
};

__global__ void softmax_loss_backward_kernel(std::size_t n, const float* prob, const float* labels,
                                             int classes, std::size_t inner, ops::LabelRule rule,
                                             ops::SoftmaxLossGradient gradient, float* dscores) {
  for (std::size_t j = grid_start(); j < n; j += grid_stride()) {
    // j = (o * classes + c) * inner + i
    const std::size_t i = j % inner;
    const std::size_t oc = j / inner;
    const int c = static_cast<int>(oc % classes);
    const std::size_t o = oc / classes;
    dscores[j] = gradient(prob[j], c, rule(labels[o * inner + i]));
  }
}

// 1 when the label is among the top_k scores of position p, else 0.
struct AccuracyHitAt {
  const float* scores;
  int classes;
  std::size_t inner;
  unsigned top_k;
  __device__ float operator()(std::size_t p, int label) const {
    const float* column = scores + (p / inner) * classes * inner + p % inner;
    return ops::in_top_k(column, inner, classes, label, top_k) ? 1.0f : 0.0f;
  }
};

// Per-class accuracy counts, over the positions' tiles of the plan
// (1, 1, positions): for each labelled position, seen[label] += 1 and, when
// the label is in_top_k, hits[label] += 1. Integer counts: whatever order the
// blocks add them in, the totals are the same, so atomics keep them
// deterministic. With few classes a block counts in shared memory first
// (local: 2 * classes counters, per-block counts < 2^32) and adds its nonzero
// counts to the device's; with many it adds each position directly.
struct CountClassHits {
  const float* scores;
  const float* labels;
  int classes;
  std::size_t inner;
  unsigned top_k;
  ops::LabelRule rule;
  unsigned* local;
  unsigned long long* seen;
  unsigned long long* hits;
  __device__ void operator()(std::size_t, std::size_t p) const {
    const int label = rule(labels[p]);
    if (label < 0) return;  // ignored, or invalid (reported by the totals)
    const float* column = scores + (p / inner) * classes * inner + p % inner;
    const bool hit = ops::in_top_k(column, inner, classes, label, top_k);
    if (local) {
      atomicAdd(&local[label], 1u);
      if (hit) atomicAdd(&local[classes + label], 1u);
    } else {
      atomicAdd(&seen[label], 1ull);
      if (hit) atomicAdd(&hits[label], 1ull);
    }
  }
};

constexpr int kSharedCountClasses = 4096;  // 32 KiB of shared counters

__global__ void __launch_bounds__(reduction::kThreads)
    count_class_hits_kernel(reduction::ChannelTiling tiling, CountClassHits count,
                            bool count_in_shared) {
  extern __shared__ unsigned local_counts[];  // 2 * classes when count_in_shared
  const unsigned slots = count_in_shared ? 2u * static_cast<unsigned>(count.classes) : 0u;
  count.local = count_in_shared ? local_counts : nullptr;
  const std::size_t blocks = tiling.block_count();
  for (std::size_t block = blockIdx.x; block < blocks; block += gridDim.x) {
    for (unsigned i = threadIdx.x; i < slots; i += blockDim.x) local_counts[i] = 0;
    __syncthreads();
    reduction::visit_thread_values(tiling, tiling.tile(block), threadIdx.x, count);
    __syncthreads();
    for (unsigned c = threadIdx.x; c < slots / 2; c += blockDim.x) {
      const unsigned seen = local_counts[c];
      const unsigned hits = local_counts[slots / 2 + c];
      if (seen != 0) atomicAdd(&count.seen[c], static_cast<unsigned long long>(seen));
      if (hits != 0) atomicAdd(&count.hits[c], static_cast<unsigned long long>(hits));
    }
    __syncthreads();  // the counts are read before the next block zeroes them
  }
}

// per_class[c] = hits / seen, 0 for a class never seen (the CPU's
// class_accuracy[c] / class_counts_[c], exact while the counts stay below
// 2^24 in float).
__global__ void class_accuracy_kernel(int classes, const unsigned long long* seen,
                                      const unsigned long long* hits, float* per_class) {
  XTRAIN_GRID_STRIDE_LOOP(c, classes) {
    per_class[c] = seen[c] == 0 ? 0.0f : static_cast<float>(hits[c]) / static_cast<float>(seen[c]);
  }
}

void per_class_accuracy(const float* scores, const float* labels, std::size_t positions,
                        int classes, std::size_t inner, unsigned top_k, ops::LabelRule rule,
                        float* per_class) {
  ReductionScratch counts(2 * static_cast<std::size_t>(classes) * sizeof(unsigned long long));
  auto* seen = static_cast<unsigned long long*>(counts.data());
  unsigned long long* hits = seen + classes;
  XTRAIN_CUDA_CHECK(
      cudaMemsetAsync(seen, 0, 2 * static_cast<std::size_t>(classes) * sizeof(*seen), stream()));
  if (positions > 0) {
    const reduction::ChannelTiling tiling = reduction::ChannelTiling::plan(1, 1, positions);
    const bool count_in_shared =
        classes <= kSharedCountClasses && tiling.tile_values <= 0xffffffffu;
    const std::size_t shared_bytes =
        count_in_shared ? 2 * static_cast<std::size_t>(classes) * sizeof(unsigned) : 0;
    count_class_hits_kernel<<<reduction_grid(tiling.block_count()), reduction::kThreads,
                              shared_bytes, stream()>>>(
        tiling, CountClassHits{scores, labels, classes, inner, top_k, rule, nullptr, seen, hits},
        count_in_shared);
    check_launch();
  }
  class_accuracy_kernel<<<blocks_for(classes), kThreadsPerBlock, 0, stream()>>>(classes, seen, hits,
                                                                                per_class);
  check_launch();
}

struct LabelCheck {
  const float* labels;
  ops::LabelRule rule;
  __device__ PositionLoss operator()(std::size_t p) const {
    PositionLoss check;
    check.invalid = rule(labels[p]) == ops::kInvalidLabel;
    return check;
  }
};

struct SigmoidCrossEntropyPosition {
  const float* x;
  const float* target;
  bool has_ignore_label;
  int ignore_label;
  __device__ PositionLoss operator()(std::size_t i) const {
    PositionLoss loss;
    if (has_ignore_label && ops::truncates_to(target[i], ignore_label)) return loss;
    if (!ops::sigmoid_target_valid(target[i])) {
      loss.invalid = true;
      return loss;
    }
    loss.value = ops::SigmoidCrossEntropyTerm{}(x[i], target[i]);
    loss.counted = true;
    return loss;
  }
};

__global__ void sigmoid_cross_entropy_backward_kernel(std::size_t n, const float* probability,
                                                      const float* target, bool has_ignore_label,
                                                      int ignore_label,
                                                      ops::SigmoidCrossEntropyGradient gradient,
                                                      float* dx) {
  for (std::size_t i = grid_start(); i < n; i += grid_stride()) {
    const bool ignored = has_ignore_label && ops::truncates_to(target[i], ignore_label);
    dx[i] = gradient(probability[i], target[i], ignored);
  }
}

// Element j = n * classes + c of the (num, classes) scores.
__global__ void hinge_margins_kernel(std::size_t count, int classes, const float* scores,
                                     const float* labels, float* margins) {
  const ops::HingeMargin margin;
  for (std::size_t j = grid_start(); j < count; j += grid_stride()) {
    const int label = static_cast<int>(labels[j / classes]);
    margins[j] = margin(scores[j], static_cast<int>(j % classes) == label);
  }
}

__global__ void hinge_backward_kernel(std::size_t count, int classes, const float* margins,
                                      const float* labels, ops::HingeGradient gradient, float* dx) {
  for (std::size_t j = grid_start(); j < count; j += grid_stride()) {
    const int label = static_cast<int>(labels[j / classes]);
    dx[j] = gradient(margins[j], static_cast<int>(j % classes) == label);
  }
}

// The label's probability of sample n of the (num, classes) probabilities.
struct MultinomialLogisticAt {
  const float* probability;
  int classes;
  __device__ float operator()(std::size_t n, int label) const {
    return ops::MultinomialLogisticTerm{}(probability[n * classes + label]);
  }
};

__global__ void multinomial_logistic_backward_kernel(std::size_t num, int classes,
                                                     const float* probability, const float* labels,
                                                     ops::MultinomialLogisticGradient gradient,
                                                     float* dx) {
  for (std::size_t n = grid_start(); n < num; n += grid_stride()) {
    const std::size_t at = n * classes + static_cast<std::size_t>(labels[n]);
    dx[at] = gradient(probability[at]);
  }
}

// One thread per pair, the channels in order.
__global__ void contrastive_distances_kernel(std::size_t num, int channels, const float* difference,
                                             float* squared_distance) {
  for (std::size_t n = grid_start(); n < num; n += grid_stride()) {
    const float* row = difference + n * channels;
    float d = 0;
    for (int c = 0; c < channels; ++c) d += row[c] * row[c];
    squared_distance[n] = d;
  }
}

struct ContrastivePosition {
  const float* squared_distance;
  const float* similar;
  ops::ContrastiveTerm term;
  __device__ PositionLoss operator()(std::size_t n) const {
    PositionLoss loss;
    loss.value = term(squared_distance[n], ops::contrastive_similar(similar[n]));
    loss.counted = true;
    return loss;
  }
};

__global__ void contrastive_backward_kernel(std::size_t count, int channels,
                                            const float* squared_distance, const float* similar,
                                            const float* difference,
                                            ops::ContrastiveGradientScale gradient_scale,
                                            float* dx) {
  for (std::size_t j = grid_start(); j < count; j += grid_stride()) {
    const std::size_t n = j / channels;
    dx[j] =
        gradient_scale(squared_distance[n], ops::contrastive_similar(similar[n])) * difference[j];
  }
}

// sum over k of InfogainTerm(H[label][k], prob of class k at position p).
struct InfogainAt {
  const float* prob;
  const float* infogain;
  int classes;
  std::size_t inner;
  __device__ float operator()(std::size_t p, int label) const {
    const float* row = infogain + static_cast<std::size_t>(label) * classes;
    const float* column = prob + (p / inner) * classes * inner + p % inner;
    const ops::InfogainTerm term;
    float sum = 0;
    for (int k = 0; k < classes; ++k) sum += term(row[k], column[k * inner]);
    return sum;
  }
};

__global__ void infogain_row_sums_kernel(int classes, const float* infogain, float* row_sums) {
  for (std::size_t row = grid_start(); row < static_cast<std::size_t>(classes);
       row += grid_stride()) {
    float sum = 0;
    for (int k = 0; k < classes; ++k) sum += infogain[row * classes + k];
    row_sums[row] = sum;
  }
}

// Element j = (o * classes + k) * inner + i.
__global__ void infogain_backward_kernel(std::size_t n, int classes, std::size_t inner,
                                         const float* prob, const float* labels,
                                         const float* infogain, const float* row_sums,
                                         ops::LabelRule rule, float scale, float* dx) {
  const ops::InfogainGradient gradient;
  for (std::size_t j = grid_start(); j < n; j += grid_stride()) {
    const std::size_t i = j % inner;
    const std::size_t ok = j / inner;
    const int k = static_cast<int>(ok % classes);
    const std::size_t o = ok / classes;
    const int label = rule(labels[o * inner + i]);
    const float value = label < 0
                            ? 0.0f
                            : gradient(prob[j], row_sums[label],
                                       infogain[static_cast<std::size_t>(label) * classes + k]);
    dx[j] = value * scale;
  }
}

}  // namespace

LossTotals infogain_forward(const float* prob, const float* labels, const float* infogain,
                            std::size_t outer, int classes, std::size_t inner,
                            bool has_ignore_label, int ignore_label, void* scratch) {
  const LabelledPosition<InfogainAt> term{labels,
                                          ops::LabelRule{has_ignore_label, ignore_label, classes},
                                          InfogainAt{prob, infogain, classes, inner}};
  return sum_positions(outer * inner, term, scratch);
}

void infogain_backward(const float* prob, const float* labels, const float* infogain,
                       float* row_sums, float* dx, std::size_t outer, int classes,
                       std::size_t inner, bool has_ignore_label, int ignore_label, float scale) {
  if (classes <= 0) return;
  infogain_row_sums_kernel<<<blocks_for(classes), kThreadsPerBlock, 0, stream()>>>(
      classes, infogain, row_sums);
  check_launch();
  const std::size_t n = outer * static_cast<std::size_t>(classes) * inner;
  launch_for(n, stream(), infogain_backward_kernel, n, classes, inner, prob, labels, infogain,
             row_sums, ops::LabelRule{has_ignore_label, ignore_label, classes}, scale, dx);
}

long long first_invalid_label(const float* labels, std::size_t positions, int classes,
                              void* scratch) {
  return sum_positions(positions, LabelCheck{labels, ops::LabelRule{false, 0, classes}}, scratch)
      .first_invalid;
}

LossTotals sigmoid_cross_entropy_forward(const float* x, const float* target, std::size_t count,
                                         bool has_ignore_label, int ignore_label, void* scratch) {
  return sum_positions(
      count, SigmoidCrossEntropyPosition{x, target, has_ignore_label, ignore_label}, scratch);
}

void sigmoid_cross_entropy_backward(const float* probability, const float* target, float* dx,
                                    std::size_t count, bool has_ignore_label, int ignore_label,
                                    float scale) {
  launch_for(count, stream(), sigmoid_cross_entropy_backward_kernel, count, probability, target,
             has_ignore_label, ignore_label, ops::SigmoidCrossEntropyGradient{scale}, dx);
}

void hinge_margins(const float* scores, const float* labels, float* margins, std::size_t num,
                   int classes) {
  const std::size_t count = num * static_cast<std::size_t>(classes);
  launch_for(count, stream(), hinge_margins_kernel, count, classes, scores, labels, margins);
}

void hinge_backward(const float* margins, const float* labels, float* dx, std::size_t num,
                    int classes, float scale, bool l2) {
  const std::size_t count = num * static_cast<std::size_t>(classes);
  launch_for(count, stream(), hinge_backward_kernel, count, classes, margins, labels,
             ops::HingeGradient{scale, l2}, dx);
}

LossTotals multinomial_logistic_forward(const float* probability, const float* labels,
                                        std::size_t num, int classes, void* scratch) {
  // Without an ignore_label every label is counted or invalid.
  const LabelledPosition<MultinomialLogisticAt> term{labels, ops::LabelRule{false, 0, classes},
                                                     MultinomialLogisticAt{probability, classes}};
  return sum_positions(num, term, scratch);
}

void multinomial_logistic_backward(const float* probability, const float* labels, float* dx,
                                   std::size_t num, int classes, float scale) {
  launch_for(num, stream(), multinomial_logistic_backward_kernel, num, classes, probability, labels,
             ops::MultinomialLogisticGradient{scale}, dx);
}

void contrastive_distances(const float* difference, float* squared_distance, std::size_t num,
                           int channels) {
  launch_for(num, stream(), contrastive_distances_kernel, num, channels, difference,
             squared_distance);
}

LossTotals contrastive_forward(const float* squared_distance, const float* similar, std::size_t num,
                               float margin, bool legacy, void* scratch) {
  return sum_positions(
      num, ContrastivePosition{squared_distance, similar, ops::ContrastiveTerm{margin, legacy}},
      scratch);
}

void contrastive_backward(const float* squared_distance, const float* similar,
                          const float* difference, float* dx, std::size_t num, int channels,
                          float margin, bool legacy, float alpha) {
  const std::size_t count = num * static_cast<std::size_t>(channels);
  launch_for(count, stream(), contrastive_backward_kernel, count, channels, squared_distance,
             similar, difference, ops::ContrastiveGradientScale{margin, legacy, alpha}, dx);
}

LossTotals accuracy_forward(const float* scores, const float* labels, std::size_t outer,
                            int classes, std::size_t inner, unsigned top_k, bool has_ignore_label,
                            int ignore_label, float* per_class, void* scratch) {
  const ops::LabelRule rule{has_ignore_label, ignore_label, classes};
  if (per_class && classes > 0) {
    per_class_accuracy(scores, labels, outer * inner, classes, inner, top_k, rule, per_class);
  }
  const LabelledPosition<AccuracyHitAt> hit{labels, rule,
                                            AccuracyHitAt{scores, classes, inner, top_k}};
  return sum_positions(outer * inner, hit, scratch);
}

LossTotals softmax_loss_forward(const float* prob, const float* labels, std::size_t outer,
                                int classes, std::size_t inner, bool has_ignore_label,
                                int ignore_label, void* scratch) {
  const LabelledPosition<SoftmaxLossAt> term{
      labels, ops::LabelRule{has_ignore_label, ignore_label, classes},
      SoftmaxLossAt{prob, classes, inner}};
  return sum_positions(outer * inner, term, scratch);
}

void softmax_loss_backward(const float* prob, const float* labels, float* dscores,
                           std::size_t outer, int classes, std::size_t inner, bool has_ignore_label,
                           int ignore_label, float scale) {
  const std::size_t n = outer * static_cast<std::size_t>(classes) * inner;
  launch_for(n, stream(), softmax_loss_backward_kernel, n, prob, labels, classes, inner,
             ops::LabelRule{has_ignore_label, ignore_label, classes},
             ops::SoftmaxLossGradient{scale}, dscores);
}

}  // namespace xtrain::cuda
