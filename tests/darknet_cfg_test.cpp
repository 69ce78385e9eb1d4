// Darknet cfg -> xtrain nets: the layers each section becomes, the YOLO
// heads, the train/test net, and the errors for what is not converted.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "error_message.hpp"
#include "interchange/darknet_model.hpp"
#include "tool_runner.hpp"
#include "xtrain/darknet.hpp"

namespace xtrain {
namespace {

using interchange::convert_darknet_cfg;
using interchange::DarknetModel;
using testing::error_of;

std::string model_cfg(const std::string& name) {
  return std::string(XTRAIN_SOURCE_DIR) + "/models/" + name;
}

std::map<std::string, int> count_types(const NetParameter& net) {
  std::map<std::string, int> counts;
  for (const LayerParameter& layer : net.layer()) ++counts[layer.type()];
  return counts;
}

const LayerParameter& layer_named(const NetParameter& net, const std::string& name) {
  for (const LayerParameter& layer : net.layer()) {
    if (layer.name() == name) return layer;
  }
  throw std::runtime_error("no layer " + name);
}

TEST(DarknetCfg, TinyBecomesItsLayersWithTwoHeads) {
  const DarknetImport imported = import_darknet(model_cfg("yolov3_tiny/yolov3-tiny.cfg"), "");
  const std::map<std::string, int> expected = {{"Input", 1},      {"Convolution", 13},
                                               {"BatchNorm", 11}, {"Scale", 11},
                                               {"ReLU", 11},      {"Pooling", 6},
                                               {"Crop", 1},       {"Concat", 1},
                                               {"Upsample", 1},   {"YoloDetectionOutput", 1}};
  EXPECT_EQ(count_types(imported.deploy), expected);
  EXPECT_EQ(imported.deploy.layer_size(), 57);
  const LayerParameter& input = imported.deploy.layer(0);
  EXPECT_EQ(input.input_param().shape(0).dim_size(), 4);
  EXPECT_EQ(input.input_param().shape(0).dim(3), 416);

  const LayerParameter& output = layer_named(imported.deploy, "detection_out");
  ASSERT_EQ(output.bottom_size(), 3);
  EXPECT_EQ(output.bottom(0), "conv15");
  EXPECT_EQ(output.bottom(1), "conv22");
  EXPECT_EQ(output.bottom(2), "data");
  EXPECT_EQ(output.yolo_param().num_classes(), 80u);
  EXPECT_EQ(output.yolo_param().anchors_size(), 12);
  const std::vector<unsigned> masks(output.yolo_param().mask().begin(),
                                    output.yolo_param().mask().end());
  EXPECT_EQ(masks, (std::vector<unsigned>{3, 4, 5, 0, 1, 2}));
  EXPECT_FLOAT_EQ(output.yolo_param().confidence_threshold(), 0.5f);

  // Heads at stride 32 and 16 of 416; the [yolo] checks 3 x (5 + 80) channels.
  const DarknetModel model =
      interchange::read_darknet_cfg(model_cfg("yolov3_tiny/yolov3-tiny.cfg"));
  ASSERT_EQ(model.heads.size(), 2u);
  EXPECT_EQ(model.heads[0].height, 13);
  EXPECT_EQ(model.heads[1].width, 26);
  // The route -1, 8 joins the upsampled 128 channels and conv8's 256.
  const LayerParameter& route = layer_named(imported.deploy, "route20");
  EXPECT_EQ(route.bottom(0), "upsample19");
  EXPECT_EQ(route.bottom(1), "conv8");
}

TEST(DarknetCfg, Yolov3HasTheDarknet53BackboneAndThreeHeads) {
  const DarknetModel model = interchange::read_darknet_cfg(model_cfg("yolov3/yolov3.cfg"));
  EXPECT_EQ(model.convolutions.size(), 75u);
  ASSERT_EQ(model.heads.size(), 3u);
  EXPECT_EQ(model.heads[0].height, 13);
  EXPECT_EQ(model.heads[1].height, 26);
  EXPECT_EQ(model.heads[2].height, 52);
  EXPECT_EQ(model.heads[2].predictions, "conv105");
  const std::map<std::string, int> counts = count_types(model.layers);
  EXPECT_EQ(counts.at("Eltwise"), 23);  // 1 + 2 + 8 + 8 + 4 residual blocks
  EXPECT_EQ(counts.at("Upsample"), 2);
  EXPECT_EQ(counts.at("Concat"), 2);
  EXPECT_EQ(counts.at("BatchNorm"), 72);  // all but the three prediction layers
  EXPECT_EQ(layer_named(model.layers, "route86").bottom(1), "shortcut61");
}

TEST(DarknetCfg, ConvolutionPaddingBatchNormAndActivationsMapToCaffesLayers) {
  const DarknetModel model = convert_darknet_cfg(R"(
[net]
height=8
width=8
channels=4
[convolutional]
filters=6
size=3
pad=1
groups=2
stride=2
activation=logistic
[convolutional]
batch_normalize=1
filters=5
size=5
padding=1
activation=tanh
)",
                                                 "two.cfg");
  const NetParameter& net = model.layers;
  ASSERT_EQ(net.layer_size(), 6);
  const ConvolutionParameter& first = net.layer(0).convolution_param();
  EXPECT_EQ(first.pad(0), 1u);  // pad=1: size / 2
  EXPECT_EQ(first.stride(0), 2u);
  EXPECT_EQ(first.group(), 2u);
  EXPECT_TRUE(first.bias_term());
  EXPECT_EQ(net.layer(1).type(), "Sigmoid");
  const ConvolutionParameter& second = net.layer(2).convolution_param();
  EXPECT_EQ(second.pad(0), 1u);  // padding=1 as given
  EXPECT_FALSE(second.bias_term());
  EXPECT_EQ(net.layer(3).type(), "BatchNorm");
  EXPECT_FLOAT_EQ(net.layer(3).batch_norm_param().eps(), 1e-12f);
  EXPECT_TRUE(net.layer(4).scale_param().bias_term());
  EXPECT_EQ(net.layer(5).type(), "TanH");
  ASSERT_EQ(model.convolutions.size(), 2u);
  EXPECT_EQ(model.convolutions[1].channels, 6);
  // 4 x 4 after the stride: (4 + 2 - 5) + 1 = 2, and the weights' floats.
  EXPECT_EQ(model.convolutions[0].float_count(), 6u + 6 * 2 * 9);
  EXPECT_EQ(model.convolutions[1].float_count(), 4u * 5 + 5 * 6 * 25);
}

TEST(DarknetCfg, TrainTestNetHasDataLossPerHeadAndEvaluation) {
  DarknetImportOptions options;
  options.train_source = "fashion_train_lmdb";
  options.test_source = "fashion_test_lmdb";
  options.train_batch_size = 8;
  options.label_map_file = "labelmap.prototxt";
  const NetParameter net =
      import_darknet(model_cfg("yolov3_tiny/yolov3-tiny.cfg"), "", options).train_test;
  const std::map<std::string, int> counts = count_types(net);
  EXPECT_EQ(counts.at("AnnotatedData"), 2);
  EXPECT_EQ(counts.at("YoloLoss"), 2);
  EXPECT_EQ(counts.at("YoloDetectionOutput"), 1);
  EXPECT_EQ(counts.at("DetectionEvaluate"), 1);
  const LayerParameter& train_data = net.layer(0);
  EXPECT_EQ(train_data.include(0).phase(), TRAIN);
  EXPECT_EQ(train_data.data_param().source(), "fashion_train_lmdb");
  EXPECT_EQ(train_data.data_param().batch_size(), 8u);
  EXPECT_FLOAT_EQ(train_data.transform_param().jitter_param().jitter(), 0.3f);
  EXPECT_EQ(train_data.annotated_data_param().label_map_file(), "labelmap.prototxt");
  EXPECT_EQ(net.layer(1).data_param().source(), "fashion_test_lmdb");

  const LayerParameter& loss = layer_named(net, "yolo16_loss");
  EXPECT_EQ(loss.include(0).phase(), TRAIN);
  EXPECT_EQ(loss.bottom(0), "conv15");
  EXPECT_EQ(loss.bottom(1), "label");
  EXPECT_EQ(loss.bottom(2), "data");
  EXPECT_EQ(loss.yolo_param().mask_size(), 3);
  EXPECT_EQ(loss.yolo_param().mask(0), 3u);
  EXPECT_FLOAT_EQ(loss.yolo_param().ignore_thresh(), 0.7f);
  EXPECT_FLOAT_EQ(layer_named(net, "detection_out").yolo_param().confidence_threshold(), 0.005f);
  EXPECT_EQ(layer_named(net, "detection_eval").detection_evaluate_param().num_classes(), 81u);

  // Darknet's initial weights: uniform in +-sqrt(2 / (3 * 3 * 3)) for conv0.
  const FillerParameter& filler = layer_named(net, "conv0").convolution_param().weight_filler();
  EXPECT_EQ(filler.type(), "uniform");
  EXPECT_FLOAT_EQ(filler.max(), std::sqrt(2.0f / 27));
  EXPECT_EQ(layer_named(net, "conv15").param_size(), 2);  // weights and bias
  EXPECT_EQ(layer_named(net, "conv15").param(1).decay_mult(), 0.0f);
}

TEST(DarknetCfg, SettingsLeftOutAreNoted) {
  const DarknetImport imported = import_darknet(model_cfg("yolov3/yolov3.cfg"), "");
  std::string notes;
  for (const std::string& note : imported.notes) notes += note + "\n";
  EXPECT_NE(notes.find("[net] angle, burn_in"), std::string::npos) << notes;
  EXPECT_NE(notes.find("random=1"), std::string::npos) << notes;
  EXPECT_EQ(imported.notes.size(), 2u) << notes;  // one note per setting, not per head
}

TEST(DarknetCfg, ClassifierEndsInGlobalAveragePoolingAndSoftmax) {
  // Darknet-53's classifier head; its [net] gives batch twice (first wins).
  const DarknetModel model = convert_darknet_cfg(R"(
[net]
batch=1
batch=128
channels=3
height=32
width=32
[convolutional]
batch_normalize=1
filters=8
size=3
stride=2
pad=1
activation=leaky
[avgpool]
[convolutional]
filters=10
size=1
activation=linear
[softmax]
groups=1
)",
                                                 "classifier.cfg");
  EXPECT_EQ(model.batch, 1);
  ASSERT_FALSE(model.notes.empty());
  EXPECT_EQ(model.notes[0],
            "'classifier.cfg' line 4: 'batch' is given again in this [net]; its "
            "first value (line 3) is used, as Darknet does");
  const NetParameter& net = model.layers;
  const LayerParameter& pooling = layer_named(net, "avgpool1");
  EXPECT_EQ(pooling.pooling_param().pool(), PoolingParameter::AVE);
  EXPECT_TRUE(pooling.pooling_param().global_pooling());
  EXPECT_EQ(layer_named(net, "softmax3").bottom(0), "conv2");
  EXPECT_EQ(model.output, "softmax3");
  EXPECT_TRUE(model.heads.empty());  // so no train/test net
}

