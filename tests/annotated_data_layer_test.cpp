// The AnnotatedData layer (SSD's): images and label rows from a tiny LMDB of
// AnnotatedDatum records written here, augmentation that is the seed's,
// exact resume, and errors that say what to change.
#include "data/annotated_data_layer.hpp"

#include <gtest/gtest.h>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "error_message.hpp"
#include "tool_runner.hpp"
#include "xtrain/lmdb_database.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

using testing::error_of;
using testing::TempDir;

struct Box {
  int label;
  float xmin, ymin, xmax, ymax;
  bool difficult = false;
};

// Record i: a 1 x 4 x 6 image whose pixel j is 10 i + j, and its boxes, one
// AnnotationGroup per label in order of first appearance.
AnnotatedDatum record(int i, const std::vector<Box>& boxes) {
  AnnotatedDatum annotated;
  annotated.set_type(AnnotatedDatum::BBOX);
  Datum& datum = *annotated.mutable_datum();
  datum.set_channels(1);
  datum.set_height(4);
  datum.set_width(6);
  std::string pixels(24, '\0');
  for (int j = 0; j < 24; ++j) pixels[static_cast<std::size_t>(j)] = static_cast<char>(10 * i + j);
  datum.set_data(pixels);
  for (const Box& box : boxes) {
    AnnotationGroup* group = nullptr;
    for (AnnotationGroup& existing : *annotated.mutable_annotation_group()) {
      if (existing.group_label() == box.label) group = &existing;
    }
    if (group == nullptr) {
      group = annotated.add_annotation_group();
      group->set_group_label(box.label);
    }
    Annotation* annotation = group->add_annotation();
    annotation->set_instance_id(group->annotation_size() - 1);
    NormalizedBBox* b = annotation->mutable_bbox();
    b->set_xmin(box.xmin);
    b->set_ymin(box.ymin);
    b->set_xmax(box.xmax);
    b->set_ymax(box.ymax);
    b->set_difficult(box.difficult);
  }
  return annotated;
}

void write_records(const std::string& path, const std::vector<AnnotatedDatum>& records) {
  LmdbWriter writer(LmdbDatabase::open_for_writing(path));
  for (std::size_t i = 0; i < records.size(); ++i) {
    char key[32];
    std::snprintf(key, sizeof key, "%08zu", i);
    writer.put(key, records[i].SerializeAsString());
  }
  writer.commit();
}

// Three records: two boxes, none, one (difficult).
std::string three_records(const TempDir& dir) {
  const std::string path = dir.file("db");
  write_records(path, {record(0, {{1, 0.1f, 0.2f, 0.5f, 0.6f}, {2, 0.5f, 0.5f, 1.0f, 1.0f}}),
                       record(1, {}), record(2, {{1, 0.0f, 0.25f, 0.5f, 0.75f, true}})});
  return path;
}

LayerParameter layer_param(const std::string& db, int batch_size, const std::string& extra = "") {
  LayerParameter param;
  read_proto_from_text_string(
      "name: 'data' type: 'AnnotatedData' top: 'data' top: 'label' data_param { source: '" + db +
          "' backend: LMDB batch_size: " + std::to_string(batch_size) + " } " + extra,
      &param);
  param.set_phase(TRAIN);
  return param;
}

struct Tops {
  Blob data;
  Blob label;
  BlobVec both() { return {&data, &label}; }
  std::vector<float> labels() const {
    return std::vector<float>(label.cpu_data(), label.cpu_data() + label.count());
  }
  std::vector<float> pixels() const {
    return std::vector<float>(data.cpu_data(), data.cpu_data() + data.count());
  }
};

TEST(AnnotatedDataLayer, BatchesHoldImagesAndOneRowPerBox) {
  TempDir dir("annotated_data");
  auto layer = testing::create_layer(layer_param(three_records(dir), 3));
  Tops tops;
  layer->setup({}, tops.both());
  layer->forward({}, tops.both());
  EXPECT_EQ(tops.data.shape(), (std::vector<int>{3, 1, 4, 6}));
  for (int item = 0; item < 3; ++item) {
    for (int j = 0; j < 24; ++j) ASSERT_EQ(tops.data.cpu_data()[item * 24 + j], 10 * item + j);
  }
  EXPECT_EQ(tops.label.shape(), (std::vector<int>{1, 1, 3, 8}));
  const std::vector<float> expected = {0, 1, 0, 0.1f, 0.2f,  0.5f, 0.6f,  0,  //
                                       0, 2, 0, 0.5f, 0.5f,  1.0f, 1.0f,  0,  //
                                       2, 1, 0, 0.0f, 0.25f, 0.5f, 0.75f, 1};
  EXPECT_EQ(tops.labels(), expected);
}

