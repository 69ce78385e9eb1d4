// The update rules built on SGD, Caffe 1.0's NesterovSolver, AdaGradSolver,
// RMSPropSolver, AdaDeltaSolver and AdamSolver. A rule is a step functor of
// solvers/update_ops.hpp applied to each parameter's diff and its history
// sets, how many sets it keeps, and Caffe's checks of its settings;
// RuleSolver<Rule> is the solver that applies one. In every formula r is
// the parameter's rate (learning_rate(iter) * lr_mult, or LARC's: see
// sgd_solver.hpp). A rule with two history sets keeps
// the first set for every parameter, then the second for every parameter,
// in that order in a .solverstate, as Caffe writes them.
#pragma once

#include <cstddef>
#include <utility>

#include "core/device_apply.hpp"
#include "solvers/sgd_solver.hpp"
#include "solvers/update_ops.hpp"

namespace xtrain {

// What a rule has unless it says otherwise: one history set, no settings of
// its own to check, and no velocity.
struct RuleDefaults {
  static constexpr int history_sets = 1;
  // Whether the rule steps along SGD's velocity, so that momentum_policy
  // and LARC apply to it (their rate and (1 - momentum) are the velocity's).
  static constexpr bool has_velocity = false;
  static void check(const SolverParameter& /*param*/) {}
};

// Refuses momentum_policy other than "fixed", and larc, for a rule without
// a velocity: NVIDIA Caffe leaves both unused there (its AdaGrad, RMSProp,
// AdaDelta and Adam read momentum and lr_mult directly), and a setting that
// changes nothing is a mistake.
void refuse_velocity_settings(const SolverParameter& param, const char* solver);

// Nesterov's accelerated gradient: SGD's velocity update, but the step looks
// ahead along the new velocity.
//   v' <- m * v + r * g
//   w  <- w - ((1 + m) * v' - m * v)
// The history is the velocity v, as for SGD. m is momentum_policy's
// momentum and r may be LARC's, as for SGD (NVIDIA Caffe's Nesterov reads
// the fixed momentum and lr_mult instead).
struct NesterovRule : RuleDefaults {
  static constexpr const char* name = "Nesterov";
  static constexpr bool has_velocity = true;
  static ops::NesterovStep step(const SolverParameter& /*param*/, float rate, float momentum,
                                int /*iter*/) {
    return {rate, momentum};
  }
};

// AdaGrad (Duchi et al. 2011): each weight's step shrinks with the sum of its
// squared gradients so far.
//   h <- h + g^2
//   w <- w - r * g / (sqrt(h) + delta)
// The history is h. Momentum has no meaning here; Caffe refuses it, so do we.
struct AdaGradRule : RuleDefaults {
  static constexpr const char* name = "AdaGrad";
  static void check(const SolverParameter& param);
  static ops::AdaGradStep step(const SolverParameter& param, float rate, float /*momentum*/,
                               int /*iter*/) {
    return {rate, param.delta()};
  }
};

// RMSProp (Tieleman & Hinton 2012): AdaGrad with a decaying average of the
// squared gradients instead of their sum.
//   h <- rms_decay * h + (1 - rms_decay) * g^2
//   w <- w - r * g / (sqrt(h) + delta)
// The history is h. As in Caffe, momentum must be 0 and rms_decay in [0, 1).
struct RMSPropRule : RuleDefaults {
  static constexpr const char* name = "RMSProp";
  static void check(const SolverParameter& param);
  static ops::RMSPropStep step(const SolverParameter& param, float rate, float /*momentum*/,
                               int /*iter*/) {
    return {rate, param.delta(), param.rms_decay()};
  }
};

// AdaDelta (Zeiler 2012). With rho = momentum (fixed: momentum_policy is
// refused, as NVIDIA Caffe's AdaDelta never reads it):
//   h_g <- rho * h_g + (1 - rho) * g^2
//   u   <- g * sqrt((h_u + delta) / (h_g + delta))
//   h_u <- rho * h_u + (1 - rho) * u^2
//   w   <- w - r * u                   (Caffe keeps the rate, usually 1)
// Two history sets: h_g, then h_u.
struct AdaDeltaRule : RuleDefaults {
  static constexpr const char* name = "AdaDelta";
  static constexpr int history_sets = 2;
  static void check(const SolverParameter& param);
  static ops::AdaDeltaStep step(const SolverParameter& param, float rate, float /*momentum*/,
                                int /*iter*/) {
    return {rate, param.delta(), param.momentum()};
  }
};

// Adam (Kingma & Ba 2014). With beta1 = momentum (fixed: momentum_policy is
// refused, as NVIDIA Caffe's Adam never reads it), beta2 = momentum2,
// eps = delta and t = iter + 1 (the iteration being made):
//   m <- beta1 * m + (1 - beta1) * g
//   v <- beta2 * v + (1 - beta2) * g^2
//   w <- w - r * sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(v) + eps)
// Caffe folds the bias correction into the rate, so eps is not corrected.
// Two history sets: m, then v.
struct AdamRule : RuleDefaults {
  static constexpr const char* name = "Adam";
  static constexpr int history_sets = 2;
  static void check(const SolverParameter& param);
  static ops::AdamStep step(const SolverParameter& param, float rate, float momentum, int iter);
};

template <typename Rule>
class RuleSolver final : public SGDSolver {
 public:
  explicit RuleSolver(const SolverParameter& param, const SolverOptions& options = {})
      : SGDSolver(checked(param), options) {
    // SGD's constructor made the first history set; the others follow it.
    for (int set = 1; set < Rule::history_sets; ++set) add_history_set();
  }
  const char* type() const override { return Rule::name; }

 protected:
  void compute_update_value(int param_id, float rate, float momentum) override {
    apply_step(param_id, Rule::step(param_, rate, momentum, iter_),
               std::make_index_sequence<Rule::history_sets>());
  }

 private:
  // Checked before the base class builds the nets, so a bad solver fails fast.
  static const SolverParameter& checked(const SolverParameter& param) {
    if (!Rule::has_velocity) refuse_velocity_settings(param, Rule::name);
    Rule::check(param);
    return param;
  }

  // One pass of `step` over the parameter's diff and its history blob of
  // each set.
  template <typename Step, std::size_t... Set>
  void apply_step(int param_id, const Step& step, std::index_sequence<Set...> /*sets*/) {
    Blob& param_blob = *net().learnable_params()[param_id];
    ops::for_each_on(
        device(), param_blob.count(), step, ops::mutable_diff_on(device(), param_blob),
        ops::mutable_data_on(device(), history_blob(static_cast<int>(Set), param_id))...);
  }
};

using NesterovSolver = RuleSolver<NesterovRule>;
using AdaGradSolver = RuleSolver<AdaGradRule>;
using RMSPropSolver = RuleSolver<RMSPropRule>;
using AdaDeltaSolver = RuleSolver<AdaDeltaRule>;
using AdamSolver = RuleSolver<AdamRule>;

}  // namespace xtrain
