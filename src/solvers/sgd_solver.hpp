// Stochastic gradient descent with momentum, Caffe 1.0's SGDSolver, and the
// base of the other update rules (Nesterov, AdaGrad, RMSProp, AdaDelta, Adam).
//
// For each learnable parameter w with gradient g (accumulated over iter_size
// passes), per update:
//   g <- g * clip / ||G||      if clip_gradients >= 0 and the L2 norm ||G|| of
//                              all gradients together exceeds it
//   g <- g / iter_size
//   r <- the parameter's rate: R * lr_mult, R = learning_rate(iter), or with
//        LARC (larc: true, SGD and Nesterov) NVIDIA Caffe's rule:
//          t = (1 - m) * larc_eta * ||w|| / ||g||   (1 if either norm is 0)
//          larc_turbo:  c <- 0.95 c + 0.05 <g, v> / (||g|| ||v||),
//                       t <- t - 0.9 c   (c per parameter, from 0; v the
//                       velocity before this step)
//          r = R * t ("scale") or min(R, t) ("clip"); lr_mult only switches
//          a parameter off (0), as in NVIDIA Caffe
//        ||g|| is the gradient's before weight decay, as on NVIDIA Caffe's
//        GPU path, which adds the decay inside the update kernel
//   g <- g + d * w             (L2)  or  g + d * sign(w)  (L1),
//                              d = weight_decay(iter) * decay_mult
//   g <- rule(g)               the subclass's compute_update_value; for SGD:
//                              v <- m * v + r * g,  g <- v,  m = momentum(iter)
//   w <- w - g
// learning_rate, momentum and weight_decay are the schedules of
// xtrain/lr_policy.hpp (Caffe's fixed momentum and decay unless
// momentum_policy / weight_decay_policy say otherwise).
// The rules keep history blobs, one set per kind of state (SGD: the velocity;
// AdaDelta and Adam: two). Like Caffe, all sets live in one list, set after
// set, which is the order a .solverstate saves them in. LARC turbo's running
// correlations c go into the state's resume part (NVIDIA Caffe keeps them in
// memory only, so its states resume them from 0).
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
  void regularize(int param_id, float weight_decay);
  // Turns the regularised gradient in the parameter's diff into the step to
  // subtract, updating the history; `rate` is the parameter's own
  // (parameter_rate()), `momentum` this iteration's.
  virtual void compute_update_value(int param_id, float rate, float momentum);

  // Appends one more history blob (zeros) per learnable parameter.
  void add_history_set();
  Blob& history_blob(int set, int param_id);
  // The learning rate of one parameter, from the iteration's `rate`: rate *
  // its lr_mult, or LARC's (above). Call once per parameter and iteration,
  // before regularize(): LARC turbo advances its correlation.
  float parameter_rate(int param_id, float rate, float momentum);

  std::vector<std::unique_ptr<Blob>> history_;

 private:
  // LARC's t for one parameter (above), before "scale" or "clip".
  float larc_trust_ratio(int param_id, float momentum);
  void display_rate(float rate, float momentum, float weight_decay) const;

  // LARC turbo's running correlation c, one per learnable parameter.
  std::vector<float> larc_correlation_;
};

}  // namespace xtrain
