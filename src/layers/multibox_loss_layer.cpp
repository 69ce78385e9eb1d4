// MultiBoxLoss (SSD): the training loss of a single-shot detector.
//
// Bottoms: loc (N x P*L*4: each prior's box offsets, L = 1 with
// share_location, else num_classes), conf (N x P*C: each prior's class
// scores, C = num_classes), the priors (1 x 2 x P*4, from PriorBox/Concat),
// the ground truth (1 x 1 x G x 8, from AnnotatedData; detection_blobs.hpp).
// Top: the loss.
//
// Per image: match priors to its ground-truth boxes (multibox_matching.hpp;
// with use_prior_for_matching: false the decoded predictions are matched
// instead), mine negatives from the confidence loss when mining_type is not
// NONE, then, with M the matched priors over the batch,
//   loc loss  = sum over matched priors of f(pred - encode(gt, prior))
//               f = SmoothL1 (0.5 d^2 for |d| < 1, |d| - 0.5 beyond) summed
//               over the 4 offsets, or L2 (0.5 d^2); box_coding.hpp encodes
//   conf loss = sum over matched priors (target: the box's label) and mined
//               negatives (target: background_label_id) -- every prior when
//               not mining -- of the softmax loss -log p_target, or for
//               LOGISTIC the sigmoid cross-entropy against the one-hot target
//   loss      = (loc_weight * loc loss + conf loss) / normalizer
// where the normalizer follows loss_param.normalization (default VALID = M,
// FULL = N P, BATCH_SIZE = N, NONE = 1; at least 1). As in SSD, a term whose
// bottom the prototxt marks propagate_down: false is left out of the loss.
// Gradients: loc_weight * top_diff / normalizer * f'(d) at the matched
// priors' offsets; top_diff / normalizer * (p - onehot) (softmax) or
// (sigmoid(x) - target) (logistic) at the used priors' scores; 0 elsewhere.
//
// Where SSD differs, on purpose: the LOGISTIC targets of mined negatives and
// of unmatched priors without mining are the one-hot background class (SSD
// left them all zero without mining, and mis-stepped its targets there);
// bp_inside is refused instead of silently half-supported.
//
// The matching, mining and losses run on the host, as SSD's GPU path does for
// all but its confidence-loss helper: they are sorts and greedy choices over
// a few thousand priors per image, not elementwise work.
#include <algorithm>
#include <cmath>
#include <vector>

#include "layers/box_coding.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/detection_blobs.hpp"
#include "layers/loss_layer.hpp"
#include "layers/loss_ops.hpp"
#include "layers/multibox_matching.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

using detection::BoxMatches;
using detection::NormalizedBox;

// The matches of one location class (all classes with share_location).
struct ClassMatches {
  int loc_class = 0;
  BoxMatches matches;
};

// One row of the confidence loss: the prior's scores and its target class.
struct ConfRow {
  int item = 0;
  int prior = 0;
  int target = 0;
};

class MultiBoxLossLayer : public LossLayer {
 public:
  using LossLayer::LossLayer;
  const char* type() const override { return "MultiBoxLoss"; }
  int exact_num_bottom_blobs() const override { return 4; }
  bool allow_force_backward(int bottom_index) const override { return bottom_index < 2; }

