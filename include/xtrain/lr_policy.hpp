// Learning-rate schedules, with Caffe 1.0's definitions (lr_policy in the
// solver prototxt; `it` is the number of updates done so far):
//   fixed      base_lr
//   step       base_lr * gamma ^ floor(it / stepsize)
//   exp        base_lr * gamma ^ it
//   inv        base_lr * (1 + gamma * it) ^ (-power)
//   multistep  base_lr * gamma ^ k, k = how many stepvalue entries were passed
//   poly       (base_lr - min_lr) * (1 - it / max_iter) ^ power + min_lr
//   sigmoid    base_lr / (1 + exp(-gamma * (it - stepsize)))
// and NVIDIA Caffe 0.17's large-batch additions (docs/precision.md, "Large-
// batch solver settings"):
//   warm-up    for it < rampup_interval the policy is not consulted:
//              rampup_lr + (base_lr - rampup_lr) * (it / rampup_interval)^2
//   min_lr     a floor under every policy (and poly's end point)
// With none of rampup_interval and min_lr set, the rates are Caffe 1.0's bit
// for bit.
//
// The momentum and the weight decay may follow schedules too:
//   momentum_policy      fixed  momentum
//                        poly   momentum + (max_momentum - momentum)
//                                          * (it / max_iter) ^ momentum_power
//                        opt    (1 - sqrt(rate) / 2)^2, at most max_momentum
//                               when the solver sets it; rate is this
//                               iteration's learning rate
//   weight_decay_policy  fixed  weight_decay
//                        poly   weight_decay + (max_weight_decay - weight_decay)
//                                              * (it / max_iter) ^ weight_decay_power
#pragma once

#include <string>
#include <vector>

#include "xtrain/export.hpp"

namespace xtrain {

class SolverParameter;

// The policies learning_rate() knows, in the order above.
XTRAIN_API const std::vector<std::string>& learning_rate_policies();

// Throws xtrain::Error if the policy is unknown or a field it needs is
// missing or out of range, warm-up and min_lr included (the message names
// the field and what to set).
XTRAIN_API void check_learning_rate_policy(const SolverParameter& param);

// The rate for update number `iter`. `current_step` is the schedule's
// position that a snapshot saves: "step" sets it to floor(iter / stepsize);
// "multistep" advances it by at most one per call once iter reaches the next
// stepvalue, so, as in Caffe, call this once per iteration, in order. During
// the warm-up neither moves (NVIDIA Caffe's order).
XTRAIN_API float learning_rate(const SolverParameter& param, int iter, int* current_step);

// The momentum policies scheduled_momentum() knows: fixed, poly, opt.
XTRAIN_API const std::vector<std::string>& momentum_policies();
// Throws xtrain::Error for an unknown momentum_policy or a setting it needs
// that is missing or out of range (max_momentum in [0, 1), momentum_power
// >= 0, max_iter for "poly").
XTRAIN_API void check_momentum_policy(const SolverParameter& param);
// The momentum of update number `iter`, whose learning rate is `rate` (what
// learning_rate() gave; only "opt" reads it).
XTRAIN_API float scheduled_momentum(const SolverParameter& param, int iter, float rate);

// The weight-decay policies scheduled_weight_decay() knows: fixed, poly.
XTRAIN_API const std::vector<std::string>& weight_decay_policies();
// Throws xtrain::Error for an unknown weight_decay_policy or a setting it
// needs that is missing or out of range.
XTRAIN_API void check_weight_decay_policy(const SolverParameter& param);
// The weight decay of update number `iter` (before each parameter's
// decay_mult).
XTRAIN_API float scheduled_weight_decay(const SolverParameter& param, int iter);

}  // namespace xtrain
