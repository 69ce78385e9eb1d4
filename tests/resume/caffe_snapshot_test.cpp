// Snapshots across Caffe and xtrain: a .caffemodel/.solverstate pair as Caffe
// 1.0 writes it (tests/fixtures/caffe_snapshot, encoded by protoc from
// hand-written text with Caffe's own schema) resumes in xtrain, and the
// files xtrain writes parse with Caffe's schema.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tool_runner.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/proto_io.hpp"
#include "xtrain/solver.hpp"

namespace fs = std::filesystem;

namespace xtrain::testing {
namespace {

const std::string kFixture = std::string(XTRAIN_SOURCE_DIR) + "/tests/fixtures/caffe_snapshot";

class CaffeSnapshot : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"caffe_iter_4.caffemodel", "caffe_iter_4.solverstate"}) {
      fs::copy_file(kFixture + "/" + name, dir_.file(name));
    }
  }
  std::unique_ptr<Solver> make_solver(const std::string& prefix) const {
    SolverParameter param;
    read_proto_from_text_string(
        "base_lr: 0.1 momentum: 0.9 lr_policy: 'fixed' max_iter: 5 "
        "display: 0 snapshot_after_train: false solver_mode: CPU",
        &param);
    param.set_net(kFixture + "/net.prototxt");
    param.set_snapshot_prefix(dir_.file(prefix));
    SolverOptions options;
    options.verbose_nets = false;
    return create_solver(param, options);
  }
  TempDir dir_{"caffe_snapshot"};
};

TEST_F(CaffeSnapshot, ACaffeWrittenPairResumesExactlyWithAWarningAboutWhatIsMissing) {
  auto solver = make_solver("xtrain");
  const LogSeverity saved = min_log_severity();
  set_min_log_severity(LogSeverity::kInfo);
  ::testing::internal::CaptureStderr();
  solver->restore(dir_.file("caffe_iter_4.solverstate"));
  const std::string log = ::testing::internal::GetCapturedStderr();
  set_min_log_severity(saved);
  EXPECT_EQ(solver->iter(), 4);
  EXPECT_NE(log.find("no data-reader positions or random-stream states"), std::string::npos) << log;

  // Weights and momentum as in the fixture's text.
  const float weights[6] = {0.1f, -0.2f, 0.3f, 0.05f, 0.15f, -0.25f};
  const float bias[2] = {0.01f, -0.02f};
  const float weight_history[6] = {0.01f, 0.02f, -0.03f, 0.0f, 0.04f, 0.005f};
  const float bias_history[2] = {-0.001f, 0.002f};
  const auto& ip = solver->net().layer_by_name("ip")->blobs();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(ip[0]->cpu_data()[i], weights[i]);
  for (int i = 0; i < 2; ++i) EXPECT_EQ(ip[1]->cpu_data()[i], bias[i]);

  // One more SGD step, by hand: data is all ones (2 rows of 3), the target
  // 0.5, EuclideanLoss = sum((ip - target)^2) / (2 * 2), so
  // dL/dip[n][o] = (ip[n][o] - 0.5) / 2, the same for both rows, and
  // dL/dW[o][k] = sum_n dL/dip[n][o] * 1, dL/db[o] = sum_n dL/dip[n][o].
  // Caffe's momentum SGD: v = 0.9 v + 0.1 g; w -= v.
  float expected_weights[6];
  float expected_bias[2];
  for (int o = 0; o < 2; ++o) {
    const float output = weights[3 * o] + weights[3 * o + 1] + weights[3 * o + 2] + bias[o];
    const float gradient = 2 * (output - 0.5f) / 2;
    for (int k = 0; k < 3; ++k) {
      expected_weights[3 * o + k] =
          weights[3 * o + k] - (0.9f * weight_history[3 * o + k] + 0.1f * gradient);
    }
    expected_bias[o] = bias[o] - (0.9f * bias_history[o] + 0.1f * gradient);
  }
  solver->step(1);
  EXPECT_EQ(solver->iter(), 5);
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(ip[0]->cpu_data()[i], expected_weights[i], 1e-6) << i;
  for (int i = 0; i < 2; ++i) EXPECT_NEAR(ip[1]->cpu_data()[i], expected_bias[i], 1e-6) << i;
}

TEST_F(CaffeSnapshot, XtrainsFilesParseWithCaffesSchema) {
  auto solver = make_solver("ours");
  solver->restore(dir_.file("caffe_iter_4.solverstate"));
  solver->step(1);
  const std::vector<std::string> written = solver->snapshot();
  ASSERT_EQ(written.size(), 2u);
  const std::string proto = kFixture + "/caffe_subset.proto";
  // protoc parses with Caffe's schema; our extra fields (the resume state,
  // the checksum trailer) are unknown to it and skipped, as in Caffe.
  const ToolResult state =
      run_tool("protoc --proto_path=" + kFixture +
               " --decode=caffe.SolverState caffe_subset.proto < " + written[1]);
  ASSERT_EQ(state.exit_code, 0) << state.output;
  EXPECT_NE(state.output.find("iter: 5"), std::string::npos) << state.output;
  EXPECT_NE(state.output.find("learned_net: \"" + written[0] + "\""), std::string::npos)
      << state.output;
  EXPECT_NE(state.output.find("history {"), std::string::npos) << state.output;
  const ToolResult weights =
      run_tool("protoc --proto_path=" + kFixture +
               " --decode=caffe.NetParameter caffe_subset.proto < " + written[0]);
  ASSERT_EQ(weights.exit_code, 0) << weights.output;
  EXPECT_NE(weights.output.find("name: \"ip\""), std::string::npos) << weights.output;
  EXPECT_NE(weights.output.find("blobs {"), std::string::npos) << weights.output;
}

}  // namespace
}  // namespace xtrain::testing
