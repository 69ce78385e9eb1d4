// ThreadReplicas: the communicators of replicas on threads of one process
// (sums and broadcasts in place, the same bits everywhere, overlapped sums),
// and what happens when a replica fails or stalls.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "xtrain/comm.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The message run() rethrows ("" and a test failure if none).
std::string failure_of(ThreadReplicas& group, const std::function<void(int)>& replica) {
  try {
    group.run(replica);
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "run() did not throw";
  return "";
}

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

// Values of mixed signs and magnitudes (1e-2 .. 1e5), whose float sum
// depends on the order for about a quarter of them: the replicas must all
// get the one of rank order.
float awkward_value(int rank, std::size_t i) {
  const std::uint64_t hash =
      (static_cast<std::uint64_t>(rank + 1) * 2654435761u + i * 40503u) % 4294967296u;
  const double magnitude = (1.0 + static_cast<double>(hash % 1000) / 1000.0) *
                           std::pow(10.0, static_cast<double>((hash >> 10) % 8) - 2.0);
  return static_cast<float>((hash >> 20) & 1 ? -magnitude : magnitude);
}

TEST(ThreadReplicas, AllreduceSumsInRankOrderAndEveryReplicaGetsTheSameBits) {
  for (const int size : {1, 2, 3, 5}) {
    ThreadReplicas group(size, 30);
    constexpr std::size_t kCount = 1001;  // slices of unequal length
    std::vector<std::vector<float>> values(static_cast<std::size_t>(size));
    std::vector<std::vector<double>> doubles(static_cast<std::size_t>(size));
    group.run([&](int rank) {
      std::vector<float>& mine = values[static_cast<std::size_t>(rank)];
      std::vector<double>& twice = doubles[static_cast<std::size_t>(rank)];
      for (std::size_t i = 0; i < kCount; ++i) {
        mine.push_back(awkward_value(rank, i));
        twice.push_back(awkward_value(rank, i));
      }
      group.communicator(rank).allreduce_sum(mine.data(), kCount);
      group.communicator(rank).allreduce_sum(twice.data(), kCount);
    });
    for (std::size_t i = 0; i < kCount; ++i) {
      float expected = awkward_value(0, i);
      double expected_double = awkward_value(0, i);
      for (int rank = 1; rank < size; ++rank) {
        expected += awkward_value(rank, i);
        expected_double += awkward_value(rank, i);
      }
      for (int rank = 0; rank < size; ++rank) {
        ASSERT_EQ(values[static_cast<std::size_t>(rank)][i], expected)
            << "size " << size << " rank " << rank << " value " << i;
        ASSERT_EQ(doubles[static_cast<std::size_t>(rank)][i], expected_double);
      }
    }
  }
}

TEST(ThreadReplicas, BroadcastCopiesTheRootsValuesAndBarrierWaitsForAll) {
  ThreadReplicas group(3, 30);
  std::vector<std::vector<float>> values(3);
  std::vector<double> seeds(3);
  std::vector<int> arrived_before_barrier(3, 0);
  std::atomic<int> arrived{0};
  group.run([&](int rank) {
    auto& mine = values[static_cast<std::size_t>(rank)];
    mine = {static_cast<float>(rank), static_cast<float>(rank * 10)};
    group.communicator(rank).broadcast(mine.data(), 2, 1);
    seeds[static_cast<std::size_t>(rank)] = rank == 0 ? 4242.0 : -1.0;
    group.communicator(rank).broadcast(&seeds[static_cast<std::size_t>(rank)], 1, 0);
    if (rank == 2) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ++arrived;
    group.communicator(rank).barrier();
    arrived_before_barrier[static_cast<std::size_t>(rank)] = arrived.load();
  });
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(values[static_cast<std::size_t>(rank)], (std::vector<float>{1.0f, 10.0f}));
    EXPECT_EQ(seeds[static_cast<std::size_t>(rank)], 4242.0);
    EXPECT_EQ(arrived_before_barrier[static_cast<std::size_t>(rank)], 3) << "rank " << rank;
  }
}

TEST(ThreadReplicas, SeveralOverlappedSumsFinishInTheOrderStarted) {
  ThreadReplicas group(2, 30);
  std::vector<std::vector<float>> first(2), second(2);
  group.run([&](int rank) {
    auto& a = first[static_cast<std::size_t>(rank)];
    auto& b = second[static_cast<std::size_t>(rank)];
    a.assign(100, 1.0f + static_cast<float>(rank));
    b.assign(7, 10.0f * static_cast<float>(rank + 1));
    Communicator& communicator = group.communicator(rank);
    auto pending_a = communicator.start_allreduce_sum(a.data(), a.size());
    auto pending_b = communicator.start_allreduce_sum(b.data(), b.size());
    // Rank 1 starts late: rank 0's sums cannot have finished before.
    if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    pending_a->wait();
    pending_b->wait();
  });
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(first[static_cast<std::size_t>(rank)], std::vector<float>(100, 3.0f));
    EXPECT_EQ(second[static_cast<std::size_t>(rank)], std::vector<float>(7, 30.0f));
  }
}

TEST(ThreadReplicas, DifferentCollectivesAtOnePlaceAreAnError) {
  ThreadReplicas group(2, 30);
  const std::string message = failure_of(group, [&](int rank) {
    std::vector<float> values(rank == 0 ? 4 : 5, 1.0f);
    group.communicator(rank).allreduce_sum(values.data(), values.size());
  });
  EXPECT_CONTAINS(message, "does not match rank");
  EXPECT_CONTAINS(message, "every replica must call the same collectives in the same order");
}

