// Building and running nets: in-place layers, parameter sharing, loss
// weights, force_backward, propagate_down, lr_mult, deprecated inputs.
#include "xtrain/net.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "device_test_support.hpp"
#include "error_message.hpp"
#include "xtrain/error.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

NetParameter parse_net(const std::string& text, Phase phase = TRAIN) {
  NetParameter param;
  read_proto_from_text_string(text, &param);
  param.mutable_state()->set_phase(phase);
  return param;
}

NetOptions quiet(std::uint64_t seed = 7) {
  NetOptions options = testing::net_options();
  options.random_seed = seed;
  return options;
}

// Input x (4 x 3) and labels, filled by fill_inputs().
const char* kInputs = R"(
  layer { name: "in" type: "Input" top: "x" top: "label"
          input_param { shape { dim: 4 dim: 3 } shape { dim: 4 } } }
)";

void fill_inputs(Net& net) {
  float* x = net.blob_by_name("x")->mutable_cpu_data();
  for (int i = 0; i < 12; ++i) x[i] = std::sin(1.0f + i);
  float* label = net.blob_by_name("label")->mutable_cpu_data();
  for (int i = 0; i < 4; ++i) label[i] = static_cast<float>(i % 2);
}

std::string ip_layer(const std::string& name, const std::string& bottom, const std::string& extra = "") {
  return "layer { name: \"" + name + "\" type: \"InnerProduct\" bottom: \"" + bottom +
         "\" top: \"" + name + "\" " + extra +
         " inner_product_param { num_output: 2 weight_filler { type: \"gaussian\" std: 0.5 } "
         "bias_filler { type: \"constant\" value: 0.1 } } }\n";
}

std::string loss_layer(const std::string& name, const std::string& bottom, const std::string& extra = "") {
  return "layer { name: \"" + name + "\" type: \"SoftmaxWithLoss\" bottom: \"" + bottom +
         "\" bottom: \"label\" top: \"" + name + "\" " + extra + " }\n";
}

XTRAIN_DEVICE_TEST(Net, InPlaceLayerWritesIntoItsBottom) {
  Net net(parse_net(std::string(kInputs) + ip_layer("ip", "x") +
                    "layer { name: \"relu\" type: \"ReLU\" bottom: \"ip\" top: \"ip\" }\n" +
                    loss_layer("loss", "ip")),
          quiet());
  const int relu = 2;
  ASSERT_EQ(net.layer_names()[relu], "relu");
  EXPECT_EQ(net.bottom_vecs()[relu][0], net.top_vecs()[relu][0]);
  fill_inputs(net);
  net.forward();
  for (std::size_t i = 0; i < net.blob_by_name("ip")->count(); ++i) {
    EXPECT_GE(net.blob_by_name("ip")->cpu_data()[i], 0.0f);
  }
}

XTRAIN_DEVICE_TEST(Net, InputLayerTopsAreTheNetsInputs) {
  Net net(parse_net(std::string(kInputs) + ip_layer("ip", "x") + loss_layer("loss", "ip")),
          quiet());
  ASSERT_EQ(net.input_blobs().size(), 2u);
  EXPECT_EQ(net.input_blobs()[0], net.blob_by_name("x").get());
  EXPECT_EQ(net.input_blobs()[1], net.blob_by_name("label").get());
}

// `std: nan` or `beta: nan` parse; every value they touch became nan.
TEST(Net, ANanSettingIsAnErrorNamingTheLayerAndField) {
  testing::expect_error(
      [&] {
        Net net(parse_net(std::string(kInputs) +
                          ip_layer("ip", "x").replace(ip_layer("ip", "x").find("std: 0.5"), 8,
                                                      "std: nan") +
                          loss_layer("loss", "ip")),
                quiet());
      },
      {"layer 'ip' (InnerProduct): inner_product_param.weight_filler.std is nan, which no "
       "setting can be; give a number"});
  testing::expect_error(
      [&] {
        Net net(parse_net(std::string(kInputs) + ip_layer("ip", "x", "loss_weight: nan") +
                          loss_layer("loss", "ip")),
                quiet());
      },
      {"layer 'ip' (InnerProduct): loss_weight[0] is nan"});
}

