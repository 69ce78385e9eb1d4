// The Solver's part in data-parallel training (SolverOptions::communicator):
// one seed and one set of starting weights for all replicas, the gradients
// (and the loss, for the display) averaged in one allreduce per iteration,
// and stop requests agreed on, so that no replica leaves the loop while the
// others wait for it in a collective.
#include <cstring>

#include "core/device_memory.hpp"
#include "solvers/device_update.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/solver.hpp"

#ifdef XTRAIN_USE_CUDA
#include "cuda/math_gpu.hpp"
#endif

namespace xtrain {
namespace {

void copy_values(const Device& where, std::size_t count, const float* from, float* to) {
#ifdef XTRAIN_USE_CUDA
  if (where.is_gpu()) {
    math::gpu::copy(count, from, to);
    return;
  }
#endif
  (void)where;
  std::memcpy(to, from, count * sizeof(float));
}

void set_value(const Device& where, float value, float* to) {
#ifdef XTRAIN_USE_CUDA
  if (where.is_gpu()) {
    math::gpu::set(1, value, to);
    return;
  }
#endif
  (void)where;
  *to = value;
}

// The mean loss only: not the whole buffer back from the device.
float read_value(const Device& where, const float* from) {
#ifdef XTRAIN_USE_CUDA
  if (where.is_gpu()) {
    float value = 0;
    device_memory::copy_to_host(&value, from, sizeof(float), where.id);
    return value;
  }
#endif
  (void)where;
  return *from;
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

// One buffer holds the loss and every gradient, so that one collective moves
// them all: on the host for MPI, on the GPU for a communicator that works
// on device memory (NCCL), where the gradients never leave the device.
float Solver::average_over_replicas(float loss) {
  const std::vector<Blob*>& params = net_->learnable_params();
  std::size_t total = 1;  // the loss first
  for (const Blob* param : params) total += param->count();
  Communicator& exchange = gradient_communicator();
  const bool on_device = device_.is_gpu() && exchange.works_on_device_memory();
  const Device where = on_device ? device_ : Device::cpu();
  exchange_buffer_.reshape({static_cast<int>(total)});
  float* buffer = ops::mutable_data_on(where, exchange_buffer_);
  std::size_t offset = 1;
  for (const Blob* param : params) {
    copy_values(where, param->count(), ops::diff_on(where, *param), buffer + offset);
    offset += param->count();
  }
  set_value(where, loss, buffer);
  exchange.allreduce_sum(buffer, total);
  const float share = 1.0f / static_cast<float>(exchange.size());
  ops::apply_on(where, total, ops::ScaleBy{share}, buffer, buffer);
  offset = 1;
  for (Blob* param : params) {
    copy_values(where, param->count(), buffer + offset, ops::mutable_diff_on(where, *param));
    offset += param->count();
  }
  return read_value(where, buffer);
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
