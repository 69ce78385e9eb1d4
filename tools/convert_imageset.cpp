// convert_imageset: a list of image files and labels -> an LMDB of Datum
// records, as Caffe's tool of the same name writes them.
//
//   convert_imageset [FLAGS] ROOTFOLDER/ LISTFILE DB_NAME
//
// LISTFILE holds "PATH LABEL" lines (split at the last space); each image is
// read from ROOTFOLDER + PATH (the two strings joined as they are, as Caffe
// does: give ROOTFOLDER with its trailing '/'). Record i (after --shuffle)
// has key "%08d_PATH" and holds the image as Caffe's ReadImageToDatum stores
// it (see src/data/image_datum.hpp). An image that cannot be read keeps its
// index, so keys then skip a number, as with Caffe.
//
// Unlike Caffe, a bad line or image does not abort the run: it is reported
// with its list line number, skipped and counted in the closing summary
// (--strict stops at the first one instead).
//
// Images are decoded and resized on a pool of worker threads while the
// calling thread writes the records in list order.
#include <gflags/gflags.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <opencv2/core.hpp>
#include <string>
#include <system_error>
#include <thread>

#include "flag_help.hpp"
#include "ordered_parallel_map.hpp"
#include "progress_line.hpp"
#include "resize_flags.hpp"
#include "xtrain/error.hpp"
#include "xtrain/image_datum.hpp"
#include "xtrain/image_list.hpp"
#include "xtrain/lmdb_database.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/proto_io.hpp"

DEFINE_bool(gray, false, "Read images as 1-channel grey images (else 3-channel B, G, R)");
DEFINE_bool(shuffle, false, "Shuffle the list before converting (deterministic, see --seed)");
DEFINE_uint64(seed, 0, "Seed of the --shuffle order");
DEFINE_string(backend, "lmdb", "The database to write; only lmdb is supported");
DEFINE_int32(resize_width, 0, "Resize images to this width (with --resize_height; 0: keep)");
DEFINE_int32(resize_height, 0, "Resize images to this height (with --resize_width; 0: keep)");
DEFINE_bool(check_size, false,
            "Skip (with a warning) images whose size differs from the first image's");
DEFINE_bool(encoded, false, "Store the images compressed (Datum.encoded = true)");
DEFINE_string(encode_type, "",
              "Format of encoded images (png, jpg, ...); empty: the file's own. As in Caffe, "
              "giving it also turns on --encoded");
DEFINE_int32(threads, 0, "Decoding threads (0: one per core)");
DEFINE_bool(strict, false, "Stop with an error at the first bad line or image");
DEFINE_double(progress_seconds, 5, "Seconds between progress lines");

namespace {

constexpr const char* kUsage =
    "Converts a list of images and labels to an LMDB of Datum records.\n"
    "Usage:\n"
    "    convert_imageset [FLAGS] ROOTFOLDER/ LISTFILE DB_NAME\n"
    "LISTFILE holds one \"PATH LABEL\" line per image (PATH may contain spaces);\n"
    "images are read from ROOTFOLDER joined with PATH as written (keep the\n"
    "trailing '/'). DB_NAME must not exist yet.";

// What a worker makes of one list entry: the serialized record, or why not.
struct ConvertedImage {
  std::string record;
  xtrain::DatumShape shape;
  std::string error;
};

struct Counts {
  std::size_t written = 0;
  std::size_t unreadable = 0;
  std::size_t malformed = 0;
  std::size_t wrong_size = 0;

  std::size_t skipped() const { return unreadable + malformed + wrong_size; }
  std::string summary() const {
    return "wrote " + std::to_string(written) + " records; skipped " + std::to_string(skipped()) +
           ": " + std::to_string(unreadable) + " unreadable images, " + std::to_string(malformed) +
           " malformed lines, " + std::to_string(wrong_size) + " wrong size";
  }
};

std::string record_key(std::size_t index, const std::string& path) {
  char number[32];
  std::snprintf(number, sizeof number, "%08zu_", index);
  return number + path;
}

int thread_count() {
  if (FLAGS_threads > 0) return FLAGS_threads;
  const unsigned cores = std::thread::hardware_concurrency();
  return cores > 0 ? static_cast<int>(cores) : 1;
}

xtrain::ImageDatumOptions options_from_flags() {
  XTRAIN_CHECK(FLAGS_backend != "leveldb",
               "--backend=leveldb: LevelDB is not supported; use --backend=lmdb");
  XTRAIN_CHECK(FLAGS_backend == "lmdb", "unknown --backend=", FLAGS_backend,
               "; use --backend=lmdb");
  xtrain::tools::check_resize_flags(FLAGS_resize_width, FLAGS_resize_height, FLAGS_gray ? 1 : 3);
  XTRAIN_CHECK(FLAGS_encode_type.empty() || xtrain::can_encode_as(FLAGS_encode_type),
               "--encode_type=", FLAGS_encode_type,
               ": OpenCV cannot encode that format; use png, jpg, bmp, ...");
  XTRAIN_CHECK(FLAGS_threads >= 0, "--threads=", FLAGS_threads, " must be >= 0 (0: one per core)");
  xtrain::ImageDatumOptions options;
  options.color = FLAGS_gray ? xtrain::ColorMode::kGray : xtrain::ColorMode::kColor;
  options.resize_height = FLAGS_resize_height;
  options.resize_width = FLAGS_resize_width;
  options.encoded = FLAGS_encoded || !FLAGS_encode_type.empty();
  options.encode_type = FLAGS_encode_type;
  return options;
}

// Writes the records in list order and keeps the counts; everything that
// can go wrong with one image ends up here, on the writing thread.
class RecordSink {
 public:
  RecordSink(const xtrain::ImageList& list, xtrain::LmdbWriter& writer, Counts& counts)
      : list_(list), writer_(writer), counts_(counts) {}

