// The CPU thread pool: sized by set_cpu_threads, shared with BLAS, and
// described in one line.
#include "xtrain/cpu_threads.hpp"

#include <gtest/gtest.h>
#include <omp.h>

#include <vector>

#include "core/elementwise_ops.hpp"
#include "core/parallel_loop.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

class CpuThreadsTest : public ::testing::Test {
 protected:
  void TearDown() override { set_cpu_threads(0); }
};

TEST_F(CpuThreadsTest, SetsThePoolSizeAndRestoresTheDefault) {
  const int default_threads = cpu_threads();
  set_cpu_threads(3);
  EXPECT_EQ(cpu_threads(), 3);
  int seen = 0;
#pragma omp parallel
  {
#pragma omp single
    seen = omp_get_num_threads();
  }
  EXPECT_EQ(seen, 3);
  set_cpu_threads(0);
  EXPECT_EQ(cpu_threads(), default_threads);
}

TEST_F(CpuThreadsTest, RejectsANegativeCount) { EXPECT_THROW(set_cpu_threads(-1), Error); }

TEST_F(CpuThreadsTest, SummaryNamesThreadsAndLibraries) {
  set_cpu_threads(2);
  const std::string summary = cpu_thread_summary();
  EXPECT_NE(summary.find("2 threads (of "), std::string::npos) << summary;
  EXPECT_NE(summary.find("BLAS: OpenBLAS"), std::string::npos) << summary;
  EXPECT_NE(summary.find("oneDNN"), std::string::npos) << summary;
}

// The parallel loops give each index to exactly one thread, for any pool size,
// so results never depend on the thread count.
TEST_F(CpuThreadsTest, ParallelLoopVisitsEveryIndexOnce) {
  for (int threads : {1, 2, 5}) {
    set_cpu_threads(threads);
    std::vector<int> visits(100003, 0);
    parallel_for(static_cast<std::int64_t>(visits.size()), kMinParallelWork,
                 [&](std::int64_t i) { ++visits[i]; });
    for (std::size_t i = 0; i < visits.size(); ++i) ASSERT_EQ(visits[i], 1) << "index " << i;
  }
}

TEST_F(CpuThreadsTest, ElementwiseResultsDoNotDependOnTheThreadCount) {
  const std::size_t n = 3 * kMinParallelWork + 7;  // large enough to split, ragged end
  std::vector<float> x(n), dy(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(static_cast<int>(i % 17) - 8) * 0.25f;
    dy[i] = static_cast<float>(i % 5) - 2.0f;
  }
  std::vector<float> serial(n);
  for (std::size_t i = 0; i < n; ++i) serial[i] = ops::ReluBackward{0.1f}(x[i], dy[i]);
  for (int threads : {1, 2, 3}) {
    set_cpu_threads(threads);
    std::vector<float> parallel(n, -99.0f);
    ops::apply_cpu(n, ops::ReluBackward{0.1f}, parallel.data(), x.data(), dy.data());
    EXPECT_EQ(parallel, serial) << threads << " threads";
  }
}

}  // namespace
}  // namespace xtrain
