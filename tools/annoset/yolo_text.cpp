// YOLO (Darknet) label files: "class cx cy w h" per line, fractions of the
// image, and the names file that says what each class index is.
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "annotation_files.hpp"
#include "xtrain/error.hpp"

namespace xtrain::annoset {

std::vector<std::string> read_class_names(const std::string& path) {
  std::ifstream file(path);
  XTRAIN_CHECK(file.good(), "cannot open the names file '", path, "'");
  std::vector<std::string> names;
  std::string line;
  while (std::getline(file, line)) {
    const std::size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    const std::size_t last = line.find_last_not_of(" \t\r");
    names.push_back(line.substr(first, last - first + 1));
  }
  XTRAIN_CHECK(!names.empty(), "the names file '", path,
               "' names no class; write one class name per line (line k: class k - 1)");
  return names;
}

ImageObjects read_yolo_text(const std::string& path, const std::vector<std::string>& names) {
  std::ifstream file(path);
  XTRAIN_CHECK(file.good(), "cannot open the YOLO label file '", path,
               "' (the image's path with the extension .txt); write one, empty if the image "
               "has no object");
  ImageObjects image;
  image.normalized = true;
  std::string line;
  for (int number = 1; std::getline(file, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(number);
    std::istringstream fields(line);
    long long index = -1;
    float cx = 0, cy = 0, w = 0, h = 0;
    std::string extra;
    XTRAIN_CHECK(fields >> index >> cx >> cy >> w >> h && !(fields >> extra), where, ": \"", line,
                 "\" is not \"class cx cy w h\" (a class index, then the box's centre and "
                 "size as fractions of the image)");
    XTRAIN_CHECK(index >= 0 && index < static_cast<long long>(names.size()), where, ": class ",
                 index, " is not in the names file, which has ", names.size(), " classes (0 to ",
                 names.size() - 1, ")");
    XTRAIN_CHECK(std::isfinite(cx) && std::isfinite(cy) && w >= 0 && h >= 0 && w <= 1.5f &&
                     h <= 1.5f && std::fabs(cx) <= 1.5f && std::fabs(cy) <= 1.5f,
                 where, ": \"", line,
                 "\" does not look normalized: YOLO boxes are fractions of the image (0 to 1), "
                 "w and h not negative; divide pixel values by the image's width and height");
    ObjectBox box;
    box.where = where;
    box.name = names[static_cast<std::size_t>(index)];
    box.xmin = cx - w / 2;
    box.ymin = cy - h / 2;
    box.xmax = cx + w / 2;
    box.ymax = cy + h / 2;
    image.objects.push_back(box);
  }
  return image;
}

}  // namespace xtrain::annoset
