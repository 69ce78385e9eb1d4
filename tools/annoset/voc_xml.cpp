// Pascal VOC XML annotations, read with tinyxml2.
#include <tinyxml2.h>

#include <cstdlib>
#include <string>

#include "annotation_files.hpp"
#include "xtrain/error.hpp"

namespace xtrain::annoset {
namespace {

std::string at(const std::string& path, const tinyxml2::XMLElement* element) {
  return path + ":" + std::to_string(element->GetLineNum());
}

// The text of <parent><name>: required ones throw naming the parent's line.
const char* child_text(const std::string& path, const tinyxml2::XMLElement* parent,
                       const char* name, bool required) {
  const tinyxml2::XMLElement* child = parent->FirstChildElement(name);
  const char* text = child != nullptr ? child->GetText() : nullptr;
  XTRAIN_CHECK(text != nullptr || !required, at(path, parent), ": <", parent->Name(), "> has no <",
               name, ">; add <", name, ">...</", name, "> inside it");
  return text;
}

float coordinate(const std::string& path, const tinyxml2::XMLElement* box, const char* name) {
  const char* text = child_text(path, box, name, true);
  char* end = nullptr;
  const float value = std::strtof(text, &end);
  XTRAIN_CHECK(end != text && *end == '\0', at(path, box->FirstChildElement(name)), ": <", name,
               "> is \"", text, "\"; it must be a number (pixels)");
  return value;
}

int size_field(const std::string& path, const tinyxml2::XMLElement* size, const char* name) {
  const char* text = child_text(path, size, name, false);
  if (text == nullptr) return 0;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  XTRAIN_CHECK(end != text && *end == '\0' && value >= 0, at(path, size->FirstChildElement(name)),
               ": <", name, "> is \"", text, "\"; it must be a whole number of pixels");
  return static_cast<int>(value);
}

}  // namespace

ImageObjects read_voc_xml(const std::string& path) {
  tinyxml2::XMLDocument document;
  const tinyxml2::XMLError status = document.LoadFile(path.c_str());
  XTRAIN_CHECK(status != tinyxml2::XML_ERROR_FILE_NOT_FOUND &&
                   status != tinyxml2::XML_ERROR_FILE_COULD_NOT_BE_OPENED,
               "cannot open the annotation file '", path, "'");
  XTRAIN_CHECK(status == tinyxml2::XML_SUCCESS, path, ":", document.ErrorLineNum(),
               ": not well-formed XML (", document.ErrorName(), "); fix the file");
  const tinyxml2::XMLElement* root = document.RootElement();
  XTRAIN_CHECK(root != nullptr && std::string(root->Name()) == "annotation", path,
               ": the root element is <", root != nullptr ? root->Name() : "",
               ">, not <annotation>; is this a Pascal VOC annotation?");
  ImageObjects image;
  if (const tinyxml2::XMLElement* size = root->FirstChildElement("size")) {
    image.width = size_field(path, size, "width");
    image.height = size_field(path, size, "height");
  }
  for (const tinyxml2::XMLElement* object = root->FirstChildElement("object"); object != nullptr;
       object = object->NextSiblingElement("object")) {
    ObjectBox box;
    box.where = at(path, object);
    box.name = child_text(path, object, "name", true);
    const char* difficult = child_text(path, object, "difficult", false);
    box.difficult = difficult != nullptr && std::string(difficult) == "1";
    const tinyxml2::XMLElement* bndbox = object->FirstChildElement("bndbox");
    XTRAIN_CHECK(bndbox != nullptr, box.where,
                 ": <object> has no <bndbox>; add <bndbox><xmin/><ymin/><xmax/><ymax/></bndbox>");
    box.where = at(path, bndbox);
    box.xmin = coordinate(path, bndbox, "xmin");
    box.ymin = coordinate(path, bndbox, "ymin");
    box.xmax = coordinate(path, bndbox, "xmax");
    box.ymax = coordinate(path, bndbox, "ymax");
    image.objects.push_back(box);
  }
  return image;
}

}  // namespace xtrain::annoset
