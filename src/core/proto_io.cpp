#include "xtrain/proto_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <sstream>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/text_format.h>

#include "core/net_upgrade.hpp"
#include "xtrain/error.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {
namespace {

// Collects the first parse error as "source:line:column: message".
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  explicit FirstErrorCollector(std::string source) : source_(std::move(source)) {}
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (!first_.empty()) return;
    first_ = source_ + ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " +
             message;
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
  const std::string& first() const { return first_; }

 private:
  std::string source_;
  std::string first_;
};

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  XTRAIN_CHECK(in.good(), "cannot open '", path, "': ", std::strerror(errno));
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

void fsync_directory(const std::string& directory) {
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;  // best effort: some filesystems refuse directory fds
  ::fsync(fd);
  ::close(fd);
}

// Writes bytes to `path` through a temporary file in the same directory:
// write, fsync, rename, fsync the directory. Readers see the old file or the
// new one, never a partial one.
void write_file_atomically(const std::string& path, const std::string& bytes) {
  std::string temp_path = path + ".tmp.XXXXXX";
  std::vector<char> name(temp_path.begin(), temp_path.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  XTRAIN_CHECK(fd >= 0, "cannot create a file in '", directory_of(path), "' to write '", path,
               "': ", std::strerror(errno));
  temp_path = name.data();
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string reason = std::strerror(errno);
      ::close(fd);
      ::unlink(temp_path.c_str());
      throw Error("cannot write '" + path + "': " + reason);
    }
    written += static_cast<std::size_t>(n);
  }
  ::fchmod(fd, 0644);
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(temp_path.c_str());
    throw Error("cannot write '" + path + "': " + reason);
  }
  if (::rename(temp_path.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(temp_path.c_str());
    throw Error("cannot rename the new '" + path + "' into place: " + reason);
  }
  fsync_directory(directory_of(path));
}

}  // namespace

void read_proto_from_text_string(const std::string& text, google::protobuf::Message* message,
                                 const std::string& source_name) {
  google::protobuf::TextFormat::Parser parser;
  FirstErrorCollector errors(source_name);
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, message)) {
    std::string what = errors.first().empty() ? source_name + ": cannot parse" : errors.first();
    throw Error(what + " (while reading a " + message->GetDescriptor()->name() + ")");
  }
}

void read_proto_from_text_file(const std::string& path, google::protobuf::Message* message) {
  read_proto_from_text_string(read_whole_file(path), message, path);
}

void read_proto_from_binary_file(const std::string& path, google::protobuf::Message* message) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  XTRAIN_CHECK(fd >= 0, "cannot open '", path, "': ", std::strerror(errno));
  google::protobuf::io::FileInputStream file_stream(fd);
  file_stream.SetCloseOnDelete(true);
  google::protobuf::io::CodedInputStream coded(&file_stream);
  coded.SetTotalBytesLimit(INT_MAX);
  const bool parsed = message->ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
  XTRAIN_CHECK(parsed, "'", path, "' is not a valid binary ", message->GetDescriptor()->name(),
               " file (truncated, corrupt, or another kind of file)");
}

void write_proto_to_binary_file(const google::protobuf::Message& message, const std::string& path) {
  std::string bytes;
  XTRAIN_CHECK(message.SerializeToString(&bytes), "cannot serialise ",
               message.GetDescriptor()->name(), " for '", path,
               "' (over protobuf's 2 GB message limit?)");
  write_file_atomically(path, bytes);
}

void write_proto_to_text_file(const google::protobuf::Message& message, const std::string& path) {
  std::string text;
  XTRAIN_CHECK(google::protobuf::TextFormat::PrintToString(message, &text), "cannot print ",
               message.GetDescriptor()->name(), " as text for '", path, "'");
  write_file_atomically(path, text);
}

NetParameter read_net_params_from_text_file(const std::string& path) {
  NetParameter param;
  read_proto_from_text_file(path, &param);
  upgrade_net_as_needed(path, &param);
  return param;
}

namespace {
bool path_exists(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0;
}

// Caffe resolves net paths against the working directory; a solver run from
// elsewhere also finds a net next to the solver file.
void resolve_net_path(const std::string& solver_path, std::string* net_path) {
  if (net_path->empty() || (*net_path)[0] == '/' || path_exists(*net_path)) return;
  const std::string beside = directory_of(solver_path) + "/" + *net_path;
  if (path_exists(beside)) *net_path = beside;
}
}  // namespace

SolverParameter read_solver_params_from_text_file(const std::string& path) {
  SolverParameter param;
  read_proto_from_text_file(path, &param);
  upgrade_solver_as_needed(path, &param);
  if (param.has_net()) resolve_net_path(path, param.mutable_net());
  if (param.has_train_net()) resolve_net_path(path, param.mutable_train_net());
  for (std::string& test_net : *param.mutable_test_net()) resolve_net_path(path, &test_net);
  return param;
}

}  // namespace xtrain
