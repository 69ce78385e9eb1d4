// COCO instances files (instances_train2017.json and the like), read with
// nlohmann-json.
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "annotation_files.hpp"
#include "xtrain/error.hpp"

namespace xtrain::annoset {
namespace {

using nlohmann::json;

// The member `key` of `object` (named `where`) with the type `is` checks.
template <typename Check>
const json& member(const json& object, const char* key, const std::string& where, Check is,
                   const char* kind) {
  XTRAIN_CHECK(object.is_object(), where, " is not a JSON object; COCO writes {...} there");
  const auto found = object.find(key);
  XTRAIN_CHECK(found != object.end(), where, " has no \"", key, "\"; COCO needs it (", kind, ")");
  XTRAIN_CHECK(is(*found), where, ".", key, " is ", found->dump(), "; it must be ", kind);
  return *found;
}

const json& array_member(const json& object, const char* key, const std::string& where) {
  return member(
      object, key, where, [](const json& v) { return v.is_array(); }, "an array");
}

long long integer_member(const json& object, const char* key, const std::string& where) {
  return member(
             object, key, where, [](const json& v) { return v.is_number_integer(); },
             "a whole number")
      .get<long long>();
}

}  // namespace

CocoDataset read_coco_json(const std::string& path) {
  std::ifstream file(path);
  XTRAIN_CHECK(file.good(), "cannot open the COCO file '", path, "'");
  json root;
  try {
    root = json::parse(file);
  } catch (const json::parse_error& error) {
    throw Error(path + ": not valid JSON (byte " + std::to_string(error.byte) + ": " +
                error.what() + "); fix the file");
  }
  const std::string top = path + ": the file";
  CocoDataset dataset;
  std::map<long long, std::string> categories;
  const json& category_list = array_member(root, "categories", top);
  for (std::size_t i = 0; i < category_list.size(); ++i) {
    const std::string where = path + ": categories[" + std::to_string(i) + "]";
    const long long id = integer_member(category_list[i], "id", where);
    categories[id] = member(
                         category_list[i], "name", where,
                         [](const json& v) { return v.is_string(); }, "a string")
                         .get<std::string>();
  }
  for (const auto& [id, name] : categories) dataset.category_names.push_back(name);

  std::map<long long, std::size_t> image_index;
  const json& images = array_member(root, "images", top);
  for (std::size_t i = 0; i < images.size(); ++i) {
    const std::string where = path + ": images[" + std::to_string(i) + "]";
    CocoImage image;
    image.file_name =
        member(
            images[i], "file_name", where, [](const json& v) { return v.is_string(); }, "a string")
            .get<std::string>();
    image.objects.width = static_cast<int>(integer_member(images[i], "width", where));
    image.objects.height = static_cast<int>(integer_member(images[i], "height", where));
    const long long id = integer_member(images[i], "id", where);
    XTRAIN_CHECK(image_index.emplace(id, dataset.images.size()).second, where, ".id ", id,
                 " is used by an earlier image too; give every image its own id");
    dataset.images.push_back(std::move(image));
  }

  const json& annotations = array_member(root, "annotations", top);
  for (std::size_t i = 0; i < annotations.size(); ++i) {
    const std::string where = path + ": annotations[" + std::to_string(i) + "]";
    const json& annotation = annotations[i];
    const long long image_id = integer_member(annotation, "image_id", where);
    const auto image = image_index.find(image_id);
    XTRAIN_CHECK(image != image_index.end(), where, ".image_id ", image_id,
                 " names no image of \"images\"; fix the id or add the image");
    const long long category_id = integer_member(annotation, "category_id", where);
    const auto category = categories.find(category_id);
    XTRAIN_CHECK(category != categories.end(), where, ".category_id ", category_id,
                 " names no entry of \"categories\"; fix the id or add the category");
    const json& bbox = member(
        annotation, "bbox", where,
        [](const json& v) {
          if (!v.is_array() || v.size() != 4) return false;
          for (const json& x : v) {
            if (!x.is_number()) return false;
          }
          return true;
        },
        "[x, y, width, height], four numbers in pixels");
    ObjectBox box;
    box.where = where + ".bbox";
    box.name = category->second;
    box.id = std::to_string(category_id);
    box.xmin = bbox[0].get<float>();
    box.ymin = bbox[1].get<float>();
    box.xmax = box.xmin + bbox[2].get<float>();
    box.ymax = box.ymin + bbox[3].get<float>();
    const auto crowd = annotation.find("iscrowd");
    box.difficult = crowd != annotation.end() && crowd->is_number() && crowd->get<int>() != 0;
    dataset.images[image->second].objects.objects.push_back(box);
  }
  return dataset;
}

}  // namespace xtrain::annoset
