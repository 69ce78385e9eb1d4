#include "solvers/rmsprop_solver.hpp"

#include <cmath>

#include "xtrain/error.hpp"

namespace xtrain {
namespace {

// Checked before the base class builds the nets, so a bad solver fails fast.
const SolverParameter& checked(const SolverParameter& param) {
  XTRAIN_CHECK(param.momentum() == 0, "the RMSProp solver does not use momentum, but the solver ",
               "sets momentum: ", param.momentum(),
               "; remove it (RMSProp's averaging is set by rms_decay)");
  XTRAIN_CHECK(param.rms_decay() >= 0 && param.rms_decay() < 1,
               "rms_decay must lie in [0, 1) for the RMSProp solver, but the solver sets "
               "rms_decay: ",
               param.rms_decay(), " (the default is 0.99)");
  return param;
}

}  // namespace

RMSPropSolver::RMSPropSolver(const SolverParameter& param, const SolverOptions& options)
    : SGDSolver(checked(param), options) {}

void RMSPropSolver::compute_update_value(int param_id, float rate) {
  Blob& param_blob = *net().learnable_params()[param_id];
  const std::size_t count = param_blob.count();
  const float delta = param_.delta();
  const float decay = param_.rms_decay();
  const float step = local_rate(param_id, rate);
  float* mean_square = history_blob(0, param_id).mutable_cpu_data();
  float* diff = param_blob.mutable_cpu_diff();
  for (std::size_t j = 0; j < count; ++j) {
    mean_square[j] = (1 - decay) * (diff[j] * diff[j]) + decay * mean_square[j];
    diff[j] = step * (diff[j] / (std::sqrt(mean_square[j]) + delta));
  }
}

}  // namespace xtrain
