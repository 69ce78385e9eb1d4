// Nesterov's accelerated gradient, Caffe 1.0's NesterovSolver: SGD's
// velocity update, but the step looks ahead along the new velocity.
//   v' <- momentum * v + r * g          (r = learning_rate(iter) * lr_mult)
//   w  <- w - ((1 + momentum) * v' - momentum * v)
// The history is the velocity v, as for SGD.
#pragma once

#include "solvers/sgd_solver.hpp"

namespace xtrain {

class NesterovSolver : public SGDSolver {
 public:
  using SGDSolver::SGDSolver;
  const char* type() const override { return "Nesterov"; }

 protected:
  void compute_update_value(int param_id, float rate) override;
};

}  // namespace xtrain
