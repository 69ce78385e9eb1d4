#include "solvers/sgd_solver.hpp"

#include <cmath>

#include "core/math_functions.hpp"
#include "core/device_apply.hpp"
#include "solvers/update_ops.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/lr_policy.hpp"

namespace xtrain {
namespace {

// "conv1/0" (or the ParamSpec name) for learnable parameter `learnable_id`.
std::string learnable_param_name(const Net& net, int learnable_id) {
  for (std::size_t i = 0; i < net.params().size(); ++i) {
    if (net.param_owners()[i] < 0 && net.learnable_param_ids()[i] == learnable_id) {
      return net.param_display_names()[i];
    }
  }
  return "#" + std::to_string(learnable_id);
}

}  // namespace

SGDSolver::SGDSolver(const SolverParameter& param, const SolverOptions& options)
    : Solver(param, options) {
  // Caffe only looks at the type when some decay is non-zero; so do we.
  const std::string& regularization = param_.regularization_type();
  XTRAIN_CHECK(param_.weight_decay() == 0 || regularization == "L2" || regularization == "L1",
               "unknown regularization_type \"", regularization, "\"; use \"L2\" or \"L1\"");
  // Beyond Caffe, which takes any momentum: at 1 or more the velocity (for
  // Adam the mean, for AdaDelta the averages) never decays, so the steps grow.
  XTRAIN_CHECK(param_.momentum() >= 0 && param_.momentum() < 1,
               "momentum must lie in [0, 1), but the solver sets momentum: ", param_.momentum(),
               "; the usual value is 0.9 (0.95 for AdaDelta)");
  add_history_set();
}

void SGDSolver::add_history_set() {
  for (const Blob* param_blob : net().learnable_params()) {
    history_.push_back(std::make_unique<Blob>(param_blob->shape()));
  }
}

std::size_t SGDSolver::history_bytes() const {
  std::size_t bytes = 0;
  for (const auto& blob : history_) bytes += blob->count() * sizeof(float);
  return bytes;
}

int SGDSolver::history_sets() const {
  const std::size_t params = net().learnable_params().size();
  return params == 0 ? 1 : static_cast<int>(history_.size() / params);
}

Blob& SGDSolver::history_blob(int set, int param_id) {
  const std::size_t params = net().learnable_params().size();
  return *history_[static_cast<std::size_t>(set) * params + static_cast<std::size_t>(param_id)];
}

float SGDSolver::local_rate(int param_id, float rate) const {
  return rate * net().params_lr()[param_id];
}

void SGDSolver::apply_update() {
  const int previous_step = current_step_;
  const float rate = learning_rate(param_, iter_, &current_step_);
  if (param_.lr_policy() == "multistep" && current_step_ != previous_step) {
    XLOG(INFO) << "MultiStep Status: Iteration " << iter_ << ", step = " << current_step_;
  }
  if (display_now()) XLOG(INFO) << "Iteration " << iter_ << ", lr = " << rate;
  clip_gradients();
  const std::vector<Blob*>& params = net().learnable_params();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const int id = static_cast<int>(i);
    normalize(id);
    regularize(id);
    compute_update_value(id, rate);
  }
  for (Blob* param_blob : params) param_blob->update();
}

void SGDSolver::clip_gradients() {
  const float clip = param_.clip_gradients();
  if (clip < 0) return;
  const std::vector<Blob*>& params = net().learnable_params();
  double sum_of_squares = 0;
  for (const Blob* param_blob : params) sum_of_squares += param_blob->sumsq_diff();
  const float norm = static_cast<float>(std::sqrt(sum_of_squares));
  if (norm <= clip) return;
  const float scale = clip / norm;
  XLOG(INFO) << "Gradient clipping: scaling down gradients (L2 norm " << norm << " > " << clip
             << ") by scale factor " << scale;
  for (Blob* param_blob : params) param_blob->scale_diff(scale);
}

void SGDSolver::normalize(int param_id) {
  // The diffs hold the sum over iter_size passes; make it their mean.
  if (param_.iter_size() == 1) return;
  Blob& param_blob = *net().learnable_params()[param_id];
  float* diff = ops::mutable_diff_on(device(), param_blob);
  ops::apply_on(device(), param_blob.count(),
                ops::ScaleBy{1.0f / static_cast<float>(param_.iter_size())}, diff, diff);
}

void SGDSolver::regularize(int param_id) {
  const float decay = param_.weight_decay() * net().params_weight_decay()[param_id];
  if (decay == 0) return;
  Blob& param_blob = *net().learnable_params()[param_id];
  const std::size_t count = param_blob.count();
  const float* weights = ops::data_on(device(), param_blob);
  float* diff = ops::mutable_diff_on(device(), param_blob);
  if (param_.regularization_type() == "L2") {
    ops::apply_on(device(), count, ops::AddScaled{decay}, diff, weights, diff);
  } else {
    ops::apply_on(device(), count, ops::AddScaledSign{decay}, diff, weights, diff);
  }
}

void SGDSolver::compute_update_value(int param_id, float rate) {
  Blob& param_blob = *net().learnable_params()[param_id];
  ops::for_each_on(device(), param_blob.count(),
                   ops::MomentumStep{local_rate(param_id, rate), param_.momentum()},
                   ops::mutable_diff_on(device(), param_blob),
                   ops::mutable_data_on(device(), history_blob(0, param_id)));
}

void SGDSolver::write_history(SolverState* state) const {
  state->clear_history();
  for (const auto& history : history_) history->to_proto(state->add_history());
}

void SGDSolver::check_history(const SolverState& state, const std::string& path) const {
  const auto expected = static_cast<int>(history_.size());
  const std::size_t params = net().learnable_params().size();
  if (state.history_size() != expected) {
    const int sets = history_sets();
    const std::string per_parameter =
        sets == 1 ? ""
                  : " and the " + std::string(type()) + " solver keeps " + std::to_string(sets) +
                        " history blobs for each (" + std::to_string(expected) + " in all)";
    throw Error("'" + path + "' is not a solver state of this net: it holds " +
                std::to_string(state.history_size()) + " history blobs but net '" + net().name() +
                "' has " + std::to_string(params) + " learnable parameters" + per_parameter +
                " (expected a .solverstate written for this net by the " + type() +
                " solver; got a .caffemodel?)");
  }
  for (int i = 0; i < expected; ++i) {
    if (history_[i]->shape_equals(state.history(i))) continue;
    const int param_id = static_cast<int>(i % params);
    throw Error(
        "'" + path + "' is not a solver state of this net: its history blob " + std::to_string(i) +
        " has shape " + shape_to_string(blob_proto_shape(state.history(i))) + " but parameter '" +
        learnable_param_name(net(), param_id) + "' of net '" + net().name() + "' has shape " +
        shape_to_string(history_[i]->shape()) + " (expected a .solverstate written for this net)");
  }
}

void SGDSolver::read_history(const SolverState& state) {
  XLOG(INFO) << type() << "Solver: restoring history";
  for (std::size_t i = 0; i < history_.size(); ++i) {
    history_[i]->from_proto(state.history(static_cast<int>(i)), false);
  }
}

}  // namespace xtrain
