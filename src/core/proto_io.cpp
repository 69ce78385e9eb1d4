#include "xtrain/proto_io.hpp"

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/text_format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "xtrain/atomic_file.hpp"
#include "core/net_upgrade.hpp"
#include "core/brace_mistake_hint.hpp"
#include "xtrain/error.hpp"
#include "xtrain/input_file.hpp"
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
    first_error_ = {line + 1, column, message};
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
  const std::string& first() const { return first_; }
  const TextParseError& first_error() const { return first_error_; }

 private:
  std::string source_;
  std::string first_;
  TextParseError first_error_;
};

// What a file holding `message` is to a user, for errors: "the net
// prototxt", "the .caffemodel", ...
std::string file_kind(const google::protobuf::Message& message, bool text) {
  const std::string& type = message.GetDescriptor()->name();
  if (type == "NetParameter") return text ? "the net prototxt" : "the .caffemodel";
  if (type == "SolverParameter") return "the solver prototxt";
  if (type == "SolverState") return "the .solverstate";
  if (type == "BlobProto") return "the .binaryproto";
  return "the " + type + " file";
}

}  // namespace

void read_proto_from_text_string(const std::string& text, google::protobuf::Message* message,
                                 const std::string& source_name) {
  google::protobuf::TextFormat::Parser parser;
  FirstErrorCollector errors(source_name);
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, message)) {
    std::string what = errors.first().empty() ? source_name + ": cannot parse" : errors.first();
    what += " (while reading a " + message->GetDescriptor()->name() + ")";
    const std::string hint =
        brace_mistake_hint(text, *message->GetDescriptor(), errors.first_error());
    if (!hint.empty()) what += "; " + hint;
    throw Error(what);
  }
}

void read_proto_from_text_file(const std::string& path, google::protobuf::Message* message) {
  read_proto_from_text_string(read_input_file(path, file_kind(*message, /*text=*/true)), message,
                              path);
}

void read_proto_from_binary_file(const std::string& path, google::protobuf::Message* message) {
  check_input_file(path, file_kind(*message, /*text=*/false));
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
  // A file_crc32 read from one of our files covers those bytes, not these:
  // leave it out rather than write a checksum that does not match.
  const google::protobuf::FieldDescriptor* checksum =
      message.GetDescriptor()->FindFieldByName("file_crc32");
  if (checksum != nullptr && message.GetReflection()->HasField(message, checksum)) {
    std::unique_ptr<google::protobuf::Message> copy(message.New());
    copy->CopyFrom(message);
    copy->GetReflection()->ClearField(copy.get(), checksum);
    write_proto_to_binary_file(*copy, path);
    return;
  }
  std::string bytes;
  XTRAIN_CHECK(message.SerializeToString(&bytes), "cannot serialise ",
               message.GetDescriptor()->name(), " for '", path,
               "' (over protobuf's 2 GB message limit?)");
  write_file_atomically(path, bytes);
}

std::string serialize_record(const google::protobuf::Message& message, const std::string& what,
                             const std::string& remedy) {
  const std::size_t size = message.ByteSizeLong();
  XTRAIN_CHECK(size <= static_cast<std::size_t>(INT_MAX), what, ": a record of ", size,
               " bytes is more than the 2 GB (", INT_MAX, " bytes) a protobuf message can hold; ",
               remedy);
  std::string bytes;
  XTRAIN_CHECK(message.SerializeToString(&bytes), "cannot serialise ", what);
  return bytes;
}

void write_proto_to_text_file(const google::protobuf::Message& message, const std::string& path) {
  std::string text;
  XTRAIN_CHECK(google::protobuf::TextFormat::PrintToString(message, &text), "cannot print ",
               message.GetDescriptor()->name(), " as text for '", path, "'");
  write_file_atomically(path, text);
}

NetParameter read_net_params_from_text(const std::string& text, const std::string& source) {
  NetParameter param;
  read_proto_from_text_string(text, &param, source);
  upgrade_net_as_needed(source, &param);
  // An empty file parses as a net of nothing, which would "train" with loss 0.
  XTRAIN_CHECK(param.layer_size() > 0, "the net prototxt '", source,
               "' defines no layers (is it empty, or another kind of file?)");
  return param;
}

NetParameter read_net_params_from_text_file(const std::string& path) {
  return read_net_params_from_text(read_input_file(path, "the net prototxt"), path);
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

SolverParameter read_solver_params_from_text(const std::string& text, const std::string& source) {
  SolverParameter param;
  read_proto_from_text_string(text, &param, source);
  upgrade_solver_as_needed(source, &param);
  return param;
}

SolverParameter read_solver_params_from_text_file(const std::string& path) {
  SolverParameter param =
      read_solver_params_from_text(read_input_file(path, "the solver prototxt"), path);
  if (param.has_net()) resolve_net_path(path, param.mutable_net());
  if (param.has_train_net()) resolve_net_path(path, param.mutable_train_net());
  for (std::string& test_net : *param.mutable_test_net()) resolve_net_path(path, &test_net);
  return param;
}

}  // namespace xtrain
