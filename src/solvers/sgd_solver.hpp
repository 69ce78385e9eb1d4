// Stochastic gradient descent with momentum, Caffe 1.0's SGDSolver, and the
// base of the other update rules (Nesterov, AdaGrad, RMSProp, AdaDelta, Adam).
//
// For each learnable parameter w with gradient g (accumulated over iter_size
// passes), per update:
//   g <- g * clip / ||G||      if clip_gradients >= 0 and the L2 norm ||G|| of
//                              all gradients together exceeds it
//   g <- g / iter_size
//   g <- g + d * w             (L2)  or  g + d * sign(w)  (L1),
//                              d = weight_decay * decay_mult
//   g <- rule(g)               the subclass's compute_update_value; for SGD:
//                              v <- momentum * v + r * g,  g <- v,
//                              r = learning_rate(iter) * lr_mult
//   w <- w - g
// The rules keep history blobs, one set per kind of state (SGD: the velocity;
// AdaDelta and Adam: two). Like Caffe, all sets live in one list, set after
// set, which is the order a .solverstate saves them in.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "xtrain/blob.hpp"
#include "xtrain/solver.hpp"

namespace xtrain {

class SGDSolver : public Solver {
 public:
  explicit SGDSolver(const SolverParameter& param, const SolverOptions& options = {});
  const char* type() const override { return "SGD"; }

  // All history blobs: history_sets() sets of one blob per entry of
  // net().learnable_params().
  const std::vector<std::unique_ptr<Blob>>& history() const { return history_; }
  int history_sets() const;
  std::size_t history_bytes() const override;

 protected:
  void apply_update() override;
  void write_history(SolverState* state) const override;
  void check_history(const SolverState& state, const std::string& path) const override;
  void read_history(const SolverState& state) override;

  void clip_gradients();
  void normalize(int param_id);
  void regularize(int param_id);
  // Turns the regularised gradient in the parameter's diff into the step to
  // subtract, updating the history.
  virtual void compute_update_value(int param_id, float rate);

  // Appends one more history blob (zeros) per learnable parameter.
  void add_history_set();
  Blob& history_blob(int set, int param_id);
  // The learning rate of one parameter: rate * its lr_mult.
  float local_rate(int param_id, float rate) const;

  std::vector<std::unique_ptr<Blob>> history_;
};

}  // namespace xtrain
