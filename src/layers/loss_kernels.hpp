// CUDA launchers of the loss layers and Accuracy. Each applies the functors
// of src/layers/loss_ops.hpp that the layer's CPU loop also calls. All array
// pointers are device pointers; everything runs on the calling thread's
// stream. A launcher that returns LossTotals waits for them; `scratch` is
// device memory of at least sizeof(LossTotals) bytes that the caller owns.
// Compiled only in CUDA builds.
#pragma once

#include <cstddef>

namespace xtrain::cuda {

struct LossTotals {
  float sum = 0;                   // of the counted positions' losses
  unsigned long long counted = 0;  // positions not ignored
  long long first_invalid = -1;    // position of the first invalid label, or -1
};
// The size of `scratch`, in floats (a layer keeps it as a Blob).
constexpr int kLossScratchFloats = 8;
static_assert(sizeof(LossTotals) <= kLossScratchFloats * sizeof(float));

// SoftmaxWithLoss over prob (outer, classes, inner) with one label per
// (outer, inner) position: sums SoftmaxLossTerm of each labelled position.
LossTotals softmax_loss_forward(const float* prob, const float* labels, std::size_t outer,
                                int classes, std::size_t inner, bool has_ignore_label,
                                int ignore_label, void* scratch);
// dscores = SoftmaxLossGradient{scale}(p, c, label) everywhere (labels checked).
void softmax_loss_backward(const float* prob, const float* labels, float* dscores,
                           std::size_t outer, int classes, std::size_t inner, bool has_ignore_label,
                           int ignore_label, float scale);

// Accuracy over scores (outer, classes, inner): sum = the positions whose
// label is in_top_k, counted = the labelled positions. With per_class
// (device array of `classes`), per_class[c] = hits / positions of class c (0
// for a class never seen).
LossTotals accuracy_forward(const float* scores, const float* labels, std::size_t outer,
                            int classes, std::size_t inner, unsigned top_k, bool has_ignore_label,
                            int ignore_label, float* per_class, void* scratch);

// The first of `positions` labels that is not a class in [0, classes) (no
// ignore label), or -1; waits for the answer.
long long first_invalid_label(const float* labels, std::size_t positions, int classes,
                              void* scratch);

// SigmoidCrossEntropyLoss: sum = the SigmoidCrossEntropyTerm of every counted
// (not ignored) score, first_invalid = the first target outside [0, 1].
LossTotals sigmoid_cross_entropy_forward(const float* x, const float* target, std::size_t count,
                                         bool has_ignore_label, int ignore_label, void* scratch);
void sigmoid_cross_entropy_backward(const float* probability, const float* target, float* dx,
                                    std::size_t count, bool has_ignore_label, int ignore_label,
                                    float scale);

// HingeLoss over scores (num, classes) with valid labels.
void hinge_margins(const float* scores, const float* labels, float* margins, std::size_t num,
                   int classes);
void hinge_backward(const float* margins, const float* labels, float* dx, std::size_t num,
                    int classes, float scale, bool l2);

// MultinomialLogisticLoss over probabilities (num, classes): sum = the
// MultinomialLogisticTerm at each label; backward writes the label entries
// (the caller zeroes dx first).
LossTotals multinomial_logistic_forward(const float* probability, const float* labels,
                                        std::size_t num, int classes, void* scratch);
void multinomial_logistic_backward(const float* probability, const float* labels, float* dx,
                                   std::size_t num, int classes, float scale);

// ContrastiveLoss over differences a - b (num, channels).
void contrastive_distances(const float* difference, float* squared_distance, std::size_t num,
                           int channels);
LossTotals contrastive_forward(const float* squared_distance, const float* similar, std::size_t num,
                               float margin, bool legacy, void* scratch);
void contrastive_backward(const float* squared_distance, const float* similar,
                          const float* difference, float* dx, std::size_t num, int channels,
                          float margin, bool legacy, float alpha);

// InfogainLoss over prob (outer, classes, inner) and H (classes x classes):
// sum = the InfogainTerms of every counted position (the loss is -sum / D).
LossTotals infogain_forward(const float* prob, const float* labels, const float* infogain,
                            std::size_t outer, int classes, std::size_t inner,
                            bool has_ignore_label, int ignore_label, void* scratch);
// row_sums[l] = sum_k H[l, k] (in order); dx = InfogainGradient * scale, 0 where ignored.
void infogain_backward(const float* prob, const float* labels, const float* infogain,
                       float* row_sums, float* dx, std::size_t outer, int classes,
                       std::size_t inner, bool has_ignore_label, int ignore_label, float scale);

}  // namespace xtrain::cuda
