// Label maps, and annotation files' objects made into SSD's AnnotatedDatum.
#include <cmath>
#include <set>

#include "annotation_files.hpp"
#include "xtrain/error.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain::annoset {

LabelLookup LabelLookup::from_file(const std::string& path, bool check_unique) {
  LabelLookup lookup;
  lookup.source_ = "the label map '" + path + "'";
  read_proto_from_text_file(path, &lookup.map_);
  XTRAIN_CHECK(lookup.map_.item_size() > 0, lookup.source_,
               " has no item; write item { name: \"cat\" label: 1 } per class");
  std::set<int> labels;
  for (int i = 0; i < lookup.map_.item_size(); ++i) {
    const LabelMapItem& item = lookup.map_.item(i);
    XTRAIN_CHECK(item.has_name() && item.has_label(), lookup.source_, ": item ", i + 1,
                 " needs both name and label");
    const bool new_name = lookup.labels_.emplace(item.name(), item.label()).second;
    const bool new_label = labels.insert(item.label()).second;
    XTRAIN_CHECK(!check_unique || new_name, lookup.source_, ": the name \"", item.name(),
                 "\" is given twice (item ", i + 1, "); give every class one item");
    XTRAIN_CHECK(!check_unique || new_label, lookup.source_, ": label ", item.label(),
                 " is given twice (item ", i + 1, ", \"", item.name(),
                 "\"); give every class its own label");
  }
  return lookup;
}

LabelLookup LabelLookup::from_names(const std::vector<std::string>& names) {
  LabelLookup lookup;
  lookup.source_ = "the class names";
  auto add = [&](const std::string& name, int label) {
    LabelMapItem* item = lookup.map_.add_item();
    item->set_name(name);
    item->set_label(label);
    item->set_display_name(name);
    lookup.labels_.emplace(name, label);
  };
  add("background", 0);
  for (std::size_t i = 0; i < names.size(); ++i) add(names[i], static_cast<int>(i) + 1);
  return lookup;
}

int LabelLookup::label_of(const std::string& name, const std::string& id,
                          const std::string& where) const {
  auto found = labels_.find(name);
  if (found == labels_.end() && !id.empty()) found = labels_.find(id);
  XTRAIN_CHECK(found != labels_.end(), where, ": the class \"", name, "\"",
               id.empty() ? std::string() : " (id " + id + ")", " is not in ", source_,
               "; add an item { name: \"", name, "\" label: N } or fix the name");
  return found->second;
}

void add_objects(const ImageObjects& objects, int width, int height, const LabelLookup& labels,
                 AnnotatedDatum* record) {
  record->set_type(AnnotatedDatum::BBOX);
  const float x_scale = objects.normalized ? 1.0f : 1.0f / static_cast<float>(width);
  const float y_scale = objects.normalized ? 1.0f : 1.0f / static_cast<float>(height);
  for (const ObjectBox& object : objects.objects) {
    XTRAIN_CHECK(std::isfinite(object.xmin) && std::isfinite(object.ymin) &&
                     std::isfinite(object.xmax) && std::isfinite(object.ymax),
                 object.where, ": a coordinate of the box is not a finite number");
    XTRAIN_CHECK(object.xmin <= object.xmax && object.ymin <= object.ymax, object.where,
                 ": the box (", object.xmin, ", ", object.ymin, ") - (", object.xmax, ", ",
                 object.ymax, ") has xmin > xmax or ymin > ymax; swap the corners");
    const int label = labels.label_of(object.name, object.id, object.where);
    AnnotationGroup* group = nullptr;
    for (AnnotationGroup& existing : *record->mutable_annotation_group()) {
      if (existing.group_label() == label) group = &existing;
    }
    if (group == nullptr) {
      group = record->add_annotation_group();
      group->set_group_label(label);
    }
    Annotation* annotation = group->add_annotation();
    annotation->set_instance_id(group->annotation_size() - 1);
    NormalizedBBox* box = annotation->mutable_bbox();
    box->set_xmin(object.xmin * x_scale);
    box->set_ymin(object.ymin * y_scale);
    box->set_xmax(object.xmax * x_scale);
    box->set_ymax(object.ymax * y_scale);
    box->set_difficult(object.difficult);
  }
}

}  // namespace xtrain::annoset
