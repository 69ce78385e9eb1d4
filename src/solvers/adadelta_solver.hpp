// AdaDelta (Zeiler 2012), Caffe 1.0's AdaDeltaSolver. With rho = momentum:
//   h_g <- rho * h_g + (1 - rho) * g^2
//   u   <- g * sqrt((h_u + delta) / (h_g + delta))
//   h_u <- rho * h_u + (1 - rho) * u^2
//   w   <- w - r * u                   (r = learning_rate(iter) * lr_mult;
//                                       Caffe keeps the rate, usually 1)
// Two history sets: first h_g for every parameter, then h_u for every
// parameter, in that order in a .solverstate, as Caffe writes them.
#pragma once

#include "solvers/sgd_solver.hpp"

namespace xtrain {

class AdaDeltaSolver : public SGDSolver {
 public:
  explicit AdaDeltaSolver(const SolverParameter& param, const SolverOptions& options = {});
  const char* type() const override { return "AdaDelta"; }

 protected:
  void compute_update_value(int param_id, float rate) override;
};

}  // namespace xtrain
