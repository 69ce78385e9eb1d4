#include "xtrain/input_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <vector>

#include "xtrain/error.hpp"

namespace xtrain {
namespace {

// "the labels file 'x'", or "'x'" without a description.
std::string named(const std::string& path, const std::string& what) {
  return (what.empty() ? "" : what + " ") + "'" + path + "'";
}

}  // namespace

void check_input_file(const std::string& path, const std::string& what) {
  XTRAIN_CHECK(!path.empty(), "no path given for ", what.empty() ? "an input file" : what);
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    throw Error("cannot open " + named(path, what) + ": " + std::strerror(errno));
  }
  XTRAIN_CHECK(!S_ISDIR(info.st_mode), named(path, what),
               " is a directory, not a file; give the file's path");
  // /dev/zero, a disk, a terminal: never a file of ours, and some never end.
  XTRAIN_CHECK(!S_ISCHR(info.st_mode) && !S_ISBLK(info.st_mode), named(path, what),
               " is a device, not a file; give the file's path");
  XTRAIN_CHECK(::access(path.c_str(), R_OK) == 0, "cannot open ", named(path, what), ": ",
               std::strerror(errno));
}

std::ifstream open_input_file(const std::string& path, const std::string& what, bool binary) {
  check_input_file(path, what);
  std::ifstream file(path, binary ? std::ios::in | std::ios::binary : std::ios::in);
  XTRAIN_CHECK(file.is_open(), "cannot open ", named(path, what), ": ", std::strerror(errno));
  return file;
}

std::string read_input_file(const std::string& path, const std::string& what) {
  // Nothing xtrain reads whole is larger than a protobuf message can be
  // (2 GB: a .caffemodel, an ONNX model); a device such as /dev/zero, or a
  // pipe that never ends, was read until memory ran out.
  constexpr std::size_t kLargestWholeFile = INT_MAX;
  const std::string too_large = named(path, what) +
                                " is larger than 2 GB, more than any file xtrain reads whole (a "
                                ".caffemodel or ONNX model is at most 2 GB): is it the right file?";
  std::ifstream file = open_input_file(path, what, /*binary=*/true);
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode)) {
    XTRAIN_CHECK(static_cast<std::uint64_t>(info.st_size) <= kLargestWholeFile, too_large);
  }
  std::string contents;
  std::vector<char> chunk(std::size_t{1} << 20);
  while (file) {
    file.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const auto got = static_cast<std::size_t>(file.gcount());
    XTRAIN_CHECK(contents.size() + got <= kLargestWholeFile, too_large);
    contents.append(chunk.data(), got);
  }
  XTRAIN_CHECK(!file.bad(), "cannot read ", named(path, what), ": ", std::strerror(errno));
  return contents;
}

}  // namespace xtrain
