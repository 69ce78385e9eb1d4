// models/yolov3 and models/yolov3_tiny: the cfgs build into nets with the
// heads' shapes at 416 x 416, and the deploy prototxts there are the
// converter's output for them.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "xtrain/darknet.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

std::string model_file(const std::string& name) {
  return std::string(XTRAIN_SOURCE_DIR) + "/models/" + name;
}

// The types of `net` that no layer is registered for (YOLO's own layers
// come from other work; the tests that need them skip until they are in).
std::string missing_types(const NetParameter& net) {
  std::set<std::string> missing;
  for (const LayerParameter& layer : net.layer()) {
    if (!LayerRegistry::global().has(layer.type())) missing.insert(layer.type());
  }
  std::string names;
  for (const std::string& type : missing) names += (names.empty() ? "" : ", ") + type;
  return names;
}

// The layers of `net` whose types are registered and whose inputs the kept
// layers give: a net that builds today.
NetParameter registered_part(const NetParameter& net) {
  NetParameter part;
  part.set_name(net.name());
  std::set<std::string> blobs;
  for (const LayerParameter& layer : net.layer()) {
    bool ready = LayerRegistry::global().has(layer.type());
    for (const std::string& bottom : layer.bottom()) ready = ready && blobs.count(bottom) != 0;
    if (!ready) continue;
    *part.add_layer() = layer;
    blobs.insert(layer.top().begin(), layer.top().end());
  }
  return part;
}

Net build(const NetParameter& param) {
  NetOptions options;
  options.verbose = false;
  return Net(param, options);
}

std::vector<int> shape_of(const Net& net, const std::string& blob) {
  return net.blob_by_name(blob)->shape();
}

TEST(DarknetModels, TinysBackboneAndFirstHeadBuildWithTodaysLayers) {
  const NetParameter deploy = import_darknet(model_file("yolov3_tiny/yolov3-tiny.cfg"), "").deploy;
  const Net net = build(registered_part(deploy));
  EXPECT_EQ(shape_of(net, "conv8"), (std::vector<int>{1, 256, 26, 26}));
  // The stride-1 pooling keeps 13 x 13 (Darknet's windows, through the crop).
  EXPECT_EQ(shape_of(net, "maxpool11"), (std::vector<int>{1, 512, 13, 13}));
  EXPECT_EQ(shape_of(net, "conv15"), (std::vector<int>{1, 255, 13, 13}));
}

TEST(DarknetModels, TinyBuildsWithHeadsAt13And26) {
  const NetParameter deploy = import_darknet(model_file("yolov3_tiny/yolov3-tiny.cfg"), "").deploy;
  const std::string missing = missing_types(deploy);
  if (!missing.empty()) GTEST_SKIP() << "no layer registered for " << missing;
  const Net net = build(deploy);
  int converted_layers = 0;  // without the Splits the Net adds for blobs read twice
  for (const auto& layer : net.layers()) converted_layers += std::string(layer->type()) != "Split";
  EXPECT_EQ(converted_layers, 57);
  EXPECT_EQ(shape_of(net, "conv15"), (std::vector<int>{1, 255, 13, 13}));
  EXPECT_EQ(shape_of(net, "upsample19"), (std::vector<int>{1, 128, 26, 26}));
  EXPECT_EQ(shape_of(net, "route20"), (std::vector<int>{1, 384, 26, 26}));
  EXPECT_EQ(shape_of(net, "conv22"), (std::vector<int>{1, 255, 26, 26}));
}

TEST(DarknetModels, Yolov3BuildsWithHeadsAt13And26And52) {
  const NetParameter deploy = import_darknet(model_file("yolov3/yolov3.cfg"), "").deploy;
  const std::string missing = missing_types(deploy);
  if (!missing.empty()) GTEST_SKIP() << "no layer registered for " << missing;
  const Net net = build(deploy);
  EXPECT_EQ(shape_of(net, "shortcut74"), (std::vector<int>{1, 1024, 13, 13}));
  EXPECT_EQ(shape_of(net, "conv81"), (std::vector<int>{1, 255, 13, 13}));
  EXPECT_EQ(shape_of(net, "route86"), (std::vector<int>{1, 768, 26, 26}));
  EXPECT_EQ(shape_of(net, "conv93"), (std::vector<int>{1, 255, 26, 26}));
  EXPECT_EQ(shape_of(net, "route98"), (std::vector<int>{1, 384, 52, 52}));
  EXPECT_EQ(shape_of(net, "conv105"), (std::vector<int>{1, 255, 52, 52}));
}

// The train/test net with its AnnotatedData layers replaced by an Input of
// the same tops (no LMDB needed), in each phase.
TEST(DarknetModels, TinysTrainAndTestNetsBuildWithTheYoloLayers) {
  const NetParameter train_test =
      import_darknet(model_file("yolov3_tiny/yolov3-tiny.cfg"), "").train_test;
  const std::string missing = missing_types(train_test);
  if (!missing.empty() && missing != "AnnotatedData") {
    GTEST_SKIP() << "no layer registered for " << missing;
  }
  NetParameter param;
  LayerParameter& input = *param.add_layer();
  input.set_name("data");
  input.set_type("Input");
  input.add_top("data");
  input.add_top("label");
  for (const std::vector<int>& dims : {std::vector<int>{2, 3, 416, 416}, {1, 1, 2, 8}}) {
    BlobShape& shape = *input.mutable_input_param()->add_shape();
    for (int dim : dims) shape.add_dim(dim);
  }
  for (const LayerParameter& layer : train_test.layer()) {
    if (layer.type() != "AnnotatedData") *param.add_layer() = layer;
  }
  param.mutable_state()->set_phase(TRAIN);
  const Net train = build(param);
  EXPECT_TRUE(train.has_blob("yolo16_loss"));
  EXPECT_TRUE(train.has_blob("yolo23_loss"));
  EXPECT_FALSE(train.has_layer("detection_eval"));
  param.mutable_state()->set_phase(TEST);
  const Net test = build(param);
  EXPECT_FALSE(test.has_layer("yolo16_loss"));
  EXPECT_TRUE(test.has_blob("detection_eval"));
}

TEST(DarknetModels, DeployPrototxtsInModelsAreTheConvertersOutput) {
  for (const char* folder : {"yolov3", "yolov3_tiny"}) {
    const std::string cfg =
        model_file(std::string(folder) + "/" +
                   (std::string(folder) == "yolov3" ? "yolov3.cfg" : "yolov3-tiny.cfg"));
    const NetParameter written =
        read_net_params_from_text_file(model_file(std::string(folder) + "/deploy.prototxt"));
    EXPECT_EQ(written.DebugString(), import_darknet(cfg, "").deploy.DebugString())
        << folder << ": regenerate with `xtrain import` (models/" << folder << "/README.md)";
  }
}

}  // namespace
}  // namespace xtrain
