// RMSProp (Tieleman & Hinton 2012), Caffe 1.0's RMSPropSolver: AdaGrad with a
// decaying average of the squared gradients instead of their sum.
//   h <- rms_decay * h + (1 - rms_decay) * g^2
//   w <- w - r * g / (sqrt(h) + delta)     (r = learning_rate(iter) * lr_mult)
// The history is h. As in Caffe, momentum must be 0 and rms_decay in [0, 1).
#pragma once

#include "solvers/sgd_solver.hpp"

namespace xtrain {

class RMSPropSolver : public SGDSolver {
 public:
  explicit RMSPropSolver(const SolverParameter& param, const SolverOptions& options = {});
  const char* type() const override { return "RMSProp"; }

 protected:
  void compute_update_value(int param_id, float rate) override;
};

}  // namespace xtrain
