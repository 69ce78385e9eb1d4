// convert_annoset's readers of object annotations: Pascal VOC XML (one file
// per image), COCO JSON (one file for a whole data set) and YOLO text (one
// file per image), and the label map that turns class names into the
// numbers a net sees. A reader returns the objects as the file states them;
// make_annotated_datum normalizes them and groups them by label as SSD's
// AnnotatedDatum holds them.
//
// Errors are xtrain::Error naming the file and the line (XML, YOLO) or the
// element (COCO: "annotations[12].bbox"), what is wrong and what to write
// instead. tinyxml2 and nlohmann-json are used here only, not by libxtrain.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "xtrain/proto/xtrain.pb.h"

namespace xtrain::annoset {

// One object as an annotation file gives it.
struct ObjectBox {
  std::string name;  // class name (VOC, COCO) or the YOLO names file's line
  std::string id;    // COCO: the category id, by which SSD's COCO label map names classes
  float xmin = 0, ymin = 0, xmax = 0, ymax = 0;  // pixels, or fractions if `normalized`
  bool difficult = false;
  std::string where;  // "file:line" or "file: annotations[3]", for errors
};

struct ImageObjects {
  int width = 0;  // the image size the file states (0: not stated)
  int height = 0;
  bool normalized = false;  // YOLO: coordinates are fractions of the image
  std::vector<ObjectBox> objects;
};

// Pascal VOC: <annotation><size><width/><height/></size><object><name/>
// <difficult/><bndbox><xmin/><ymin/><xmax/><ymax/></bndbox></object>...
ImageObjects read_voc_xml(const std::string& path);

// YOLO: one "class cx cy w h" line per object, class an index into `names`
// and the box's centre and size as fractions of the image.
ImageObjects read_yolo_text(const std::string& path, const std::vector<std::string>& names);

// A names file (YOLO's .names, one class per line, blank lines ignored).
std::vector<std::string> read_class_names(const std::string& path);

// A COCO instances file: its images, in the file's order, with their objects
// (bbox [x, y, width, height] in pixels; iscrowd regions count as difficult;
// named by category name, and by category id for SSD's labelmap_coco, whose
// names are the ids), and its category names in id order.
struct CocoImage {
  std::string file_name;
  ImageObjects objects;
};
struct CocoDataset {
  std::vector<CocoImage> images;
  std::vector<std::string> category_names;
};
CocoDataset read_coco_json(const std::string& path);

// Class name -> label, from a LabelMap prototxt (SSD's label map files).
class LabelLookup {
 public:
  // Throws, naming the file and the entry, for an item without name or
  // label, and, with `check_unique`, for a name or label given twice.
  static LabelLookup from_file(const std::string& path, bool check_unique);
  // Label 0 "background", then the names in order as 1, 2, ...
  static LabelLookup from_names(const std::vector<std::string>& names);

  // The label of `name`, else of `id` (when not empty); throws naming
  // `where` when the map has neither.
  int label_of(const std::string& name, const std::string& id, const std::string& where) const;
  const LabelMap& map() const { return map_; }

 private:
  LabelMap map_;
  std::map<std::string, int> labels_;
  std::string source_;
};

// The objects of an image of width x height pixels (the file's stated size
// when it has one) as SSD's AnnotatedDatum groups: type BBOX, one group per
// label in order of first appearance, instance ids 0, 1, ... within a group,
// boxes divided by the image's size. Throws naming the object for a box
// with xmin > xmax or ymin > ymax, or a coordinate that is not a number.
void add_objects(const ImageObjects& objects, int width, int height, const LabelLookup& labels,
                 AnnotatedDatum* record);

}  // namespace xtrain::annoset
