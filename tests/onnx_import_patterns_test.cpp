// The ONNX forms the importer reads as a pattern or with the input's shape
// (src/interchange/onnx_import_patterns.cpp): our exports' Crop (Slice),
// MVN (its seven nodes) and Scale/Bias by a second bottom read back as the
// layers with Caffe's parameters, and Slices Caffe cannot compute refused
// naming the node. ONNX Runtime's numbers for them: tests/onnx (pytest).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "error_message.hpp"
#include "interchange/onnx.pb.h"
#include "xtrain/onnx.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

class OnnxImportPatterns : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("xtrain_onnx_patterns_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The net of `layers` on a (2, 4, 9, 11) input, exported and imported.
  NetParameter round_trip(const std::string& layers) const {
    const std::string text =
        "layer { name: 'data' type: 'Input' top: 'data' "
        "input_param { shape { dim: 2 dim: 4 dim: 9 dim: 11 } } }\n" +
        layers;
    const std::string onnx_path = (dir_ / "net.onnx").string();
    export_onnx(read_net_params_from_text(text, "net"), "", onnx_path, OnnxExportOptions());
    return import_onnx(onnx_path).net;
  }

  // A model of one Slice of a (1, 2, 3, 4) input "x" by constant starts,
  // ends, axes and steps.
  std::string slice_model(const std::vector<std::int64_t>& starts,
                          const std::vector<std::int64_t>& ends,
                          const std::vector<std::int64_t>& axes,
                          const std::vector<std::int64_t>& steps) const {
    onnx::ModelProto model;
    model.add_opset_import()->set_version(13);
    onnx::GraphProto* graph = model.mutable_graph();
    onnx::ValueInfoProto* input = graph->add_input();
    input->set_name("x");
    for (int dim : {1, 2, 3, 4}) {
      input->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(dim);
    }
    onnx::NodeProto* node = graph->add_node();
    node->set_name("cut");
    node->set_op_type("Slice");
    node->add_input("x");
    const std::pair<const char*, const std::vector<std::int64_t>*> constants[] = {
        {"starts", &starts}, {"ends", &ends}, {"axes", &axes}, {"steps", &steps}};
    for (const auto& [name, values] : constants) {
      onnx::TensorProto* tensor = graph->add_initializer();
      tensor->set_name(name);
      tensor->set_data_type(onnx::TensorProto::INT64);
      tensor->add_dims(static_cast<std::int64_t>(values->size()));
      for (std::int64_t value : *values) tensor->add_int64_data(value);
      node->add_input(name);
    }
    node->add_output("y");
    graph->add_output()->set_name("y");
    const std::string path = (dir_ / "slice.onnx").string();
    std::ofstream(path, std::ios::binary) << model.SerializeAsString();
    return path;
  }

  std::filesystem::path dir_;
};

std::vector<const LayerParameter*> of_type(const NetParameter& net, const std::string& type) {
  std::vector<const LayerParameter*> found;
  for (const LayerParameter& layer : net.layer()) {
    if (layer.type() == type) found.push_back(&layer);
  }
  return found;
}

TEST_F(OnnxImportPatterns, CropComesBackAsASliceAlongEachCutAxis) {
  // 'small' is 4x5 (3x3 windows, stride 2, of 9x11); the crop keeps rows
  // 1..4 and columns 2..6 of 'data'.
  const NetParameter net = round_trip(R"(
    layer { name: 'small' type: 'Pooling' bottom: 'data' top: 'small'
      pooling_param { pool: MAX kernel_size: 3 stride: 2 } }
    layer { name: 'crop' type: 'Crop' bottom: 'data' bottom: 'small' top: 'crop'
      crop_param { axis: 2 offset: 1 offset: 2 } })");
  const auto slices = of_type(net, "Slice");
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(slices[0]->slice_param().axis(), 2);
  EXPECT_EQ(std::vector<std::uint32_t>(slices[0]->slice_param().slice_point().begin(),
                                       slices[0]->slice_param().slice_point().end()),
            (std::vector<std::uint32_t>{1, 5}));
  EXPECT_EQ(slices[1]->slice_param().axis(), 3);
  EXPECT_EQ(std::vector<std::uint32_t>(slices[1]->slice_param().slice_point().begin(),
                                       slices[1]->slice_param().slice_point().end()),
            (std::vector<std::uint32_t>{2, 7}));
  EXPECT_EQ(slices[1]->top(1), "crop");
  const auto silence = of_type(net, "Silence");
  ASSERT_EQ(silence.size(), 1u);
  EXPECT_EQ(silence[0]->bottom_size(), 4);  // before and after, on both axes
}

