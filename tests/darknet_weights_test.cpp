// Darknet .weights files: the layout read into the layers' blobs, the round
// trip through export_darknet_weights, the files that do not fit a cfg, and
// how far Caffe's BatchNorm (sqrt(var + eps)) lands from Darknet's
// normalization (sqrt(var) + 1e-6).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "error_message.hpp"
#include "tool_runner.hpp"
#include "xtrain/darknet.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

using testing::error_of;
using testing::expect_error;
using testing::TempDir;

// Three convolutions: with BN, without BN (grouped), with BN after a pooling.
constexpr const char* kThreeConvolutions = R"(
[net]
channels=3
height=6
width=6
[convolutional]
batch_normalize=1
filters=4
size=3
pad=1
activation=leaky
[convolutional]
filters=6
size=1
groups=2
activation=linear
[maxpool]
size=2
stride=2
[convolutional]
batch_normalize=1
filters=2
size=3
pad=1
activation=leaky
)";
// Floats per layer: 4*4 + 4*3*9 = 124; 6 + 6*2 = 18; 2*4 + 2*6*9 = 116.
constexpr std::size_t kFloats[] = {124, 18, 116};

std::string header(std::int32_t major, std::int32_t minor, std::uint64_t seen) {
  std::string bytes;
  for (std::int32_t value : {major, minor, std::int32_t{0}}) {
    bytes.append(reinterpret_cast<const char*>(&value), 4);
  }
  if (major * 10 + minor >= 2) {
    bytes.append(reinterpret_cast<const char*>(&seen), 8);
  } else {
    const auto narrow = static_cast<std::int32_t>(seen);
    bytes.append(reinterpret_cast<const char*>(&narrow), 4);
  }
  return bytes;
}

std::string floats(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

std::string read_bytes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << file.rdbuf();
  return bytes.str();
}

Net build(const NetParameter& param) {
  NetOptions options;
  options.verbose = false;
  return Net(param, options);
}

std::vector<float> blob_values(const BlobProto& blob) {
  return std::vector<float>(blob.data().begin(), blob.data().end());
}

