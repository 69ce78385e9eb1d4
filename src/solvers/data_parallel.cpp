// The Solver's part in data-parallel training (SolverOptions::communicator):
// one seed and one set of starting weights for all replicas, the gradients
// (and the loss, for the display) averaged in one allreduce per iteration,
// and stop requests agreed on, so that no replica leaves the loop while the
// others wait for it in a collective.
#include <cstring>

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
  for (Blob* param : net_->learnable_params()) {
    options_.communicator->broadcast(param->mutable_cpu_data(), param->count(), 0);
  }
}

float Solver::average_over_replicas(float loss) {
  const std::vector<Blob*>& params = net_->learnable_params();
  std::size_t total = 1;  // the loss first
  for (const Blob* param : params) total += param->count();
  exchange_buffer_.resize(total);
  float* cursor = exchange_buffer_.data();
  *cursor++ = loss;
  for (const Blob* param : params) {
    std::memcpy(cursor, param->cpu_diff(), param->count() * sizeof(float));
    cursor += param->count();
  }
  options_.communicator->allreduce_sum(exchange_buffer_.data(), total);
  const float replicas = static_cast<float>(options_.communicator->size());
  cursor = exchange_buffer_.data();
  const float mean_loss = *cursor++ / replicas;
  for (Blob* param : params) {
    float* diff = param->mutable_cpu_diff();
    for (std::size_t i = 0; i < param->count(); ++i) diff[i] = cursor[i] / replicas;
    cursor += param->count();
  }
  return mean_loss;
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
