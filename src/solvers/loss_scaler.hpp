// Loss scaling for 16-bit gradients (NetParameter.global_grad_scale and
// global_grad_scale_adaptive; docs/precision.md). The net's backward pass
// computes the gradients of scale * loss, so that small ones do not vanish
// below fp16's smallest value; before the update they are divided by the
// scale again.
//
// Static (global_grad_scale alone): the scale never changes.
// Adaptive: an update whose gradients hold inf or nan (they overflowed at
// this scale) is skipped and the scale halves; after kGrowthInterval good
// updates in a row it doubles. It starts at global_grad_scale when the net
// sets it, else at 65536 (2^16), as PyTorch's GradScaler does. Gradients
// that stay non-finite down to a scale of 1 / 65536 are not an overflow but
// a diverged run: that is an error rather than an endless string of skips.
#pragma once

#include <cstdint>
#include <string>

namespace xtrain {

class NetParameter;
class ResumeState;

class LossScaler {
 public:
  static constexpr int kGrowthInterval = 2000;
  static constexpr float kAdaptiveStart = 65536.0f;
  static constexpr float kSmallestAdaptiveScale = 1.0f / 65536.0f;

  // Reads the train net's fields; throws xtrain::Error naming the field for
  // a scale that is not a finite number above 0.
  explicit LossScaler(const NetParameter& train_net);

  bool active() const { return adaptive_ || scale_ != 1.0f; }
  bool adaptive() const { return adaptive_; }
  float scale() const { return scale_; }
  std::int64_t skipped_steps() const { return skipped_steps_; }

  // After the gradients of update `iteration` are in: whether to apply the
  // update. `finite` says whether every gradient is a finite number (only
  // asked of adaptive scaling). Moves the scale as described above.
  bool accept_update(bool finite, int iteration);

  void save(ResumeState* state) const;
  // Leaves the scale as it is for a state written without loss scaling.
  void restore(const ResumeState& state);

  // "loss scale 1024 (adaptive, 3 updates skipped)".
  std::string describe() const;

 private:
  float scale_ = 1.0f;
  bool adaptive_ = false;
  int good_steps_ = 0;
  std::int64_t skipped_steps_ = 0;
};

}  // namespace xtrain