TEST(DarknetWeights, DarknetsLayoutFillsConvolutionBatchNormAndScale) {
  TempDir dir("darknet_layout");
  const std::string cfg = dir.write("one.cfg", R"(
[net]
channels=1
height=2
width=2
[convolutional]
batch_normalize=1
filters=2
size=1
activation=linear
)");
  // Version 0.1: the images seen as an int32. Biases, scales, means,
  // variances, weights.
  const std::string weights =
      dir.write("one.weights", header(0, 1, 7) + floats({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  const NetParameter blobs = import_darknet(cfg, weights).weights;
  ASSERT_EQ(blobs.layer_size(), 3);
  EXPECT_EQ(blobs.layer(0).name(), "conv0");
  EXPECT_EQ(blobs.layer(0).blobs_size(), 1);  // no bias: BN's shift is the Scale's
  EXPECT_EQ(blob_values(blobs.layer(0).blobs(0)), (std::vector<float>{9, 10}));
  EXPECT_EQ(blobs.layer(0).blobs(0).shape().dim_size(), 4);
  EXPECT_EQ(blobs.layer(1).type(), "BatchNorm");
  EXPECT_EQ(blob_values(blobs.layer(1).blobs(0)), (std::vector<float>{5, 6}));
  EXPECT_EQ(blob_values(blobs.layer(1).blobs(1)), (std::vector<float>{7, 8}));
  EXPECT_EQ(blob_values(blobs.layer(1).blobs(2)), (std::vector<float>{1}));
  EXPECT_EQ(blobs.layer(2).type(), "Scale");
  EXPECT_EQ(blob_values(blobs.layer(2).blobs(0)), (std::vector<float>{3, 4}));
  EXPECT_EQ(blob_values(blobs.layer(2).blobs(1)), (std::vector<float>{1, 2}));
}

TEST(DarknetWeights, RandomWeightsRoundTripThroughDarknetsFormat) {
  TempDir dir("darknet_round_trip");
  const std::string cfg = dir.write("three.cfg", kThreeConvolutions);
  const DarknetImport converted = import_darknet(cfg, "");
  Net net = build(converted.deploy);
  std::mt19937 random(5);
  std::uniform_real_distribution<float> values(-2, 2);
  for (const auto& layer : net.layers()) {
    for (const auto& blob : layer->blobs()) {
      float* data = blob->mutable_cpu_data();
      for (std::size_t i = 0; i < blob->count(); ++i) data[i] = values(random);
    }
  }
  for (const char* bn : {"conv0_bn", "conv3_bn"}) {
    net.layer_by_name(bn)->blobs()[2]->mutable_cpu_data()[0] =
        1;  // the factor Darknet's files imply
  }
  NetParameter trained;
  net.to_proto(&trained);
  write_proto_to_binary_file(trained, dir.file("net.caffemodel"));

  export_darknet_weights(cfg, dir.file("net.caffemodel"), dir.file("net.weights"), 123456789012ull);
  const std::string bytes = read_bytes(dir.file("net.weights"));
  ASSERT_EQ(bytes.size(), 20 + 4 * (kFloats[0] + kFloats[1] + kFloats[2]));
  EXPECT_EQ(bytes.substr(0, 20), header(0, 2, 123456789012ull));

  const NetParameter read = import_darknet(cfg, dir.file("net.weights")).weights;
  int compared = 0;
  for (const LayerParameter& layer : read.layer()) {
    const auto& blobs = net.layer_by_name(layer.name())->blobs();
    ASSERT_EQ(static_cast<std::size_t>(layer.blobs_size()), blobs.size()) << layer.name();
    for (int i = 0; i < layer.blobs_size(); ++i) {
      const std::vector<float> original(blobs[i]->cpu_data(),
                                        blobs[i]->cpu_data() + blobs[i]->count());
      EXPECT_EQ(blob_values(layer.blobs(i)), original) << layer.name() << " blob " << i;
      ++compared;
    }
  }
  EXPECT_EQ(compared, 1 + 3 + 2 + 2 + 1 + 3 + 2);  // conv0 bn scale, conv1 (w, b), conv3 bn scale
}

TEST(DarknetWeights, BatchNormStatisticsAreDividedByTheirFactorOnExport) {
  TempDir dir("darknet_factor");
  const std::string cfg = dir.write("three.cfg", kThreeConvolutions);
  Net net = build(import_darknet(cfg, "").deploy);
  const auto& bn = net.layer_by_name("conv3_bn")->blobs();
  bn[0]->mutable_cpu_data()[1] = 6;  // sums weighted by the factor 4
  bn[1]->mutable_cpu_data()[1] = 10;
  bn[2]->mutable_cpu_data()[0] = 4;
  net.layer_by_name("conv0_bn")->blobs()[2]->mutable_cpu_data()[0] = 1;
  NetParameter trained;
  net.to_proto(&trained);
  write_proto_to_binary_file(trained, dir.file("net.caffemodel"));
  export_darknet_weights(cfg, dir.file("net.caffemodel"), dir.file("net.weights"));
  const NetParameter read = import_darknet(cfg, dir.file("net.weights")).weights;
  const LayerParameter& statistics = read.layer(read.layer_size() - 2);
  ASSERT_EQ(statistics.name(), "conv3_bn");
  EXPECT_EQ(statistics.blobs(0).data(1), 1.5f);
  EXPECT_EQ(statistics.blobs(1).data(1), 2.5f);
  EXPECT_EQ(statistics.blobs(2).data(0), 1.0f);
}

TEST(DarknetWeights, FilesThatDoNotFitTheCfgAreRefusedWithTheirCounts) {
  TempDir dir("darknet_misfit");
  const std::string cfg = dir.write("three.cfg", kThreeConvolutions);
  const std::size_t total = kFloats[0] + kFloats[1] + kFloats[2];
  const auto weights_of = [&](std::size_t count) {
    return dir.write("w" + std::to_string(count) + ".weights",
                     header(0, 2, 0) + floats(std::vector<float>(count, 0.5f)));
  };
  const std::string short_inside = error_of([&] { import_darknet(cfg, weights_of(130)); });
  EXPECT_NE(short_inside.find("holds 130 floats after its header; the 3 convolutional layers of "),
            std::string::npos)
      << short_inside;
  EXPECT_NE(short_inside.find("take 258: it ends inside layer 1 ([convolutional] at '"),
            std::string::npos)
      << short_inside;
  EXPECT_NE(short_inside.find("which takes 18 floats from float 124 on"), std::string::npos)
      << short_inside;

  const std::string too_long = error_of([&] { import_darknet(cfg, weights_of(total + 3)); });
  EXPECT_NE(too_long.find("holds 261 floats after its header, 3 more than the 258"),
            std::string::npos)
      << too_long;
  EXPECT_NE(too_long.find("layer 3 ([convolutional] at"), std::string::npos) << too_long;

  // A backbone's weights end between layers: refused unless allowed.
  const std::string backbone = weights_of(kFloats[0] + kFloats[1]);
  const std::string refused = error_of([&] { import_darknet(cfg, backbone); });
  EXPECT_NE(refused.find("ends right before layer 3"), std::string::npos) << refused;
  EXPECT_NE(refused.find("--darknet_partial"), std::string::npos) << refused;
  DarknetImportOptions partial;
  partial.allow_partial_weights = true;
  const DarknetImport loaded = import_darknet(cfg, backbone, partial);
  EXPECT_EQ(loaded.weights.layer_size(), 4);  // conv0, its BN and Scale, conv1
  ASSERT_FALSE(loaded.notes.empty());
  EXPECT_NE(loaded.notes.back().find("covers the first 2 of the 3 convolutional layers (up to "
                                     "layer 1)"),
            std::string::npos)
      << loaded.notes.back();
  // Allowing a partial file still refuses one cut inside a layer.
  expect_error([&] { import_darknet(cfg, weights_of(200), partial); }, {"ends inside"});

  const std::string odd = dir.write("odd.weights", header(0, 2, 0) + "abc");
  expect_error([&] { import_darknet(cfg, odd); }, {"not a whole number of floats"});
  expect_error([&] { import_darknet(cfg, dir.write("tiny.weights", "ab")); },
               {"fewer than a Darknet .weights header"});
}

TEST(DarknetWeights, ExportNamesTheLayerTheCaffemodelLacks) {
  TempDir dir("darknet_export_missing");
  const std::string cfg = dir.write("three.cfg", kThreeConvolutions);
  NetParameter weights;
  weights.add_layer()->set_name("conv0");
  write_proto_to_binary_file(weights, dir.file("partial.caffemodel"));
  const std::string error = error_of([&] {
    export_darknet_weights(cfg, dir.file("partial.caffemodel"), dir.file("out.weights"));
  });
  EXPECT_NE(error.find("layer 'conv0' has 0 blobs, no weights"), std::string::npos) << error;
  weights.mutable_layer(0)->set_name("other");
  weights.mutable_layer(0)->add_blobs()->add_data(1);
  write_proto_to_binary_file(weights, dir.file("other.caffemodel"));
  const std::string none = error_of(
      [&] { export_darknet_weights(cfg, dir.file("other.caffemodel"), dir.file("out.weights")); });
  EXPECT_NE(none.find("has no layer 'conv0' (weights)"), std::string::npos) << none;
}

// Darknet: y = (x - mean) / (sqrt(var) + 1e-6) * scale + bias. The converted
// BatchNorm (eps 1e-12) and Scale compute (x - mean) / sqrt(var + 1e-12) *
// scale + bias; their ratio differs from 1 by at most 1e-6 / sqrt(var).
TEST(DarknetWeights, BatchNormDiffersFromDarknetsByLessThanOneMillionthOverItsDeviation) {
  TempDir dir("darknet_batch_norm");
  const std::vector<float> variances = {1e-6f, 1e-4f, 1e-2f, 1, 100};
  const int channels = static_cast<int>(variances.size());
  const std::string cfg =
      dir.write("bn.cfg", "[net]\nchannels=" + std::to_string(channels) +
                              "\nheight=4\nwidth=4\n[convolutional]\nbatch_normalize=1\nfilters=" +
                              std::to_string(channels) + "\nsize=1\nactivation=linear\n");
  std::mt19937 random(11);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<float> biases(channels), scales(channels), means(channels);
  for (int c = 0; c < channels; ++c) {
    biases[c] = uniform(random);
    scales[c] = 1 + uniform(random) / 2;
    means[c] = uniform(random);
  }
  std::vector<float> identity(channels * channels, 0.0f);
  for (int c = 0; c < channels; ++c) identity[c * channels + c] = 1;
  std::string bytes = header(0, 2, 0) + floats(biases) + floats(scales) + floats(means) +
                      floats(variances) + floats(identity);
  const DarknetImport imported = import_darknet(cfg, dir.write("bn.weights", bytes));
  Net net = build(imported.deploy);
  net.copy_trained_layers_from(imported.weights);
  Blob& data = *net.blob_by_name("data");
  std::vector<float> input(data.count());
  for (std::size_t i = 0; i < input.size(); ++i) {
    const int c = static_cast<int>(i / 16);
    input[i] = means[c] + 3 * std::sqrt(variances[c]) * uniform(random);  // within 3 deviations
  }
  std::copy(input.begin(), input.end(), data.mutable_cpu_data());
  net.forward();
  const float* output = net.blob_by_name("conv0")->cpu_data();
  std::vector<double> worst(channels, 0.0);
  for (std::size_t i = 0; i < input.size(); ++i) {
    const int c = static_cast<int>(i / 16);
    const double deviation = std::sqrt(static_cast<double>(variances[c]));
    const double normalized = (input[i] - means[c]) / (deviation + 1e-6);
    const double darknet = normalized * scales[c] + biases[c];
    // The bound on the normalized value, plus float rounding of the output.
    const double bound = std::abs(normalized * scales[c]) * 1.01e-6 / deviation +
                         4e-7 * (std::abs(darknet) + std::abs(biases[c]) + 1);
    const double difference = std::abs(output[i] - darknet);
    EXPECT_LE(difference, bound) << "channel " << c << " (var " << variances[c] << ")";
    if (normalized != 0) {
      worst[c] = std::max(worst[c], difference / std::abs(normalized * scales[c]));
    }
  }
  // Measured: per variance, the largest difference relative to the
  // normalized value (1e-6 / sqrt(var) expected, float rounding at most 1e-7).
  std::cout << "[ measured ] converted BatchNorm vs Darknet's, relative:";
  for (int c = 0; c < channels; ++c) std::cout << " var " << variances[c] << ": " << worst[c];
  std::cout << "\n";
}

}  // namespace
}  // namespace xtrain
