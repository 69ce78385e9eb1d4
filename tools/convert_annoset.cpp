// convert_annoset: images and their object boxes -> an LMDB of SSD's
// AnnotatedDatum records (what the AnnotatedData layer reads), as the tool
// of the same name in Wei Liu's SSD fork of Caffe writes them.
//
//   convert_annoset [FLAGS] ROOTFOLDER/ LISTFILE DB_NAME
//
// --label_type says where the boxes are (tools/annoset/annotation_files.hpp
// reads them):
//   xml   Pascal VOC: LISTFILE lines "IMAGE ANNOTATION.xml" (SSD's form)
//   yolo  YOLO text: LISTFILE lines "IMAGE" (boxes in IMAGE with the
//         extension .txt) or "IMAGE LABELS.txt"; --yolo_names names the classes
//   coco  COCO: LISTFILE is an instances JSON file; its images, in order
// Paths are joined to ROOTFOLDER as written (keep its trailing '/'). Class
// names become labels through --label_map_file (a LabelMap prototxt, SSD's
// format); for yolo and coco it may be left out, and the map is then
// "background" = 0 and the classes in order from 1 (--write_label_map saves
// it for the net and the evaluation). --anno_type=classification instead
// reads "IMAGE LABEL" lines into records without boxes, as SSD does.
//
// Record i (after --shuffle) has key "%08d_IMAGE" and holds the image (its
// file's bytes with --encoded, else the decoded pixels, resized as
// --resize_width/--resize_height or --min_dim/--max_dim say) and the boxes
// normalized by the image's size as the annotation states it. As
// convert_imageset, an image or annotation that cannot be used is reported
// with its list line and what to change, skipped, and counted (--strict:
// the first one stops the run).
#include <gflags/gflags.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <opencv2/core.hpp>
#include <random>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "annoset/annotation_files.hpp"
#include "flag_help.hpp"
#include "ordered_parallel_map.hpp"
#include "progress_line.hpp"
#include "resize_flags.hpp"
#include "xtrain/error.hpp"
#include "xtrain/image_datum.hpp"
#include "xtrain/lmdb_database.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/proto_io.hpp"

DEFINE_bool(gray, false, "Read images as 1-channel grey images (else 3-channel B, G, R)");
DEFINE_bool(shuffle, false, "Shuffle the images before converting (deterministic, see --seed)");
DEFINE_uint64(seed, 0, "Seed of the --shuffle order");
DEFINE_string(backend, "lmdb", "The database to write; only lmdb is supported");
DEFINE_string(anno_type, "detection",
              "detection (boxes) or classification (\"IMAGE LABEL\" lines, no boxes)");
DEFINE_string(label_type, "xml",
              "Annotation format: xml (Pascal VOC), yolo (YOLO text) or coco (COCO JSON)");
DEFINE_string(label_map_file, "",
              "LabelMap prototxt: class name -> label (xml needs it; yolo and coco number "
              "their classes from 1 without it)");
DEFINE_string(write_label_map, "", "Write the label map used to this file (prototxt)");
DEFINE_string(yolo_names, "", "yolo: the names file, one class per line (line k: class k - 1)");
DEFINE_bool(check_label, false, "Stop if the label map gives a name or a label twice");
DEFINE_int32(min_dim, 0,
             "Scale images up (keeping their aspect) so the short side is at least this");
DEFINE_int32(max_dim, 0,
             "Scale images down (keeping their aspect) so the long side is at most this");
DEFINE_int32(resize_width, 0, "Resize images to this width (with --resize_height; 0: keep)");
DEFINE_int32(resize_height, 0, "Resize images to this height (with --resize_width; 0: keep)");
DEFINE_bool(check_size, false,
            "Skip (with a warning) images whose size differs from the first image's");
DEFINE_bool(encoded, false, "Store the images compressed (Datum.encoded = true)");
DEFINE_string(encode_type, "",
              "Format of encoded images (png, jpg, ...); empty: the file's own. Giving it also "
              "turns on --encoded");
DEFINE_int32(threads, 0, "Decoding threads (0: one per core)");
DEFINE_bool(strict, false, "Stop with an error at the first bad line, image or annotation");
DEFINE_double(progress_seconds, 5, "Seconds between progress lines");

