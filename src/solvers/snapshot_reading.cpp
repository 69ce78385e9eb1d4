#include "solvers/snapshot_reading.hpp"

#include <google/protobuf/unknown_field_set.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/hdf5_snapshot.hpp"
#include "core/snapshot_checksum.hpp"
#include "core/truncated_message.hpp"
#include "xtrain/error.hpp"
#include "xtrain/input_file.hpp"

namespace fs = std::filesystem;

namespace xtrain {
namespace {

// NetParameter's `layer` field; a SolverState has no field with this number,
// so seeing it means the file is a net (a .caffemodel).
constexpr int kNetLayerFieldNumber = 100;

bool has_unknown_field(const google::protobuf::Message& message, int number) {
  const google::protobuf::UnknownFieldSet& unknown =
      message.GetReflection()->GetUnknownFields(message);
  for (int i = 0; i < unknown.field_count(); ++i) {
    if (unknown.field(i).number() == number) return true;
  }
  return false;
}


bool is_regular_file(const std::string& path) {
  std::error_code error;
  return fs::is_regular_file(path, error);
}

[[noreturn]] void throw_damaged(const std::string& path) {
  throw Error("'" + path +
              "' is damaged: its checksum does not match its contents (a truncated or "
              "corrupted copy, or a write that was cut off); resume from an earlier snapshot "
              "(--snapshot=auto picks the newest intact one)");
}

// The caller found `bytes` not to be a solver state; say what they are.
[[noreturn]] void throw_not_a_state(const std::string& path, const std::string& bytes) {
  const std::string expected =
      "expected a .solverstate written by xtrain or Caffe (resume with --snapshot=FILE, or "
      "--snapshot=auto to pick the newest)";
  NetParameter as_net;
  if (as_net.ParseFromString(bytes) && as_net.layer_size() > 0) {
    throw Error("'" + path + "' is not a solver state: it is a .caffemodel (the weights of net '" +
                as_net.name() + "', " + std::to_string(as_net.layer_size()) +
                " layers). To resume training, give the .solverstate written next to it; to "
                "start a new training from these weights, pass them with --weights instead");
  }
  if (bytes.empty()) throw Error("'" + path + "' is not a solver state: it is empty; " + expected);
  if (looks_cut_short(bytes, *SolverState::descriptor())) {
    throw Error("'" + path + "' is a solver state cut short (" + std::to_string(bytes.size()) +
                " bytes, ending inside a field): an interrupted write or an incomplete copy; "
                "resume from an earlier snapshot (--snapshot=auto picks the newest intact one)");
  }
  const bool printable =
      bytes.find('\0') == std::string::npos &&
      (bytes.find('{') != std::string::npos || bytes.find(':') != std::string::npos);
  if (printable) {
    throw Error("'" + path + "' is not a solver state: it is a text file (a prototxt?); " +
                expected);
  }
  throw Error("'" + path + "' is not a solver state: it is not a binary SolverState with an " +
              "iteration or a history; " + expected);
}

SolverState read_binary_state(const std::string& path) {
  const std::string bytes = read_input_file(path, "the solver state");
  if (check_checksum_trailer(bytes) == ChecksumStatus::kMismatch) throw_damaged(path);
  SolverState state;
  const bool parsed = state.ParseFromString(bytes);
  const bool is_state = parsed && (state.has_iter() || state.history_size() > 0) &&
                        !has_unknown_field(state, kNetLayerFieldNumber);
  if (!is_state) throw_not_a_state(path, bytes);
  return state;
}

}  // namespace

SolverState read_solver_state_file(const std::string& path) {
  if (!is_regular_file(path)) check_input_file(path, "the solver state");  // missing, a directory
  XTRAIN_CHECK(is_regular_file(path), "the solver state '", path,
               "' is not a regular file (a device or a pipe); give a .solverstate, or "
               "--snapshot=auto for the newest");
  if (looks_like_hdf5(path)) return read_solver_state_hdf5(path);
  const bool named_hdf5 = path.size() > 3 && path.compare(path.size() - 3, 3, ".h5") == 0;
  XTRAIN_CHECK(!named_hdf5, "'", path,
               "' is named like an HDF5 solver state but is not an HDF5 file (truncated, or "
               "another kind of file); expected a .solverstate.h5 written with "
               "snapshot_format: HDF5");
  return read_binary_state(path);
}

std::string locate_learned_net(const SolverState& state, const std::string& state_path) {
  XTRAIN_CHECK(state.has_learned_net() && !state.learned_net().empty(), "the solver state '",
               state_path, "' names no weights file (learned_net is empty)");
  const std::string& learned_net = state.learned_net();
  if (is_regular_file(learned_net)) return learned_net;
  const fs::path state_dir = fs::path(state_path).parent_path();
  std::vector<std::string> tried = {learned_net};
  if (fs::path(learned_net).is_relative()) tried.push_back((state_dir / learned_net).string());
  tried.push_back((state_dir / fs::path(learned_net).filename()).string());
  for (std::size_t i = 1; i < tried.size(); ++i) {
    if (is_regular_file(tried[i])) return tried[i];
  }
  std::string list;
  for (const std::string& candidate : tried) list += (list.empty() ? "'" : ", '") + candidate + "'";
  throw Error("the solver state '" + state_path + "' needs the weights '" + learned_net +
              "' written with it, which cannot be found (tried " + list +
              "); put the .caffemodel back next to the .solverstate");
}

void check_weights_belong_to_state(const std::string& weights_path, const SolverState& state,
                                   const std::string& state_path) {
  const ResumeState& resume = state.resume();
  if (resume.has_learned_net_size() && resume.has_learned_net_crc32()) {
    const FileDigest digest = digest_file(weights_path);
    XTRAIN_CHECK(
        digest.size == resume.learned_net_size() && digest.crc32 == resume.learned_net_crc32(),
        "the weights '", weights_path, "' do not match the solver state '", state_path,
        "': the state was written with a file of ", resume.learned_net_size(), " bytes (CRC-32 ",
        resume.learned_net_crc32(), "), this one has ", digest.size, " bytes (CRC-32 ",
        digest.crc32,
        "). It is damaged or from another snapshot; resume from an earlier snapshot "
        "(--snapshot=auto picks the newest intact one)");
    return;
  }
  if (looks_like_hdf5(weights_path)) {
    read_net_hdf5(weights_path);  // throws if it is not a readable .caffemodel.h5
    return;
  }
  // Written by Caffe (or without a digest): the file's own trailer if it has
  // one, and that it parses as a net with layers.
  const std::string bytes = read_input_file(weights_path, "the weights");
  if (check_checksum_trailer(bytes) == ChecksumStatus::kMismatch) throw_damaged(weights_path);
  NetParameter net;
  XTRAIN_CHECK(net.ParseFromString(bytes) && net.layer_size() > 0, "'", weights_path,
               "', the weights named by the solver state '", state_path,
               "', is not a .caffemodel (truncated or another kind of file)");
}

}  // namespace xtrain
