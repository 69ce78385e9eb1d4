// The process-wide cuDNN settings (xtrain/cudnn_options.hpp), which exist in
// every build so that the CLI flags parse the same way with or without CUDA.
#include "xtrain/cudnn_options.hpp"

#include <gtest/gtest.h>

#include "xtrain/error.hpp"

namespace xtrain {
namespace {

// Restores the settings a test changes.
class CudnnOptionsTest : public testing::Test {
 protected:
  void TearDown() override {
    set_cudnn_workspace_limit_mb(kDefaultCudnnWorkspaceLimitMb);
    set_cudnn_algorithm_search(CudnnAlgorithmSearch::kHeuristic);
  }
};

TEST_F(CudnnOptionsTest, DefaultsAreCaffesCapAndTheHeuristic) {
  EXPECT_EQ(cudnn_workspace_limit_mb(), 8u);
  EXPECT_EQ(cudnn_workspace_limit_bytes(), 8u << 20);
  EXPECT_EQ(cudnn_algorithm_search(), CudnnAlgorithmSearch::kHeuristic);
}

TEST_F(CudnnOptionsTest, SettersChangeWhatTheGettersReturn) {
  set_cudnn_workspace_limit_mb(0);
  EXPECT_EQ(cudnn_workspace_limit_bytes(), 0u);
  set_cudnn_workspace_limit_mb(1024);
  EXPECT_EQ(cudnn_workspace_limit_mb(), 1024u);
  EXPECT_EQ(cudnn_workspace_limit_bytes(), std::size_t{1} << 30);
  // Too large to count in bytes: no cap, not an overflow to a small one.
  set_cudnn_workspace_limit_mb(static_cast<std::size_t>(-1));
  EXPECT_EQ(cudnn_workspace_limit_bytes(), static_cast<std::size_t>(-1));
  set_cudnn_algorithm_search(CudnnAlgorithmSearch::kTimed);
  EXPECT_EQ(cudnn_algorithm_search(), CudnnAlgorithmSearch::kTimed);
}

TEST_F(CudnnOptionsTest, SearchModeParsesTheFlagSpellingAndRejectsOthers) {
  EXPECT_EQ(parse_cudnn_algorithm_search("heuristic"), CudnnAlgorithmSearch::kHeuristic);
  EXPECT_EQ(parse_cudnn_algorithm_search("timed"), CudnnAlgorithmSearch::kTimed);
  EXPECT_EQ(to_string(CudnnAlgorithmSearch::kTimed), "timed");
  EXPECT_EQ(to_string(CudnnAlgorithmSearch::kHeuristic), "heuristic");
  EXPECT_THROW(parse_cudnn_algorithm_search("fastest"), Error);
}

}  // namespace
}  // namespace xtrain