 protected:
  void loss_setup(const BlobVec&, const BlobVec&) override {
    const MultiBoxLossParameter& p = param_.multibox_loss_param();
    XTRAIN_CHECK(p.has_num_classes() && p.num_classes() >= 1, where(),
                 " needs multibox_loss_param { num_classes: ... } (background included)");
    classes_ = static_cast<int>(p.num_classes());
    loc_classes_ = p.share_location() ? 1 : classes_;
    background_ = static_cast<int>(p.background_label_id());
    if (p.conf_loss_type() == MultiBoxLossParameter::SOFTMAX) {
      XTRAIN_CHECK(background_ < classes_, where(), ": background_label_id ", background_,
                   " must be a class in [0, ", classes_, ") for the SOFTMAX confidence loss");
    }
    if (p.has_do_neg_mining()) {
      XTRAIN_CHECK(p.do_neg_mining() == (p.mining_type() != MultiBoxLossParameter::NONE), where(),
                   ": the deprecated do_neg_mining: ", p.do_neg_mining(),
                   " contradicts mining_type ",
                   MultiBoxLossParameter::MiningType_Name(p.mining_type()),
                   "; drop do_neg_mining and set mining_type");
    }
    XTRAIN_CHECK(p.mining_type() == MultiBoxLossParameter::NONE || p.share_location(), where(),
                 ": hard-negative mining needs share_location: true (as in SSD); set "
                 "mining_type: NONE or share the locations");
    XTRAIN_CHECK(!p.bp_inside(), where(),
                 ": bp_inside is not supported; remove it (SSD's published nets do not use it)");
    if (p.map_object_to_agnostic()) {
      XTRAIN_CHECK(classes_ == 2 && background_ == 0, where(),
                   ": map_object_to_agnostic needs num_classes: 2 with background_label_id: 0 "
                   "(object vs background)");
    }
    normalization_ = loss_normalization(param_.loss_param(), LossParameter::VALID);
    mining_.type = p.mining_type() == MultiBoxLossParameter::NONE ? detection::MiningType::kNone
                   : p.mining_type() == MultiBoxLossParameter::MAX_NEGATIVE
                       ? detection::MiningType::kMaxNegative
                       : detection::MiningType::kHardExample;
    mining_.neg_pos_ratio = p.neg_pos_ratio();
    mining_.neg_overlap = p.neg_overlap();
    mining_.sample_size = p.sample_size();
    XTRAIN_CHECK(mining_.type != detection::MiningType::kHardExample || p.sample_size() > 0,
                 where(), ": sample_size must be positive for HARD_EXAMPLE mining");
    mining_.suppress = p.has_nms_param() && p.nms_param().nms_threshold() > 0;
    mining_.nms_threshold = p.nms_param().nms_threshold();
    mining_.nms_top_k = p.nms_param().has_top_k() ? p.nms_param().top_k() : -1;
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    reshape_loss_top(bottom, top);
    XTRAIN_CHECK(bottom[2]->num_axes() == 3 && bottom[2]->shape(2) % 4 == 0, where(),
                 ": the priors ", bottom_name(2), " have shape ", bottom[2]->shape_string(),
                 "; expected 1 x 2 x (priors * 4)");
    priors_ = bottom[2]->shape(2) / 4;
    const std::size_t loc_per_item = bottom[0]->count(1);
    const std::size_t conf_per_item = bottom[1]->count(1);
    XTRAIN_CHECK(loc_per_item == static_cast<std::size_t>(priors_) * loc_classes_ * 4, where(),
                 ": the locations ", bottom_name(0), " ", bottom[0]->shape_string(), " hold ",
                 loc_per_item, " values per image, but ", priors_, " priors need ",
                 priors_ * loc_classes_ * 4,
                 " (4 per prior and location class); check the loc convolutions' num_output "
                 "against the PriorBox settings");
    XTRAIN_CHECK(conf_per_item == static_cast<std::size_t>(priors_) * classes_, where(),
                 ": the confidences ", bottom_name(1), " ", bottom[1]->shape_string(), " hold ",
                 conf_per_item, " values per image, but ", priors_, " priors of ", classes_,
                 " classes need ", priors_ * classes_,
                 "; check num_classes and the conf convolutions' num_output");
  }

  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const MultiBoxLossParameter& p = param_.multibox_loss_param();
    const int items = bottom[0]->shape(0);
    const detection::PriorBoxes priors =
        detection::read_priors(*bottom[2], where(), bottom_name(2));
    ground_truth_ = detection::read_ground_truth(*bottom[3], background_, p.use_difficult_gt(),
                                                 where(), bottom_name(3));
    const float* loc = bottom[0]->cpu_data();
    const float* conf = bottom[1]->cpu_data();

