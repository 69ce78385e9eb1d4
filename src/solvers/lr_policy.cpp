#include "xtrain/lr_policy.hpp"

#include <algorithm>
#include <cmath>

#include "xtrain/error.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {
namespace {

std::string name_list(const std::vector<std::string>& names) {
  std::string list;
  for (const std::string& name : names) {
    if (!list.empty()) list += ", ";
    list += name;
  }
  return list;
}

std::string policy_list() { return name_list(learning_rate_policies()); }

bool is_one_of(const std::string& name, const std::vector<std::string>& names) {
  for (const std::string& known : names) {
    if (name == known) return true;
  }
  return false;
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

// NVIDIA Caffe's warm-up and floor. It only asks min_lr >= 0 (and, for
// "poly", min_lr <= base_lr); a floor above base_lr would make every policy
// "fixed" at min_lr, never what a schedule means.
void check_warm_up_and_floor(const SolverParameter& param) {
  XTRAIN_CHECK(param.rampup_interval() >= 0, "rampup_interval: ", param.rampup_interval(),
               " is negative; give the iterations of the learning-rate warm-up, or 0 for none");
  XTRAIN_CHECK(std::isfinite(param.rampup_lr()) && param.rampup_lr() >= 0,
               "rampup_lr: ", param.rampup_lr(),
               " is not a finite rate >= 0; the warm-up starts from it, e.g. `rampup_lr: 0`");
  XTRAIN_CHECK(param.min_lr() >= 0 && param.min_lr() <= param.base_lr(), "min_lr: ", param.min_lr(),
               " must lie in [0, base_lr] (base_lr: ", param.base_lr(),
               "); it is the floor the rate never falls below, e.g. `min_lr: ",
               param.base_lr() / 100, "`, or remove it for none");
}

// "poly" schedules of the momentum and the weight decay run over max_iter.
void require_max_iter_for(const SolverParameter& param, const char* field, const char* what) {
  XTRAIN_CHECK(param.max_iter() > 0, field, " \"poly\" moves ", what,
               " over max_iter iterations, so it needs max_iter > 0, got ", param.max_iter());
}

// A negative power makes 0^power infinite at iteration 0.
void require_non_negative_power(const char* field, float power, const char* policy_field) {
  XTRAIN_CHECK(power >= 0, policy_field, " \"poly\" needs ", field, " >= 0, got ", field, ": ",
               power, "; a negative power is infinite at iteration 0");
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
  check_warm_up_and_floor(param);
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
  if (iter < param.rampup_interval()) {
    // NVIDIA Caffe's warm-up, in its float operations; the policy (and its
    // position) waits until the warm-up is over.
    const float progress = static_cast<float>(iter) / static_cast<float>(param.rampup_interval());
    const float start = param.rampup_lr();
    const float warm = start + (param.base_lr() - start) * progress * progress;
    return std::max(warm, param.min_lr());
  }
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
    // At min_lr 0 this is Caffe's base_lr * (1 - it / max_iter)^power exactly.
    const double floor = param.min_lr();
    rate = (base_lr - floor) * std::pow(1.0 - static_cast<double>(iter) / param.max_iter(), power) +
           floor;
  } else if (policy == "sigmoid") {
    rate = base_lr / (1.0 + std::exp(-gamma * (static_cast<double>(iter) - param.stepsize())));
  }
  // gamma > 1 is allowed (a warm-up, a range test), but gamma^k soon passes
  // what a float holds, and an infinite rate turns every weight into nan.
  const float rate_as_float = static_cast<float>(rate);
  XTRAIN_CHECK(std::isfinite(rate_as_float), "lr_policy \"", policy, "\" gives a learning rate of ",
               rate, " at iteration ", iter, " (base_lr ", base_lr, ", gamma ", gamma,
               "), more than a float holds; lower gamma or base_lr");
  // min_lr 0 (unset) never moves a rate: every policy's is >= 0.
  return rate_as_float < param.min_lr() ? param.min_lr() : rate_as_float;
}

const std::vector<std::string>& momentum_policies() {
  static const std::vector<std::string> names = {"fixed", "poly", "opt"};
  return names;
}

void check_momentum_policy(const SolverParameter& param) {
  const std::string& policy = param.momentum_policy();
  XTRAIN_CHECK(is_one_of(policy, momentum_policies()), "unknown momentum_policy \"", policy,
               "\"; use one of: ", name_list(momentum_policies()));
  // At 1 or more the velocity never decays and the steps grow.
  XTRAIN_CHECK(param.max_momentum() >= 0 && param.max_momentum() < 1,
               "max_momentum must lie in [0, 1), but the solver sets max_momentum: ",
               param.max_momentum(), "; the usual value is 0.99");
  if (policy == "poly") {
    require_max_iter_for(param, "momentum_policy", "the momentum from momentum to max_momentum");
    require_non_negative_power("momentum_power", param.momentum_power(), "momentum_policy");
  }
}

float scheduled_momentum(const SolverParameter& param, int iter, float rate) {
  check_momentum_policy(param);
  const std::string& policy = param.momentum_policy();
  const float start = param.momentum();
  if (policy == "poly") {
    const float progress = static_cast<float>(iter) / static_cast<float>(param.max_iter());
    return start + (param.max_momentum() - start) * std::pow(progress, param.momentum_power());
  }
  if (policy == "opt") {
    // NVIDIA Caffe squares in double; max_momentum caps it only when set
    // (its default, 0.99, is for "poly").
    const float root = std::sqrt(rate);
    const double factor = 1.0 - 0.5 * root;
    const auto optimal = static_cast<float>(factor * factor);
    return param.has_max_momentum() ? std::min(param.max_momentum(), optimal) : optimal;
  }
  return start;
}

const std::vector<std::string>& weight_decay_policies() {
  static const std::vector<std::string> names = {"fixed", "poly"};
  return names;
}

void check_weight_decay_policy(const SolverParameter& param) {
  const std::string& policy = param.weight_decay_policy();
  XTRAIN_CHECK(is_one_of(policy, weight_decay_policies()), "unknown weight_decay_policy \"", policy,
               "\"; use one of: ", name_list(weight_decay_policies()));
  if (policy == "poly") {
    require_max_iter_for(param, "weight_decay_policy",
                         "the weight decay from weight_decay to max_weight_decay");
    require_non_negative_power("weight_decay_power", param.weight_decay_power(),
                               "weight_decay_policy");
    XTRAIN_CHECK(std::isfinite(param.max_weight_decay()) && param.max_weight_decay() >= 0,
                 "max_weight_decay: ", param.max_weight_decay(),
                 " is not a finite number >= 0 (a negative decay grows the weights instead of "
                 "shrinking them); give the decay weight_decay_policy \"poly\" ends at, e.g. "
                 "`max_weight_decay: 0.0005`");
  }
}

float scheduled_weight_decay(const SolverParameter& param, int iter) {
  check_weight_decay_policy(param);
  const float start = param.weight_decay();
  if (param.weight_decay_policy() == "poly") {
    const float progress = static_cast<float>(iter) / static_cast<float>(param.max_iter());
    return start +
           (param.max_weight_decay() - start) * std::pow(progress, param.weight_decay_power());
  }
  return start;
}

}  // namespace xtrain
