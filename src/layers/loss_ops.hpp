// The per-position math of the loss layers and Accuracy, shared by their CPU
// loops and CUDA kernels (src/layers/loss_kernels.cu):
//
//   LabelRule{ignore?, l_i, C}(raw)   = kIgnoredLabel if raw truncates to l_i (and
//                                       ignore_label is set), kInvalidLabel unless it
//                                       truncates to a class in [0, C), else that class
//   SoftmaxLossTerm(p)                = -ln(max(p, FLT_MIN))            (in double)
//   SoftmaxLossGradient{s}(p, c, l)   = s (p - [c == l]);  0 where l is ignored
//   EuclideanTerm(a, b)               = (a - b)^2
//   SigmoidCrossEntropyTerm(x, t)     = -(x (t - [x >= 0]) - ln(1 + e^(x - 2 x [x >= 0])))
//   SigmoidCrossEntropyGradient{s}(p, t) = s (p - t)   (p = sigmoid(x))
//   HingeMargin(x, t_is_class)        = max(0, 1 + x) with x negated for the label class
//   ...
// Labels are stored as floats; Caffe truncates them to int before comparing.
#pragma once

#include <cfloat>
#include <cmath>

#include "core/elementwise_ops.hpp"

namespace xtrain::ops {

constexpr int kIgnoredLabel = -1;
constexpr int kInvalidLabel = -2;

// Whether a float truncates to an int without overflow.
XTRAIN_HOST_DEVICE inline bool in_int_range(float value) {
  return value > -2147483648.0f && value < 2147483648.0f;
}

struct LabelRule {
  bool has_ignore_label;
  int ignore_label;
  int classes;
  XTRAIN_HOST_DEVICE int operator()(float raw_label) const {
    if (!in_int_range(raw_label)) return kInvalidLabel;
    const int label = static_cast<int>(raw_label);
    if (has_ignore_label && label == ignore_label) return kIgnoredLabel;
    return label >= 0 && label < classes ? label : kInvalidLabel;
  }
};

struct SoftmaxLossTerm {
  // max(p, FLT_MIN) as std::max computes it (a NaN p stays NaN).
  XTRAIN_HOST_DEVICE double operator()(float p) const {
    return -log(static_cast<double>(p < FLT_MIN ? FLT_MIN : p));
  }
};

struct SoftmaxLossGradient {
  float scale;
  // label: a class, or kIgnoredLabel.
  XTRAIN_HOST_DEVICE float operator()(float p, int c, int label) const {
    const float delta = label < 0 ? 0.0f : (c == label ? p - 1.0f : p);
    return delta * scale;
  }
};

}  // namespace xtrain::ops

namespace xtrain::ops {

// Accuracy: whether the true class `label` of one position is among the top_k
// scores, column[c * stride] for c in [0, classes). Caffe 1.0's rule: fewer
// than top_k OTHER classes score at least as high (ties count against).
// A nan score is no prediction: a nan true score is wrong, and a nan
// elsewhere counts as at least as high. (Compared with >=, every comparison
// with nan is false, so a diverged net's all-nan scores scored accuracy 1.)
XTRAIN_HOST_DEVICE inline bool in_top_k(const float* column, std::size_t stride, int classes,
                                        int label, unsigned top_k) {
  const float true_score = column[label * stride];
  if (true_score != true_score) return false;
  // Counts the true class too, hence the start at -1.
  long at_least_as_high = -1;
  for (int c = 0; c < classes && at_least_as_high < static_cast<long>(top_k); ++c) {
    at_least_as_high += !(column[c * stride] < true_score);
  }
  return at_least_as_high < static_cast<long>(top_k);
}

}  // namespace xtrain::ops

