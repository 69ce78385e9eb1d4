// What the solver tells its observers (xtrain/training_observer.hpp): the
// figures of each display and the observers' list. The loop that sends the
// events is in solver.cpp.
#include <chrono>

#include "solvers/observers.hpp"
#include "solvers/training_progress.hpp"
#include "xtrain/data_wait.hpp"
#include "xtrain/lr_policy.hpp"
#include "xtrain/solver.hpp"

namespace xtrain {

std::vector<NetOutputValue> net_output_values(const Net& net, const std::vector<float>& values) {
  std::vector<NetOutputValue> named;
  std::size_t index = 0;
  const BlobVec& outputs = net.output_blobs();
  for (std::size_t j = 0; j < outputs.size(); ++j) {
    const int blob_index = net.output_blob_indices()[j];
    for (std::size_t k = 0; k < outputs[j]->count() && index < values.size(); ++k, ++index) {
      named.push_back(NetOutputValue{net.blob_names()[blob_index], values[index],
                                     net.blob_loss_weights()[blob_index]});
    }
  }
  return named;
}

std::vector<float> net_output_data(const Net& net) {
  std::vector<float> values;
  for (const Blob* output : net.output_blobs()) {
    const float* data = output->cpu_data();
    values.insert(values.end(), data, data + output->count());
  }
  return values;
}

namespace {

// What every display event carries: where training stands and the net's
// outputs now.
TrainingDisplay display_event(const Solver& solver, double seconds) {
  TrainingDisplay event;
  event.iteration = solver.iter();
  event.max_iter = solver.param().max_iter();
  event.display_interval = solver.param().display();
  event.smoothed_loss = solver.smoothed_loss();
  event.seconds = seconds;
  event.outputs = net_output_values(solver.net(), net_output_data(solver.net()));
  event.loss_scale = solver.loss_scale();
  event.skipped_updates = solver.skipped_updates();
  return event;
}

}  // namespace

TrainingObserver::~TrainingObserver() = default;

void Solver::add_observer(std::shared_ptr<TrainingObserver> observer) {
  observers_.push_back(std::move(observer));
}

double Solver::training_seconds() const {
  return train_seconds_before_ +
         std::chrono::duration<double>(std::chrono::steady_clock::now() - session_start_).count();
}

float Solver::display_learning_rate() const {
  // The rate apply_update() is about to use (on a copy of the schedule's
  // position, which only apply_update may advance).
  int step = current_step_;
  return learning_rate(param_, iter_, &step);
}

void Solver::publish_display(bool show_data_wait) {
  const auto now = std::chrono::steady_clock::now();
  const double lapse = std::chrono::duration<double>(now - display_timer_).count();
  const double per_second = (iter_ - iterations_at_last_display_) / (lapse > 0 ? lapse : 1);
  const double data_wait = take_data_wait(*net_, test_nets_);
  const int iterations_before_display = iterations_at_last_display_;
  display_timer_ = now;
  iterations_at_last_display_ = iter_;

  TrainingDisplay event = display_event(*this, training_seconds());
  event.iterations_per_second = per_second;
  event.seconds_since_display = lapse;
  const int replicas = data_parallel() ? options_.communicator->size() : 1;
  // Unknown at the session's first iteration (no iterations timed yet).
  if (iter_ > iterations_before_display) {
    event.images_per_second =
        images_per_iteration(*net_, param_.iter_size(), replicas) * per_second;
  }
  event.learning_rate = display_learning_rate();
  if (show_data_wait) event.data_wait_share = data_wait / (lapse > 0 ? lapse : 1);
  notify(observers_, &TrainingObserver::on_display, event);
}

void Solver::publish_final_loss() {
  TrainingDisplay event = display_event(*this, training_seconds());
  event.final_pass = true;
  notify(observers_, &TrainingObserver::on_display, event);
}

}  // namespace xtrain
