// convert_annoset, run as a user would: PNG images with Pascal VOC XML, YOLO
// text and COCO JSON annotations written here; the LMDB's AnnotatedDatum
// records are read back and their boxes checked by hand, and malformed
// annotations are reported with the file, the line or element, and what to
// change.
#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "tool_runner.hpp"
#include "xtrain/lmdb_database.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

using testing::run_tool;
using testing::TempDir;
using testing::tool_path;
using testing::ToolResult;

struct StoredAnnotated {
  std::string key;
  AnnotatedDatum record;
};

std::vector<StoredAnnotated> read_annotated(const std::string& db) {
  std::vector<StoredAnnotated> records;
  auto database = LmdbDatabase::open_for_reading(db);
  for (LmdbCursor cursor(database); cursor.valid(); cursor.next()) {
    StoredAnnotated stored;
    stored.key = std::string(cursor.key());
    EXPECT_TRUE(stored.record.ParseFromArray(cursor.value().data(),
                                             static_cast<int>(cursor.value().size())));
    records.push_back(std::move(stored));
  }
  return records;
}

class ConvertAnnoset : public ::testing::Test {
 protected:
  void SetUp() override {
    // Two images: 40 x 20 (width x height) and 10 x 10.
    cv::imwrite(dir_.file("a.png"), cv::Mat(20, 40, CV_8UC3, cv::Scalar(10, 20, 30)));
    cv::imwrite(dir_.file("b.png"), cv::Mat(10, 10, CV_8UC3, cv::Scalar(50, 60, 70)));
    dir_.write("labels.prototxt",
               "item { name: 'background' label: 0 } item { name: 'cat' label: 1 } "
               "item { name: 'dog' label: 2 }");
  }
  ToolResult convert(const std::string& flags, const std::string& list, const std::string& db) {
    return run_tool("'" + tool_path("convert_annoset") + "' " + flags + " '" + dir_.path() +
                    "/' '" + list + "' '" + dir_.file(db) + "'");
  }
  static void expect_box(const Annotation& annotation, float xmin, float ymin, float xmax,
                         float ymax) {
    EXPECT_FLOAT_EQ(annotation.bbox().xmin(), xmin);
    EXPECT_FLOAT_EQ(annotation.bbox().ymin(), ymin);
    EXPECT_FLOAT_EQ(annotation.bbox().xmax(), xmax);
    EXPECT_FLOAT_EQ(annotation.bbox().ymax(), ymax);
  }
  std::string voc(const std::string& objects) {
    return "<annotation><size><width>40</width><height>20</height><depth>3</depth></size>\n" +
           objects + "</annotation>\n";
  }
  TempDir dir_{"annoset"};
};

TEST_F(ConvertAnnoset, VocXmlBoxesAreNormalizedAndGroupedByLabel) {
  dir_.write("a.xml", voc("<object><name>dog</name><difficult>1</difficult><bndbox><xmin>4"
                          "</xmin><ymin>2</ymin><xmax>20</xmax><ymax>10</ymax></bndbox></object>\n"
                          "<object><name>cat</name><bndbox><xmin>0</xmin><ymin>0</ymin><xmax>40"
                          "</xmax><ymax>20</ymax></bndbox></object>\n"
                          "<object><name>dog</name><bndbox><xmin>30</xmin><ymin>5</ymin><xmax>"
                          "35</xmax><ymax>15</ymax></bndbox></object>\n"));
  dir_.write("b.xml",
             "<annotation><size><width>10</width><height>10</height></size>"
             "</annotation>");
  const std::string list = dir_.write("list.txt", "a.png a.xml\nb.png b.xml\n");
  const ToolResult result =
      convert("--label_map_file=" + dir_.file("labels.prototxt") + " --encoded", list, "db");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(testing::last_line(result.output), "convert_annoset: wrote 2 records; skipped 0");
  const std::vector<StoredAnnotated> records = read_annotated(dir_.file("db"));
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].key, "00000000_a.png");
  const AnnotatedDatum& a = records[0].record;
  EXPECT_EQ(a.type(), AnnotatedDatum::BBOX);
  EXPECT_TRUE(a.datum().encoded());
  ASSERT_EQ(a.annotation_group_size(), 2);
  EXPECT_EQ(a.annotation_group(0).group_label(), 2);  // dog first, as it comes first
  ASSERT_EQ(a.annotation_group(0).annotation_size(), 2);
  expect_box(a.annotation_group(0).annotation(0), 0.1f, 0.1f, 0.5f, 0.5f);
  EXPECT_TRUE(a.annotation_group(0).annotation(0).bbox().difficult());
  EXPECT_EQ(a.annotation_group(0).annotation(1).instance_id(), 1);
  expect_box(a.annotation_group(0).annotation(1), 0.75f, 0.25f, 0.875f, 0.75f);
  EXPECT_EQ(a.annotation_group(1).group_label(), 1);
  expect_box(a.annotation_group(1).annotation(0), 0, 0, 1, 1);
  EXPECT_EQ(records[1].record.annotation_group_size(), 0);
  EXPECT_EQ(records[1].record.type(), AnnotatedDatum::BBOX);
}