TEST(ThreadReplicas, AFailingReplicaMakesTheOthersFailAtOnceAndRunRethrowsTheCause) {
  ThreadReplicas group(3, 60);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> others(3);
  const std::string message = failure_of(group, [&](int rank) {
    if (rank == 2) throw Error("replica 2's data source is gone");
    std::vector<float> values(10, 1.0f);
    try {
      group.communicator(rank).allreduce_sum(values.data(), values.size());
    } catch (const Error& error) {
      others[static_cast<std::size_t>(rank)] = error.what();
      throw;
    }
  });
  EXPECT_LT(seconds_since(start), 10.0) << "waited for the 60 s timeout";
  EXPECT_EQ(message, "replica 2's data source is gone");
  for (int rank : {0, 1}) {
    EXPECT_CONTAINS(others[static_cast<std::size_t>(rank)],
                    "allreduce of 10 values cannot finish: replica 2 failed: replica 2's data "
                    "source is gone");
  }
}

TEST(ThreadReplicas, AStalledReplicaFailsTheOthersWithinTheTimeout) {
  ThreadReplicas group(2, 0.3);
  const auto start = std::chrono::steady_clock::now();
  const std::string message = failure_of(group, [&](int rank) {
    std::vector<float> values(431080, 1.0f);
    if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    group.communicator(rank).allreduce_sum(values.data(), values.size());
  });
  EXPECT_CONTAINS(message,
                  "rank 0 of 2: allreduce of 431,080 values did not finish within 0.3 s: another "
                  "rank died or hangs");
  EXPECT_LT(seconds_since(start), 1.5 + 5.0);
}

// What a communicator bootstrapped on a replica's one (NCCL) sees while it
// polls a collective of its own: failure() until it is not "" (or 10 s).
std::string poll_failure(const Communicator& communicator) {
  const auto start = std::chrono::steady_clock::now();
  while (seconds_since(start) < 10.0) {
    std::string failure = communicator.failure();
    if (!failure.empty()) return failure;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return "";
}

TEST(ThreadReplicas, FailureIsEmptyWhileEveryReplicaIsWell) {
  ThreadReplicas group(3, 30);
  for (int rank = 0; rank < 3; ++rank) EXPECT_EQ(group.communicator(rank).failure(), "");
  group.run([&](int rank) {
    std::vector<float> values(7, 1.0f);
    group.communicator(rank).allreduce_sum(values.data(), values.size());
    group.communicator(rank).barrier();
    EXPECT_EQ(group.communicator(rank).failure(), "") << "rank " << rank;
  });
  for (int rank = 0; rank < 3; ++rank) EXPECT_EQ(group.communicator(rank).failure(), "");
}

// The others are not in a host collective (they wait for NCCL, say), yet
// learn of the failure at once, not after the 60 s timeout.
TEST(ThreadReplicas, FailureTellsEveryReplicaOfAnotherOnesException) {
  ThreadReplicas group(3, 60);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> seen(3);
  const std::string message = failure_of(group, [&](int rank) {
    if (rank == 2) throw Error("replica 2 ran out of device memory");
    seen[static_cast<std::size_t>(rank)] = poll_failure(group.communicator(rank));
  });
  EXPECT_LT(seconds_since(start), 10.0) << "the failure was not seen";
  EXPECT_EQ(message, "replica 2 ran out of device memory");
  for (int rank : {0, 1}) {
    EXPECT_EQ(seen[static_cast<std::size_t>(rank)],
              "replica 2 failed: replica 2 ran out of device memory")
        << "rank " << rank;
  }
  EXPECT_EQ(group.communicator(0).failure(),
            "replica 2 failed: replica 2 ran out of device memory");
}

// A host collective that times out or does not match fails the group too.
TEST(ThreadReplicas, FailureReportsATimeoutAndAMismatch) {
  {
    ThreadReplicas group(2, 0.3);
    std::string seen;
    failure_of(group, [&](int rank) {
      if (rank == 1) {
        seen = poll_failure(group.communicator(rank));
        return;
      }
      std::vector<float> values(3, 1.0f);
      group.communicator(rank).allreduce_sum(values.data(), values.size());
    });
    EXPECT_CONTAINS(seen, "rank 0 of 2: allreduce of 3 values did not finish within 0.3 s");
  }
  {
    ThreadReplicas group(2, 30);
    std::vector<std::string> seen(2);
    failure_of(group, [&](int rank) {
      std::vector<float> values(rank == 0 ? 4 : 5, 1.0f);
      try {
        group.communicator(rank).allreduce_sum(values.data(), values.size());
      } catch (const Error&) {
        seen[static_cast<std::size_t>(rank)] = group.communicator(rank).failure();
        throw;
      }
    });
    for (const std::string& failure : seen) EXPECT_CONTAINS(failure, "does not match rank");
  }
}

TEST(ThreadReplicas, BadGroupsAndASecondRunAreErrors) {
  EXPECT_THROW(ThreadReplicas(0, 1), Error);
  EXPECT_THROW(ThreadReplicas(2, 0), Error);
  ThreadReplicas group(2, 1);
  EXPECT_THROW(group.communicator(2), Error);
  EXPECT_EQ(group.communicator(1).backend(), "threads");
  EXPECT_EQ(group.communicator(1).rank(), 1);
  EXPECT_EQ(group.communicator(1).size(), 2);
  group.run([](int) {});
  EXPECT_THROW(group.run([](int) {}), Error);
}

}  // namespace
}  // namespace xtrain
