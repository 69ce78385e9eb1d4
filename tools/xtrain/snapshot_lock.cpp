// SnapshotLock: open, flock, check that the path still names what we locked,
// read the previous holder, write ourselves.
#include "snapshot_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <string>

#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::cli {
namespace {

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "?";
  return name;
}

std::string read_all(int fd) {
  std::string text;
  char buffer[512];
  ::lseek(fd, 0, SEEK_SET);
  for (ssize_t n; (n = ::read(fd, buffer, sizeof(buffer))) > 0;) {
    text.append(buffer, static_cast<std::size_t>(n));
  }
  return text;
}

// The value of "key value" on its own line, or "".
std::string field(const std::string& text, const std::string& key) {
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end == std::string::npos ? end : end - at);
    if (line.rfind(key + " ", 0) == 0) return line.substr(key.size() + 1);
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return "";
}

struct Holder {
  std::string host, pid, started;
  std::string text() const {
    return "process " + (pid.empty() ? std::string("?") : pid) + " on host " +
           (host.empty() ? std::string("?") : host) +
           (started.empty() ? std::string() : ", started " + started);
  }
};

Holder holder_of(const std::string& text) {
  return {field(text, "host"), field(text, "pid"), field(text, "started")};
}

std::string now_utc() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace

SnapshotLock::SnapshotLock(const std::string& prefix) : path_(prefix + ".lock") {
  const std::string host = this_host();
  // A few tries: the holder may remove the file between our open and flock.
  for (int attempt = 0; attempt < 5; ++attempt) {
    const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 && (errno == EACCES || errno == EROFS || errno == EPERM)) {
      // Training goes on where snapshots cannot be written (their failures
      // are reported as they happen); there is nothing to interleave then.
      XLOG(WARNING) << "cannot create the snapshot lock '" << path_ << "': "
                    << std::strerror(errno)
                    << "; training without it (snapshots to this prefix will fail too)";
      return;
    }
    XTRAIN_CHECK(fd >= 0, "cannot open the snapshot lock '", path_, "': ", std::strerror(errno),
                 " (snapshot_prefix '", prefix, "' must be in a writable directory)");
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      const Holder holder = holder_of(read_all(fd));
      ::close(fd);
      XTRAIN_CHECK(error == EWOULDBLOCK, "cannot lock the snapshot lock '", path_,
                   "': ", std::strerror(error),
                   " (a file system without locks? delete the file if no other training uses "
                   "snapshot_prefix '", prefix, "')");
      throw Error("snapshot_prefix '" + prefix + "' is in use by another training: " +
                  holder.text() + " holds '" + path_ +
                  "'; two trainings would interleave their snapshots: wait for it to end, stop "
                  "it, or give this one another snapshot_prefix");
    }
    // Did the path change under us (the holder ended and removed it)?
    struct stat locked {}, named {};
    if (::fstat(fd, &locked) != 0 || ::stat(path_.c_str(), &named) != 0 ||
        locked.st_ino != named.st_ino || locked.st_dev != named.st_dev) {
      ::close(fd);
      continue;
    }
    const Holder previous = holder_of(read_all(fd));
    if (!previous.host.empty() && previous.host != host) {
      ::close(fd);
      throw Error("snapshot_prefix '" + prefix + "' was locked by " + previous.text() + " ('" +
                  path_ + "'), and this host (" + host +
                  ") cannot tell whether that training still runs: if it does not (it was "
                  "killed, or its node failed), delete '" + path_ + "' and start again");
    }
    if (!previous.pid.empty()) {
      // flock() succeeded on the same host: the holder has ended (killed,
      // as a clean end removes the file).
      XLOG(WARNING) << "the snapshot lock '" << path_ << "' was left by " << previous.text()
                    << ", which has ended; taking it over";
    }
    const std::string text = "host " + host + "\npid " + std::to_string(::getpid()) +
                             "\nstarted " + now_utc() + "\n";
    const bool written = ::ftruncate(fd, 0) == 0 && ::lseek(fd, 0, SEEK_SET) == 0 &&
                         ::write(fd, text.data(), text.size()) ==
                             static_cast<ssize_t>(text.size());
    if (!written) {
      const int error = errno;
      ::close(fd);
      XTRAIN_CHECK(false, "cannot write the snapshot lock '", path_, "': ", std::strerror(error));
    }
    ::fsync(fd);
    fd_ = fd;
    return;
  }
  XTRAIN_CHECK(false, "the snapshot lock '", path_,
               "' kept changing while this training tried to take it: is another training "
               "starting with the same snapshot_prefix?");
}

SnapshotLock::~SnapshotLock() {
  if (fd_ < 0) return;
  // Removed while still locked, so no one takes the file we are leaving.
  ::unlink(path_.c_str());
  ::close(fd_);
}

}  // namespace xtrain::cli