TEST(DarknetCfg, WhatIsNotConvertedIsNamedWithItsLine) {
  const std::string net = "[net]\nheight=8\nwidth=8\nchannels=3\n";
  const auto error = [&](const std::string& layers) {
    return error_of([&] { convert_darknet_cfg(net + layers, "bad.cfg"); });
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[reorg]\nstride=2\n", "'bad.cfg' line 5: section [reorg] is not converted"},
      {"[convolutional]\nfilters=4\nsize\n", "'bad.cfg' line 7: 'size' is not key=value"},
      {"[convolutional]\nfilters=4\ndilation=2\n",
       "'bad.cfg' line 7, [convolutional] (layer 0) key 'dilation': 'dilation=2' is not converted"},
      {"[convolutional]\nfilters=4\nactivation=mish\n",
       "line 7, [convolutional] (layer 0) key 'activation': activation 'mish' is not converted"},
      {"[convolutional]\nfilters=four\n",
       "line 6, [convolutional] (layer 0) key 'filters': "
       "'four' is not an integer"},
      {"[route]\nlayers=-1\n",
       "line 6, [route] (layer 0) key 'layers': layer -1 (-1) is not an "
       "earlier layer"},
      {"[convolutional]\nfilters=4\n[convolutional]\nfilters=5\n[shortcut]\nfrom=-2\n",
       "key 'from': layer -2 (layer 0) is 4x8x8 and the previous layer 5x8x8"},
      {"[convolutional]\nfilters=200\n[yolo]\nmask=0,1\nnum=2\nanchors=1,2,3,4\nclasses=80\n",
       "the layer before it gives 200 channels; 2 anchors (mask) x (5 + 80 classes) = 170 are "
       "needed"},
      {"[upsample]\nstride=-2\n", "stride=-2 (Darknet's downsampling when negative)"},
      {"[maxpool]\nsize=2\nstride=2\npadding=9\n", "keeps windows no Caffe pooling"},
      {"[avgpool]\n[softmax]\ngroups=2\n", "groups and temperature other than 1"},
  };
  for (const auto& [layers, words] : cases) {
    EXPECT_NE(error(layers).find(words), std::string::npos) << layers << " -> " << error(layers);
  }
  EXPECT_NE(error_of([] {
              convert_darknet_cfg("[convolutional]\nfilters=3\n", "a.cfg");
            }).find("'a.cfg' line 1: [convolutional] before [net]"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              convert_darknet_cfg("[net]\nheight=8\nwidth=8\n", "a.cfg");
            }).find("channels, height and width must be given"),
            std::string::npos);
  EXPECT_NE(error_of([] { import_darknet("/nonexistent/x.cfg", ""); }).find("cannot open"),
            std::string::npos);
}

