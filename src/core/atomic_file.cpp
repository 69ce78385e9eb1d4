#include "xtrain/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "xtrain/error.hpp"

namespace xtrain {
namespace {

void fsync_directory(const std::string& directory) {
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;  // best effort: some filesystems refuse directory fds
  ::fsync(fd);
  ::close(fd);
}

// Creates an empty temporary file next to `path`; returns its path and fd.
int create_temporary_next_to(const std::string& path, std::string* temp_path) {
  // Before writing anything: the rename at the end could not replace a
  // directory, and the file may be gigabytes.
  check_file_can_be_written(path);
  std::string pattern = path + ".tmp.XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  XTRAIN_CHECK(fd >= 0, "cannot create a file in '", directory_of(path), "' to write '", path,
               "': ", std::strerror(errno));
  ::fchmod(fd, 0644);
  *temp_path = name.data();
  return fd;
}

[[noreturn]] void fail_and_remove(const std::string& path, const std::string& temp_path,
                                  const std::string& what) {
  const std::string reason = std::strerror(errno);
  ::unlink(temp_path.c_str());
  throw Error(what + " '" + path + "': " + reason);
}

// fsync the finished temporary file, rename it over `path`, fsync the directory.
void commit(const std::string& temp_path, const std::string& path) {
  const int fd = ::open(temp_path.c_str(), O_RDONLY);
  if (fd < 0) fail_and_remove(path, temp_path, "cannot reopen the new");
  if (::fsync(fd) != 0) {
    ::close(fd);
    fail_and_remove(path, temp_path, "cannot write");
  }
  ::close(fd);
  if (::rename(temp_path.c_str(), path.c_str()) != 0) {
    fail_and_remove(path, temp_path, "cannot rename into place the new");
  }
  fsync_directory(directory_of(path));
}

}  // namespace

void check_file_can_be_written(const std::string& path) {
  struct stat existing {};
  XTRAIN_CHECK(::stat(path.c_str(), &existing) != 0 || !S_ISDIR(existing.st_mode), "cannot write '",
               path, "': it is a directory; give the path of a file to write");
  const std::string directory = directory_of(path);
  XTRAIN_CHECK(::access(directory.c_str(), W_OK) == 0, "cannot create a file in '", directory,
               "' to write '", path, "': ", std::strerror(errno));
}

std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  std::string temp_path;
  const int fd = create_temporary_next_to(path, &temp_path);
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      ::close(fd);
      fail_and_remove(path, temp_path, "cannot write");
    }
    written += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) fail_and_remove(path, temp_path, "cannot write");
  commit(temp_path, path);
}

void write_path_atomically(const std::string& path,
                           const std::function<void(const std::string& temp_path)>& write) {
  std::string temp_path;
  ::close(create_temporary_next_to(path, &temp_path));
  try {
    write(temp_path);
  } catch (...) {
    ::unlink(temp_path.c_str());
    throw;
  }
  commit(temp_path, path);
}

}  // namespace xtrain
