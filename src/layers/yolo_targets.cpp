#include "layers/yolo_targets.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace xtrain::detection {
namespace {

class ItemTargets {
 public:
  ItemTargets(const ops::YoloLayout& layout, const YoloTargetRules& rules, int item,
              YoloTargets* out)
      : layout_(layout), rules_(rules), item_(item), out_(out) {}

  void mark_predictions(const float* predictions, const std::vector<YoloTruth>& truths) {
    const std::size_t stride = static_cast<std::size_t>(layout_.height) * layout_.width;
    for (int j = 0; j < layout_.height; ++j) {
      for (int i = 0; i < layout_.width; ++i) {
        for (int a = 0; a < layout_.anchors; ++a) {
          const YoloAnchor& anchor = rules_.anchors[rules_.mask[a]];
          const ops::YoloBox predicted =
              ops::decode_yolo_box(predictions + layout_.index(item_, a, ops::kYoloX, j, i), stride,
                                   i, j, layout_, anchor.w, anchor.h);
          float best_overlap = 0;
          std::size_t best_truth = 0;
          for (std::size_t t = 0; t < truths.size(); ++t) {
            const float overlap = ops::yolo_box_overlap(predicted, truths[t].box);
            if (overlap > best_overlap) {
              best_overlap = overlap;
              best_truth = t;
            }
          }
          const std::size_t objectness = layout_.index(item_, a, ops::kYoloObjectness, j, i);
          out_->target[objectness] = 0;
          out_->weight[objectness] = best_overlap > rules_.ignore_thresh ? 0.0f : 1.0f;
          if (best_overlap > rules_.truth_thresh) train_as(truths[best_truth], a, j, i);
        }
      }
    }
  }

  void mark_truth(const YoloTruth& truth) {
    int best_anchor = 0;
    float best_overlap = 0;
    for (std::size_t n = 0; n < rules_.anchors.size(); ++n) {
      const float overlap =
          ops::shape_overlap(rules_.anchors[n].w, rules_.anchors[n].h, truth.box.w, truth.box.h);
      if (overlap > best_overlap) {
        best_overlap = overlap;
        best_anchor = static_cast<int>(n);
      }
    }
    const auto in_mask = std::find(rules_.mask.begin(), rules_.mask.end(), best_anchor);
    if (in_mask == rules_.mask.end()) return;
    // A centre on the far edge (x = 1) belongs to the last cell.
    const int i =
        std::clamp(static_cast<int>(std::floor(truth.box.x * layout_.width)), 0, layout_.width - 1);
    const int j = std::clamp(static_cast<int>(std::floor(truth.box.y * layout_.height)), 0,
                             layout_.height - 1);
    train_as(truth, static_cast<int>(in_mask - rules_.mask.begin()), j, i);
  }

 private:
  void set(int a, int entry, int j, int i, float target, float weight) {
    const std::size_t index = layout_.index(item_, a, entry, j, i);
    out_->target[index] = target;
    out_->weight[index] = weight;
  }

  void train_as(const YoloTruth& truth, int a, int j, int i) {
    set(a, ops::kYoloObjectness, j, i, 1, 1);
    const std::size_t first_class = layout_.index(item_, a, ops::kYoloFirstClass, j, i);
    if (out_->weight[first_class] != 0) {
      out_->target[layout_.index(item_, a, ops::kYoloFirstClass + truth.class_index, j, i)] = 1;
    } else {
      for (int c = 0; c < layout_.classes; ++c) {
        set(a, ops::kYoloFirstClass + c, j, i, c == truth.class_index ? 1.0f : 0.0f, 1);
      }
    }
    const YoloAnchor& anchor = rules_.anchors[rules_.mask[a]];
    const float scale = 2 - truth.box.w * truth.box.h;
    set(a, ops::kYoloX, j, i, truth.box.x * layout_.width - static_cast<float>(i), scale);
    set(a, ops::kYoloY, j, i, truth.box.y * layout_.height - static_cast<float>(j), scale);
    set(a, ops::kYoloW, j, i, std::log(truth.box.w / anchor.w), scale);
    set(a, ops::kYoloH, j, i, std::log(truth.box.h / anchor.h), scale);
  }

  const ops::YoloLayout& layout_;
  const YoloTargetRules& rules_;
  int item_;
  YoloTargets* out_;
};

}  // namespace

YoloTargets assign_yolo_targets(const ops::YoloLayout& layout, const YoloTargetRules& rules,
                                const float* predictions, int items,
                                const std::map<int, std::vector<YoloTruth>>& truths) {
  const std::size_t count = static_cast<std::size_t>(items) * layout.anchors * layout.entries() *
                            layout.height * layout.width;
  YoloTargets targets{std::vector<float>(count, 0.0f), std::vector<float>(count, 0.0f)};
  const std::vector<YoloTruth> none;
  for (int item = 0; item < items; ++item) {
    const auto found = truths.find(item);
    const std::vector<YoloTruth>& boxes = found == truths.end() ? none : found->second;
    ItemTargets assign(layout, rules, item, &targets);
    assign.mark_predictions(predictions, boxes);
    for (const YoloTruth& truth : boxes) assign.mark_truth(truth);
  }
  return targets;
}

}  // namespace xtrain::detection
