#include "solvers/sgd_solver.hpp"

#include <algorithm>
#include <cmath>

#include "core/device_apply.hpp"
#include "core/math_functions.hpp"
#include "solvers/update_ops.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/lr_policy.hpp"

#ifdef XTRAIN_USE_CUDA
#include "cuda/math_gpu.hpp"
#endif

namespace xtrain {
namespace {

// NVIDIA Caffe's LARC turbo constants (fixed there, not settings): the
// correlation's averaging and how much of it comes off the trust ratio.
constexpr float kLarcTurboAveraging = 0.95f;
constexpr float kLarcTurboDamping = 0.9f;

// "conv1/0" (or the ParamSpec name) for learnable parameter `learnable_id`.
std::string learnable_param_name(const Net& net, int learnable_id) {
  for (std::size_t i = 0; i < net.params().size(); ++i) {
    if (net.param_owners()[i] < 0 && net.learnable_param_ids()[i] == learnable_id) {
      return net.param_display_names()[i];
    }
  }
  return "#" + std::to_string(learnable_id);
}

void check_larc_settings(const SolverParameter& param) {
  XTRAIN_CHECK(param.larc_policy() == "scale" || param.larc_policy() == "clip",
               "unknown larc_policy \"", param.larc_policy(),
               "\"; use one of: scale (the rate times LARC's), clip (LARC's, at most the rate)");
  XTRAIN_CHECK(std::isfinite(param.larc_eta()) && param.larc_eta() > 0,
               "larc_eta must be > 0, but the solver sets larc_eta: ", param.larc_eta(),
               "; LARC's rate is (1 - momentum) * larc_eta * ||w|| / ||g|| (the usual value is "
               "0.001)");
}

// <x, y> over n values where they live: cuBLAS's dot on a GPU (in float, as
// Blob::sumsq_* there), in double on the CPU (as Blob::sumsq_* there).
double dot_on(const Device& device, std::size_t n, const float* x, const float* y) {
#ifdef XTRAIN_USE_CUDA
  if (device.is_gpu()) return math::gpu::dot(n, x, y);
#endif
  (void)device;
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * y[i];
  return sum;
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
  check_momentum_policy(param_);
  check_weight_decay_policy(param_);
  check_larc_settings(param_);
  add_history_set();
  larc_correlation_.assign(net().learnable_params().size(), 0.0f);
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

float SGDSolver::parameter_rate(int param_id, float rate, float momentum) {
  const float lr_mult = net().params_lr()[param_id];
  if (!param_.larc()) return rate * lr_mult;
  // As in NVIDIA Caffe, LARC's ratio replaces lr_mult, which only keeps a
  // parameter it sets to 0 frozen (the ratio is still computed: turbo's
  // correlation moves on).
  const float trust = larc_trust_ratio(param_id, momentum);
  const float own = lr_mult > 0 ? trust : lr_mult;
  return param_.larc_policy() == "clip" ? std::min(rate, own) : rate * own;
}

float SGDSolver::larc_trust_ratio(int param_id, float momentum) {
  // The norms of the weights and of the gradient before weight decay (NVIDIA
  // Caffe's GPU path fuses the decay into the update, after LARC; its CPU
  // path, which decays first, is not the one its results come from).
  // Blob's sums run where the arrays are.
  const Blob& param_blob = *net().learnable_params()[param_id];
  const auto gradient_norm = static_cast<float>(std::sqrt(param_blob.sumsq_diff()));
  const auto weight_norm = static_cast<float>(std::sqrt(param_blob.sumsq_data()));
  float trust = 1;
  if (weight_norm > 0 && gradient_norm > 0) {
    trust = (1 - momentum) * param_.larc_eta() * weight_norm / gradient_norm;
  }
  if (param_.larc_turbo()) {
    // The cosine of the gradient and the velocity (the step before this
    // one), averaged over iterations; a gradient that keeps pointing the way
    // the velocity goes lowers the rate.
    const Blob& velocity = history_blob(0, param_id);
    const auto velocity_norm = static_cast<float>(std::sqrt(velocity.sumsq_data()));
    float cosine = 0;
    if (gradient_norm > 0 && velocity_norm > 0) {
      const auto dot = static_cast<float>(dot_on(device(), param_blob.count(),
                                                 ops::diff_on(device(), param_blob),
                                                 ops::data_on(device(), velocity)));
      cosine = dot / (gradient_norm * velocity_norm);
    }
    float& correlation = larc_correlation_[param_id];
    correlation = kLarcTurboAveraging * correlation + (1 - kLarcTurboAveraging) * cosine;
    trust -= kLarcTurboDamping * correlation;
  }
  return trust;
}

void SGDSolver::display_rate(float rate, float momentum, float weight_decay) const {
  // Caffe's line; NVIDIA Caffe's m and wd are added when they follow a schedule.
  std::string scheduled;
  if (param_.momentum_policy() != "fixed") scheduled += detail::concat(", m = ", momentum);
  if (param_.weight_decay_policy() != "fixed") scheduled += detail::concat(", wd = ", weight_decay);
  XLOG(INFO) << "Iteration " << iter_ << ", lr = " << rate << scheduled;
}

void SGDSolver::apply_update() {
  const int previous_step = current_step_;
  const float rate = learning_rate(param_, iter_, &current_step_);
  if (param_.lr_policy() == "multistep" && current_step_ != previous_step) {
    XLOG(INFO) << "MultiStep Status: Iteration " << iter_ << ", step = " << current_step_;
  }
  const float momentum = scheduled_momentum(param_, iter_, rate);
  const float weight_decay = scheduled_weight_decay(param_, iter_);
  if (display_now()) display_rate(rate, momentum, weight_decay);
  clip_gradients();
  const std::vector<Blob*>& params = net().learnable_params();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const int id = static_cast<int>(i);
    normalize(id);
    // Before the decay is added: LARC's norm is the bare gradient's.
    const float own_rate = parameter_rate(id, rate, momentum);
    regularize(id, weight_decay);
    compute_update_value(id, own_rate, momentum);
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

void SGDSolver::regularize(int param_id, float weight_decay) {
  const float decay = weight_decay * net().params_weight_decay()[param_id];
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

void SGDSolver::compute_update_value(int param_id, float rate, float momentum) {
  Blob& param_blob = *net().learnable_params()[param_id];
  ops::for_each_on(device(), param_blob.count(), ops::MomentumStep{rate, momentum},
                   ops::mutable_diff_on(device(), param_blob),
                   ops::mutable_data_on(device(), history_blob(0, param_id)));
}

void SGDSolver::write_history(SolverState* state) const {
  state->clear_history();
  for (const auto& history : history_) history->to_proto(state->add_history());
  if (!(param_.larc() && param_.larc_turbo())) return;
  for (float correlation : larc_correlation_) state->mutable_resume()->add_larc_correlation(correlation);
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
  if (!(param_.larc() && param_.larc_turbo())) return;
  const auto& saved = state.resume().larc_correlation();
  if (static_cast<std::size_t>(saved.size()) == larc_correlation_.size()) {
    larc_correlation_.assign(saved.begin(), saved.end());
    return;
  }
  // A state from NVIDIA Caffe, or one written without larc_turbo.
  XLOG(WARNING) << "the .solverstate has no larc_turbo correlations for this net (" << saved.size()
                << " of " << larc_correlation_.size()
                << "): they start again from 0, as NVIDIA Caffe's do, so the resumed run is "
                   "not exactly the uninterrupted one";
  std::fill(larc_correlation_.begin(), larc_correlation_.end(), 0.0f);
}

}  // namespace xtrain
