#include "solvers/nesterov_solver.hpp"

namespace xtrain {

void NesterovSolver::compute_update_value(int param_id, float rate) {
  Blob& param_blob = *net().learnable_params()[param_id];
  const std::size_t count = param_blob.count();
  const float momentum = param_.momentum();
  const float step = local_rate(param_id, rate);
  float* velocity = history_blob(0, param_id).mutable_cpu_data();
  float* diff = param_blob.mutable_cpu_diff();
  for (std::size_t j = 0; j < count; ++j) {
    const float previous = velocity[j];
    velocity[j] = step * diff[j] + momentum * previous;
    diff[j] = (1 + momentum) * velocity[j] - momentum * previous;
  }
}

}  // namespace xtrain
