#include "solvers/adagrad_solver.hpp"

#include "core/device_apply.hpp"
#include "solvers/update_ops.hpp"
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
  ops::for_each_on(device(), param_blob.count(),
                   ops::AdaGradStep{local_rate(param_id, rate), param_.delta()},
                   ops::mutable_diff_on(device(), param_blob),
                   ops::mutable_data_on(device(), history_blob(0, param_id)));
}

}  // namespace xtrain