namespace {

namespace annoset = xtrain::annoset;

constexpr const char* kUsage =
    "Converts images and their object boxes to an LMDB of AnnotatedDatum records.\n"
    "Usage:\n"
    "    convert_annoset [FLAGS] ROOTFOLDER/ LISTFILE DB_NAME\n"
    "LISTFILE: --label_type=xml: \"IMAGE ANNOTATION.xml\" lines; yolo: \"IMAGE\" lines\n"
    "(boxes in IMAGE's .txt) or \"IMAGE LABELS.txt\"; coco: the instances JSON file.\n"
    "Paths are joined to ROOTFOLDER as written (keep the trailing '/'). DB_NAME must\n"
    "not exist yet.";

// One image to convert: where it and its boxes are.
struct Entry {
  std::string image;
  std::string annotation;  // xml, yolo: the file; coco: empty
  int line = 0;            // of LISTFILE (coco: the image's index + 1)
  int label = 0;           // classification
  const annoset::ImageObjects* coco_objects = nullptr;
};

struct Converted {
  std::string record;
  int width = 0;
  int height = 0;
  std::string error;
};

std::string where(const std::string& list_path, int line) {
  return FLAGS_label_type == "coco" ? "image " + std::to_string(line) + " of '" + list_path + "'"
                                    : "'" + list_path + "' line " + std::to_string(line);
}

void check_flags() {
  XTRAIN_CHECK(FLAGS_backend == "lmdb", "--backend=", FLAGS_backend,
               ": only lmdb is supported; use --backend=lmdb");
  XTRAIN_CHECK(FLAGS_anno_type == "detection" || FLAGS_anno_type == "classification",
               "--anno_type=", FLAGS_anno_type, ": use detection or classification");
  XTRAIN_CHECK(
      FLAGS_label_type == "xml" || FLAGS_label_type == "yolo" || FLAGS_label_type == "coco",
      "--label_type=", FLAGS_label_type,
      ": use xml (Pascal VOC), yolo (YOLO text) or coco (COCO JSON)");
  xtrain::tools::check_resize_flags(FLAGS_resize_width, FLAGS_resize_height, FLAGS_gray ? 1 : 3);
  XTRAIN_CHECK(FLAGS_min_dim >= 0 && FLAGS_max_dim >= 0, "--min_dim and --max_dim must be >= 0");
  XTRAIN_CHECK(FLAGS_encode_type.empty() || xtrain::can_encode_as(FLAGS_encode_type),
               "--encode_type=", FLAGS_encode_type,
               ": OpenCV cannot encode that format; use png, jpg, bmp, ...");
  XTRAIN_CHECK(FLAGS_threads >= 0, "--threads=", FLAGS_threads, " must be >= 0 (0: one per core)");
  const bool detection = FLAGS_anno_type == "detection";
  XTRAIN_CHECK(!detection || FLAGS_label_type != "xml" || !FLAGS_label_map_file.empty(),
               "--label_type=xml needs --label_map_file, the LabelMap prototxt that gives each "
               "class name its label");
  XTRAIN_CHECK(!detection || FLAGS_label_type != "yolo" || !FLAGS_yolo_names.empty(),
               "--label_type=yolo needs --yolo_names, the file of class names (one per line)");
}

// "PATH REST" lines: the first field and what follows (trimmed).
std::vector<Entry> read_list(const std::string& path, std::vector<std::string>* malformed) {
  std::ifstream file(path);
  XTRAIN_CHECK(file.good(), "cannot open the list file '", path, "'");
  std::vector<Entry> entries;
  std::string text;
  for (int line = 1; std::getline(file, text); ++line) {
    std::istringstream fields(text);
    Entry entry;
    entry.line = line;
    std::string second;
    std::string extra;
    if (!(fields >> entry.image)) continue;  // blank line
    fields >> second;
    const bool more = static_cast<bool>(fields >> extra);
    std::string problem;
    if (FLAGS_anno_type == "classification") {
      char* end = nullptr;
      entry.label = static_cast<int>(std::strtol(second.c_str(), &end, 10));
      if (second.empty() || *end != '\0' || more) problem = "expected \"IMAGE LABEL\"";
    } else if (FLAGS_label_type == "yolo") {
      entry.annotation = second.empty()
                             ? std::filesystem::path(entry.image).replace_extension(".txt").string()
                             : second;
      if (more) problem = "expected \"IMAGE\" or \"IMAGE LABELS.txt\"";
    } else {
      entry.annotation = second;
      if (second.empty() || more) problem = "expected \"IMAGE ANNOTATION.xml\"";
    }
    if (!problem.empty()) {
      malformed->push_back(where(path, line) + ": \"" + text + "\": " + problem);
      continue;
    }
    entries.push_back(entry);
  }
  return entries;
}

// SSD's sizes: --min_dim / --max_dim keep the aspect ratio and win over
// --resize_width / --resize_height.
std::pair<int, int> target_size(int height, int width) {
  if (FLAGS_min_dim > 0 || FLAGS_max_dim > 0) {
    double scale = 1;
    const int shorter = std::min(height, width);
    const int longer = std::max(height, width);
    if (FLAGS_min_dim > 0 && shorter < FLAGS_min_dim)
      scale = static_cast<double>(FLAGS_min_dim) / shorter;
    if (FLAGS_max_dim > 0 && static_cast<int>(scale * longer) > FLAGS_max_dim) {
      scale = static_cast<double>(FLAGS_max_dim) / longer;
    }
    return {static_cast<int>(std::lround(height * scale)),
            static_cast<int>(std::lround(width * scale))};
  }
  if (FLAGS_resize_height > 0) return {FLAGS_resize_height, FLAGS_resize_width};
  return {height, width};
}

Converted convert_one(const std::string& root, const Entry& entry,
                      const annoset::LabelLookup* labels,
                      const std::vector<std::string>& yolo_names) {
  Converted converted;
  try {
    const std::string file = root + entry.image;
    const std::string bytes = xtrain::read_file_bytes(file);
    const xtrain::ColorMode color =
        FLAGS_gray ? xtrain::ColorMode::kGray : xtrain::ColorMode::kColor;
    xtrain::Image image = xtrain::decode_image(bytes, color, "'" + file + "'");
    const int original_height = image.height;
    const int original_width = image.width;
    const auto [height, width] = target_size(image.height, image.width);
    const bool resized = height != image.height || width != image.width;
    if (resized) image = xtrain::resize_image(image, height, width);
    converted.width = image.width;
    converted.height = image.height;

    xtrain::AnnotatedDatum record;
    xtrain::Datum& datum = *record.mutable_datum();
    const bool encoded = FLAGS_encoded || !FLAGS_encode_type.empty();
    if (!encoded) {
      datum = xtrain::image_to_datum(image, entry.label);
    } else {
      if (!resized &&
          (FLAGS_encode_type.empty() || xtrain::file_has_format(file, FLAGS_encode_type))) {
        datum.set_data(bytes);
      } else {
        const std::string format =
            FLAGS_encode_type.empty() ? xtrain::file_extension(file) : FLAGS_encode_type;
        XTRAIN_CHECK(!format.empty(), "cannot tell which format to encode '", file,
                     "' in: its name has no extension; pass --encode_type (png, jpg, ...)");
        datum.set_data(xtrain::encode_image(image, format));
      }
      datum.set_encoded(true);
      datum.set_label(entry.label);
    }
    if (FLAGS_anno_type == "detection") {
      annoset::ImageObjects read;
      if (entry.coco_objects == nullptr) {
        const std::string path = root + entry.annotation;
        read = FLAGS_label_type == "xml" ? annoset::read_voc_xml(path)
                                         : annoset::read_yolo_text(path, yolo_names);
      }
      const annoset::ImageObjects& objects =
          entry.coco_objects != nullptr ? *entry.coco_objects : read;
      const int stated_width = objects.width > 0 ? objects.width : original_width;
      const int stated_height = objects.height > 0 ? objects.height : original_height;
      if (stated_width != original_width || stated_height != original_height) {
        XLOG(WARNING) << "the annotation of '" << file << "' says the image is " << stated_width
                      << " x " << stated_height << " but it is " << original_width << " x "
                      << original_height << "; its boxes are normalized by the annotation's size";
      }
      annoset::add_objects(objects, stated_width, stated_height, *labels, &record);
    }
    converted.record = xtrain::serialize_record(
        record,
        "'" + file + "' (" + std::to_string(image.height) + "x" + std::to_string(image.width) +
            " pixels)",
        "store it smaller with --resize_width/--resize_height or --max_dim");
  } catch (const std::exception& failure) {
    converted.error = failure.what();
  }
  return converted;
}

struct Counts {
  std::size_t written = 0;
  std::size_t skipped = 0;
};

Counts convert(const std::string& root, const std::string& list_path, const std::string& db_path) {
  check_flags();
  std::error_code error;
  XTRAIN_CHECK(!std::filesystem::exists(db_path, error), "'", db_path,
               "' already exists; delete it first (rm -r ", db_path, ") or choose another DB path");

  std::vector<std::string> problems;
  std::vector<Entry> entries;
  annoset::CocoDataset coco;
  std::vector<std::string> class_names;
  const bool detection = FLAGS_anno_type == "detection";
  if (detection && FLAGS_label_type == "coco") {
    coco = annoset::read_coco_json(list_path);
    class_names = coco.category_names;
    for (std::size_t i = 0; i < coco.images.size(); ++i) {
      Entry entry;
      entry.image = coco.images[i].file_name;
      entry.line = static_cast<int>(i) + 1;
      entry.coco_objects = &coco.images[i].objects;
      entries.push_back(entry);
    }
  } else {
    entries = read_list(list_path, &problems);
  }
  if (detection && FLAGS_label_type == "yolo")
    class_names = annoset::read_class_names(FLAGS_yolo_names);
  for (const std::string& problem : problems) {
    XTRAIN_CHECK(!FLAGS_strict, problem, " (stopped by --strict)");
    XLOG(WARNING) << problem << "; skipped";
  }
  XTRAIN_CHECK(!entries.empty(), "'", list_path, "' names no images (", problems.size(),
               " malformed lines)");

  std::unique_ptr<annoset::LabelLookup> labels;
  if (detection) {
    labels = std::make_unique<annoset::LabelLookup>(
        FLAGS_label_map_file.empty()
            ? annoset::LabelLookup::from_names(class_names)
            : annoset::LabelLookup::from_file(FLAGS_label_map_file, FLAGS_check_label));
    if (!FLAGS_write_label_map.empty()) {
      xtrain::write_proto_to_text_file(labels->map(), FLAGS_write_label_map);
    }
  }
  if (FLAGS_shuffle) {
    std::mt19937_64 engine(FLAGS_seed);
    std::shuffle(entries.begin(), entries.end(), engine);
  }
  const int threads = FLAGS_threads > 0
                          ? FLAGS_threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  XLOG(INFO) << "A total of " << entries.size() << " images; decoding on " << threads << " threads";
  cv::setNumThreads(0);  // our workers already use every core

  Counts counts;
  try {
    xtrain::LmdbWriter writer(xtrain::LmdbDatabase::open_for_writing(db_path));
    xtrain::tools::ProgressLine progress(entries.size(), "images", FLAGS_progress_seconds);
    int first_width = -1;
    int first_height = -1;
    auto skip = [&](const Entry& entry, const std::string& reason) {
      const std::string message = where(list_path, entry.line) + ": " + reason;
      XTRAIN_CHECK(!FLAGS_strict, message, " (stopped by --strict)");
      XLOG(WARNING) << message << "; skipped";
      ++counts.skipped;
    };
    const std::size_t window = std::max<std::size_t>(64, 16 * static_cast<std::size_t>(threads));
    xtrain::ordered_parallel_map<Converted>(
        entries.size(), threads, window,
        [&](std::size_t i) { return convert_one(root, entries[i], labels.get(), class_names); },
        [&](std::size_t i, Converted converted) {
          progress.update(i + 1);
          const Entry& entry = entries[i];
          if (!converted.error.empty()) return skip(entry, converted.error);
          if (FLAGS_check_size && first_width < 0) {
            first_width = converted.width;
            first_height = converted.height;
          } else if (FLAGS_check_size &&
                     (converted.width != first_width || converted.height != first_height)) {
            return skip(entry, "'" + entry.image + "' is " + std::to_string(converted.width) +
                                   " x " + std::to_string(converted.height) +
                                   " but the first image is " + std::to_string(first_width) +
                                   " x " + std::to_string(first_height) + " (--check_size)");
          }
          char key[32];
          std::snprintf(key, sizeof key, "%08zu_", i);
          writer.put(key + entry.image, std::move(converted.record));
          ++counts.written;
        });
    writer.commit();
    XTRAIN_CHECK(counts.written > 0, "no image could be converted (", counts.skipped,
                 " skipped); see the warnings above");
  } catch (...) {
    std::filesystem::remove_all(db_path, error);  // do not leave half a DB
    throw;
  }
  return counts;
}

}  // namespace

int main(int argc, char** argv) {
  if (xtrain::tools::parse_flags_or_answer_help(&argc, &argv, kUsage, __FILE__)) return 0;
  if (argc != 4) {
    std::fputs(xtrain::tools::single_file_tool_help(kUsage, __FILE__).c_str(), stderr);
    return 1;
  }
  try {
    const Counts counts = convert(argv[1], argv[2], argv[3]);
    std::printf("convert_annoset: wrote %zu records; skipped %zu\n", counts.written,
                counts.skipped);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "convert_annoset: error: %s\n", error.what());
    return 1;
  }
  return 0;
}
