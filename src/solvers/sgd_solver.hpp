// Stochastic gradient descent with momentum, Caffe 1.0's SGDSolver.
//
// For each learnable parameter w with gradient g (accumulated over iter_size
// passes), per update:
//   g <- g * clip / ||G||      if clip_gradients >= 0 and the L2 norm ||G|| of
//                              all gradients together exceeds it
//   g <- g / iter_size
//   g <- g + d * w             (L2)  or  g + d * sign(w)  (L1),
//                              d = weight_decay * decay_mult
//   v <- momentum * v + r * g, r = learning_rate(iter) * lr_mult
//   w <- w - v
// The history v (one blob per learnable parameter) is what a .solverstate
// saves.
#pragma once

#include <memory>
#include <vector>

#include "xtrain/blob.hpp"
#include "xtrain/solver.hpp"

namespace xtrain {

class SGDSolver : public Solver {
 public:
  explicit SGDSolver(const SolverParameter& param, const SolverOptions& options = {});
  const char* type() const override { return "SGD"; }

  // The momentum history, one blob per entry of net().learnable_params().
  const std::vector<std::unique_ptr<Blob>>& history() const { return history_; }

 protected:
  void apply_update() override;
  void write_history(SolverState* state) const override;
  void check_history(const SolverState& state, const std::string& path) const override;
  void read_history(const SolverState& state) override;

  void clip_gradients();
  void normalize(int param_id);
  void regularize(int param_id);
  void compute_update_value(int param_id, float rate);

  std::vector<std::unique_ptr<Blob>> history_;
};

}  // namespace xtrain