  void take(std::size_t index, ConvertedImage image) {
    const xtrain::ImageListEntry& entry = list_.entries[index];
    if (!image.error.empty()) {
      ++counts_.unreadable;
      skip(entry, image.error);
      return;
    }
    if (FLAGS_check_size) {
      if (!first_) {
        first_ = &entry;
        first_shape_ = image.shape;
      } else if (image.shape != first_shape_) {
        ++counts_.wrong_size;
        skip(entry, "'" + entry.path + "' is " + image.shape.to_string() +
                        " (channels x height x width) but the first image ('" + first_->path +
                        "', line " + std::to_string(first_->line_number) + ") is " +
                        first_shape_.to_string() + " (--check_size)");
        return;
      }
    }
    writer_.put(record_key(index, entry.path), std::move(image.record));
    ++counts_.written;
  }

 private:
  void skip(const xtrain::ImageListEntry& entry, const std::string& reason) {
    const std::string message = list_.where(entry.line_number) + ": " + reason;
    XTRAIN_CHECK(!FLAGS_strict, message, " (stopped by --strict)");
    XLOG(WARNING) << message << "; skipped";
  }

  const xtrain::ImageList& list_;
  xtrain::LmdbWriter& writer_;
  Counts& counts_;
  const xtrain::ImageListEntry* first_ = nullptr;
  xtrain::DatumShape first_shape_;
};

Counts convert(const std::string& root_folder, const std::string& list_path,
               const std::string& db_path) {
  const xtrain::ImageDatumOptions options = options_from_flags();
  std::error_code error;
  XTRAIN_CHECK(!std::filesystem::exists(db_path, error), "'", db_path,
               "' already exists; delete it first (rm -r ", db_path, ") or choose another DB path");

  xtrain::ImageList list = xtrain::read_image_list(list_path);
  Counts counts;
  counts.malformed = list.malformed.size();
  for (const xtrain::MalformedListLine& line : list.malformed) {
    const std::string message =
        list.where(line.line_number) + ": " + line.reason + ": \"" + line.text + "\"";
    XTRAIN_CHECK(!FLAGS_strict, message, " (stopped by --strict)");
    XLOG(WARNING) << message << "; skipped";
  }
  XTRAIN_CHECK(!list.entries.empty(), "the list '", list_path, "' names no images (",
               counts.malformed, " malformed lines); write one \"PATH LABEL\" line per image");
  if (FLAGS_shuffle) {
    XLOG(INFO) << "Shuffling data (seed " << FLAGS_seed << ")";
    xtrain::shuffle_image_list(&list.entries, FLAGS_seed);
  }
  const std::size_t total = list.entries.size();
  const int threads = thread_count();
  XLOG(INFO) << "A total of " << total << " images; decoding on " << threads << " threads";

  // Our workers already use every core: OpenCV's own pool would only fight
  // them for it.
  cv::setNumThreads(0);
  auto convert_one = [&](std::size_t index) {
    const xtrain::ImageListEntry& entry = list.entries[index];
    ConvertedImage converted;
    const std::string file = root_folder + entry.path;
    try {
      const std::string bytes = xtrain::read_file_bytes(file);
      xtrain::ImageDatum image =
          xtrain::image_bytes_to_datum(bytes, file, entry.label, options, "'" + file + "'");
      converted.record =
          xtrain::serialize_record(image.datum, "'" + file + "' (" + image.shape.to_string() + ")",
                                   "give --resize_width and --resize_height to store it smaller");
      converted.shape = image.shape;
    } catch (const std::exception& failure) {
      converted.error = failure.what();
    }
    return converted;
  };

  try {
    xtrain::LmdbWriter writer(xtrain::LmdbDatabase::open_for_writing(db_path));
    RecordSink sink(list, writer, counts);
    xtrain::tools::ProgressLine progress(total, "images", FLAGS_progress_seconds);
    const std::size_t window = std::max<std::size_t>(64, 16 * static_cast<std::size_t>(threads));
    xtrain::ordered_parallel_map<ConvertedImage>(total, threads, window, convert_one,
                                                 [&](std::size_t index, ConvertedImage image) {
                                                   sink.take(index, std::move(image));
                                                   progress.update(index + 1);
                                                 });
    writer.commit();
    XTRAIN_CHECK(counts.written > 0, "no image could be converted (", counts.summary(),
                 "); see the warnings above",
                 root_folder.empty() || root_folder.back() == '/'
                     ? ""
                     : "; note that ROOTFOLDER is joined to each path as written, so '" +
                           root_folder + "' may need a trailing '/'");
    XLOG(INFO) << "Wrote " << counts.written << " records to '" << db_path << "' in "
               << progress.elapsed_seconds() << " s (" << progress.rate(total) << " images/s)";
  } catch (...) {
    // The DB did not exist before we started: do not leave half of one.
    std::filesystem::remove_all(db_path, error);
    throw;
  }
  return counts;
}

}  // namespace

int main(int argc, char** argv) {
  return xtrain::tools::run_single_file_tool(
      argc, argv, kUsage, __FILE__, 3, 3, [](int, char** args) {
        const Counts counts = convert(args[1], args[2], args[3]);
        std::printf("convert_imageset: %s\n", counts.summary().c_str());
      });
}