    matches_.assign(items, {});
    negatives_.assign(items, {});
    for (int item = 0; item < items; ++item) {
      const auto found = ground_truth_.find(item);
      if (found == ground_truth_.end()) continue;
      matches_[item] = match_item(found->second, priors, loc + item * loc_values_per_item());
      if (mining_.type == detection::MiningType::kNone) continue;
      const std::vector<float> loss =
          mining_loss(item, conf + item * priors_ * classes_, priors, loc);
      const std::vector<NormalizedBox>& nms_boxes =
          p.use_prior_for_nms() || !mining_.suppress
              ? priors.boxes
              : decoded(priors, loc + item * loc_values_per_item(), 0);
      negatives_[item] =
          detection::mine_negatives(matches_[item][0].matches, loss, nms_boxes, mining_);
    }
    matched_ = 0;
    for (const auto& item : matches_) {
      for (const ClassMatches& m : item) {
        for (const int g : m.matches.ground_truth) matched_ += g > -1 ? 1 : 0;
      }
    }
    conf_rows_ = conf_rows(items);

    normalizer_ = loss_normalizer(normalization_, static_cast<std::size_t>(items),
                                  static_cast<std::size_t>(priors_), matched_);
    double loss = 0;
    if (term_in_loss(0)) loss += p.loc_weight() * loc_loss(priors, loc, nullptr, 0);
    if (term_in_loss(1)) loss += conf_loss(conf, nullptr, 0);
    top[0]->mutable_cpu_data()[0] = static_cast<float>(loss / normalizer_);
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    refuse_gradient_to(propagate_down, 3, "ground truth");
    // The priors depend on shapes only: whatever flows back through PriorBox
    // is zero.
    if (propagate_down[2]) {
      std::fill(bottom[2]->mutable_cpu_diff(), bottom[2]->mutable_cpu_diff() + bottom[2]->count(),
                0.0f);
    }
    const float scale = top[0]->cpu_diff()[0] / normalizer_;
    if (propagate_down[0]) {
      float* diff = bottom[0]->mutable_cpu_diff();
      std::fill(diff, diff + bottom[0]->count(), 0.0f);
      const detection::PriorBoxes priors =
          detection::read_priors(*bottom[2], where(), bottom_name(2));
      loc_loss(priors, bottom[0]->cpu_data(), diff,
               param_.multibox_loss_param().loc_weight() * scale);
    }
    if (propagate_down[1]) {
      float* diff = bottom[1]->mutable_cpu_diff();
      std::fill(diff, diff + bottom[1]->count(), 0.0f);
      conf_loss(bottom[1]->cpu_data(), diff, scale);
    }
  }

 private:
  std::size_t loc_values_per_item() const {
    return static_cast<std::size_t>(priors_) * loc_classes_ * 4;
  }

  bool term_in_loss(int bottom_index) const {
    return param_.propagate_down_size() <= bottom_index || param_.propagate_down(bottom_index);
  }

  // The boxes the predictions of location class `loc_class` decode to.
  std::vector<NormalizedBox> decoded(const detection::PriorBoxes& priors, const float* loc,
                                     int loc_class) const {
    std::vector<NormalizedBox> boxes(priors_);
    for (int j = 0; j < priors_; ++j) {
      boxes[j] = detection::decode_box(priors.boxes[j], variance_of(priors, j), code(),
                                       offsets_at(loc, j, loc_class));
    }
    return boxes;
  }

  detection::BoxCode code() const {
    return static_cast<detection::BoxCode>(param_.multibox_loss_param().code_type());
  }

  detection::BoxVariance variance_of(const detection::PriorBoxes& priors, int j) const {
    return param_.multibox_loss_param().encode_variance_in_target() ? detection::BoxVariance{}
                                                                    : priors.variances[j];
  }

  detection::BoxOffsets offsets_at(const float* loc_item, int prior, int loc_class) const {
    const float* at = loc_item + (static_cast<std::size_t>(prior) * loc_classes_ + loc_class) * 4;
    return detection::BoxOffsets{{at[0], at[1], at[2], at[3]}};
  }

  std::vector<ClassMatches> match_item(const std::vector<detection::GroundTruthBox>& truth,
                                       const detection::PriorBoxes& priors,
                                       const float* loc_item) const {
    const MultiBoxLossParameter& p = param_.multibox_loss_param();
    const auto type = p.match_type() == MultiBoxLossParameter::BIPARTITE
                          ? detection::MatchType::kBipartite
                          : detection::MatchType::kPerPrediction;
    std::vector<NormalizedBox> boxes;
    for (const auto& gt : truth) boxes.push_back(gt.box);
    const auto candidates_of = [&](int label) {
      std::vector<int> chosen;
      for (int g = 0; g < static_cast<int>(truth.size()); ++g) {
        if (label == -1 || truth[g].label == label) chosen.push_back(g);
      }
      return chosen;
    };
    std::vector<ClassMatches> result;
    if (p.use_prior_for_matching()) {
      const BoxMatches all =
          detection::match_boxes(boxes, candidates_of(-1), priors.boxes, type,
                                 p.overlap_threshold(), p.ignore_cross_boundary_bbox());
      if (p.share_location()) return {ClassMatches{0, all}};
      // Per class: the agnostic matches whose box has that label.
      for (int c = 0; c < loc_classes_; ++c) {
        if (c == background_) continue;
        ClassMatches m{c, all};
        for (int& g : m.matches.ground_truth) {
          if (g > -1 && truth[g].label != c) g = -1;
        }
        result.push_back(m);
      }
      return result;
    }
    for (int c = 0; c < loc_classes_; ++c) {
      if (!p.share_location() && c == background_) continue;
      result.push_back(ClassMatches{
          c, detection::match_boxes(boxes, candidates_of(p.share_location() ? -1 : c),
                                    decoded(priors, loc_item, c), type, p.overlap_threshold(),
                                    p.ignore_cross_boundary_bbox())});
    }
    return result;
  }

  // The class a prior learns: its (last) matched box's label, else background.
  int target_of(int item, int prior) const {
    int target = background_;
    for (const ClassMatches& m : matches_[item]) {
      const int g = m.matches.ground_truth[prior];
      if (g <= -1) continue;
      target = param_.multibox_loss_param().map_object_to_agnostic()
                   ? background_ + 1
                   : ground_truth_.at(item)[g].label;
    }
    return target;
  }

  // The confidence loss of one prior's scores against `target`; with `diff`,
  // adds scale * its gradient there instead of only returning the loss.
  double conf_term(const float* scores, int target, float* diff, float scale) const {
    if (param_.multibox_loss_param().conf_loss_type() == MultiBoxLossParameter::SOFTMAX) {
      float largest = scores[0];
      for (int c = 1; c < classes_; ++c) largest = std::max(largest, scores[c]);
      double sum = 0;
      for (int c = 0; c < classes_; ++c) sum += std::exp(static_cast<double>(scores[c] - largest));
      if (diff) {
        for (int c = 0; c < classes_; ++c) {
          const float probability =
              static_cast<float>(std::exp(static_cast<double>(scores[c] - largest)) / sum);
          diff[c] += scale * (probability - (c == target ? 1.0f : 0.0f));
        }
        return 0;
      }
      const float probability =
          static_cast<float>(std::exp(static_cast<double>(scores[target] - largest)) / sum);
      return ops::SoftmaxLossTerm()(probability);
    }
    double loss = 0;
    for (int c = 0; c < classes_; ++c) {
      const float t = c == target ? 1.0f : 0.0f;
      if (diff) {
        diff[c] += scale * (ops::SigmoidForward()(scores[c]) - t);
      } else {
        loss -= ops::SigmoidCrossEntropyTerm()(scores[c], t);
      }
    }
    return loss;
  }

  // What mining ranks: each prior's confidence loss against its target (plus
  // its localization loss for HARD_EXAMPLE).
  std::vector<float> mining_loss(int item, const float* conf_item,
                                 const detection::PriorBoxes& priors, const float* loc) const {
    std::vector<float> loss(priors_);
    for (int j = 0; j < priors_; ++j) {
      loss[j] = static_cast<float>(conf_term(conf_item + static_cast<std::size_t>(j) * classes_,
                                             target_of(item, j), nullptr, 0));
    }
    if (mining_.type == detection::MiningType::kHardExample) {
      const float* loc_item = loc + item * loc_values_per_item();
      const BoxMatches& m = matches_[item][0].matches;
      for (int j = 0; j < priors_; ++j) {
        if (m.ground_truth[j] <= -1) continue;
        loss[j] += static_cast<float>(
            loc_term(priors, loc_item, item, j, 0, m.ground_truth[j], nullptr, 0));
      }
    }
    return loss;
  }

  // One matched prior's localization loss; with `diff` (the item's loc
  // diff), adds scale * its gradient instead.
  double loc_term(const detection::PriorBoxes& priors, const float* loc_item, int item, int prior,
                  int loc_class, int box, float* diff, float scale) const {
    const NormalizedBox& target_box = ground_truth_.at(item)[box].box;
    if (code() == detection::BoxCode::kCenterSize) {
      XTRAIN_CHECK(detection::box_width(target_box) > 0 && detection::box_height(target_box) > 0,
                   where(), ": a ground-truth box of item ", item,
                   " has no area, which CENTER_SIZE coding cannot encode; check the data");
    }
    const detection::BoxOffsets target =
        detection::encode_box(priors.boxes[prior], variance_of(priors, prior), code(), target_box);
    const detection::BoxOffsets prediction = offsets_at(loc_item, prior, loc_class);
    const bool smooth =
        param_.multibox_loss_param().loc_loss_type() == MultiBoxLossParameter::SMOOTH_L1;
    double loss = 0;
    for (int k = 0; k < 4; ++k) {
      const float d = prediction.value[k] - target.value[k];
      const float size = std::fabs(d);
      if (diff) {
        const float gradient = !smooth || size < 1 ? d : (d > 0 ? 1.0f : -1.0f);
        diff[(static_cast<std::size_t>(prior) * loc_classes_ + loc_class) * 4 + k] +=
            scale * gradient;
      } else {
        loss += !smooth || size < 1 ? 0.5 * d * d : size - 0.5;
      }
    }
    return loss;
  }

  double loc_loss(const detection::PriorBoxes& priors, const float* loc, float* diff,
                  float scale) const {
    double loss = 0;
    for (int item = 0; item < static_cast<int>(matches_.size()); ++item) {
      const float* loc_item = loc + item * loc_values_per_item();
      float* diff_item = diff ? diff + item * loc_values_per_item() : nullptr;
      for (const ClassMatches& m : matches_[item]) {
        for (int j = 0; j < priors_; ++j) {
          const int g = m.matches.ground_truth[j];
          if (g <= -1) continue;
          loss += loc_term(priors, loc_item, item, j, m.loc_class, g, diff_item, scale);
        }
      }
    }
    return loss;
  }

  // The priors the confidence loss covers: with mining, each image's matched
  // priors then its negatives; without, every prior.
  std::vector<ConfRow> conf_rows(int items) const {
    std::vector<ConfRow> rows;
    for (int item = 0; item < items; ++item) {
      if (mining_.type == detection::MiningType::kNone) {
        for (int j = 0; j < priors_; ++j) rows.push_back({item, j, target_of(item, j)});
        continue;
      }
      for (const ClassMatches& m : matches_[item]) {
        for (int j = 0; j < priors_; ++j) {
          if (m.matches.ground_truth[j] > -1) rows.push_back({item, j, target_of(item, j)});
        }
      }
      for (const int j : negatives_[item]) rows.push_back({item, j, background_});
    }
    return rows;
  }

  double conf_loss(const float* conf, float* diff, float scale) const {
    double loss = 0;
    for (const ConfRow& row : conf_rows_) {
      const std::size_t at = (static_cast<std::size_t>(row.item) * priors_ + row.prior) * classes_;
      loss += conf_term(conf + at, row.target, diff ? diff + at : nullptr, scale);
    }
    return loss;
  }

  int classes_ = 0;
  int loc_classes_ = 1;
  int background_ = 0;
  int priors_ = 0;
  LossParameter::NormalizationMode normalization_ = LossParameter::VALID;
  detection::MiningSettings mining_;
  // From the last forward, for backward:
  detection::GroundTruthByItem ground_truth_;
  std::vector<std::vector<ClassMatches>> matches_;
  std::vector<std::vector<int>> negatives_;
  std::vector<ConfRow> conf_rows_;
  std::size_t matched_ = 0;
  float normalizer_ = 1;
};

}  // namespace

void register_multibox_loss_layer(LayerRegistry& registry) {
  add_layer<MultiBoxLossLayer>(registry, "MultiBoxLoss");
}

}  // namespace xtrain