// pycaffe scripts pass the phase as a number; one that is no Phase would
// build a net without any of the layers its phase rules name.
TEST(Net, APhaseThatIsNeitherTrainNorTestIsAnError) {
  for (const int phase : {-1, 2, 7}) {
    testing::expect_error(
        [&] { Net net("lenet.prototxt", static_cast<Phase>(phase), 0, {}, quiet()); },
        {"'lenet.prototxt'", "phase " + std::to_string(phase), "neither TRAIN (0) nor TEST (1)"});
  }
}

TEST(Net, TopReusingAnotherLayersNameIsAnError) {
  const NetParameter param = parse_net(std::string(kInputs) + ip_layer("ip", "x") +
                                       "layer { name: \"dup\" type: \"ReLU\" bottom: \"x\" top: \"ip\" }\n");
  testing::expect_error([&] { Net net(param, quiet()); }, {"'dup'"});
}

XTRAIN_DEVICE_TEST(Net, FanOutInsertsSplitAndSumsGradients) {
  Net net(parse_net(std::string(kInputs) + ip_layer("a", "x") + ip_layer("b", "x") +
                    loss_layer("loss_a", "a") + loss_layer("loss_b", "b") +
                    "force_backward: true\n"),
          quiet());
  EXPECT_TRUE(net.has_layer("x_in_0_split"));
  fill_inputs(net);
  net.forward_backward();
  // The gradient w.r.t. x is the sum of both branches': W_a^T da + W_b^T db.
  const Blob& x = *net.blob_by_name("x");
  const Blob& wa = *net.layer_by_name("a")->blobs()[0];
  const Blob& wb = *net.layer_by_name("b")->blobs()[0];
  const Blob& da = *net.blob_by_name("a");
  const Blob& db = *net.blob_by_name("b");
  for (int n = 0; n < 4; ++n) {
    for (int k = 0; k < 3; ++k) {
      float expected = 0;
      for (int o = 0; o < 2; ++o) {
        expected += wa.cpu_data()[o * 3 + k] * da.cpu_diff()[n * 2 + o] +
                    wb.cpu_data()[o * 3 + k] * db.cpu_diff()[n * 2 + o];
      }
      EXPECT_NEAR(x.cpu_diff()[n * 3 + k], expected, 1e-6f);
    }
  }
}

XTRAIN_DEVICE_TEST(Net, SharedParametersAreOneBlobWhoseGradientIsTheSum) {
  const std::string shared = "param { name: \"w\" } param { name: \"bias\" }";
  Net net(parse_net(std::string(kInputs) + ip_layer("a", "x", shared) + ip_layer("b", "x", shared) +
                    loss_layer("loss_a", "a") + loss_layer("loss_b", "b")),
          quiet());
  ASSERT_EQ(net.params().size(), 4u);
  ASSERT_EQ(net.learnable_params().size(), 2u);
  EXPECT_EQ(net.param_owners(), (std::vector<int>{-1, -1, 0, 1}));
  const auto& a = net.layer_by_name("a")->blobs();
  const auto& b = net.layer_by_name("b")->blobs();
  EXPECT_EQ(a[0]->cpu_data(), b[0]->cpu_data());
  fill_inputs(net);
  net.clear_param_diffs();
  net.forward_backward();
  // Both layers compute the same outputs, so the shared weight's gradient is
  // twice what one layer gives: compare against an unshared net.
  Net single(parse_net(std::string(kInputs) + ip_layer("a", "x") + loss_layer("loss_a", "a")), quiet());
  single.layer_by_name("a")->blobs()[0]->share_data(*a[0]);
  single.layer_by_name("a")->blobs()[1]->share_data(*a[1]);
  fill_inputs(single);
  single.clear_param_diffs();
  single.forward_backward();
  const Blob& one = *single.layer_by_name("a")->blobs()[0];
  for (std::size_t i = 0; i < one.count(); ++i) {
    EXPECT_NEAR(a[0]->cpu_diff()[i], 2 * one.cpu_diff()[i], 1e-6f);
  }
}

