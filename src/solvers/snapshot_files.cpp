#include "xtrain/snapshot_files.hpp"

#include <algorithm>
#include <filesystem>
#include <regex>

#include "solvers/snapshot_reading.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace fs = std::filesystem;

namespace xtrain {
namespace {

std::string escape_for_regex(const std::string& text) {
  static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
  return std::regex_replace(text, special, R"(\$&)");
}

// The directory to look in and the file-name prefix within it.
std::pair<fs::path, std::string> split_prefix(const std::string& prefix) {
  const fs::path path(prefix);
  fs::path directory = path.parent_path();
  if (directory.empty()) directory = ".";
  return {directory, path.filename().string()};
}

void remove_file(const std::string& path, std::vector<std::string>* removed) {
  std::error_code error;
  if (fs::remove(path, error)) {
    removed->push_back(path);
  } else if (error) {
    XLOG(WARNING) << "Cannot remove the old snapshot file '" << path << "': " << error.message();
  }
}

}  // namespace

std::vector<SnapshotOnDisk> list_snapshots(const std::string& prefix) {
  const auto [directory, stem] = split_prefix(prefix);
  const std::regex name(escape_for_regex(stem) + R"(_iter_(\d+)\.solverstate(\.h5)?)");
  std::vector<SnapshotOnDisk> found;
  std::error_code error;
  for (fs::directory_iterator it(directory, error), end; !error && it != end; it.increment(error)) {
    const std::string file = it->path().filename().string();
    std::smatch match;
    if (!std::regex_match(file, match, name)) continue;
    SnapshotOnDisk snapshot;
    try {
      snapshot.iter = std::stoi(match[1].str());
    } catch (const std::exception&) {
      continue;  // an iteration beyond int: not ours
    }
    snapshot.hdf5 = match[2].matched;
    // Named the way the solver names them, so paths compare equal.
    snapshot.solverstate_path =
        fs::path(prefix).parent_path().empty() ? file : (directory / file).string();
    found.push_back(snapshot);
  }
  std::sort(found.begin(), found.end(), [](const SnapshotOnDisk& a, const SnapshotOnDisk& b) {
    return a.iter != b.iter ? a.iter > b.iter : a.hdf5 < b.hdf5;
  });
  return found;
}

std::string snapshot_problem(const std::string& solverstate_path) {
  try {
    const SolverState state = read_solver_state_file(solverstate_path);
    const std::string weights = locate_learned_net(state, solverstate_path);
    check_weights_belong_to_state(weights, state, solverstate_path);
    return "";
  } catch (const Error& error) {
    return error.what();
  }
}

std::string find_latest_valid_snapshot(const std::string& prefix,
                                       std::vector<std::string>* skipped) {
  for (const SnapshotOnDisk& snapshot : list_snapshots(prefix)) {
    const std::string problem = snapshot_problem(snapshot.solverstate_path);
    if (problem.empty()) return snapshot.solverstate_path;
    if (skipped != nullptr) skipped->push_back(snapshot.solverstate_path + ": " + problem);
  }
  return "";
}

std::vector<std::string> remove_stale_temporary_files(const std::string& prefix) {
  const auto [directory, stem] = split_prefix(prefix);
  const std::regex name(escape_for_regex(stem) +
                        R"(_iter_\d+\.(caffemodel|solverstate)(\.h5)?\.tmp\.\w{6})");
  std::vector<std::string> removed;
  std::error_code error;
  for (fs::directory_iterator it(directory, error), end; !error && it != end; it.increment(error)) {
    if (std::regex_match(it->path().filename().string(), name)) {
      remove_file(it->path().string(), &removed);
    }
  }
  return removed;
}

std::vector<std::string> remove_old_snapshots(const std::string& prefix, int keep) {
  std::vector<std::string> removed;
  if (keep <= 0) return removed;
  const std::vector<SnapshotOnDisk> snapshots = list_snapshots(prefix);
  for (std::size_t i = static_cast<std::size_t>(keep); i < snapshots.size(); ++i) {
    const std::string& state_path = snapshots[i].solverstate_path;
    // The weights sit next to the state under the same name.
    const std::string suffix = snapshots[i].hdf5 ? ".solverstate.h5" : ".solverstate";
    const std::string weights_path = state_path.substr(0, state_path.size() - suffix.size()) +
                                     (snapshots[i].hdf5 ? ".caffemodel.h5" : ".caffemodel");
    // The state first: a kill in between leaves stray weights, never a
    // state whose weights are gone.
    remove_file(state_path, &removed);
    remove_file(weights_path, &removed);
  }
  return removed;
}

}  // namespace xtrain
