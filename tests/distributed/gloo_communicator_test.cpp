// The Gloo backend with its ranks as threads of this process, meeting in a
// temporary directory: sums (every rank the same bits), broadcasts, a
// barrier, sums overlapped as the gradient buckets start them, a rank that
// stops calling, a job that never forms, a directory that is not there.
// Ranks as processes (training, a killed rank): gloo_training_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "tool_runner.hpp"
#include "xtrain/comm.hpp"
#include "xtrain/error.hpp"

namespace xtrain::testing {
namespace {

#define SKIP_WITHOUT_GLOO() \
  if (!gloo_available()) GTEST_SKIP() << "this build has no Gloo (libgloo-dev)"

ProcessGroup place(int rank, int size, const std::string& directory) {
  ProcessGroup group;
  group.rank = rank;
  group.size = size;
  group.launcher = "flags";
  group.rendezvous = directory;
  return group;
}

// Runs rank(r) for every r on a thread of its own; the errors they threw,
// by rank ("" for none).
std::vector<std::string> run_ranks(int size, const std::function<void(int)>& rank) {
  std::vector<std::string> errors(static_cast<std::size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        rank(r);
      } catch (const std::exception& error) {
        errors[static_cast<std::size_t>(r)] = error.what();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  return errors;
}

bool is_empty(const std::string& directory) {
  return std::filesystem::is_empty(directory);
}

// Rank r's value i: small multiples of 1/4, so that every sum is exact.
float contribution(int rank, std::size_t i) {
  return static_cast<float>((rank + 1) * static_cast<int>(i % 13)) + 0.25f * rank;
}

TEST(GlooCommunicator, ThreeRanksSumBroadcastAndWaitAlike) {
  SKIP_WITHOUT_GLOO();
  TempDir dir("gloo_collectives");
  constexpr int kRanks = 3;
  std::vector<std::vector<float>> noisy_sums(kRanks);
  const auto errors = run_ranks(kRanks, [&](int rank) {
    auto comm = make_communicator(place(rank, kRanks, dir.path()), 20);
    EXPECT_EQ(comm->backend(), "gloo");
    EXPECT_EQ(comm->rank(), rank);
    EXPECT_EQ(comm->size(), kRanks);
    for (std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{300001}}) {
      std::vector<float> values(count);
      for (std::size_t i = 0; i < count; ++i) values[i] = contribution(rank, i);
      comm->allreduce_sum(values.data(), count);
      for (std::size_t i = 0; i < count; i += 997) {
        float expected = 0;
        for (int r = 0; r < kRanks; ++r) expected += contribution(r, i);
        ASSERT_EQ(values[i], expected) << "count " << count << " at " << i;
      }
    }
    std::vector<double> losses = {1.0 + rank, -0.5 * rank};
    comm->allreduce_sum(losses.data(), losses.size());
    EXPECT_EQ(losses[0], 3.0 + 3.0);
    EXPECT_EQ(losses[1], -1.5);
    comm->allreduce_sum(static_cast<float*>(nullptr), 0);

    // Inexact sums: every rank must hold the same bits, or the replicas drift.
    std::vector<float> noisy(100003);
    for (std::size_t i = 0; i < noisy.size(); ++i) noisy[i] = std::sin(0.37f * i + rank) / 3.0f;
    comm->allreduce_sum(noisy.data(), noisy.size());
    noisy_sums[static_cast<std::size_t>(rank)] = noisy;

    // Buckets overlapped with backward: several sums under way at once,
    // polled, then waited for in order.
    std::vector<std::vector<float>> buckets(4, std::vector<float>(5000, 1.0f + rank));
    std::vector<std::unique_ptr<PendingCollective>> pending;
    for (auto& bucket : buckets) pending.push_back(comm->start_allreduce_sum(bucket.data(), bucket.size()));
    for (auto& sum : pending) sum->poll();
    for (auto& sum : pending) sum->wait();
    for (const auto& bucket : buckets) EXPECT_EQ(bucket.back(), 1.0f + 2.0f + 3.0f);

    std::vector<float> weights(1001, -1.0f);
    if (rank == 2) {
      for (std::size_t i = 0; i < weights.size(); ++i) weights[i] = 0.5f * i + 1.0f;
    }
    comm->broadcast(weights.data(), weights.size(), 2);
    EXPECT_EQ(weights[1000], 501.0f);
    std::vector<double> state(3, rank == 0 ? 2.5 : 0.0);
    comm->broadcast(state.data(), state.size(), 0);
    EXPECT_EQ(state[2], 2.5);
    comm->barrier();
    EXPECT_THROW(comm->broadcast(weights.data(), 1, 3), Error);
  });
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
  for (int r = 1; r < kRanks; ++r) {
    ASSERT_EQ(noisy_sums[r].size(), noisy_sums[0].size());
    EXPECT_EQ(std::memcmp(noisy_sums[r].data(), noisy_sums[0].data(),
                          noisy_sums[0].size() * sizeof(float)),
              0)
        << "rank " << r << "'s sums differ from rank 0's";
  }
  // Each rank removed its entries once every rank had connected.
  EXPECT_TRUE(is_empty(dir.path()));
}

TEST(GlooCommunicator, ARankThatStopsCallingFailsTheOthersWithinTheTimeout) {
  SKIP_WITHOUT_GLOO();
  TempDir dir("gloo_timeout");
  const auto errors = run_ranks(2, [&](int rank) {
    auto comm = make_communicator(place(rank, 2, dir.path()), 1.5);
    comm->barrier();
    if (rank == 1) {
      // Alive (its watch answers) but never joins the sum.
      std::this_thread::sleep_for(std::chrono::seconds(3));
      return;
    }
    std::vector<float> gradients(431080, 1.0f);
    const auto start = std::chrono::steady_clock::now();
    try {
      comm->allreduce_sum(gradients.data(), gradients.size());
    } catch (const Error&) {
      EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                1.5 + 1.5 + 2);
      throw;
    }
  });
  EXPECT_CONTAINS(errors[0], "rank 0 of 2: allreduce of 431,080 values did not finish within 1.5 s");
  EXPECT_CONTAINS(errors[0], "though every other rank answers");
  EXPECT_EQ(errors[1], "");
}

TEST(GlooCommunicator, AJobThatDoesNotFormNamesTheRanksThatNeverArrived) {
  SKIP_WITHOUT_GLOO();
  TempDir dir("gloo_missing");
  const auto errors = run_ranks(2, [&](int rank) {  // ranks 0 and 1 of 3
    make_communicator(place(rank, 3, dir.path()), 1);
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_CONTAINS(errors[r], "rank " + std::to_string(r) +
                                   " of 3: the job did not form within 1 s in the rendezvous "
                                   "directory '" + dir.path() + "': rank 2 never arrived");
  }
  // Who gave up took its entries with it: the next job starts clean.
  EXPECT_TRUE(is_empty(dir.path()));
}

TEST(GlooCommunicator, AMissingDirectoryIsOneLine) {
  SKIP_WITHOUT_GLOO();
  TempDir dir("gloo_nodir");
  const std::string absent = dir.file("absent");
  const auto errors = run_ranks(1, [&](int) { make_communicator(place(0, 2, absent), 1); });
  EXPECT_CONTAINS(errors[0], "rank 0 of 2: the rendezvous directory '" + absent +
                                 "' does not exist: create it on a file system that every node");
}

TEST(GlooCommunicator, WithoutGlooTheErrorSaysHowToGetIt) {
  if (gloo_available()) GTEST_SKIP() << "this build has Gloo";
  try {
    make_communicator(place(0, 2, "/tmp"), 1.0);
    FAIL() << "no xtrain::Error";
  } catch (const Error& error) {
    EXPECT_CONTAINS(std::string(error.what()), "built without Gloo: install libgloo-dev");
  }
}

}  // namespace
}  // namespace xtrain::testing
