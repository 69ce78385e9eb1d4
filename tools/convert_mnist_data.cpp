// convert_mnist_data: MNIST-format IDX images and labels -> an LMDB of Datum
// records, as Caffe's tool of the same name writes them: record i has key
// "%08d" of i and holds Datum{channels: 1, height: rows, width: cols,
// data: the pixels, label}. Gzipped IDX files are read directly.
#include <gflags/gflags.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

#include "flag_help.hpp"
#include "xtrain/datum_io.hpp"
#include "xtrain/error.hpp"
#include "xtrain/idx_file.hpp"
#include "xtrain/lmdb_database.hpp"
#include "xtrain/logging.hpp"

DEFINE_string(backend, "lmdb", "The database to write; only lmdb is supported");

namespace {

constexpr const char* kUsage =
    "Converts MNIST-format IDX images and labels to an LMDB of Datum records.\n"
    "Usage:\n"
    "    convert_mnist_data [FLAGS] IMAGES LABELS DB\n"
    "IMAGES and LABELS may be gzipped (e.g. train-images-idx3-ubyte.gz);\n"
    "DB must not exist yet.";

std::string record_key(std::size_t index) {
  char key[32];
  std::snprintf(key, sizeof key, "%08zu", index);
  return key;
}

void convert(const std::string& images_path, const std::string& labels_path,
             const std::string& db_path) {
  XTRAIN_CHECK(FLAGS_backend != "leveldb",
               "--backend=leveldb: LevelDB is not supported; use --backend=lmdb");
  XTRAIN_CHECK(FLAGS_backend == "lmdb", "unknown --backend=", FLAGS_backend,
               "; use --backend=lmdb");
  std::error_code error;
  XTRAIN_CHECK(!std::filesystem::exists(db_path, error), "'", db_path,
               "' already exists; delete it first (rm -r ", db_path, ") or choose another DB path");

  // Read and check everything before creating the DB, so bad input leaves
  // nothing behind.
  const xtrain::IdxDataset dataset = xtrain::read_idx_dataset(images_path, labels_path);
  const std::size_t count = dataset.images.count;
  XTRAIN_CHECK(count > 0, "'", images_path, "' holds no images; nothing to convert");
  XLOG(INFO) << "A total of " << count << " items.";
  XLOG(INFO) << "Rows: " << dataset.images.rows << " Cols: " << dataset.images.cols;

  const xtrain::DatumShape shape{1, dataset.images.rows, dataset.images.cols};
  try {
    xtrain::LmdbWriter writer(xtrain::LmdbDatabase::open_for_writing(db_path));
    for (std::size_t i = 0; i < count; ++i) {
      const xtrain::Datum datum =
          xtrain::make_datum(shape, dataset.images.image(i), dataset.labels[i]);
      writer.put(record_key(i), datum.SerializeAsString());
      if ((i + 1) % 10000 == 0) XLOG(INFO) << "Processed " << i + 1 << " files.";
    }
    writer.commit();
    if (count % 10000 != 0) XLOG(INFO) << "Processed " << count << " files.";
  } catch (...) {
    // The DB did not exist before we started: do not leave half of one.
    std::filesystem::remove_all(db_path, error);
    throw;
  }
  std::printf("convert_mnist_data: wrote %zu records of %s pixels to '%s'\n", count,
              shape.to_string().c_str(), db_path.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  return xtrain::tools::run_single_file_tool(
      argc, argv, kUsage, __FILE__, 3, 3,
      [](int, char** args) { convert(args[1], args[2], args[3]); });
}
