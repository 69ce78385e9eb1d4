// Solver construction (which nets, in which state), the training loop and
// testing. Snapshots and restoring live in solver_snapshot.cpp.
#include "xtrain/solver.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/nan_settings.hpp"
#include "layers/average_precision.hpp"
#include "solvers/gradient_buckets.hpp"
#include "solvers/loss_scaler.hpp"
#include "solvers/observers.hpp"
#include "solvers/time_budget.hpp"
#include "solvers/training_progress.hpp"
#include "xtrain/data_wait.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/lr_policy.hpp"
#include "xtrain/proto_io.hpp"
#include "xtrain/random.hpp"

namespace xtrain {
namespace {

const char* const kTrainNetFields = "net, net_param, train_net, train_net_param";

// Caffe's order of precedence for a net's state: the phase implied by the
// net's role, then the state written in the net, then the solver's
// train_state/test_state (later ones win field by field).
void set_net_state(NetParameter* net_param, Phase phase, const NetState* solver_state) {
  NetState state;
  state.set_phase(phase);
  state.MergeFrom(net_param->state());
  if (solver_state != nullptr) state.MergeFrom(*solver_state);
  *net_param->mutable_state() = state;
}

// eval_type "detection" (the SSD fork): each test output holds
// DetectionEvaluate's rows of 5; they are collected over the test's batches
// and reported as the mean average precision, where Caffe averages values.
bool evaluates_detection(const SolverParameter& param) {
  XTRAIN_CHECK(param.eval_type() == "classification" || param.eval_type() == "detection",
               "the solver's eval_type is \"", param.eval_type(),
               "\"; use \"classification\" (average each test output) or \"detection\" "
               "(mean average precision of DetectionEvaluate outputs)");
  return param.eval_type() == "detection";
}

void collect_detection_rows(const Net& test_net,
                            std::vector<detection::DetectionEvaluation>& evaluations) {
  for (std::size_t j = 0; j < test_net.output_blobs().size(); ++j) {
    const Blob& output = *test_net.output_blobs()[j];
    const std::string& name = test_net.blob_names()[test_net.output_blob_indices()[j]];
    XTRAIN_CHECK(output.num_axes() >= 1 && output.shape(output.num_axes() - 1) == 5,
                 "eval_type \"detection\": the test net's output '", name, "' has shape ",
                 output.shape_string(),
                 "; every output must be DetectionEvaluate's rows of 5 (mark other tops as used, "
                 "or set eval_type: \"classification\")");
    evaluations[j].add_rows(output.cpu_data(), static_cast<int>(output.count() / 5));
  }
}

std::vector<NetOutputValue> mean_average_precisions(
    const Net& test_net, const std::vector<detection::DetectionEvaluation>& evaluations,
    detection::ApVersion version, bool per_class_lines) {
  std::vector<NetOutputValue> outputs;
  for (std::size_t j = 0; j < evaluations.size(); ++j) {
    const std::string& name = test_net.blob_names()[test_net.output_blob_indices()[j]];
    std::map<int, float> per_class;
    const float mean_ap = evaluations[j].mean_average_precision(version, &per_class);
    if (per_class_lines) {
      for (const auto& [label, ap] : per_class) XLOG(INFO) << "class" << label << ": " << ap;
    }
    // Printed by the log's observer as "Test net output #j: name = mAP", as SSD prints it.
    outputs.push_back(NetOutputValue{name, mean_ap, 0.0f});
  }
  return outputs;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Solver::Solver(const SolverParameter& param, const SolverOptions& options)
    : param_(param), options_(options) {
  if (options_.is_root) {
    XLOG(INFO) << "Initializing solver from parameters: \n" << param_.DebugString();
  }
  const std::string nan_setting = first_nan_setting(param_);
  XTRAIN_CHECK(nan_setting.empty(), "the solver's ", nan_setting,
               " is nan, which no setting can be; give a number");
  XTRAIN_CHECK(param_.iter_size() >= 1, "iter_size must be at least 1, got ", param_.iter_size());
  XTRAIN_CHECK(param_.average_loss() >= 1, "average_loss must be at least 1, got ",
               param_.average_loss());
  XTRAIN_CHECK(param_.display() >= 0, "display must be >= 0 (0: no display), got ",
               param_.display());
  XTRAIN_CHECK(param_.max_iter() >= 0, "max_iter must be >= 0, got ", param_.max_iter());
  XTRAIN_CHECK(param_.test_interval() >= 0, "test_interval must be >= 0 (0: never test), got ",
               param_.test_interval());
  XTRAIN_CHECK(std::isfinite(param_.weight_decay()) && param_.weight_decay() >= 0,
               "weight_decay: ", param_.weight_decay(),
               " is not a finite number >= 0 (a negative decay grows the weights instead of "
               "shrinking them); give 0 (none) or a small positive value such as "
               "`weight_decay: 0.0005`");
  check_learning_rate_policy(param_);
  check_snapshot_settings();
  XTRAIN_CHECK(param_.solver_data_type() == FLOAT, "the solver's solver_data_type is ",
               Type_Name(param_.solver_data_type()),
               ", but xtrain keeps the master weights and the update's history in FLOAT (16-bit "
               "master weights lose the small updates); the layers compute in 16 bits through "
               "the net's forward_type/backward_type. Set solver_data_type: FLOAT or remove it");

  if (options_.device) {
    device_ = *options_.device;
  } else if (param_.has_solver_mode() && param_.solver_mode() == SolverParameter::GPU) {
    device_ = Device::gpu(param_.device_id());
  }
  session_start_ = options_.session_start.value_or(std::chrono::steady_clock::now());
  last_snapshot_time_ = session_start_;
  seed_ = param_.random_seed() >= 0 ? static_cast<std::uint64_t>(param_.random_seed())
                                    : nondeterministic_seed();
  if (data_parallel()) {
    options_.is_root = options_.communicator->rank() == 0;
    agree_on_seed();
  }
  init_train_net();
  if (data_parallel()) broadcast_parameters();
  if (options_.is_root) init_test_nets();
  std::size_t snapshot_bytes = 0;
  for (const Blob* learnable : net_->learnable_params()) {
    snapshot_bytes += learnable->count() * sizeof(float);
  }
  time_budget_ = std::make_shared<TimeBudget>(param_.max_seconds(), session_start_, snapshot_bytes);
  observers_.push_back(time_budget_);
  if (options_.is_root) observers_.push_back(std::make_shared<ProgressLog>());
  if (options_.is_root) XLOG(INFO) << "Solver scaffolding done.";
}

Solver::~Solver() = default;

void Solver::init_train_net() {
  const int sources = param_.has_net() + param_.has_net_param() + param_.has_train_net() +
                      param_.has_train_net_param();
  XTRAIN_CHECK(sources >= 1, "the solver names no train net; set one of: ", kTrainNetFields);
  XTRAIN_CHECK(sources <= 1, "the solver names ", sources,
               " train nets; keep exactly one of: ", kTrainNetFields);

  NetParameter net_param;
  if (param_.has_train_net_param()) {
    XLOG(INFO) << "Creating training net specified in train_net_param.";
    net_param = param_.train_net_param();
  } else if (param_.has_train_net()) {
    XLOG(INFO) << "Creating training net from train_net file: " << param_.train_net();
    net_param = read_net_params_from_text_file(param_.train_net());
  } else if (param_.has_net_param()) {
    XLOG(INFO) << "Creating training net specified in net_param.";
    net_param = param_.net_param();
  } else {
    XLOG(INFO) << "Creating training net from net file: " << param_.net();
    net_param = read_net_params_from_text_file(param_.net());
  }
  set_net_state(&net_param, TRAIN, param_.has_train_state() ? &param_.train_state() : nullptr);

  NetOptions net_options;
  net_options.random_seed = derive_seed(seed_, "train");
  net_options.device = device_;
  net_options.verbose = options_.verbose_nets;
  net_options.share_activation_memory = options_.share_activation_memory;
  net_options.channel_blocked_activations = options_.channel_blocked_activations;
  net_options.share_kept_copies = options_.share_kept_copies;
  net_options.fuse_layers = options_.fuse_layers;
  if (data_parallel()) {
    net_options.data_shard = {options_.communicator->rank(), options_.communicator->size()};
  }
  net_options.precision = options_.precision;
  loss_scaler_ = std::make_unique<LossScaler>(net_param);
  net_ = std::make_shared<Net>(net_param, net_options);
  net_->set_loss_scale(loss_scaler_->scale());
  if (options_.is_root && (net_->mixed_precision() || loss_scaler_->active())) {
    XLOG(INFO) << "Mixed precision: the train net computes in "
               << (options_.precision ? number_type_name(*options_.precision)
                                      : "the types its fields give")
               << "; master weights and updates in fp32; " << loss_scaler_->describe();
  }
}

void Solver::init_test_nets() {
  // As in Caffe: test_net_param entries, then test_net files, then the
  // generic net (net/net_param) once for each test_iter entry left over.
  const bool has_generic_net = param_.has_net() || param_.has_net_param();
  const int explicit_nets = param_.test_net_param_size() + param_.test_net_size();
  const int test_iters = param_.test_iter_size();
  if (has_generic_net) {
    XTRAIN_CHECK(test_iters >= explicit_nets, "the solver has ", explicit_nets,
                 " test nets (test_net/test_net_param) but only ", test_iters,
                 " test_iter values; give one test_iter per test net");
  } else {
    XTRAIN_CHECK(test_iters == explicit_nets, "the solver has ", explicit_nets,
                 " test nets (test_net/test_net_param) but ", test_iters,
                 " test_iter values; give one test_iter per test net");
  }
  XTRAIN_CHECK(param_.test_state_size() == 0 || param_.test_state_size() == test_iters,
               "the solver has ", param_.test_state_size(), " test_state entries for ", test_iters,
               " test nets; give one test_state per test net, or none");
  XTRAIN_CHECK(test_iters > 0 || param_.test_interval() == 0,
               "the solver sets test_interval: ", param_.test_interval(),
               " but no test_iter, so it would never test; add test_iter (the batches of one "
               "test pass, e.g. test set size / test batch size) or remove test_interval");
  if (test_iters == 0) return;
  XTRAIN_CHECK(param_.test_interval() > 0, "the solver has ", test_iters,
               " test net(s) (test_iter) but no test_interval; set test_interval to the "
               "number of iterations between tests");
  for (int i = 0; i < test_iters; ++i) {
    XTRAIN_CHECK(param_.test_iter(i) > 0, "test_iter #", i, " must be > 0 (batches per test), got ",
                 param_.test_iter(i));
  }

  for (int i = 0; i < test_iters; ++i) {
    NetParameter net_param;
    std::string source;
    if (i < param_.test_net_param_size()) {
      source = "test_net_param";
      net_param = param_.test_net_param(i);
    } else if (i < explicit_nets) {
      const std::string& path = param_.test_net(i - param_.test_net_param_size());
      source = "test_net file: " + path;
      net_param = read_net_params_from_text_file(path);
    } else if (param_.has_net_param()) {
      source = "net_param";
      net_param = param_.net_param();
    } else {
      source = "net file: " + param_.net();
      net_param = read_net_params_from_text_file(param_.net());
    }
    XLOG(INFO) << "Creating test net (#" << i << ") specified by " << source;
    set_net_state(&net_param, TEST, param_.test_state_size() ? &param_.test_state(i) : nullptr);

    NetOptions net_options;
    net_options.random_seed = derive_seed(seed_, "test", static_cast<std::uint64_t>(i));
    net_options.device = device_;
    net_options.verbose = options_.verbose_nets;
    net_options.share_activation_memory = options_.share_activation_memory;
    net_options.channel_blocked_activations = options_.channel_blocked_activations;
    net_options.share_kept_copies = options_.share_kept_copies;
    net_options.fuse_layers = options_.fuse_layers;
    net_options.precision = options_.precision;
    auto test_net = std::make_shared<Net>(net_param, net_options);
    test_net->share_trained_layers_with(*net_);
    test_nets_.push_back(test_net);
  }
  last_test_results_.resize(test_nets_.size());
}

void Solver::add_iteration_start_callback(Callback callback) {
  iteration_start_callbacks_.push_back(std::move(callback));
}

void Solver::add_gradients_ready_callback(Callback callback) {
  gradients_ready_callbacks_.push_back(std::move(callback));
}

void Solver::set_action_request_function(ActionRequest request) {
  action_request_ = std::move(request);
}

Solver::Action Solver::requested_action() const {
  return action_request_ ? action_request_() : Action::kNone;
}

bool Solver::display_now() const {
  return options_.is_root && param_.display() > 0 && iter_ % param_.display() == 0;
}

void Solver::solve(const std::string& resume_file) {
  XLOG(INFO) << "Solving " << net_->name();
  XLOG(INFO) << "Learning Rate Policy: " << param_.lr_policy();
  requested_early_exit_ = false;
  if (!resume_file.empty()) {
    XLOG(INFO) << "Restoring previous solver status from " << resume_file;
    restore(resume_file);
  }
  if (options_.is_root) {
    TrainingStart start;
    start.iteration = iter_;
    start.max_iter = param_.max_iter();
    start.resumed = !resume_file.empty();
    start.seconds = training_seconds();
    start.net_name = net_->name();
    start.device = device_.to_string();
    start.solver_text = param_.DebugString();
    start.snapshot_prefix = param_.snapshot_prefix();
    start.precision = net_->precision_summary();
    if (loss_scaler_->active()) start.precision += ", " + loss_scaler_->describe();
    notify(observers_, &TrainingObserver::on_start, start);
  }

  const int start_iter = iter_;
  solve_start_iter_ = iter_;
  if (options_.is_root && iter_ >= param_.max_iter()) {
    XLOG(WARNING) << "Already at iteration " << iter_ << ", max_iter is " << param_.max_iter()
                  << ": nothing to train. Raise max_iter (or give --max_iter) to train further.";
  }
  step(std::max(0, param_.max_iter() - iter_));
  // A stop request still saves the work done, as in Caffe; stopping for the
  // time budget always does, since resuming is its whole point.
  if (options_.is_root && (param_.snapshot_after_train() || stopped_for_time_budget_) &&
      last_snapshot_iter_ != iter_) {
    snapshot();
  }
  const auto end_of_training = [this] {
    if (!options_.is_root) return;
    TrainingEnd end;
    end.iteration = iter_;
    end.stopped_early = requested_early_exit_;
    end.seconds = training_seconds();
    notify(observers_, &TrainingObserver::on_end, end);
  };
  if (requested_early_exit_) {
    XLOG(INFO) << "Optimization stopped early.";
    end_of_training();
    return;
  }
  // One more forward pass (no update) to show the loss of the final weights,
  // over every replica's batch as the display lines before it: every
  // replica runs it (display_now() is the root's alone), the root shows it.
  if (param_.display() > 0 && iter_ % param_.display() == 0) {
    const float loss = mean_over_replicas(net_->forward());
    if (display_now()) {
      update_smoothed_loss(loss, start_iter);
      publish_final_loss();
    }
  }
  if (options_.is_root && param_.test_interval() > 0 && iter_ % param_.test_interval() == 0) {
    test_all();
  }
  end_of_training();
  XLOG(INFO) << "Optimization Done.";
}

void Solver::step(int iters) {
  // Python's solver.step(n) reaches here with the user's n.
  XTRAIN_CHECK(iters >= 0, "step(", iters, "): give the number of iterations to train, 0 or more");
  XTRAIN_CHECK(iters <= std::numeric_limits<int>::max() - iter_, "step(", iters,
               ") from iteration ", iter_, " would pass ", std::numeric_limits<int>::max(),
               ", the most iterations a solver counts");
  const int start_iter = iter_;
  const int stop_iter = iter_ + iters;
  losses_.clear();
  smoothed_loss_ = 0;
  display_timer_ = std::chrono::steady_clock::now();
  iterations_at_last_display_ = iter_;
  take_data_wait(*net_, test_nets_);  // count from here
  const bool show_data_wait = reports_data_wait(*net_);

  while (iter_ < stop_iter) {
    const auto iteration_start = std::chrono::steady_clock::now();
    net_->clear_param_diffs();
    if (test_due()) {
      test_all();
      if (requested_early_exit_) break;
    }
    for (const Callback& callback : iteration_start_callbacks_) callback(*this);

    const bool display = display_now();
    const float loss = compute_gradients();
    update_smoothed_loss(loss, start_iter);
    if (display) publish_display(show_data_wait);

    for (const Callback& callback : gradients_ready_callbacks_) callback(*this);
    if (unscale_gradients()) apply_update();
    // iter_ counts the updates done, which is what snapshots record.
    ++iter_;

    Action request = requested_action();
    bool budget_spent =
        iter_ < stop_iter && time_budget_->nearly_spent(seconds_since(iteration_start), test_due());
    if (data_parallel()) request = agree_on_action(request, &budget_spent);
    if ((options_.is_root && param_.snapshot() > 0 && iter_ % param_.snapshot() == 0) ||
        request == Action::kSnapshot || timed_snapshot_due()) {
      snapshot();
    }
    if (request == Action::kStop) {
      requested_early_exit_ = true;
      break;
    }
    if (budget_spent) {
      XLOG(WARNING) << "Stopping at iteration " << iter_ << " to snapshot inside the time budget "
                    << "(max_seconds " << param_.max_seconds() << "); resume with --snapshot";
      stopped_for_time_budget_ = true;
      requested_early_exit_ = true;
      break;
    }
  }
}

bool Solver::unscale_gradients() {
  if (!loss_scaler_->active()) return true;
  const float used = net_->loss_scale();
  bool finite = true;
  if (loss_scaler_->adaptive()) {
    for (const Blob* param_blob : net_->learnable_params()) {
      if (!std::isfinite(param_blob->asum_diff())) finite = false;
    }
  }
  const bool apply = loss_scaler_->accept_update(finite, iter_);
  if (apply) {
    for (Blob* param_blob : net_->learnable_params()) param_blob->scale_diff(1.0f / used);
  }
  net_->set_loss_scale(loss_scaler_->scale());
  return apply;
}

float Solver::loss_scale() const { return loss_scaler_->scale(); }

std::int64_t Solver::skipped_updates() const { return loss_scaler_->skipped_steps(); }

bool Solver::test_due() const {
  return options_.is_root && param_.test_interval() > 0 && iter_ % param_.test_interval() == 0 &&
         (iter_ > 0 || param_.test_initialization());
}

bool Solver::timed_snapshot_due() const {
  return options_.is_root && param_.snapshot_minutes() > 0 &&
         seconds_since(last_snapshot_time_) >= 60.0 * param_.snapshot_minutes();
}

void Solver::update_smoothed_loss(float loss, int start_iter) {
  // Mean of the last average_loss losses, kept as a running sum over a ring.
  const std::size_t window = static_cast<std::size_t>(param_.average_loss());
  if (losses_.size() < window) {
    losses_.push_back(loss);
    const float size = static_cast<float>(losses_.size());
    smoothed_loss_ = (smoothed_loss_ * (size - 1) + loss) / size;
  } else {
    const std::size_t slot = static_cast<std::size_t>(iter_ - start_iter) % window;
    smoothed_loss_ += (loss - losses_[slot]) / static_cast<float>(window);
    losses_[slot] = loss;
  }
}

void Solver::test_all() {
  for (std::size_t i = 0; i < test_nets_.size() && !requested_early_exit_; ++i) {
    test(static_cast<int>(i));
  }
}

void Solver::test(int test_net_id) {
  XTRAIN_ASSERT(test_net_id >= 0 && test_net_id < static_cast<int>(test_nets_.size()), "test net ",
                test_net_id, " of ", test_nets_.size());
  XLOG(INFO) << "Iteration " << iter_ << ", Testing net (#" << test_net_id << ")";
  const auto test_start = std::chrono::steady_clock::now();
  Net& test_net = *test_nets_[test_net_id];
  // Re-share every time: restoring may have given the train net new blobs.
  test_net.share_trained_layers_with(*net_);

  const int batches = param_.test_iter(test_net_id);
  std::vector<double> sums;  // one per output element, over the batches
  const bool detection = evaluates_detection(param_);
  const detection::ApVersion ap_version =
      detection ? detection::parse_ap_version(param_.ap_version(), "the solver's ap_version")
                : detection::ApVersion::kIntegral;
  std::vector<detection::DetectionEvaluation> evaluations(test_net.output_blobs().size());
  double loss = 0;
  for (int batch = 0; batch < batches; ++batch) {
    // Replicas agree on requests after each update; the root alone tests.
    const Action request = data_parallel() ? Action::kNone : requested_action();
    if (request == Action::kSnapshot) snapshot();
    if (request == Action::kStop) requested_early_exit_ = true;
    if (requested_early_exit_) break;

    const float batch_loss = test_net.forward();
    if (param_.test_compute_loss()) loss += batch_loss;
    if (detection) {
      collect_detection_rows(test_net, evaluations);
      continue;
    }
    std::size_t index = 0;
    for (const Blob* output : test_net.output_blobs()) {
      const float* values = output->cpu_data();
      for (std::size_t k = 0; k < output->count(); ++k, ++index) {
        if (index == sums.size()) sums.push_back(0);
        sums[index] += values[k];
      }
    }
  }
  if (requested_early_exit_) {
    XLOG(INFO) << "Test interrupted.";
    return;
  }
  std::vector<float> means(sums.size());
  for (std::size_t k = 0; k < sums.size(); ++k) means[k] = static_cast<float>(sums[k] / batches);
  TestDone done;
  done.iteration = iter_;
  done.test_net = test_net_id;
  done.has_loss = param_.test_compute_loss();
  done.loss = static_cast<float>(loss / batches);
  done.outputs = detection ? mean_average_precisions(test_net, evaluations, ap_version,
                                                     param_.show_per_class_result())
                           : net_output_values(test_net, means);
  TestResults& results = last_test_results_[test_net_id];
  results.clear();
  for (const NetOutputValue& output : done.outputs) results.emplace_back(output.name, output.value);
  last_test_iter_ = iter_;
  done.seconds = training_seconds();
  done.test_seconds = seconds_since(test_start);
  notify(observers_, &TrainingObserver::on_test, done);
}

}  // namespace xtrain
