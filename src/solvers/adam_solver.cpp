#include "solvers/adam_solver.hpp"

#include <cmath>

namespace xtrain {

AdamSolver::AdamSolver(const SolverParameter& param, const SolverOptions& options)
    : SGDSolver(param, options) {
  add_history_set();  // the second moments, after the first
}

void AdamSolver::compute_update_value(int param_id, float rate) {
  Blob& param_blob = *net().learnable_params()[param_id];
  const std::size_t count = param_blob.count();
  const float beta1 = param_.momentum();
  const float beta2 = param_.momentum2();
  const float eps = param_.delta();
  // Caffe evaluates the correction in double and rounds it once.
  const int t = iter_ + 1;
  const auto correction = static_cast<float>(std::sqrt(1.0 - std::pow(double(beta2), t)) /
                                             (1.0 - std::pow(double(beta1), t)));
  const float step = local_rate(param_id, rate) * correction;
  float* first_moment = history_blob(0, param_id).mutable_cpu_data();
  float* second_moment = history_blob(1, param_id).mutable_cpu_data();
  float* diff = param_blob.mutable_cpu_diff();
  for (std::size_t j = 0; j < count; ++j) {
    first_moment[j] = (1 - beta1) * diff[j] + beta1 * first_moment[j];
    second_moment[j] = (1 - beta2) * (diff[j] * diff[j]) + beta2 * second_moment[j];
    diff[j] = step * (first_moment[j] / (std::sqrt(second_moment[j]) + eps));
  }
}

}  // namespace xtrain