TEST(DarknetCfg, ImportCommandWritesTheNetsAndNamesTheLineOfAnError) {
  testing::TempDir dir("darknet_import");
  const std::string xtrain = testing::tool_path("xtrain");
  const testing::ToolResult ok = testing::run_tool(
      xtrain + " import --darknet_cfg=" + model_cfg("yolov3_tiny/yolov3-tiny.cfg") +
          " --output_model=deploy.prototxt --output_train_net=train_test.prototxt"
          " --train_source=train_lmdb --train_batch_size=4",
      dir.path());
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("Wrote 'deploy.prototxt' (57 layers)"), std::string::npos) << ok.output;
  EXPECT_NE(ok.output.find("Note: [yolo] random=1"), std::string::npos) << ok.output;
  const std::string bad = dir.write("bad.cfg",
                                    "[net]\nheight=8\nwidth=8\nchannels=3\n"
                                    "[convolutional]\nactivation=swish\n");
  const testing::ToolResult failed = testing::run_tool(
      xtrain + " import --darknet_cfg=" + bad + " --output_model=x.prototxt", dir.path());
  EXPECT_NE(failed.exit_code, 0);
  EXPECT_NE(failed.output.find("bad.cfg' line 6, [convolutional] (layer 0) key 'activation'"),
            std::string::npos)
      << failed.output;
}

}  // namespace
}  // namespace xtrain
