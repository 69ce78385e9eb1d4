#include "xtrain/input_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

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
  std::ifstream file = open_input_file(path, what, /*binary=*/true);
  std::ostringstream contents;
  contents << file.rdbuf();
  XTRAIN_CHECK(!file.bad(), "cannot read ", named(path, what), ": ", std::strerror(errno));
  return contents.str();
}

}  // namespace xtrain
