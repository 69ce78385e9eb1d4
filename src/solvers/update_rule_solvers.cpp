#include "solvers/update_rule_solvers.hpp"

#include <cmath>

#include "xtrain/error.hpp"

namespace xtrain {
namespace {

// delta keeps g / (sqrt(h) + delta) finite where h is 0 (a weight whose
// gradient has been 0): at delta 0 that is 0 / 0, and the weight turns nan.
void require_positive_delta(const SolverParameter& param, const char* solver) {
  XTRAIN_CHECK(param.delta() > 0, "the ", solver,
               " solver needs delta > 0, but the solver sets delta: ", param.delta(),
               "; remove it for the default 1e-8");
}

}  // namespace

void refuse_velocity_settings(const SolverParameter& param, const char* solver) {
  XTRAIN_CHECK(param.momentum_policy() == "fixed", "momentum_policy \"", param.momentum_policy(),
               "\" schedules the momentum of the SGD and Nesterov solvers; the ", solver,
               " solver keeps its momentum fixed (as NVIDIA Caffe does), so remove momentum_policy "
               "(or set momentum_policy: \"fixed\")");
  XTRAIN_CHECK(!param.larc(), "larc: true sets the rate of the SGD and Nesterov solvers' ",
               "momentum step; the ", solver, " solver has none (NVIDIA Caffe ignores larc ",
               "there), so remove larc (or use type: \"SGD\")");
}

void AdaGradRule::check(const SolverParameter& param) {
  XTRAIN_CHECK(param.momentum() == 0, "the AdaGrad solver does not use momentum, but the solver ",
               "sets momentum: ", param.momentum(), "; remove it (or set momentum: 0)");
  require_positive_delta(param, name);
}

void RMSPropRule::check(const SolverParameter& param) {
  XTRAIN_CHECK(param.momentum() == 0, "the RMSProp solver does not use momentum, but the solver ",
               "sets momentum: ", param.momentum(),
               "; remove it (RMSProp's averaging is set by rms_decay)");
  XTRAIN_CHECK(param.rms_decay() >= 0 && param.rms_decay() < 1,
               "rms_decay must lie in [0, 1) for the RMSProp solver, but the solver sets "
               "rms_decay: ",
               param.rms_decay(), " (the default is 0.99)");
  require_positive_delta(param, name);
}

void AdaDeltaRule::check(const SolverParameter& param) { require_positive_delta(param, name); }

void AdamRule::check(const SolverParameter& param) {
  // At momentum2 >= 1 the bias correction sqrt(1 - beta2^t) is 0 or nan.
  XTRAIN_CHECK(param.momentum2() >= 0 && param.momentum2() < 1,
               "momentum2 must lie in [0, 1) for the Adam solver, but the solver sets momentum2: ",
               param.momentum2(), " (the default is 0.999)");
  require_positive_delta(param, name);
}

ops::AdamStep AdamRule::step(const SolverParameter& param, float rate, float /*momentum*/,
                             int iter) {
  const float beta1 = param.momentum();
  const float beta2 = param.momentum2();
  // Caffe evaluates the correction in double and rounds it once.
  const int t = iter + 1;
  const auto correction = static_cast<float>(std::sqrt(1.0 - std::pow(double(beta2), t)) /
                                             (1.0 - std::pow(double(beta1), t)));
  return {rate * correction, beta1, beta2, param.delta()};
}

}  // namespace xtrain