TEST(Net, SharedParametersWithDifferentShapesAreAnError) {
  const std::string shared = "param { name: \"w\" }";
  const std::string wider =
      "layer { name: \"b\" type: \"InnerProduct\" bottom: \"x\" top: \"b\" param { name: \"w\" } "
      "inner_product_param { num_output: 5 } }\n";
  testing::expect_error(
      [&] {
        Net net(parse_net(std::string(kInputs) + ip_layer("a", "x", shared) + wider), quiet());
      },
      {"'w'", "'b'"});
}

XTRAIN_DEVICE_TEST(Net, LossWeightScalesTheLoss) {
  Net plain(parse_net(std::string(kInputs) + ip_layer("ip", "x") + loss_layer("loss", "ip")), quiet());
  Net weighted(parse_net(std::string(kInputs) + ip_layer("ip", "x") + loss_layer("loss", "ip", "loss_weight: 2.5")),
               quiet());
  fill_inputs(plain);
  fill_inputs(weighted);
  const float loss = plain.forward();
  EXPECT_GT(loss, 0.0f);
  EXPECT_NEAR(weighted.forward(), 2.5f * loss, 1e-5f);
  // Gradients scale too.
  plain.clear_param_diffs();
  weighted.clear_param_diffs();
  plain.backward();
  weighted.backward();
  const Blob& g1 = *plain.layer_by_name("ip")->blobs()[0];
  const Blob& g2 = *weighted.layer_by_name("ip")->blobs()[0];
  for (std::size_t i = 0; i < g1.count(); ++i) EXPECT_NEAR(g2.cpu_diff()[i], 2.5f * g1.cpu_diff()[i], 1e-5f);
}

XTRAIN_DEVICE_TEST(Net, BackwardNeedsFollowLossesLrMultForceBackwardAndPropagateDown) {
  const std::string body = ip_layer("ip1", "x") + ip_layer("ip2", "ip1") + loss_layer("loss", "ip2");
  Net plain(parse_net(std::string(kInputs) + body), quiet());
  EXPECT_FALSE(plain.layer_needs_backward(0));  // Input
  EXPECT_TRUE(plain.layer_needs_backward(1));
  EXPECT_FALSE(plain.bottom_need_backward()[1][0]);  // nothing wants dL/dx
  EXPECT_TRUE(plain.bottom_need_backward()[2][0]);

  Net forced(parse_net(std::string(kInputs) + body + "force_backward: true\n"), quiet());
  EXPECT_TRUE(forced.bottom_need_backward()[1][0]);
  EXPECT_FALSE(forced.bottom_need_backward()[3][1]);  // never into labels

  const std::string frozen = "param { lr_mult: 0 } param { lr_mult: 0 }";
  Net frozen_first(parse_net(std::string(kInputs) + ip_layer("ip1", "x", frozen) + ip_layer("ip2", "ip1") +
                             loss_layer("loss", "ip2")),
                   quiet());
  EXPECT_FALSE(frozen_first.layer_needs_backward(1));
  EXPECT_FALSE(frozen_first.bottom_need_backward()[2][0]);
  EXPECT_EQ(frozen_first.params_lr(), (std::vector<float>{0, 0, 1, 1}));

  Net stopped(parse_net(std::string(kInputs) + ip_layer("ip1", "x") +
                        ip_layer("ip2", "ip1", "propagate_down: false") + loss_layer("loss", "ip2")),
              quiet());
  EXPECT_FALSE(stopped.bottom_need_backward()[2][0]);
  EXPECT_FALSE(stopped.layer_needs_backward(1));  // nothing reaches ip1 any more
}

