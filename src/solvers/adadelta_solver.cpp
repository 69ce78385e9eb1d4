#include "solvers/adadelta_solver.hpp"

#include "core/device_apply.hpp"
#include "solvers/update_ops.hpp"

namespace xtrain {

AdaDeltaSolver::AdaDeltaSolver(const SolverParameter& param, const SolverOptions& options)
    : SGDSolver(param, options) {
  add_history_set();  // the squared updates, after the squared gradients
}

void AdaDeltaSolver::compute_update_value(int param_id, float rate) {
  Blob& param_blob = *net().learnable_params()[param_id];
  ops::for_each_on(device(), param_blob.count(),
                   ops::AdaDeltaStep{local_rate(param_id, rate), param_.delta(), param_.momentum()},
                   ops::mutable_diff_on(device(), param_blob),
                   ops::mutable_data_on(device(), history_blob(0, param_id)),
                   ops::mutable_data_on(device(), history_blob(1, param_id)));
}

}  // namespace xtrain
