// The Solver's part in data-parallel training (SolverOptions::communicator):
// one seed and one set of starting weights for all replicas, the gradients
// (and the loss, for the display) averaged in buckets whose sums overlap the
// last backward pass (solvers/gradient_buckets.hpp),
// and stop requests agreed on, so that no replica leaves the loop while the
// others wait for it in a collective.
#include "core/device_apply.hpp"
#include "solvers/gradient_buckets.hpp"
#include "xtrain/device.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/solver.hpp"

namespace xtrain {

bool Solver::data_parallel() const {
  return options_.communicator != nullptr && options_.communicator->size() > 1;
}

// The seed drives fillers, data order, augmentation and Dropout: every
// replica must draw the same numbers (random_seed unset means the clock's).
void Solver::agree_on_seed() {
  // Two 32-bit halves travel exactly in doubles.
  double halves[2] = {static_cast<double>(seed_ >> 32), static_cast<double>(seed_ & 0xffffffffu)};
  options_.communicator->broadcast(halves, 2, 0);
  seed_ = (static_cast<std::uint64_t>(halves[0]) << 32) | static_cast<std::uint64_t>(halves[1]);
}

// Replicas built from one seed hold the same weights already; the broadcast
// makes sure of it (and carries weights the root loaded or resumed).
void Solver::broadcast_parameters() {
  Communicator& exchange = gradient_communicator();
  const Device where =
      device_.is_gpu() && exchange.works_on_device_memory() ? device_ : Device::cpu();
  for (Blob* param : net_->learnable_params()) {
    exchange.broadcast(ops::mutable_data_on(where, *param), param->count(), 0);
  }
}

Communicator& Solver::gradient_communicator() const {
  return options_.gradient_communicator ? *options_.gradient_communicator : *options_.communicator;
}

float Solver::compute_gradients() {
  const int passes = param_.iter_size();
  float loss = 0;
  for (int i = 0; i + 1 < passes; ++i) loss += net_->forward_backward();
  if (!data_parallel()) {
    loss += net_->forward_backward();
    return loss / static_cast<float>(passes);
  }
  // The earlier passes only add to the gradients; the last one finishes
  // them layer by layer, and each bucket's sum starts as soon as it can.
  loss += net_->forward();
  Communicator& exchange = gradient_communicator();
  const Device where =
      device_.is_gpu() && exchange.works_on_device_memory() ? device_ : Device::cpu();
  const bool first_exchange = !gradient_buckets_;
  if (first_exchange) {
    gradient_buckets_ = std::make_unique<GradientBuckets>(*net_, options_.gradient_bucket_bytes);
  }
  if (first_exchange) {
    // The first backward on a GPU loads its kernels (CUDA 13 loads modules
    // lazily, at a kernel's first launch) and allocates its buffers; either
    // may wait for the device's other work, and an NCCL sum already queued
    // spins until every replica joins it: with several GPUs that can hang.
    // So the first exchange starts only once the backward pass has run to
    // the end; from the second iteration on, the sums overlap backward. (The
    // same on the CPU, where it costs nothing and is tested.)
    net_->backward();
    synchronize(device_);
    gradient_buckets_->begin(exchange, where, loss / static_cast<float>(passes));
    for (int layer = static_cast<int>(net_->layers().size()) - 1; layer >= 0; --layer) {
      gradient_buckets_->layer_done(layer);
    }
    return gradient_buckets_->finish();
  }
  gradient_buckets_->begin(exchange, where, loss / static_cast<float>(passes));
  net_->backward([this](int layer) { gradient_buckets_->layer_done(layer); });
  return gradient_buckets_->finish();
}

float Solver::mean_over_replicas(float value) const {
  if (!data_parallel()) return value;
  double sum = value;
  options_.communicator->allreduce_sum(&sum, 1);
  return static_cast<float>(sum / options_.communicator->size());
}

Solver::Action Solver::agree_on_action(Action request, bool* time_budget_spent) {
  double votes[3] = {request == Action::kStop ? 1.0 : 0.0, request == Action::kSnapshot ? 1.0 : 0.0,
                     *time_budget_spent ? 1.0 : 0.0};
  options_.communicator->allreduce_sum(votes, 3);
  *time_budget_spent = votes[2] > 0;
  if (votes[0] > 0) return Action::kStop;
  if (votes[1] > 0) return Action::kSnapshot;
  return Action::kNone;
}

}  // namespace xtrain
