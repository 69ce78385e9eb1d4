// Adam (Kingma & Ba 2014), Caffe 1.0's AdamSolver. With beta1 = momentum,
// beta2 = momentum2, eps = delta and t = iter + 1 (the iteration being made):
//   m <- beta1 * m + (1 - beta1) * g
//   v <- beta2 * v + (1 - beta2) * g^2
//   w <- w - r * sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(v) + eps)
//                                      (r = learning_rate(iter) * lr_mult)
// Caffe folds the bias correction into the rate, so eps is not corrected.
// Two history sets: first m for every parameter, then v for every parameter,
// in that order in a .solverstate, as Caffe writes them.
#pragma once

#include "solvers/sgd_solver.hpp"

namespace xtrain {

class AdamSolver : public SGDSolver {
 public:
  explicit AdamSolver(const SolverParameter& param, const SolverOptions& options = {});
  const char* type() const override { return "Adam"; }

 protected:
  void compute_update_value(int param_id, float rate) override;
};

}  // namespace xtrain
