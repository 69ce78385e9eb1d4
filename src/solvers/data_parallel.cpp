// The Solver's part in data-parallel training (SolverOptions::communicator):
// one seed and one set of starting weights for all replicas, the gradients
// (and the loss, for the display) averaged in buckets whose sums overlap the
// last backward pass (solvers/gradient_buckets.hpp),
// and stop requests agreed on, so that no replica leaves the loop while the
// others wait for it in a collective.
#include <array>
#include <cstdint>
#include <string>

#include "core/device_apply.hpp"
#include "solvers/gradient_buckets.hpp"
#include "xtrain/device.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/solver.hpp"

namespace xtrain {
namespace {

// What must match between replicas for their exchanges to line up: the
// number of learnable blobs, of their values, and a hash of their shapes
// (cut to 52 bits, so that it travels exactly in a double).
std::array<double, 3> learnable_fingerprint(const Net& net) {
  std::uint64_t hash = 1469598103934665603ull;  // FNV-1a
  const auto mix = [&hash](std::uint64_t value) { hash = (hash ^ value) * 1099511628211ull; };
  std::size_t values = 0;
  for (const Blob* param : net.learnable_params()) {
    values += param->count();
    for (const int dim : param->shape()) mix(static_cast<std::uint64_t>(dim));
    mix(~0ull);  // where one blob ends
  }
  return {static_cast<double>(net.learnable_params().size()), static_cast<double>(values),
          static_cast<double>(hash >> 12)};
}

// Replicas that built different nets (one node with another copy of the net
// file, an MPMD launch) would exchange buffers of other sizes: MPI reports
// only a truncation, or waits. Every rank compares its fingerprint with the
// root's, and all learn whether any differed.
void check_replicas_built_the_same_net(Communicator& communicator, const Net& net) {
  const std::array<double, 3> mine = learnable_fingerprint(net);
  std::array<double, 3> roots = mine;
  communicator.broadcast(roots.data(), roots.size(), 0);
  double differing = mine != roots ? 1 : 0;
  communicator.allreduce_sum(&differing, 1);
  if (differing == 0) return;
  const std::string remedy =
      ": every rank must train the same net; give every rank the same solver and net files (on a "
      "shared file system, or identical copies)";
  // This rank built rank 0's net: another did not.
  XTRAIN_CHECK(mine != roots, static_cast<int>(differing), " of the ", communicator.size(),
               " ranks built a train net whose learnable parameters differ from rank 0's (their "
               "own errors say how)",
               remedy);
  const auto described = [](const std::array<double, 3>& fingerprint) {
    return std::to_string(static_cast<long long>(fingerprint[0])) + " learnable blobs of " +
           std::to_string(static_cast<long long>(fingerprint[1])) + " values";
  };
  XTRAIN_CHECK(false, "rank ", communicator.rank(), " of ", communicator.size(),
               " built a train net whose learnable parameters differ from rank 0's: ",
               described(mine), " here, ", described(roots), " on rank 0",
               mine[0] == roots[0] && mine[1] == roots[1] ? ", in other shapes" : "", remedy);
}

}  // namespace

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
  check_replicas_built_the_same_net(*options_.communicator, *net_);
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