TEST(AnnotatedDataLayer, ABatchWithoutBoxesGivesOneRowOfMinusOne) {
  TempDir dir("annotated_data");
  const std::string db = dir.file("db");
  write_records(db, {record(0, {{1, 0.1f, 0.2f, 0.5f, 0.6f}}), record(1, {})});
  auto layer = testing::create_layer(layer_param(db, 1));
  Tops tops;
  layer->setup({}, tops.both());
  layer->forward({}, tops.both());
  EXPECT_EQ(tops.label.shape(), (std::vector<int>{1, 1, 1, 8}));
  EXPECT_EQ(tops.labels()[1], 1.0f);
  layer->forward({}, tops.both());
  EXPECT_EQ(tops.label.shape(), (std::vector<int>{1, 1, 1, 8}));
  EXPECT_EQ(tops.labels(), std::vector<float>(8, -1.0f));
}

TEST(AnnotatedDataLayer, MirrorAndWarpMoveTheBoxesWithTheImage) {
  TempDir dir("annotated_data");
  const std::string db = dir.file("db");
  write_records(db, {record(0, {{1, 0.1f, 0.2f, 0.5f, 0.6f}})});
  auto layer = testing::create_layer(layer_param(
      db, 1,
      "transform_param { mirror: true mean_value: 5 scale: 0.5 resize_param { height: 8 width: "
      "12 interp_mode: NEAREST } }"));
  layer->seed(3);
  Tops tops;
  layer->setup({}, tops.both());
  EXPECT_EQ(tops.data.shape(), (std::vector<int>{1, 1, 8, 12}));
  int mirrored = 0;
  for (int k = 0; k < 16; ++k) {
    layer->forward({}, tops.both());
    const std::vector<float> label = tops.labels();
    const bool flipped = label[3] > 0.45f;
    mirrored += flipped;
    const std::vector<float> box = flipped ? std::vector<float>{0.5f, 0.2f, 0.9f, 0.6f}
                                           : std::vector<float>{0.1f, 0.2f, 0.5f, 0.6f};
    for (int v = 0; v < 4; ++v) EXPECT_NEAR(label[3 + v], box[v], 1e-6f);
    // Nearest doubling: output (y, x) is source (y / 2, x / 2), mirrored or not.
    const float* data = tops.data.cpu_data();
    for (int y = 0; y < 8; ++y) {
      for (int x = 0; x < 12; ++x) {
        const int source_x = flipped ? 5 - x / 2 : x / 2;
        ASSERT_EQ(data[y * 12 + x], (6 * (y / 2) + source_x - 5) * 0.5f) << y << ", " << x;
      }
    }
  }
  EXPECT_GT(mirrored, 0);
  EXPECT_LT(mirrored, 16);
}

std::string augmenting(const std::string& db, int batch_size) {
  return "name: 'data' type: 'AnnotatedData' top: 'data' top: 'label' "
         "data_param { source: '" +
         db + "' backend: LMDB decode_threads: 2 batch_size: " + std::to_string(batch_size) +
         " } transform_param { mirror: true resize_param { height: 6 width: 6 } "
         "expand_param { prob: 0.5 max_expand_ratio: 2 } distort_param { brightness_prob: 0.5 "
         "brightness_delta: 20 } emit_constraint { emit_type: CENTER } } "
         "annotated_data_param { batch_sampler { max_sample: 1 } batch_sampler { sampler { "
         "min_scale: 0.3 } sample_constraint { min_jaccard_overlap: 0.1 } max_sample: 1 "
         "max_trials: 20 } }";
}

std::vector<std::vector<float>> run(const std::string& text, std::uint64_t seed, int batches) {
  LayerParameter param;
  read_proto_from_text_string(text, &param);
  param.set_phase(TRAIN);
  auto layer = testing::create_layer(param);
  layer->seed(seed);
  Tops tops;
  layer->setup({}, tops.both());
  std::vector<std::vector<float>> seen;
  for (int k = 0; k < batches; ++k) {
    layer->forward({}, tops.both());
    seen.push_back(tops.pixels());
    seen.push_back(tops.labels());
  }
  return seen;
}

TEST(AnnotatedDataLayer, TheSeedDecidesTheAugmentation) {
  TempDir dir("annotated_data");
  const std::string text = augmenting(three_records(dir), 2);
  const auto first = run(text, 42, 6);
  EXPECT_EQ(run(text, 42, 6), first);
  EXPECT_NE(run(text, 43, 6), first);
}

