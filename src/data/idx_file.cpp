#include "xtrain/idx_file.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include "xtrain/error.hpp"

namespace xtrain {
namespace {

// A gzFile that closes itself; reports errors with the file's name.
class GzReader {
 public:
  explicit GzReader(const std::string& path) : path_(path) {
    errno = 0;
    file_ = gzopen(path.c_str(), "rb");
    XTRAIN_CHECK(file_ != nullptr, "cannot open IDX file '", path,
                 "': ", errno ? std::strerror(errno) : "out of memory");
  }
  ~GzReader() { gzclose(file_); }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  // Reads up to `size` bytes; returns how many were read (fewer at the end).
  std::size_t read(void* out, std::size_t size) {
    std::size_t done = 0;
    while (done < size) {
      // gzread takes an unsigned count; read large buffers in pieces.
      const unsigned piece = static_cast<unsigned>(std::min<std::size_t>(size - done, 1u << 30));
      errno = 0;
      const int n = gzread(file_, static_cast<char*>(out) + done, piece);
      if (n < 0) {
        int code = Z_OK;
        const char* message = gzerror(file_, &code);
        XTRAIN_CHECK(false, "cannot read IDX file '", path_,
                     "': ", code == Z_ERRNO ? std::strerror(errno) : message);
      }
      if (n == 0) break;
      done += static_cast<std::size_t>(n);
    }
    return done;
  }

  std::uint32_t read_big_endian_u32(const char* field) {
    unsigned char bytes[4];
    XTRAIN_CHECK(read(bytes, 4) == 4, "IDX file '", path_, "' is truncated: it ends before its ",
                 field, " field");
    return (std::uint32_t{bytes[0]} << 24) | (std::uint32_t{bytes[1]} << 16) |
           (std::uint32_t{bytes[2]} << 8) | std::uint32_t{bytes[3]};
  }

  // Reads exactly `size` bytes in chunks, so a corrupt header promising
  // terabytes fails with "truncated" instead of a huge allocation.
  std::vector<std::uint8_t> read_payload(std::size_t size, const char* what) {
    constexpr std::size_t kChunk = std::size_t{16} << 20;
    std::vector<std::uint8_t> bytes;
    bytes.reserve(std::min(size, kChunk));
    while (bytes.size() < size) {
      const std::size_t start = bytes.size();
      const std::size_t want = std::min(size - start, kChunk);
      bytes.resize(start + want);
      const std::size_t got = read(bytes.data() + start, want);
      XTRAIN_CHECK(got == want, "IDX file '", path_, "' is truncated: its header promises ", size,
                   " bytes of ", what, ", but it holds only ", start + got);
    }
    return bytes;
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  gzFile file_ = nullptr;
};

std::string hex(std::uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", value);
  return text;
}

void check_magic(GzReader& file, std::uint32_t expected, const char* kind) {
  const std::uint32_t magic = file.read_big_endian_u32("magic number");
  if (magic == expected) return;
  const char* actual_kind = magic == kIdxImagesMagic   ? ", an IDX images file"
                            : magic == kIdxLabelsMagic ? ", an IDX labels file"
                                                       : "";
  XTRAIN_CHECK(false, "'", file.path(), "' is not an IDX ", kind, " file: its magic number is ",
               magic, " (", hex(magic), actual_kind, "), expected ", expected, " (", hex(expected),
               "); check the order of the arguments and that the file is not "
               "corrupt");
}

}  // namespace

IdxImages read_idx_images(const std::string& path) {
  GzReader file(path);
  check_magic(file, kIdxImagesMagic, "images");
  IdxImages images;
  images.count = file.read_big_endian_u32("image count");
  const std::uint32_t rows = file.read_big_endian_u32("rows");
  const std::uint32_t cols = file.read_big_endian_u32("columns");
  // An image must fit one Datum (protobuf sizes are int); then count * rows *
  // cols < 2^32 * 2^31 fits in 64 bits.
  XTRAIN_CHECK(rows > 0 && cols > 0 && std::uint64_t{rows} * cols <= INT_MAX, "IDX images file '",
               path, "' has images of ", rows, "x", cols, " pixels; the header is corrupt");
  images.rows = static_cast<int>(rows);
  images.cols = static_cast<int>(cols);
  const std::uint64_t pixels = std::uint64_t{images.count} * (std::uint64_t{rows} * cols);
  images.pixels = file.read_payload(static_cast<std::size_t>(pixels), "pixels");
  return images;
}

std::vector<std::uint8_t> read_idx_labels(const std::string& path) {
  GzReader file(path);
  check_magic(file, kIdxLabelsMagic, "labels");
  const std::uint32_t count = file.read_big_endian_u32("label count");
  return file.read_payload(count, "labels");
}

IdxDataset read_idx_dataset(const std::string& images_path, const std::string& labels_path) {
  IdxDataset dataset;
  dataset.images = read_idx_images(images_path);
  dataset.labels = read_idx_labels(labels_path);
  XTRAIN_CHECK(dataset.images.count == dataset.labels.size(), "'", images_path, "' holds ",
               dataset.images.count, " images but '", labels_path, "' holds ",
               dataset.labels.size(), " labels; give the labels file that belongs to the images");
  return dataset;
}

}  // namespace xtrain
