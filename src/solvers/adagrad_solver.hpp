// AdaGrad (Duchi et al. 2011), Caffe 1.0's AdaGradSolver: each weight's step
// shrinks with the sum of its squared gradients so far.
//   h <- h + g^2
//   w <- w - r * g / (sqrt(h) + delta)     (r = learning_rate(iter) * lr_mult)
// The history is h. Momentum has no meaning here; Caffe refuses it, so do we.
#pragma once

#include "solvers/sgd_solver.hpp"

namespace xtrain {

class AdaGradSolver : public SGDSolver {
 public:
  explicit AdaGradSolver(const SolverParameter& param, const SolverOptions& options = {});
  const char* type() const override { return "AdaGrad"; }

 protected:
  void compute_update_value(int param_id, float rate) override;
};

}  // namespace xtrain