TEST_F(ConvertAnnoset, YoloTextBesideTheImageWithNamesGivesLabelsFromOne) {
  dir_.write("a.txt", "1 0.5 0.5 0.5 0.4\n0 0.25 0.25 0.1 0.1\n");
  dir_.write("b.txt", "");
  dir_.write("classes.names", "cat\ndog\n");
  const std::string list = dir_.write("list.txt", "a.png\nb.png\n");
  const ToolResult result = convert("--label_type=yolo --yolo_names=" + dir_.file("classes.names") +
                                        " --write_label_map=" + dir_.file("written.prototxt") +
                                        " --resize_width=8 --resize_height=6",
                                    list, "db");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::vector<StoredAnnotated> records = read_annotated(dir_.file("db"));
  ASSERT_EQ(records.size(), 2u);
  const AnnotatedDatum& a = records[0].record;
  EXPECT_EQ(a.datum().height(), 6);
  EXPECT_EQ(a.datum().width(), 8);
  ASSERT_EQ(a.annotation_group_size(), 2);
  EXPECT_EQ(a.annotation_group(0).group_label(), 2);  // class 1, "dog"
  expect_box(a.annotation_group(0).annotation(0), 0.25f, 0.3f, 0.75f, 0.7f);
  EXPECT_EQ(a.annotation_group(1).group_label(), 1);
  expect_box(a.annotation_group(1).annotation(0), 0.2f, 0.2f, 0.3f, 0.3f);
  LabelMap written;
  read_proto_from_text_file(dir_.file("written.prototxt"), &written);
  ASSERT_EQ(written.item_size(), 3);
  EXPECT_EQ(written.item(0).name(), "background");
  EXPECT_EQ(written.item(2).name(), "dog");
  EXPECT_EQ(written.item(2).label(), 2);
}

TEST_F(ConvertAnnoset, CocoJsonListsTheImagesAndItsCategories) {
  const std::string json =
      dir_.write("instances.json",
                 R"({"images": [{"id": 7, "file_name": "a.png", "width": 40, "height": 20},
                     {"id": 9, "file_name": "b.png", "width": 10, "height": 10}],
          "categories": [{"id": 18, "name": "dog"}, {"id": 17, "name": "cat"}],
          "annotations": [{"image_id": 9, "category_id": 17, "bbox": [1, 2, 3, 4], "iscrowd": 0},
                          {"image_id": 7, "category_id": 18, "bbox": [10, 5, 20, 10], "iscrowd": 1}]})");
  const ToolResult result = convert("--label_type=coco --min_dim=20", json, "db");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::vector<StoredAnnotated> records = read_annotated(dir_.file("db"));
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1].key, "00000001_b.png");
  // --min_dim=20: b.png's short side 10 -> 20 (a.png's is 20 already).
  EXPECT_EQ(records[0].record.datum().width(), 40);
  EXPECT_EQ(records[1].record.datum().width(), 20);
  const AnnotatedDatum& a = records[0].record;
  ASSERT_EQ(a.annotation_group_size(), 1);
  EXPECT_EQ(a.annotation_group(0).group_label(), 2);  // ids in order: cat 17 -> 1, dog 18 -> 2
  expect_box(a.annotation_group(0).annotation(0), 0.25f, 0.25f, 0.75f, 0.75f);
  EXPECT_TRUE(a.annotation_group(0).annotation(0).bbox().difficult());  // iscrowd
  const AnnotatedDatum& b = records[1].record;
  EXPECT_EQ(b.annotation_group(0).group_label(), 1);
  expect_box(b.annotation_group(0).annotation(0), 0.1f, 0.2f, 0.4f, 0.6f);

  // SSD's labelmap_coco names the classes by category id.
  dir_.write("by_id.prototxt", "item { name: '17' label: 5 } item { name: '18' label: 6 }");
  ASSERT_EQ(
      convert("--label_type=coco --label_map_file=" + dir_.file("by_id.prototxt"), json, "by_id_db")
          .exit_code,
      0);
  const std::vector<StoredAnnotated> by_id = read_annotated(dir_.file("by_id_db"));
  EXPECT_EQ(by_id[0].record.annotation_group(0).group_label(), 6);
  EXPECT_EQ(by_id[1].record.annotation_group(0).group_label(), 5);
}

