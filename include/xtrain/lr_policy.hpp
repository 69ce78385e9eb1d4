// Learning-rate schedules, with Caffe 1.0's definitions (lr_policy in the
// solver prototxt; `it` is the number of updates done so far):
//   fixed      base_lr
//   step       base_lr * gamma ^ floor(it / stepsize)
//   exp        base_lr * gamma ^ it
//   inv        base_lr * (1 + gamma * it) ^ (-power)
//   multistep  base_lr * gamma ^ k, k = how many stepvalue entries were passed
//   poly       base_lr * (1 - it / max_iter) ^ power
//   sigmoid    base_lr / (1 + exp(-gamma * (it - stepsize)))
#pragma once

#include <string>
#include <vector>

#include "xtrain/export.hpp"

namespace xtrain {

class SolverParameter;

// The policies learning_rate() knows, in the order above.
XTRAIN_API const std::vector<std::string>& learning_rate_policies();

// Throws xtrain::Error if the policy is unknown or a field it needs is
// missing or out of range (the message names the field and what to set).
XTRAIN_API void check_learning_rate_policy(const SolverParameter& param);

// The rate for update number `iter`. `current_step` is the schedule's
// position that a snapshot saves: "step" sets it to floor(iter / stepsize);
// "multistep" advances it by at most one per call once iter reaches the next
// stepvalue, so, as in Caffe, call this once per iteration, in order.
XTRAIN_API float learning_rate(const SolverParameter& param, int iter, int* current_step);

}  // namespace xtrain