// ---------------------------------------------------------------------------
// The other loss layers. `scale` is always the loss weight over the
// normaliser, signed as the layer needs.
namespace xtrain::ops {

// std::max(0.0f, v), NaN included (gives 0), on both devices.
XTRAIN_HOST_DEVICE inline float max_zero_first(float v) { return 0.0f < v ? v : 0.0f; }
// std::max(v, floor), NaN included (gives NaN).
XTRAIN_HOST_DEVICE inline float max_floor_second(float v, float floor) {
  return v < floor ? floor : v;
}

// SigmoidCrossEntropyLoss, per score x with target t (Caffe's stable form):
//   loss term   = x (t - [x >= 0]) - ln(1 + e^(x - 2 x [x >= 0]))   (the loss subtracts it)
//   dx          = s (sigmoid(x) - t), 0 where t is ignored
struct SigmoidCrossEntropyTerm {
  XTRAIN_HOST_DEVICE float operator()(float x, float target) const {
    const float positive = static_cast<float>(x >= 0);
    return x * (target - positive) - logf(1 + expf(x - 2 * x * positive));
  }
};
XTRAIN_HOST_DEVICE inline bool sigmoid_target_valid(float target) {
  return target >= 0 && target <= 1;
}
struct SigmoidCrossEntropyGradient {
  float scale;
  XTRAIN_HOST_DEVICE float operator()(float probability, float target, bool ignored) const {
    return ignored ? 0.0f : scale * (probability - target);
  }
};
// Whether a target truncates to the ignore label (Caffe's comparison).
XTRAIN_HOST_DEVICE inline bool truncates_to(float value, int label) {
  return in_int_range(value) && static_cast<int>(value) == label;
}

// HingeLoss, per score s of class c for a sample of label l:
//   margin    = max(0, 1 + s) for c != l,  max(0, 1 - s) for c == l
//   gradient  = +-(L2: 2 w/N margin,  L1: w/N [margin > 0]), negative for c == l
//               (scale = 2 w/N for L2, w/N for L1)
struct HingeMargin {
  XTRAIN_HOST_DEVICE float operator()(float score, bool is_label) const {
    return max_zero_first(is_label ? 1 - score : 1 + score);
  }
};
struct HingeGradient {
  float scale;
  bool l2;
  XTRAIN_HOST_DEVICE float operator()(float margin, bool is_label) const {
    const float value = l2 ? scale * margin : (margin > 0 ? scale : 0.0f);
    return is_label ? -value : value;
  }
};

// MultinomialLogisticLoss, at the label's probability p:
//   loss term = ln(max(p, 1e-20))     (the loss subtracts it)
//   dp        = s / max(p, 1e-20)     (s = -w/N; 0 at the other classes)
constexpr float kMultinomialLogThreshold = 1e-20f;
struct MultinomialLogisticTerm {
  XTRAIN_HOST_DEVICE float operator()(float p) const {
    return logf(max_floor_second(p, kMultinomialLogThreshold));
  }
};
struct MultinomialLogisticGradient {
  float scale;
  XTRAIN_HOST_DEVICE float operator()(float p) const {
    return scale / max_floor_second(p, kMultinomialLogThreshold);
  }
};

// ContrastiveLoss, per pair with squared distance d:
//   loss term = d (similar),  max(margin - d, 0) (legacy),  max(margin - sqrt(d), 0)^2
//   da        = g * (a - b) with g = alpha (similar), -alpha [margin - d > 0] (legacy),
//               -alpha (margin - sqrt d) / (sqrt d + 1e-4) [margin - sqrt d > 0]
//   (alpha = +-w/N for a and b)
struct ContrastiveTerm {
  float margin;
  bool legacy;
  XTRAIN_HOST_DEVICE float operator()(float d, bool similar) const {
    if (similar) return d;
    if (legacy) return max_floor_second(margin - d, 0.0f);
    const float shortfall = max_floor_second(margin - sqrtf(d), 0.0f);
    return shortfall * shortfall;
  }
};
struct ContrastiveGradientScale {
  float margin;
  bool legacy;
  float alpha;
  XTRAIN_HOST_DEVICE float operator()(float d, bool similar) const {
    if (similar) return alpha;
    if (legacy) return margin - d > 0 ? -alpha : 0.0f;
    const float distance = sqrtf(d);
    const float shortfall = margin - distance;
    return shortfall > 0 ? -alpha * shortfall / (distance + 1e-4f) : 0.0f;
  }
};
// Caffe truncates the stored similarity label to int: 0.5 is "dissimilar".
XTRAIN_HOST_DEVICE inline bool contrastive_similar(float label) { return !truncates_to(label, 0); }

}  // namespace xtrain::ops

namespace xtrain::ops {

// InfogainLoss, for a position of label l with probabilities p_k and the
// infogain row H[l, :] (row sum S_l):
//   loss term (per k) = H[l, k] ln(max(p_k, 1e-20))   (the loss subtracts it)
//   gradient          = p_k S_l - H[l, k], times w/D afterwards; 0 if ignored
constexpr float kInfogainLogThreshold = 1e-20f;
struct InfogainTerm {
  XTRAIN_HOST_DEVICE float operator()(float h, float p) const {
    return h * logf(max_floor_second(p, kInfogainLogThreshold));
  }
};
struct InfogainGradient {
  XTRAIN_HOST_DEVICE float operator()(float p, float row_sum, float h) const {
    return p * row_sum - h;
  }
};

}  // namespace xtrain::ops
