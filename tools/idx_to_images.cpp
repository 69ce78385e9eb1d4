// idx_to_images: MNIST-format IDX images and labels -> a folder of image
// files, one subfolder per class, and a list file of "PATH LABEL" lines, the
// layout DIGITS builds and convert_imageset reads:
//
//   OUTPUT_DIR/<class>/<index>.png       (index: 5+ digits, in IDX order)
//   OUTPUT_DIR/list.txt                  "<class>/<index>.png <label>"
//
// <class> is the label's number, or its name from --class_names. The list
// paths are relative to OUTPUT_DIR, so:
//   convert_imageset OUTPUT_DIR/ OUTPUT_DIR/list.txt DB
#include <gflags/gflags.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "flag_help.hpp"
#include "xtrain/error.hpp"
#include "xtrain/idx_file.hpp"
#include "xtrain/image_codec.hpp"

DEFINE_int32(count, 0, "Write only the first COUNT images (0: all)");
DEFINE_string(format, "png", "Image file format: png (lossless), jpg, bmp, ...");
DEFINE_string(class_names, "",
              "Comma-separated folder names for labels 0, 1, ... (empty: the label number)");
DEFINE_string(list_file, "list.txt", "The list file to write, relative to OUTPUT_DIR");

namespace {

constexpr const char* kUsage =
    "Writes MNIST-format IDX images as image files in class folders, with a list file.\n"
    "Usage:\n"
    "    idx_to_images [FLAGS] IMAGES LABELS OUTPUT_DIR\n"
    "IMAGES and LABELS may be gzipped. Then:\n"
    "    convert_imageset OUTPUT_DIR/ OUTPUT_DIR/list.txt DB";

std::vector<std::string> split_names(const std::string& text) {
  std::vector<std::string> names;
  if (text.empty()) return names;
  std::stringstream stream(text);
  std::string name;
  while (std::getline(stream, name, ',')) {
    XTRAIN_CHECK(
        !name.empty() && name.find('/') == std::string::npos && name != "." && name != "..",
        "--class_names: '", name, "' cannot be a folder name (no '/', not empty)");
    names.push_back(name);
  }
  return names;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  XTRAIN_CHECK(file.is_open(), "cannot create '", path, "'");
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  XTRAIN_CHECK(file.good(), "cannot write '", path, "' (disk full?)");
}

void export_images(const std::string& images_path, const std::string& labels_path,
                   const std::string& output_dir) {
  namespace fs = std::filesystem;
  XTRAIN_CHECK(FLAGS_count >= 0, "--count=", FLAGS_count, " must be >= 0 (0: all)");
  XTRAIN_CHECK(xtrain::can_encode_as(FLAGS_format), "--format=", FLAGS_format,
               ": OpenCV cannot write that format; use png, jpg or bmp");
  const std::vector<std::string> class_names = split_names(FLAGS_class_names);
  const fs::path list_path = fs::path(output_dir) / FLAGS_list_file;
  std::error_code error;
  XTRAIN_CHECK(!fs::exists(list_path, error), "'", list_path.string(),
               "' already exists; delete it (or OUTPUT_DIR) first, or choose another OUTPUT_DIR");

  const xtrain::IdxDataset dataset = xtrain::read_idx_dataset(images_path, labels_path);
  std::size_t count = dataset.images.count;
  if (FLAGS_count > 0 && static_cast<std::size_t>(FLAGS_count) < count) count = FLAGS_count;
  XTRAIN_CHECK(count > 0, "'", images_path, "' holds no images; nothing to write");
  const int digits = std::max<int>(5, static_cast<int>(std::to_string(count - 1).size()));

  fs::create_directories(output_dir);
  std::string list;
  xtrain::Image image;
  image.channels = 1;
  image.height = dataset.images.rows;
  image.width = dataset.images.cols;
  const std::size_t pixels = static_cast<std::size_t>(image.height) * image.width;
  for (std::size_t i = 0; i < count; ++i) {
    const int label = dataset.labels[i];
    std::string folder = std::to_string(label);
    if (!class_names.empty()) {
      XTRAIN_CHECK(static_cast<std::size_t>(label) < class_names.size(), "image ", i, " has label ",
                   label, " but --class_names names only ", class_names.size(), " classes");
      folder = class_names[label];
    }
    std::string number = std::to_string(i);
    number.insert(
        0, static_cast<std::size_t>(digits) - std::min<std::size_t>(digits, number.size()), '0');
    const std::string relative = folder + "/" + number + "." + FLAGS_format;
    fs::create_directories(fs::path(output_dir) / folder);
    image.pixels.assign(dataset.images.image(i), dataset.images.image(i) + pixels);
    write_file((fs::path(output_dir) / relative).string(),
               xtrain::encode_image(image, FLAGS_format));
    list += relative + " " + std::to_string(label) + "\n";
  }
  write_file(list_path.string(), list);
  std::printf("idx_to_images: wrote %zu %s images of %dx%d and the list '%s'\n", count,
              FLAGS_format.c_str(), image.height, image.width, list_path.string().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  return xtrain::tools::run_single_file_tool(
      argc, argv, kUsage, __FILE__, 3, 3,
      [](int, char** args) { export_images(args[1], args[2], args[3]); });
}
