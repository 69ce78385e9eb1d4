// ordered_parallel_map: results arrive in index order whatever the threads
// do, memory stays within the window, and exceptions from either side
// surface on the calling thread with every worker joined.
#include "../tools/ordered_parallel_map.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace xtrain {
namespace {

TEST(OrderedParallelMap, ConsumesInOrderWithinTheWindow) {
  for (int threads : {1, 2, 5}) {
    std::atomic<int> in_flight{0};
    std::atomic<int> most_in_flight{0};
    std::vector<std::size_t> consumed;
    ordered_parallel_map<std::size_t>(
        300, threads, 8,
        [&](std::size_t index) {
          const int now = ++in_flight;
          int seen = most_in_flight.load();
          while (now > seen && !most_in_flight.compare_exchange_weak(seen, now)) {
          }
          // Later items finish sooner, so out-of-order completion happens.
          if (index % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(300));
          return index * index;
        },
        [&](std::size_t index, std::size_t square) {
          --in_flight;
          EXPECT_EQ(square, index * index);
          consumed.push_back(index);
        });
    ASSERT_EQ(consumed.size(), 300u) << threads;
    for (std::size_t i = 0; i < consumed.size(); ++i) ASSERT_EQ(consumed[i], i);
    // The window, plus the one the consumer holds.
    EXPECT_LE(most_in_flight.load(), 9) << threads;
  }
}

TEST(OrderedParallelMap, ZeroItemsIsFine) {
  int calls = 0;
  ordered_parallel_map<int>(
      0, 3, 4, [&](std::size_t) { return ++calls; }, [&](std::size_t, int) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(OrderedParallelMap, AProducerErrorSurfacesAtItsIndex) {
  std::vector<std::size_t> consumed;
  EXPECT_THROW(ordered_parallel_map<int>(
                   100, 3, 6,
                   [](std::size_t index) {
                     if (index == 42) throw std::runtime_error("bad 42");
                     return static_cast<int>(index);
                   },
                   [&](std::size_t index, int) { consumed.push_back(index); }),
               std::runtime_error);
  EXPECT_EQ(consumed.size(), 42u);
}

TEST(OrderedParallelMap, AConsumerErrorStopsTheWorkers) {
  std::atomic<int> produced{0};
  EXPECT_THROW(ordered_parallel_map<int>(
                   100000, 2, 4, [&](std::size_t) { return ++produced; },
                   [](std::size_t index, int) {
                     if (index == 10) throw std::runtime_error("stop");
                   }),
               std::runtime_error);
  EXPECT_LT(produced.load(), 100);  // stopped within a window of the failure
}

}  // namespace
}  // namespace xtrain