// Five batches straight, and three then two more in a layer restored from
// the resume state after three: the same pixels and rows.
void expect_exact_resume(const std::string& text) {
  LayerParameter param;
  read_proto_from_text_string(text, &param);
  param.set_phase(TRAIN);
  const auto straight = run(text, 7, 5);

  auto stopped = testing::create_layer(param);
  stopped->seed(7);
  Tops tops;
  stopped->setup({}, tops.both());
  for (int k = 0; k < 3; ++k) stopped->forward({}, tops.both());
  LayerResumeState state;
  stopped->save_resume_state(&state);
  EXPECT_EQ(state.records_consumed(), 6u);

  auto resumed = testing::create_layer(param);
  resumed->seed(1);  // the restored stream must win
  Tops again;
  resumed->setup({}, again.both());
  resumed->restore_resume_state(state);
  for (int k = 3; k < 5; ++k) {
    resumed->forward({}, again.both());
    EXPECT_EQ(again.pixels(), straight[2 * k]) << "batch " << k;
    EXPECT_EQ(again.labels(), straight[2 * k + 1]) << "batch " << k;
  }
}

TEST(AnnotatedDataLayer, ResumesExactly) {
  TempDir dir("annotated_data");
  expect_exact_resume(augmenting(three_records(dir), 2));
}

// Darknet's jitter in place of resize_param (data/jitter_placement.hpp).
std::string jittering(const std::string& db) {
  return "name: 'data' type: 'AnnotatedData' top: 'data' top: 'label' "
         "data_param { source: '" +
         db +
         "' backend: LMDB decode_threads: 2 batch_size: 2 } transform_param { mirror: true "
         "jitter_param { jitter: 0.3 min_scale: 0.5 max_scale: 1.5 height: 6 width: 8 } "
         "emit_constraint { emit_type: CENTER } }";
}

TEST(AnnotatedDataLayer, JitterIsTheSeedsAndResumesExactly) {
  TempDir dir("annotated_data");
  const std::string text = jittering(three_records(dir));
  const auto first = run(text, 42, 6);
  ASSERT_EQ(first[0].size(), 2u * 6 * 8);
  EXPECT_EQ(run(text, 42, 6), first);
  EXPECT_NE(run(text, 43, 6), first);
  for (std::size_t k = 1; k < first.size(); k += 2) {
    for (std::size_t v = 3; v < first[k].size(); v += 8) {
      if (first[k][v - 3] < 0) continue;  // a batch without boxes
      EXPECT_GE(first[k][v], 0.0f);       // clipped to the canvas
      EXPECT_LE(first[k][v + 2], 1.0f);
    }
  }
  expect_exact_resume(text);
}

TEST(AnnotatedDataLayer, ShardsReadTheirSliceOfTheGlobalBatch) {
  TempDir dir("annotated_data");
  const std::string db = three_records(dir);
  // Unsharded batch of 2: records (0, 1), (2, 0), ...; shard 1 of 2 with
  // batch 1 reads records 1, 0, ...: record 1 has no box, record 0 two.
  LayerParameter param = layer_param(db, 1);
  auto layer = testing::create_layer(param);
  layer->set_data_shard(DataShard{1, 2});
  Tops tops;
  layer->setup({}, tops.both());
  layer->forward({}, tops.both());
  EXPECT_EQ(tops.labels(), std::vector<float>(8, -1.0f));
  EXPECT_EQ(tops.data.cpu_data()[0], 10.0f);
  layer->forward({}, tops.both());
  EXPECT_EQ(tops.label.shape(), (std::vector<int>{1, 1, 2, 8}));
  EXPECT_EQ(tops.data.cpu_data()[0], 0.0f);
}

TEST(AnnotatedDataLayer, RecordsWithoutTypeGiveOneLabelPerImage) {
  TempDir dir("annotated_data");
  const std::string db = dir.file("db");
  AnnotatedDatum plain = record(2, {});
  plain.clear_type();
  plain.mutable_datum()->set_label(17);
  write_records(db, {plain});
  auto layer = testing::create_layer(layer_param(db, 2));
  Tops tops;
  layer->setup({}, tops.both());
  layer->forward({}, tops.both());
  EXPECT_EQ(tops.labels(), (std::vector<float>{17, 17}));
}

