#include "solvers/adagrad_solver.hpp"

#include <cmath>

#include "xtrain/error.hpp"

namespace xtrain {
namespace {

// Checked before the base class builds the nets, so a bad solver fails fast.
const SolverParameter& checked(const SolverParameter& param) {
  XTRAIN_CHECK(param.momentum() == 0, "the AdaGrad solver does not use momentum, but the solver ",
               "sets momentum: ", param.momentum(), "; remove it (or set momentum: 0)");
  return param;
}

}  // namespace

AdaGradSolver::AdaGradSolver(const SolverParameter& param, const SolverOptions& options)
    : SGDSolver(checked(param), options) {}

void AdaGradSolver::compute_update_value(int param_id, float rate) {
  Blob& param_blob = *net().learnable_params()[param_id];
  const std::size_t count = param_blob.count();
  const float delta = param_.delta();
  const float step = local_rate(param_id, rate);
  float* squares = history_blob(0, param_id).mutable_cpu_data();
  float* diff = param_blob.mutable_cpu_diff();
  for (std::size_t j = 0; j < count; ++j) {
    squares[j] += diff[j] * diff[j];
    diff[j] = step * (diff[j] / (std::sqrt(squares[j]) + delta));
  }
}

}  // namespace xtrain
