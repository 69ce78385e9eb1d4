// comm_probe: run under mpirun by tests/mpi_communicator_test.cpp.
//
//   comm_probe collectives   sums, broadcasts and a barrier, checked on every rank
//   comm_probe timeout S     rank 1 stops calling; rank 0's allreduce must give up after S s
//   comm_probe die           rank 1 exits at once; rank 0 must not wait forever
//   comm_probe bench         median time of allreduce_sum at a few sizes (not a test)
//   comm_probe link S C R    the link as the sums see it: median time of an
//                            allreduce_sum of 1 and of C floats (R times each)
//                            and the bus bandwidth 2(N-1)/N x bytes / time, for
//                            bench/scaling_model.py (not a test)
//
// Like the xtrain tool, it prints "comm_probe: error: <message>" and returns 1
// from main when the library throws.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "comm/mpi_communicator.hpp"
#include "xtrain/comm.hpp"
#include "xtrain/error.hpp"

namespace {

int failures = 0;

void expect(bool condition, int rank, const std::string& what) {
  if (condition) return;
  if (++failures > 5) return;  // the first few tell the story
  std::printf("rank %d: MISMATCH %s\n", rank, what.c_str());
}

// Rank r's value i: small multiples of 1/4, so every sum is exact in float.
float contribution(int rank, std::size_t i) {
  return static_cast<float>((rank + 1) * static_cast<int>(i % 13)) + 0.25f * rank;
}

void check_collectives(xtrain::Communicator& comm, const std::string& name) {
  const int rank = comm.rank(), size = comm.size();
  for (std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{1001}}) {
    std::vector<float> values(count);
    for (std::size_t i = 0; i < count; ++i) values[i] = contribution(rank, i);
    comm.allreduce_sum(values.data(), count);
    for (std::size_t i = 0; i < count; ++i) {
      float expected = 0;
      for (int r = 0; r < size; ++r) expected += contribution(r, i);
      expect(values[i] == expected, rank,
             name + " float allreduce count " + std::to_string(count) + " at " + std::to_string(i) +
                 ": " + std::to_string(values[i]) + " vs " + std::to_string(expected));
    }
  }
  std::vector<double> losses = {1.0 + rank, -0.5 * rank, 1e-3};
  comm.allreduce_sum(losses.data(), losses.size());
  const double ranks = size, rank_sum = size * (size - 1) / 2.0;
  expect(losses[0] == ranks + rank_sum && losses[1] == -0.5 * rank_sum &&
             std::fabs(losses[2] - 1e-3 * size) < 1e-15,
         rank, name + " double allreduce");
  comm.allreduce_sum(static_cast<float*>(nullptr), 0);

  // Inexact sums: every rank must still hold the same bits, or the replicas drift.
  std::vector<float> noisy(1001);
  for (std::size_t i = 0; i < noisy.size(); ++i) noisy[i] = std::sin(0.37f * i + rank) / 3.0f;
  comm.allreduce_sum(noisy.data(), noisy.size());
  std::vector<float> root_copy = noisy;
  comm.broadcast(root_copy.data(), root_copy.size(), 0);
  expect(std::memcmp(root_copy.data(), noisy.data(), noisy.size() * sizeof(float)) == 0, rank,
         name + " allreduce results differ between ranks");

  const int root = size - 1;
  std::vector<float> weights(1001, -1.0f);
  if (rank == root) {
    for (std::size_t i = 0; i < weights.size(); ++i) weights[i] = 0.5f * i + 1.0f;
  }
  comm.broadcast(weights.data(), weights.size(), root);
  for (std::size_t i = 0; i < weights.size(); ++i) {
    expect(weights[i] == 0.5f * i + 1.0f, rank, name + " float broadcast at " + std::to_string(i));
  }
  std::vector<double> state(5, rank == 0 ? 2.5 : 0.0);
  comm.broadcast(state.data(), state.size(), 0);
  for (double value : state) expect(value == 2.5, rank, name + " double broadcast");
  comm.barrier();
}

int g_argc = 0;
char** g_argv = nullptr;
const char* argument(int index, const char* fallback) {
  return index < g_argc ? g_argv[index] : fallback;
}