// On each device: a layer computing on the label rows (Power doubles them)
// sees each batch's rows, however many, where the net runs.
XTRAIN_DEVICE_TEST(AnnotatedDataLayerInANet, NextLayersSeeEveryBatchsRows) {
  TempDir dir("annotated_data");
  const std::string db = three_records(dir);
  NetParameter net;
  read_proto_from_text_string(
      "layer { name: 'data' type: 'AnnotatedData' top: 'data' top: 'label' data_param { source: "
      "'" +
          db +
          "' backend: LMDB batch_size: 2 } include { phase: TRAIN } } "
          "layer { name: 'double' type: 'Power' bottom: 'label' top: 'doubled' "
          "power_param { scale: 2 } } "
          "layer { name: 'quiet' type: 'Silence' bottom: 'data' bottom: 'doubled' }",
      &net);
  net.mutable_state()->set_phase(TRAIN);
  Net built(net, testing::net_options());
  // Records (0, 1), (2, 0), (1, 2): 2 + 0, 1 + 2 and 0 + 1 boxes.
  const std::vector<std::vector<float>> rows = {
      {0, 1, 0, 0.1f, 0.2f, 0.5f, 0.6f, 0, 0, 2, 0, 0.5f, 0.5f, 1, 1, 0},
      {0,    1,    0,    0, 0.25f, 0.5f, 0.75f, 1,    1,    1, 0, 0.1f,
       0.2f, 0.5f, 0.6f, 0, 1,     2,    0,     0.5f, 0.5f, 1, 1, 0},
      {1, 1, 0, 0, 0.25f, 0.5f, 0.75f, 1}};
  for (const std::vector<float>& expected : rows) {
    built.forward();
    const Blob& doubled = *built.blob_by_name("doubled");
    ASSERT_EQ(doubled.count(), expected.size());
    for (std::size_t v = 0; v < expected.size(); ++v) {
      EXPECT_FLOAT_EQ(doubled.cpu_data()[v], 2 * expected[v]) << v;
    }
  }
}

TEST(AnnotatedDataLayer, ErrorsSayWhatToChange) {
  TempDir dir("annotated_data");
  const std::string db = three_records(dir);
  auto setup_error = [&](const std::string& extra) {
    auto layer = testing::create_layer(layer_param(db, 1, extra));
    Tops tops;
    return error_of([&] { layer->setup({}, tops.both()); });
  };
  EXPECT_NE(setup_error("transform_param { crop_size: 2 }").find("batch_sampler"),
            std::string::npos);
  EXPECT_NE(setup_error("annotated_data_param { batch_sampler { } }").find("resize_param"),
            std::string::npos);
  EXPECT_NE(setup_error("transform_param { resize_param { resize_mode: FIT_SMALL_SIZE height: 4 "
                        "width: 4 } }")
                .find("WARP or FIT_LARGE_SIZE_AND_PAD"),
            std::string::npos);
  EXPECT_NE(setup_error("transform_param { resize_param { height: 4 width: 4 } } "
                        "annotated_data_param { batch_sampler { sampler { min_scale: 0 } } }")
                .find("0 < min_scale"),
            std::string::npos);

  const auto jitter_error = [&](const std::string& jitter) {
    return setup_error("transform_param { jitter_param { " + jitter + " } }");
  };
  EXPECT_NE(jitter_error("width: 8").find("needs height and width"), std::string::npos);
  EXPECT_NE(jitter_error("height: 8 width: 8 jitter: 1").find("[0, 1)"), std::string::npos);
  EXPECT_NE(jitter_error("height: 8 width: 8 jitter: -0.1").find("[0, 1)"), std::string::npos);
  EXPECT_NE(jitter_error("height: 8 width: 8 min_scale: 2 max_scale: 1")
                .find("0 < min_scale <= max_scale"),
            std::string::npos);
  EXPECT_NE(jitter_error("height: 8 width: 8 fill_value: 1 fill_value: 2 fill_value: 3")
                .find("one for all channels or one per channel"),
            std::string::npos);
  EXPECT_NE(setup_error("transform_param { resize_param { height: 4 width: 4 } jitter_param { "
                        "height: 4 width: 4 } }")
                .find("both resize_param and jitter_param"),
            std::string::npos);

  // A Datum DB (convert_imageset's) is not an AnnotatedDatum DB.
  const std::string plain = dir.file("plain");
  LmdbWriter writer(LmdbDatabase::open_for_writing(plain));
  writer.put("00000000_a.jpg", std::string("\x08\x01\x10\x02", 4));
  writer.commit();
  auto layer = testing::create_layer(layer_param(plain, 1));
  Tops tops;
  const std::string message = error_of([&] { layer->setup({}, tops.both()); });
  EXPECT_NE(message.find("00000000_a.jpg"), std::string::npos) << message;
  EXPECT_NE(message.find("convert_annoset"), std::string::npos) << message;
}

}  // namespace
}  // namespace xtrain
