// Resuming with another number of images per update (ranks x batch x
// iter_size) would train another schedule without a word: it is refused with
// the --iter_size that keeps the snapshot's images per update, and runs with
// it. (The same across nodes: tests/distributed/netns_cluster_test.cpp.)
#include <gtest/gtest.h>

#include <string>

#include "distributed/data_parallel_fixture.hpp"
#include "resume/training_process.hpp"
#include "tool_runner.hpp"

namespace xtrain::testing {
namespace {

TEST(ResumeBatchChange, AnotherImagesPerUpdateIsRefusedSayingWhichIterSizeKeepsIt) {
  TempDir dir("resume_batch");
  const std::string source = dir.file("images_lmdb");
  write_images(source, 40);
  const std::string net = dir.write("net.prototxt", net_text(source, 4));
  const std::string solver =
      dir.write("solver.prototxt", "net: '" + net +
                                       "'\nbase_lr: 0.01\nlr_policy: 'fixed'\nmax_iter: 4\n"
                                       "iter_size: 3\nsnapshot: 4\nsolver_mode: CPU\n"
                                       "random_seed: 3\nsnapshot_prefix: '" +
                                       dir.file("run") + "'\n");
  const std::string train = tool_path("xtrain") + " train --solver=" + solver;
  ASSERT_EQ(run_tool(train).exit_code, 0);
  const std::string resume = train + " --snapshot=" + dir.file("run_iter_4.solverstate") +
                             " --max_iter=6";
  const ToolResult refused = run_tool(resume + " --iter_size=2");
  const std::string line = expect_one_line_error(refused, "xtrain train");
  EXPECT_CONTAINS(line, "comes from a job that took 12 images per update (layer 'data' read 48 "
                        "records in 4 iterations), but this job takes 1 rank x batch 4 x "
                        "iter_size 2 = 8: to resume the same training, run it with "
                        "--iter_size=3 (1 rank x 4 x 3 = 12)");
  // The solver's own iter_size, or the flag that names it, resume.
  EXPECT_EQ(run_tool(resume + " --iter_size=3").exit_code, 0);
  EXPECT_EQ(run_tool(resume).exit_code, 0);
}

}  // namespace
}  // namespace xtrain::testing
