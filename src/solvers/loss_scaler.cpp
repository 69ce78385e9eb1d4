#include "solvers/loss_scaler.hpp"

#include <cmath>

#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {

LossScaler::LossScaler(const NetParameter& train_net)
    : scale_(train_net.global_grad_scale()), adaptive_(train_net.global_grad_scale_adaptive()) {
  XTRAIN_CHECK(std::isfinite(scale_) && scale_ > 0, "the train net's global_grad_scale is ", scale_,
               ", which cannot scale a loss; give a finite number above 0 (1: no scaling; 1024 or "
               "so for fp16 gradients), or set global_grad_scale_adaptive: true to let it adapt");
  if (adaptive_ && !train_net.has_global_grad_scale()) scale_ = kAdaptiveStart;
}

bool LossScaler::accept_update(bool finite, int iteration) {
  if (!adaptive_) return true;
  if (finite) {
    if (++good_steps_ >= kGrowthInterval) {
      good_steps_ = 0;
      // Doubling stops where the next overflow would be at every value.
      if (std::isfinite(scale_ * 2.0f)) scale_ *= 2.0f;
    }
    return true;
  }
  ++skipped_steps_;
  good_steps_ = 0;
  const float previous = scale_;
  scale_ /= 2.0f;
  XTRAIN_CHECK(scale_ >= kSmallestAdaptiveScale, "iteration ", iteration,
               ": the gradients hold inf or nan even at a loss scale of ", previous,
               ": not an overflow of 16-bit gradients but a diverged run (a learning rate too "
               "high, bad data, a loss of nan); lower base_lr or check the data");
  XLOG(WARNING) << "Iteration " << iteration << ": the gradients overflowed (inf or nan) at loss "
                << "scale " << previous << "; update skipped, loss scale now " << scale_;
  return false;
}

void LossScaler::save(ResumeState* state) const {
  if (!active()) return;
  state->set_loss_scale(scale_);
  state->set_loss_scale_good_steps(good_steps_);
  state->set_loss_scale_skipped_steps(skipped_steps_);
}

void LossScaler::restore(const ResumeState& state) {
  if (!adaptive_ || !state.has_loss_scale()) return;
  XTRAIN_CHECK(std::isfinite(state.loss_scale()) && state.loss_scale() > 0,
               "the solver state's loss scale is ", state.loss_scale(),
               ", which no run writes: the file is damaged");
  scale_ = state.loss_scale();
  good_steps_ = state.loss_scale_good_steps();
  skipped_steps_ = state.loss_scale_skipped_steps();
}

std::string LossScaler::describe() const {
  if (!adaptive_) return detail::concat("loss scale ", scale_);
  return detail::concat("loss scale ", scale_, " (adaptive, ", skipped_steps_, " update",
                        skipped_steps_ == 1 ? "" : "s", " skipped)");
}

}  // namespace xtrain
