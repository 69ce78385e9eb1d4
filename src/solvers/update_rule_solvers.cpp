#include "solvers/update_rule_solvers.hpp"

#include <cmath>

#include "xtrain/error.hpp"

namespace xtrain {

void AdaGradRule::check(const SolverParameter& param) {
  XTRAIN_CHECK(param.momentum() == 0, "the AdaGrad solver does not use momentum, but the solver ",
               "sets momentum: ", param.momentum(), "; remove it (or set momentum: 0)");
}

void RMSPropRule::check(const SolverParameter& param) {
  XTRAIN_CHECK(param.momentum() == 0, "the RMSProp solver does not use momentum, but the solver ",
               "sets momentum: ", param.momentum(),
               "; remove it (RMSProp's averaging is set by rms_decay)");
  XTRAIN_CHECK(param.rms_decay() >= 0 && param.rms_decay() < 1,
               "rms_decay must lie in [0, 1) for the RMSProp solver, but the solver sets "
               "rms_decay: ",
               param.rms_decay(), " (the default is 0.99)");
}

ops::AdamStep AdamRule::step(const SolverParameter& param, float rate, int iter) {
  const float beta1 = param.momentum();
  const float beta2 = param.momentum2();
  // Caffe evaluates the correction in double and rounds it once.
  const int t = iter + 1;
  const auto correction = static_cast<float>(std::sqrt(1.0 - std::pow(double(beta2), t)) /
                                             (1.0 - std::pow(double(beta1), t)));
  return {rate * correction, beta1, beta2, param.delta()};
}

}  // namespace xtrain
