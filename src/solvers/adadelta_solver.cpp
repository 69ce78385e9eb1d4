#include "solvers/adadelta_solver.hpp"

#include <cmath>

namespace xtrain {

AdaDeltaSolver::AdaDeltaSolver(const SolverParameter& param, const SolverOptions& options)
    : SGDSolver(param, options) {
  add_history_set();  // the squared updates, after the squared gradients
}

void AdaDeltaSolver::compute_update_value(int param_id, float rate) {
  Blob& param_blob = *net().learnable_params()[param_id];
  const std::size_t count = param_blob.count();
  const float delta = param_.delta();
  const float rho = param_.momentum();
  const float step = local_rate(param_id, rate);
  float* gradient_squares = history_blob(0, param_id).mutable_cpu_data();
  float* update_squares = history_blob(1, param_id).mutable_cpu_data();
  float* diff = param_blob.mutable_cpu_diff();
  for (std::size_t j = 0; j < count; ++j) {
    gradient_squares[j] = (1 - rho) * (diff[j] * diff[j]) + rho * gradient_squares[j];
    const float update =
        diff[j] * std::sqrt((delta + update_squares[j]) / (delta + gradient_squares[j]));
    update_squares[j] = (1 - rho) * (update * update) + rho * update_squares[j];
    diff[j] = step * update;
  }
}

}  // namespace xtrain
