// Every model under models/ (found at run time, so a new one is covered as
// soon as it is added) is checked without its data set: its solvers parse
// and name an existing net, its train net runs forward and backward on
// DummyData, `xtrain time` runs its train and deploy nets, its deploy net
// outputs probabilities, and it has the published number of parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "models/zoo_model_files.hpp"
#include "tool_runner.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain::testing {
namespace {

namespace fs = std::filesystem;

// Learnable parameters (weights, biases, BN scales and shifts; not
// BatchNorm's running mean, variance and factor) of each model's deploy net,
// or of its train net if it has no deploy file. Published figures where the
// authors or the common references give one; the others are computed by
// hand from the architecture, as noted.
const std::map<std::string, std::size_t> kParameterCounts = {
    // Caffe's reference AlexNet and CaffeNet (the same layer shapes, grouped
    // conv2/4/5), as in the Caffe model zoo.
    {"alexnet", 60'965'224},
    {"caffenet", 60'965'224},
    // Computed: Embed 76 x 32 = 2,432; LSTM W_xc 512 x 32 + b_c 512 + W_hc
    // 512 x 128 = 82,432; InnerProduct 128 x 76 + 76 = 9,804.
    {"char_lstm", 94'668},
    // Computed: conv 2,432 + 25,632 + 51,264, ip1 10 x 1,024 + 10 = 10,250.
    {"cifar10_full", 89'578},
    // Computed: conv 2,432 + 25,632 + 51,264, ip1 65,600, ip2 650.
    {"cifar10_quick", 145'578},
    // Computed: 784-1000-500-250-30 and back, weights and biases.
    {"fashion_mnist_autoencoder", 2'837'314},
    // bvlc_googlenet's deploy net (no auxiliary classifiers).
    {"googlenet", 6'998'552},
    // Caffe's LeNet: conv 520 + 25,050, ip 400,500 + 5,010.
    {"lenet", 431'080},
    // He et al.'s ResNet-50 as released in Caffe. The figure usually quoted,
    // 25,557,032 (e.g. torchvision's), is 25,503,912 conv and fc parameters
    // plus 53,120 BN scales and shifts (2 x 26,560 BN channels; Caffe keeps
    // them in Scale layers); the Caffe release adds 64 for conv1's bias, the
    // only convolution with one.
    {"resnet50", 25'557'096},
    // SqueezeNet v1.1 (DeepScale's release).
    {"squeezenet", 1'235'496},
    // Simonyan & Zisserman's configuration D.
    {"vgg16", 138'357'544},
};

constexpr int kBatch = 1;

std::string repo_relative(const fs::path& path) {
  return path.lexically_relative(XTRAIN_SOURCE_DIR).string();
}

// The net a solver trains: `net` (or the old `train_net`), relative to the
// repository root as the house rule has it.
fs::path solver_net_path(const SolverParameter& solver) {
  const std::string& net = solver.has_net() ? solver.net() : solver.train_net();
  return fs::path(XTRAIN_SOURCE_DIR) / net;
}

// Parameter blobs counted once each (shared ones are the same blob), minus
// BatchNorm's statistics.
std::size_t learnable_parameter_count(const Net& net) {
  std::set<const Blob*> seen;
  std::size_t count = 0;
  for (const auto& layer : net.layers()) {
    if (std::string(layer->type()) == "BatchNorm") continue;
    for (const auto& blob : layer->blobs()) {
      if (seen.insert(blob.get()).second) count += blob->count();
    }
  }
  return count;
}

// Untrained BatchNorm statistics (mean 0, variance 0, factor 0) make a
// global-stats net divide by sqrt(eps) at every BN layer, which overflows in
// a deep net; a trained net's are finite and positive. Mean 0, variance 1.
void give_batch_norm_unit_statistics(Net& net) {
  for (const auto& layer : net.layers()) {
    if (std::string(layer->type()) != "BatchNorm") continue;
    auto& blobs = layer->blobs();
    ASSERT_EQ(blobs.size(), 3u) << layer->layer_param().name();
    for (const auto& [index, value] : {std::pair{0, 0.0f}, {1, 1.0f}, {2, 1.0f}}) {
      float* data = blobs[index]->mutable_cpu_data();
      std::fill(data, data + blobs[index]->count(), value);
    }
  }
}

// Deploy files have no fillers (their weights come from a .caffemodel), so
// every parameter would be 0 and every probability 1/classes. Random
// weights with He et al.'s scale, std sqrt(2 / fan-in), keep a deep ReLU
// net's activations in range; 1-D blobs (biases, BN scales) get small
// values of either sign.
void give_random_weights(Net& net, std::mt19937& random) {
  std::uniform_real_distribution<float> small(-0.5f, 0.5f);
  for (const auto& layer : net.layers()) {
    if (std::string(layer->type()) == "BatchNorm") continue;
    for (const auto& blob : layer->blobs()) {
      float* data = blob->mutable_cpu_data();
      if (blob->num_axes() >= 2) {
        const double fan_in = static_cast<double>(blob->count()) / blob->shape(0);
        std::normal_distribution<float> he(0.0f, static_cast<float>(std::sqrt(2.0 / fan_in)));
        for (std::size_t i = 0; i < blob->count(); ++i) data[i] = he(random);
      } else {
        for (std::size_t i = 0; i < blob->count(); ++i) data[i] = small(random);
      }
    }
  }
}

// Uniform values in [-1, 1] in every Input top; returns how many tops.
int fill_inputs_randomly(Net& net, std::mt19937& random) {
  std::uniform_real_distribution<float> pixel(-1.0f, 1.0f);
  int inputs = 0;
  for (std::size_t i = 0; i < net.layers().size(); ++i) {
    if (std::string(net.layers()[i]->type()) != "Input") continue;
    for (const auto& input : net.top_vecs()[i]) {
      float* data = input->mutable_cpu_data();
      for (std::size_t j = 0; j < input->count(); ++j) data[j] = pixel(random);
      ++inputs;
    }
  }
  return inputs;
}

// Along `axis` of `prob`, for each image (and position, for a spatial
// softmax): values in [0, 1] summing to 1, and not all equal (random weights
// give unequal ones; all equal would pass the sum trivially).
void expect_probabilities(const Blob& prob, int axis) {
  const std::size_t outer = prob.count(0, axis);
  const std::size_t classes = prob.shape(axis);
  const std::size_t inner = prob.count(axis + 1);
  ASSERT_EQ(outer, static_cast<std::size_t>(kBatch));
  for (std::size_t image = 0; image < outer; ++image) {
    for (std::size_t position = 0; position < inner; ++position) {
      double sum = 0;
      float lowest = 1;
      float highest = 0;
      for (std::size_t c = 0; c < classes; ++c) {
        const float p = prob.cpu_data()[(image * classes + c) * inner + position];
        ASSERT_TRUE(p >= 0.0f && p <= 1.0f) << p;
        sum += p;
        lowest = std::min(lowest, p);
        highest = std::max(highest, p);
      }
      EXPECT_NEAR(sum, 1.0, 1e-4) << "image " << image;
      EXPECT_GT(highest, lowest) << "image " << image;
    }
  }
}

bool printed_time_summary(const std::string& output) {
  return output.find("Average Forward-Backward: ") != std::string::npos &&
         output.find(" ms per iteration") != std::string::npos;
}

class ZooModel : public ::testing::TestWithParam<std::string> {
 protected:
  const std::string& model() const { return GetParam(); }

  // The train/test net of the model's first solver, DummyData in, phase TRAIN.
  NetParameter train_net_with_dummy_data() const {
    const std::vector<fs::path> solvers = model_files(model(), "solver");
    if (solvers.empty()) throw Error("models/" + model() + " has no *solver*.prototxt");
    const SolverParameter solver = read_solver_params_from_text_file(solvers.front().string());
    NetParameter net =
        with_dummy_data(read_net_params_from_text_file(solver_net_path(solver).string()), kBatch);
    net.mutable_state()->set_phase(TRAIN);
    if (solver.has_train_state()) net.mutable_state()->MergeFrom(solver.train_state());
    return net;
  }

  // A deploy file, kBatch images per Input, phase TEST.
  static NetParameter deploy_net(const fs::path& path) {
    NetParameter net = with_input_batch(read_net_params_from_text_file(path.string()), kBatch);
    net.mutable_state()->set_phase(TEST);
    return net;
  }

  // The deploy net, or the train net if the model has none, for counting.
  NetParameter counting_net() const {
    const std::vector<fs::path> deploys = model_files(model(), "deploy");
    return deploys.empty() ? train_net_with_dummy_data() : deploy_net(deploys.front());
  }

  static NetOptions quiet() {
    NetOptions options;
    options.verbose = false;
    return options;
  }
};

TEST_P(ZooModel, SolversParseAndNameExistingNets) {
  const std::vector<fs::path> solvers = model_files(model(), "solver");
  ASSERT_FALSE(solvers.empty()) << "models/" << model() << " has no *solver*.prototxt";
  for (const fs::path& path : solvers) {
    SCOPED_TRACE(repo_relative(path));
    SolverParameter solver;
    ASSERT_NO_THROW(solver = read_solver_params_from_text_file(path.string()));
    ASSERT_TRUE(solver.has_net() || solver.has_train_net()) << "names no net";
    const fs::path net = solver_net_path(solver);
    ASSERT_TRUE(fs::exists(net)) << net
                                 << " does not exist (paths are relative to the repository root)";
    EXPECT_NO_THROW(read_net_params_from_text_file(net.string()));
    EXPECT_EQ(solver.snapshot_prefix().rfind("snapshots/", 0), 0u)
        << "snapshot_prefix '" << solver.snapshot_prefix() << "' is not under snapshots/";
  }
}

TEST_P(ZooModel, TrainNetRunsForwardAndBackwardOnDummyData) {
  Net net(train_net_with_dummy_data(), quiet());
  const float loss = net.forward_backward();
  EXPECT_TRUE(std::isfinite(loss)) << loss;
  EXPECT_GT(loss, 0.0f);
  // Backward reached the first layer's weights.
  const Blob& first = *net.learnable_params().front();
  const float* diff = first.cpu_diff();
  double diff_norm = 0;
  for (std::size_t i = 0; i < first.count(); ++i) diff_norm += std::abs(diff[i]);
  EXPECT_TRUE(std::isfinite(diff_norm));
  EXPECT_GT(diff_norm, 0.0) << net.param_display_names().front() << " got no gradient";
}

TEST_P(ZooModel, TimeCommandRunsTheTrainNet) {
  TempDir dir("zoo_time_" + model());
  const std::string copy = dir.file("train_net.prototxt");
  write_proto_to_text_file(train_net_with_dummy_data(), copy);
  const ToolResult timed =
      run_tool(tool_path("xtrain") + " time --model=" + copy + " --iterations=1", dir.path());
  ASSERT_EQ(timed.exit_code, 0) << timed.output;
  EXPECT_TRUE(printed_time_summary(timed.output)) << timed.output;
}

TEST_P(ZooModel, TimeCommandRunsTheDeployNet) {
  const std::vector<fs::path> deploys = model_files(model(), "deploy");
  if (deploys.empty()) GTEST_SKIP() << "models/" << model() << " has no deploy file";
  for (const fs::path& path : deploys) {
    SCOPED_TRACE(repo_relative(path));
    TempDir dir("zoo_deploy_" + model());
    const std::string copy = dir.file("deploy.prototxt");
    write_proto_to_text_file(deploy_net(path), copy);
    const ToolResult timed = run_tool(
        tool_path("xtrain") + " time --phase=TEST --model=" + copy + " --iterations=1", dir.path());
    ASSERT_EQ(timed.exit_code, 0) << timed.output;
    EXPECT_TRUE(printed_time_summary(timed.output)) << timed.output;
  }
}

TEST_P(ZooModel, DeployNetOutputsProbabilities) {
  const std::vector<fs::path> deploys = model_files(model(), "deploy");
  if (deploys.empty()) GTEST_SKIP() << "models/" << model() << " has no deploy file";
  for (const fs::path& path : deploys) {
    SCOPED_TRACE(repo_relative(path));
    Net net(deploy_net(path), quiet());
    std::mt19937 random(1701);
    give_random_weights(net, random);
    give_batch_norm_unit_statistics(net);
    ASSERT_GT(fill_inputs_randomly(net, random), 0) << "a deploy net has an Input layer";
    net.forward();

    int softmax_layers = 0;
    for (std::size_t i = 0; i < net.layers().size(); ++i) {
      if (std::string(net.layers()[i]->type()) != "Softmax") continue;
      SCOPED_TRACE(net.layer_names()[i]);
      const Blob& prob = *net.top_vecs()[i][0];
      expect_probabilities(
          prob, prob.canonical_axis_index(net.layers()[i]->layer_param().softmax_param().axis()));
      ++softmax_layers;
    }
    EXPECT_GT(softmax_layers, 0) << "a deploy net ends in a Softmax";
  }
}

TEST_P(ZooModel, HasThePublishedNumberOfParameters) {
  const auto expected = kParameterCounts.find(model());
  ASSERT_NE(expected, kParameterCounts.end()) << "no parameter count for models/" << model()
                                              << "; add the published one to kParameterCounts";
  Net net(counting_net(), quiet());
  EXPECT_EQ(learnable_parameter_count(net), expected->second);
}

// gtest names allow only letters, digits and '_'.
std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(ModelZoo, ZooModel, ::testing::ValuesIn(model_names()), test_name);

TEST_P(ZooModel, GeneratedFilesMatchTheirGenerator) {
  const fs::path generator = fs::path(XTRAIN_SOURCE_DIR) / "models" / model() / "generate.py";
  if (!fs::exists(generator)) GTEST_SKIP() << "written by hand, no generator";
  const ToolResult check = run_tool("python3 " + generator.string() + " --check");
  EXPECT_EQ(check.exit_code, 0) << "the .prototxt files were edited by hand; edit "
                                << repo_relative(generator) << " and rerun it\n"
                                << check.output;
}

TEST(ModelZooDiscovery, FindsTheModelsShippedWithXtrain) {
  const std::vector<std::string> names = model_names();
  for (const char* shipped :
       {"alexnet", "caffenet", "cifar10_full", "cifar10_quick", "fashion_mnist_autoencoder",
        "googlenet", "lenet", "resnet50", "squeezenet", "vgg16"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), shipped), names.end()) << shipped;
  }
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
}

}  // namespace
}  // namespace xtrain::testing
