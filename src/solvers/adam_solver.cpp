#include "solvers/adam_solver.hpp"

#include <cmath>

#include "core/device_apply.hpp"
#include "solvers/update_ops.hpp"

namespace xtrain {

AdamSolver::AdamSolver(const SolverParameter& param, const SolverOptions& options)
    : SGDSolver(param, options) {
  add_history_set();  // the second moments, after the first
}

void AdamSolver::compute_update_value(int param_id, float rate) {
  Blob& param_blob = *net().learnable_params()[param_id];
  const float beta1 = param_.momentum();
  const float beta2 = param_.momentum2();
  const float eps = param_.delta();
  // Caffe evaluates the correction in double and rounds it once.
  const int t = iter_ + 1;
  const auto correction = static_cast<float>(std::sqrt(1.0 - std::pow(double(beta2), t)) /
                                             (1.0 - std::pow(double(beta1), t)));
  const float step = local_rate(param_id, rate) * correction;
  ops::for_each_on(device(), param_blob.count(), ops::AdamStep{step, beta1, beta2, eps},
                   ops::mutable_diff_on(device(), param_blob),
                   ops::mutable_data_on(device(), history_blob(0, param_id)),
                   ops::mutable_data_on(device(), history_blob(1, param_id)));
}

}  // namespace xtrain