TEST_F(OnnxImportPatterns, MvnNodesComeBackAsOneMvnLayer) {
  const NetParameter net = round_trip(R"(
    layer { name: 'mvn' type: 'MVN' bottom: 'data' top: 'mvn'
      mvn_param { across_channels: true eps: 0.01 } }
    layer { name: 'mean' type: 'MVN' bottom: 'data' top: 'mean'
      mvn_param { normalize_variance: false } })");
  ASSERT_EQ(net.layer_size(), 3) << net.DebugString();
  const auto mvn = of_type(net, "MVN");
  ASSERT_EQ(mvn.size(), 2u);
  EXPECT_EQ(mvn[0]->top(0), "mvn");
  EXPECT_TRUE(mvn[0]->mvn_param().across_channels());
  EXPECT_TRUE(mvn[0]->mvn_param().normalize_variance());
  EXPECT_FLOAT_EQ(mvn[0]->mvn_param().eps(), 0.01f);
  EXPECT_EQ(mvn[1]->top(0), "mean");
  EXPECT_FALSE(mvn[1]->mvn_param().across_channels());
  EXPECT_FALSE(mvn[1]->mvn_param().normalize_variance());
}

TEST_F(OnnxImportPatterns, ScaleAndBiasByASecondBottomComeBackSo) {
  const NetParameter net = round_trip(R"(
    layer { name: 'pooled' type: 'Pooling' bottom: 'data' top: 'pooled'
      pooling_param { pool: AVE global_pooling: true } }
    layer { name: 'factors' type: 'Flatten' bottom: 'pooled' top: 'factors' }
    layer { name: 'scale' type: 'Scale' bottom: 'data' bottom: 'factors' top: 'scale'
      scale_param { axis: 0 } }
    layer { name: 'bias' type: 'Bias' bottom: 'data' bottom: 'factors' top: 'bias'
      bias_param { axis: 0 } })");
  // Each second bottom reshaped to the (N, C) that Caffe takes, not
  // ONNX's (N, C, 1, 1).
  for (const char* type : {"Scale", "Bias"}) {
    const auto layers = of_type(net, type);
    ASSERT_EQ(layers.size(), 1u) << type;
    EXPECT_EQ(layers[0]->bottom(0), "data");
    ASSERT_EQ(layers[0]->bottom_size(), 2);
    int reshapes = 0;
    for (const LayerParameter* reshape : of_type(net, "Reshape")) {
      if (reshape->top(0) != layers[0]->bottom(1)) continue;
      ++reshapes;
      EXPECT_EQ(reshape->reshape_param().shape().dim_size(), 2) << reshape->name();
    }
    EXPECT_EQ(reshapes, 1) << type;
  }
}

TEST_F(OnnxImportPatterns, SlicesCaffeCannotComputeAreRefusedNamingTheNode) {
  const std::string stepped = slice_model({0}, {4}, {3}, {2});
  EXPECT_NE(
      testing::error_of([&] { import_onnx(stepped); }).find("node 'cut' (Slice): a step of 2"),
      std::string::npos);
  const std::string empty = slice_model({2}, {1}, {2}, {1});
  const std::string message = testing::error_of([&] { import_onnx(empty); });
  EXPECT_NE(message.find("node 'cut' (Slice): along axis 2 it keeps 2 to 1 of 3, nothing"),
            std::string::npos)
      << message;
  // Negative values count from the end and clamp, as in ONNX.
  const NetParameter net = import_onnx(slice_model({-2}, {100}, {-1}, {1})).net;
  const auto slices = of_type(net, "Slice");
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_EQ(slices[0]->slice_param().axis(), 3);
  ASSERT_EQ(slices[0]->slice_param().slice_point_size(), 1);
  EXPECT_EQ(slices[0]->slice_param().slice_point(0), 2u);
  EXPECT_EQ(slices[0]->top(1), "y");
}

}  // namespace
}  // namespace xtrain
