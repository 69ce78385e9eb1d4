// A communicator for solver and gradient-bucket tests: a group of two
// replicas that are the same, so a sum doubles every value (and the mean the
// solver takes gives the values back); broadcasts and barriers do nothing.
// Every sum started with start_allreduce_sum is reported to `on_start` first,
// so a test can see what had been computed by then.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "xtrain/comm.hpp"

namespace xtrain::testing {

class TwoEqualReplicas : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  std::string backend() const override { return "two equal replicas"; }
  void allreduce_sum(float* data, std::size_t count) override {
    for (std::size_t i = 0; i < count; ++i) data[i] *= 2;
  }
  void allreduce_sum(double*, std::size_t) override {}
  void broadcast(float*, std::size_t, int) override {}
  void broadcast(double*, std::size_t, int) override {}
  void barrier() override {}
  std::unique_ptr<PendingCollective> start_allreduce_sum(float* data, std::size_t count) override {
    if (on_start) on_start(count);
    return Communicator::start_allreduce_sum(data, count);
  }

  std::function<void(std::size_t count)> on_start;
};

}  // namespace xtrain::testing
