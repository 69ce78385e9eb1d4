// Snapshots (.caffemodel + .solverstate) and resuming from them.
//
// A .solverstate holds the iteration, the schedule position (current_step),
// the update rule's history blobs and the path of the .caffemodel written
// with it. Restoring checks that the file really is a solver state for this
// net before touching anything, because the common mistake is to pass the
// .caffemodel instead.
#include <google/protobuf/unknown_field_set.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/proto_io.hpp"
#include "xtrain/solver.hpp"

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

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_regular_file(const std::string& path) {
  std::error_code error;
  return fs::is_regular_file(path, error);
}

}  // namespace

std::string Solver::snapshot_filename(const std::string& extension) const {
  return param_.snapshot_prefix() + "_iter_" + std::to_string(iter_) + extension;
}

void Solver::check_snapshot_settings() const {
  XTRAIN_CHECK(param_.snapshot_format() != SolverParameter::HDF5,
               "HDF5 snapshots are not supported yet; use snapshot_format: BINARYPROTO");
  XTRAIN_CHECK(param_.snapshot() >= 0,
               "snapshot must be >= 0 (iterations between snapshots; "
               "0: none), got ",
               param_.snapshot());
  if (!options_.is_root) return;
  if (param_.snapshot() == 0 && !param_.snapshot_after_train()) return;
  if (param_.snapshot_prefix().empty()) {
    XLOG(WARNING) << "snapshot_prefix is not set: snapshots will be written as "
                     "'_iter_<N>.caffemodel' in the working directory (as Caffe 1.0 does); "
                     "set snapshot_prefix in the solver";
  }
  // Find out now, not after hours of training, that snapshots cannot be
  // written there.
  const std::string probe = snapshot_filename(".tempfile");
  std::ofstream probe_file(probe);
  XTRAIN_CHECK(probe_file.good(), "cannot write snapshots with snapshot_prefix '",
               param_.snapshot_prefix(), "': creating '", probe, "' failed (", std::strerror(errno),
               "); make sure the directory exists and is writable");
  probe_file.close();
  std::remove(probe.c_str());
}

std::vector<std::string> Solver::snapshot() {
  std::vector<std::string>& written = last_snapshot_paths_;
  written.clear();
  const std::string model_path = snapshot_filename(".caffemodel");
  XLOG(INFO) << "Snapshotting to binary proto file " << model_path;
  try {
    NetParameter net_param;
    net_->to_proto(&net_param, param_.snapshot_diff());
    write_proto_to_binary_file(net_param, model_path);
    written.push_back(model_path);
  } catch (const Error& error) {
    // A state without its weights is useless, so skip it too.
    XLOG(ERROR) << "Snapshot failed (training continues): " << error.what();
    return written;
  }

  const std::string state_path = snapshot_filename(".solverstate");
  XLOG(INFO) << "Snapshotting solver state to binary proto file " << state_path;
  try {
    SolverState state;
    state.set_iter(iter_);
    state.set_learned_net(model_path);
    state.set_current_step(current_step_);
    write_history(&state);
    write_proto_to_binary_file(state, state_path);
    written.push_back(state_path);
  } catch (const Error& error) {
    XLOG(ERROR) << "Snapshot of the solver state failed (training continues): " << error.what();
  }
  return written;
}

void Solver::restore(const std::string& path) {
  XTRAIN_CHECK(!ends_with(path, ".h5"), "'", path,
               "' is an HDF5 solver state; HDF5 snapshots are not supported yet (resume from a "
               ".solverstate written with snapshot_format: BINARYPROTO)");
  {
    std::ifstream probe(path, std::ios::binary);
    XTRAIN_CHECK(probe.good(), "cannot open solver state '", path, "': ", std::strerror(errno));
  }

  SolverState state;
  bool parsed = true;
  try {
    read_proto_from_binary_file(path, &state);
  } catch (const Error&) {
    parsed = false;
  }
  const bool is_state = parsed && (state.has_iter() || state.history_size() > 0) &&
                        !has_unknown_field(state, kNetLayerFieldNumber);
  if (!is_state) {
    NetParameter as_net;
    bool is_net = false;
    try {
      read_proto_from_binary_file(path, &as_net);
      is_net = as_net.layer_size() > 0;
    } catch (const Error&) {
    }
    if (is_net) {
      throw Error("'" + path + "' is not a solver state of this net: it is a .caffemodel (the " +
                  "weights of net '" + as_net.name() + "', " + std::to_string(as_net.layer_size()) +
                  " layers). To resume training, give the .solverstate written next to it; to "
                  "start a new training from these weights, load them as weights (--weights) "
                  "instead");
    }
    throw Error("'" + path + "' is not a solver state of this net: it is not a binary " +
                "SolverState with an iteration or a history (expected a .solverstate written "
                "for this net; got a .caffemodel?)");
  }

  // Validate everything before changing anything.
  check_history(state, path);
  std::string weights_path;
  if (state.has_learned_net()) weights_path = resolve_learned_net(state.learned_net(), path);

  if (!weights_path.empty()) {
    XLOG(INFO) << "Restoring weights from " << weights_path;
    net_->copy_trained_layers_from(weights_path);
  }
  iter_ = state.iter();
  current_step_ = state.current_step();
  read_history(state);
  XLOG(INFO) << "Restored solver state from " << path << " at iteration " << iter_;
}

std::string Solver::resolve_learned_net(const std::string& learned_net,
                                        const std::string& solverstate_path) const {
  if (is_regular_file(learned_net)) return learned_net;
  // The path was written relative to the training's working directory; the
  // snapshot pair may have moved since, so look next to the solver state.
  const fs::path state_dir = fs::path(solverstate_path).parent_path();
  std::vector<std::string> tried = {learned_net};
  if (fs::path(learned_net).is_relative()) tried.push_back((state_dir / learned_net).string());
  tried.push_back((state_dir / fs::path(learned_net).filename()).string());
  for (std::size_t i = 1; i < tried.size(); ++i) {
    if (is_regular_file(tried[i])) {
      XLOG(INFO) << "The solver state names weights '" << learned_net
                 << "', which do not exist here; using '" << tried[i] << "'";
      return tried[i];
    }
  }
  std::string list;
  for (const std::string& candidate : tried) list += (list.empty() ? "'" : ", '") + candidate + "'";
  throw Error("the solver state '" + solverstate_path + "' needs the weights '" + learned_net +
              "' written with it, which cannot be found (tried " + list +
              "); put the .caffemodel back next to the .solverstate");
}

void fill_default_snapshot_prefix(SolverParameter* param, const std::string& solver_file) {
  const fs::path solver_path(solver_file);
  if (param->snapshot_prefix().empty()) {
    fs::path prefix = solver_path;
    prefix.replace_extension();
    param->set_snapshot_prefix(prefix.string());
    XLOG(INFO) << "snapshot_prefix was not set; using " << param->snapshot_prefix();
    return;
  }
  std::error_code error;
  const std::string& prefix = param->snapshot_prefix();
  if (ends_with(prefix, "/") || fs::is_directory(prefix, error)) {
    param->set_snapshot_prefix((fs::path(prefix) / solver_path.stem()).string());
    XLOG(INFO) << "snapshot_prefix names a directory; using " << param->snapshot_prefix();
  }
}

}  // namespace xtrain