int run(const std::string& mode, double timeout_seconds) {
  const xtrain::ProcessGroup group = xtrain::process_group_from_environment();
  auto comm = xtrain::make_communicator(group, timeout_seconds);
  if (mode == "collectives") {
    expect(comm->backend() == "mpi" && comm->size() >= 2 && comm->rank() == group.rank, group.rank,
           "backend/rank/size");
    check_collectives(*comm, "whole");
    // Chunks of 3 values: the path that counts above INT_MAX take.
    auto chunked = xtrain::make_mpi_communicator(group, timeout_seconds, 3);
    check_collectives(*chunked, "chunked");
    if (failures == 0) std::printf("rank %d of %d: collectives ok\n", group.rank, group.size);
    return failures == 0 ? 0 : 1;
  }
  if (mode == "timeout" || mode == "die") {
    comm->barrier();
    if (group.rank == 1) {
      if (mode == "die") std::_Exit(3);
      std::this_thread::sleep_for(std::chrono::seconds(60));  // hangs: never joins
    }
    std::vector<float> gradients(431080, 1.0f);
    comm->allreduce_sum(gradients.data(), gradients.size());
    std::printf("rank %d: allreduce returned\n", group.rank);
    return 0;
  }
  if (mode == "link") {
    const std::size_t count = static_cast<std::size_t>(std::atol(argument(3, "1000000")));
    const int repeats = std::atoi(argument(4, "10"));
    double small_ms = 0, large_ms = 0;
    for (std::size_t size : {std::size_t{1}, count}) {
      std::vector<float> values(size, 1.0f);
      std::vector<double> milliseconds;
      // Latency varies more than bandwidth: more samples of the small sum.
      const int samples = size == 1 ? std::max(repeats, 41) : repeats;
      for (int repeat = 0; repeat < samples; ++repeat) {
        comm->barrier();
        const auto start = std::chrono::steady_clock::now();
        comm->allreduce_sum(values.data(), size);
        milliseconds.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count());
      }
      std::sort(milliseconds.begin(), milliseconds.end());
      (size == 1 ? small_ms : large_ms) = milliseconds[milliseconds.size() / 2];
    }
    if (group.rank == 0) {
      const double n = group.size;
      const double bus_gbit = 2 * (n - 1) / n * 4.0 * static_cast<double>(count) /
                              (large_ms / 1000) * 8 / 1e9;
      std::printf("link: ranks %d, allreduce of 1 float %.3f ms, of %zu floats %.3f ms, "
                  "bus bandwidth %.3f Gbit/s\n",
                  group.size, small_ms, count, large_ms, bus_gbit);
    }
    return 0;
  }
  if (mode == "bench") {  // the cost of one gradient sum, for docs/performance.md
    for (std::size_t count : {std::size_t{1}, std::size_t{431080}, std::size_t{5000000}}) {
      std::vector<float> values(count, 1.0f);
      std::vector<double> milliseconds;
      for (int repeat = 0; repeat < 50; ++repeat) {
        comm->barrier();
        const auto start = std::chrono::steady_clock::now();
        comm->allreduce_sum(values.data(), count);
        milliseconds.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count());
      }
      std::sort(milliseconds.begin(), milliseconds.end());
      if (group.rank == 0) {
        std::printf("allreduce_sum of %zu floats on %d ranks: median %.3f ms\n", count, group.size,
                    milliseconds[milliseconds.size() / 2]);
      }
    }
    return 0;
  }
  std::fprintf(stderr, "comm_probe: unknown mode '%s'\n", mode.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  g_argc = argc;
  g_argv = argv;
  const std::string mode = argc > 1 ? argv[1] : "";
  const double timeout_seconds = argc > 2 ? std::atof(argv[2]) : 30.0;
  try {
    const int status = run(mode, timeout_seconds);
    std::fflush(stdout);
    return status;
  } catch (const xtrain::Error& error) {
    std::fflush(stdout);
    std::fprintf(stderr, "comm_probe: error: %s\n", error.what());
    return 1;
  }
}
