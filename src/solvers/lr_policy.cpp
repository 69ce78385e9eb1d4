#include "xtrain/lr_policy.hpp"

#include <cmath>

#include "xtrain/error.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {
namespace {

std::string policy_list() {
  std::string list;
  for (const std::string& name : learning_rate_policies()) {
    if (!list.empty()) list += ", ";
    list += name;
  }
  return list;
}

// Caffe reads an unset gamma/power as 0, which silently freezes or flattens
// the schedule; a missing field is always a mistake, so we ask for it.
void require_gamma(const SolverParameter& param) {
  XTRAIN_CHECK(param.has_gamma(), "lr_policy \"", param.lr_policy(),
               "\" needs gamma; set e.g. `gamma: 0.1` in the solver");
  XTRAIN_CHECK(param.gamma() >= 0, "lr_policy \"", param.lr_policy(),
               "\" needs gamma >= 0, got gamma: ", param.gamma());
}

// "inv" and "poly" with a negative power make the rate grow without bound
// (poly's is infinite at max_iter): never a schedule anyone means.
void require_power(const SolverParameter& param) {
  XTRAIN_CHECK(param.has_power(), "lr_policy \"", param.lr_policy(),
               "\" needs power; set e.g. `power: 0.75` in the solver");
  XTRAIN_CHECK(param.power() >= 0, "lr_policy \"", param.lr_policy(),
               "\" needs power >= 0, got power: ", param.power(),
               "; a negative power makes the rate grow instead of decay");
}

// Caffe passes the stepvalues in their order, at most one per iteration: a
// list out of order steps at the wrong iterations without a word.
void require_increasing_stepvalues(const SolverParameter& param) {
  for (int i = 1; i < param.stepvalue_size(); ++i) {
    XTRAIN_CHECK(param.stepvalue(i) > param.stepvalue(i - 1),
                 "lr_policy \"multistep\" needs its stepvalues in increasing order: stepvalue #",
                 i + 1, " (", param.stepvalue(i), ") does not come after stepvalue #", i, " (",
                 param.stepvalue(i - 1),
                 "); list the iterations where the rate drops, smallest first");
  }
}

void require_stepsize(const SolverParameter& param) {
  XTRAIN_CHECK(param.stepsize() > 0, "lr_policy \"", param.lr_policy(),
               "\" needs stepsize > 0 (iterations), got ",
               param.has_stepsize() ? std::to_string(param.stepsize()) : "none",
               "; set e.g. `stepsize: 10000` in the solver");
}

}  // namespace

const std::vector<std::string>& learning_rate_policies() {
  static const std::vector<std::string> names = {"fixed",     "step", "exp",    "inv",
                                                 "multistep", "poly", "sigmoid"};
  return names;
}

void check_learning_rate_policy(const SolverParameter& param) {
  const std::string& policy = param.lr_policy();
  XTRAIN_CHECK(param.has_lr_policy(), "the solver has no lr_policy; set one of: ", policy_list());
  XTRAIN_CHECK(param.has_base_lr(), "the solver has no base_lr; set e.g. `base_lr: 0.01`");
  XTRAIN_CHECK(std::isfinite(param.base_lr()), "base_lr: ", param.base_lr(),
               " is not a finite number; give a rate such as `base_lr: 0.01`");
  XTRAIN_CHECK(param.base_lr() >= 0, "base_lr: ", param.base_lr(),
               " is negative, which would climb the loss instead of descending it; give a "
               "positive rate, e.g. `base_lr: 0.01`");
  if (policy == "fixed") return;
  if (policy == "step") {
    require_stepsize(param);
    require_gamma(param);
  } else if (policy == "exp") {
    require_gamma(param);
  } else if (policy == "multistep") {
    require_gamma(param);
    require_increasing_stepvalues(param);
  } else if (policy == "inv") {
    require_gamma(param);
    require_power(param);
  } else if (policy == "poly") {
    require_power(param);
    XTRAIN_CHECK(param.max_iter() > 0,
                 "lr_policy \"poly\" decays to zero at max_iter, so it "
                 "needs max_iter > 0, got ",
                 param.max_iter());
  } else if (policy == "sigmoid") {
    require_gamma(param);
    require_stepsize(param);
  } else {
    throw Error("unknown lr_policy \"" + policy + "\"; use one of: " + policy_list());
  }
}

float learning_rate(const SolverParameter& param, int iter, int* current_step) {
  check_learning_rate_policy(param);
  const std::string& policy = param.lr_policy();
  const double base_lr = param.base_lr();
  const double gamma = param.gamma();
  const double power = param.power();
  double rate = base_lr;
  if (policy == "step") {
    *current_step = iter / param.stepsize();
    rate = base_lr * std::pow(gamma, *current_step);
  } else if (policy == "exp") {
    rate = base_lr * std::pow(gamma, iter);
  } else if (policy == "inv") {
    rate = base_lr * std::pow(1.0 + gamma * iter, -power);
  } else if (policy == "multistep") {
    if (*current_step < param.stepvalue_size() && iter >= param.stepvalue(*current_step)) {
      ++*current_step;
    }
    rate = base_lr * std::pow(gamma, *current_step);
  } else if (policy == "poly") {
    rate = base_lr * std::pow(1.0 - static_cast<double>(iter) / param.max_iter(), power);
  } else if (policy == "sigmoid") {
    rate = base_lr / (1.0 + std::exp(-gamma * (static_cast<double>(iter) - param.stepsize())));
  }
  // gamma > 1 is allowed (a warm-up, a range test), but gamma^k soon passes
  // what a float holds, and an infinite rate turns every weight into nan.
  const float rate_as_float = static_cast<float>(rate);
  XTRAIN_CHECK(std::isfinite(rate_as_float), "lr_policy \"", policy, "\" gives a learning rate of ",
               rate, " at iteration ", iter, " (base_lr ", base_lr, ", gamma ", gamma,
               "), more than a float holds; lower gamma or base_lr");
  return rate_as_float;
}

}  // namespace xtrain