XTRAIN_DEVICE_TEST(Net, DeprecatedInputFieldsBecomeAnInputLayer) {
  Net net(parse_net("input: \"data\" input_dim: 2 input_dim: 3 input_dim: 4 input_dim: 5\n"
                    "layer { name: \"relu\" type: \"ReLU\" bottom: \"data\" top: \"out\" }\n"),
          quiet());
  EXPECT_EQ(net.layer_names().front(), "input");
  EXPECT_EQ(net.blob_by_name("data")->shape(), (std::vector<int>{2, 3, 4, 5}));
}

TEST(Net, SameSeedSameWeightsOtherSeedOtherWeights) {
  const NetParameter param = parse_net(std::string(kInputs) + ip_layer("ip", "x") + loss_layer("loss", "ip"));
  Net a(param, quiet(11));
  Net b(param, quiet(11));
  Net c(param, quiet(12));
  const Blob& wa = *a.layer_by_name("ip")->blobs()[0];
  const Blob& wb = *b.layer_by_name("ip")->blobs()[0];
  const Blob& wc = *c.layer_by_name("ip")->blobs()[0];
  bool all_equal_c = true;
  for (std::size_t i = 0; i < wa.count(); ++i) {
    EXPECT_EQ(wa.cpu_data()[i], wb.cpu_data()[i]);
    all_equal_c = all_equal_c && wa.cpu_data()[i] == wc.cpu_data()[i];
  }
  EXPECT_FALSE(all_equal_c);
}

XTRAIN_DEVICE_TEST(Net, WeightsRoundTripThroughAProto) {
  const NetParameter param = parse_net(std::string(kInputs) + ip_layer("ip", "x") + loss_layer("loss", "ip"));
  Net source(param, quiet(1));
  Net target(param, quiet(2));
  NetParameter trained;
  source.to_proto(&trained);
  std::string bytes;
  ASSERT_TRUE(trained.SerializeToString(&bytes));
  NetParameter parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  target.copy_trained_layers_from(parsed);
  for (int j = 0; j < 2; ++j) {
    const Blob& s = *source.layer_by_name("ip")->blobs()[j];
    const Blob& t = *target.layer_by_name("ip")->blobs()[j];
    for (std::size_t i = 0; i < s.count(); ++i) EXPECT_EQ(s.cpu_data()[i], t.cpu_data()[i]);
  }
}

XTRAIN_DEVICE_TEST(Net, CopyingWeightsOfAnotherShapeNamesLayerAndShapes) {
  Net source(parse_net(std::string(kInputs) + ip_layer("ip", "x")), quiet());
  NetParameter trained;
  source.to_proto(&trained);
  const std::string wider =
      "layer { name: \"ip\" type: \"InnerProduct\" bottom: \"x\" top: \"ip\" "
      "inner_product_param { num_output: 7 } }\n";
  Net target(parse_net(std::string(kInputs) + wider), quiet());
  testing::expect_error([&] { target.copy_trained_layers_from(trained); },
                        {"'ip'", "(2, 3)", "(7, 3)", "rename"});
}

// Weights saved after training diverged: scoring with them gave loss nan
// (and, before nan scores counted as wrong, accuracy 1) without a word.
XTRAIN_DEVICE_TEST(Net, WeightsHoldingNanOrInfAreRefusedNamingTheBlobs) {
  const NetParameter param = parse_net(std::string(kInputs) + ip_layer("ip", "x"));
  Net source(param, quiet());
  NetParameter trained;
  source.to_proto(&trained);
  trained.mutable_layer(trained.layer_size() - 1)->mutable_blobs(0)->set_data(1, NAN);
  trained.mutable_layer(trained.layer_size() - 1)->mutable_blobs(1)->set_data(0, INFINITY);
  Net target(param, quiet());
  testing::expect_error([&] { target.copy_trained_layers_from(trained); },
                        {"hold values that are nan or inf: layer 'ip' param 0 (1 of 6 values); "
                         "layer 'ip' param 1 (1 of 2 values)",
                         "use an earlier snapshot"});
}

}  // namespace
}  // namespace xtrain
