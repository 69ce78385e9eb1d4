#include "solvers/rmsprop_solver.hpp"

#include "core/device_apply.hpp"
#include "solvers/update_ops.hpp"
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
  ops::for_each_on(device(), param_blob.count(),
                   ops::RMSPropStep{local_rate(param_id, rate), param_.delta(), param_.rms_decay()},
                   ops::mutable_diff_on(device(), param_blob),
                   ops::mutable_data_on(device(), history_blob(0, param_id)));
}

}  // namespace xtrain