TEST_F(ConvertAnnoset, MalformedAnnotationsNameTheFileTheLineAndTheFix) {
  // Each bad file's image is skipped with a warning naming the list line,
  // the file and line, and what to change; the good one is converted.
  struct Case {
    std::string contents, expected;
  };
  const std::string listed = "'" + dir_.file("list.txt") + "' line ";
  const std::vector<Case> xml_cases = {
      {voc("<object><name>dog</name>\n<bndbox><xmin>4</xmin><ymin>x</ymin><xmax>20"
           "</xmax><ymax>10</ymax></bndbox></object>"),
       listed + "1: " + dir_.file("bad0.xml") +
           ":3: <ymin> is \"x\"; it must be a number (pixels)"},
      {voc("<object><name>horse</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>2"
           "</xmax><ymax>2</ymax></bndbox></object>"),
       listed + "2: " + dir_.file("bad1.xml") +
           ":2: the class \"horse\" is not in the "
           "label map '" +
           dir_.file("labels.prototxt") + "'; add an item { name: \"horse\" label: N }"},
      {voc("\n<object><bndbox/></object>"), listed + "3: " + dir_.file("bad2.xml") +
                                                ":3: <object> has no <name>; add "
                                                "<name>...</name> inside it"},
      {voc("<object><name>cat</name>\n<bndbox><xmin>30</xmin><ymin>1</ymin><xmax>2"
           "</xmax><ymax>2</ymax></bndbox></object>"),
       listed + "4: " + dir_.file("bad3.xml") +
           ":3: the box (30, 1) - (2, 2) has xmin > xmax or ymin > ymax; swap the corners"},
      {"<annotation><object></annotation>",
       listed + "5: " + dir_.file("bad4.xml") + ":1: not well-formed XML"},
  };
  std::string list;
  for (std::size_t i = 0; i < xml_cases.size(); ++i) {
    dir_.write("bad" + std::to_string(i) + ".xml", xml_cases[i].contents);
    list += "a.png bad" + std::to_string(i) + ".xml\n";
  }
  dir_.write("good.xml", voc(""));
  ToolResult result = convert("--label_map_file=" + dir_.file("labels.prototxt"),
                              dir_.write("list.txt", list + "a.png good.xml\n"), "xml_db");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  for (const Case& c : xml_cases) EXPECT_CONTAINS(result.output, c.expected);
  EXPECT_EQ(testing::last_line(result.output), "convert_annoset: wrote 1 records; skipped 5");

  const std::vector<Case> yolo_cases = {
      {"0 0.5 0.5 0.2 0.2\n3 0.5 0.5 0.1 0.1\n",
       "bad0.txt:2: class 3 is not in the names file, which has 2 classes (0 to 1)"},
      {"0 0.5 0.5 0.2\n", "bad1.txt:1: \"0 0.5 0.5 0.2\" is not \"class cx cy w h\""},
      {"0 20 10 4 4\n", "bad2.txt:1: \"0 20 10 4 4\" does not look normalized"},
  };
  list.clear();
  for (std::size_t i = 0; i < yolo_cases.size(); ++i) {
    dir_.write("bad" + std::to_string(i) + ".txt", yolo_cases[i].contents);
    list += "a.png bad" + std::to_string(i) + ".txt\n";
  }
  dir_.write("names", "cat\ndog\n");
  result = convert("--label_type=yolo --yolo_names=" + dir_.file("names"),
                   dir_.write("list.txt", list), "yolo_db");
  EXPECT_EQ(testing::last_line(result.output),
            "convert_annoset: error: no image could be converted (3 skipped); see the warnings "
            "above");
  for (const Case& c : yolo_cases) EXPECT_CONTAINS(result.output, c.expected);

  // --strict: the first bad image ends the run, on one error line.
  result = convert("--strict --label_map_file=" + dir_.file("labels.prototxt"),
                   dir_.write("list.txt", "a.png good.xml\na.png bad3.xml\n"), "strict_db");
  const std::string line = testing::expect_one_line_error(result, "convert_annoset");
  EXPECT_CONTAINS(line, listed + "2: " + dir_.file("bad3.xml") + ":3: the box (30, 1)");
  EXPECT_CONTAINS(line, "(stopped by --strict)");
}

TEST_F(ConvertAnnoset, MalformedCocoNamesTheElement) {
  const std::string json =
      dir_.write("instances.json",
                 R"({"images": [{"id": 1, "file_name": "a.png", "width": 40, "height": 20}],
          "categories": [{"id": 1, "name": "cat"}],
          "annotations": [{"image_id": 1, "category_id": 1, "bbox": [1, 2, 3]}]})");
  const std::string line = testing::expect_one_line_error(
      convert("--label_type=coco --strict", json, "db"), "convert_annoset");
  EXPECT_NE(line.find("instances.json: annotations[0].bbox is [1,2,3]; it must be [x, y, width, "
                      "height]"),
            std::string::npos)
      << line;
}

}  // namespace
}  // namespace xtrain
