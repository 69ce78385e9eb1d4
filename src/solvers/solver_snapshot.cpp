// Snapshots (.caffemodel + .solverstate) and resuming from them.
//
// Writing: the weights first, then the state, which names the weights and
// records their size and CRC-32; each file appears atomically (temp file,
// fsync, rename), so a kill at any instant leaves the previous snapshot
// whole. A write that fails (full disk, permissions) is logged and training
// goes on. Only after a complete snapshot are old ones removed
// (snapshot_keep).
//
// Reading: every check (kind of file, checksums, weights belong to the
// state, history fits the net) happens before anything changes. Besides
// Caffe's fields, our states carry ResumeState: the run's seed, every
// layer's random stream and every data layer's position, so training goes on
// with the same numbers as if it had never stopped. A Caffe-written state
// lacks them; training then resumes with the weights and history exact and a
// warning saying what is not.
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "core/hdf5_snapshot.hpp"
#include "core/snapshot_checksum.hpp"
#include "core/weights_file.hpp"
#include "solvers/loss_scaler.hpp"
#include "solvers/observers.hpp"
#include "solvers/snapshot_reading.hpp"
#include "xtrain/atomic_file.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/snapshot_files.hpp"
#include "xtrain/solver.hpp"

namespace xtrain {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string Solver::snapshot_filename(const std::string& extension) const {
  return param_.snapshot_prefix() + "_iter_" + std::to_string(iter_) + extension;
}

void Solver::check_snapshot_settings() const {
  XTRAIN_CHECK(param_.snapshot() >= 0,
               "snapshot must be >= 0 (iterations between snapshots; 0: none), got ",
               param_.snapshot());
  XTRAIN_CHECK(param_.snapshot_keep() >= 0,
               "snapshot_keep must be >= 0 (snapshots to keep; 0: all), got ",
               param_.snapshot_keep());
  XTRAIN_CHECK(param_.snapshot_minutes() >= 0,
               "snapshot_minutes must be >= 0 (0: no timed snapshots), got ",
               param_.snapshot_minutes());
  XTRAIN_CHECK(param_.max_seconds() >= 0, "max_seconds must be >= 0 (0: no time budget), got ",
               param_.max_seconds());
  if (!options_.is_root) return;
  if (param_.snapshot() == 0 && !param_.snapshot_after_train() && param_.snapshot_minutes() == 0 &&
      param_.max_seconds() == 0) {
    return;
  }
  if (param_.snapshot_prefix().empty()) {
    XLOG(WARNING) << "snapshot_prefix is not set: snapshots will be written as "
                     "'_iter_<N>.caffemodel' in the working directory (as Caffe 1.0 does); "
                     "set snapshot_prefix in the solver";
  }
  // Find out now, not after hours of training, that snapshots cannot be
  // written there.
  try {
    write_file_atomically(snapshot_filename(".probe"), "");
  } catch (const Error& error) {
    throw Error("cannot write snapshots with snapshot_prefix '" + param_.snapshot_prefix() +
                "': " + error.what() + "; make sure the directory exists and is writable");
  }
  std::remove(snapshot_filename(".probe").c_str());
}

void Solver::fill_resume_state(ResumeState* resume) const {
  resume->set_random_seed(seed_);
  net_->save_resume_state(resume->mutable_train_net());
  for (const auto& test_net : test_nets_) test_net->save_resume_state(resume->add_test_net());
  resume->set_train_seconds(train_seconds_before_ + seconds_since(session_start_));
  loss_scaler_->save(resume);
}

std::vector<std::string> Solver::snapshot() {
  std::vector<std::string>& written = last_snapshot_paths_;
  written.clear();
  // Replicas hold the same weights and history: the root writes them, and
  // the others count the snapshot as taken (they exit as the root does).
  if (!options_.is_root) {
    last_snapshot_iter_ = iter_;
    return written;
  }
  const auto start = std::chrono::steady_clock::now();
  const bool hdf5 = param_.snapshot_format() == SolverParameter::HDF5;
  const std::string model_path = snapshot_filename(hdf5 ? ".caffemodel.h5" : ".caffemodel");
  const std::string state_path = snapshot_filename(hdf5 ? ".solverstate.h5" : ".solverstate");
  try {
    NetParameter net_param;
    net_->to_proto(&net_param, param_.snapshot_diff());
    XLOG(INFO) << "Snapshotting to " << (hdf5 ? "HDF5" : "binary proto") << " file " << model_path;
    FileDigest digest;
    if (hdf5) {
      write_net_hdf5(net_param, model_path, param_.snapshot_diff());
      digest = digest_file(model_path);
    } else {
      const std::string bytes = serialize_with_checksum(net_param, model_path);
      write_file_atomically(model_path, bytes);
      digest = FileDigest{bytes.size(), crc32_of(bytes)};
    }
    written.push_back(model_path);

    SolverState state;
    state.set_iter(iter_);
    state.set_learned_net(model_path);
    state.set_current_step(current_step_);
    write_history(&state);
    fill_resume_state(state.mutable_resume());
    state.mutable_resume()->set_learned_net_size(digest.size);
    state.mutable_resume()->set_learned_net_crc32(digest.crc32);
    XLOG(INFO) << "Snapshotting solver state to " << (hdf5 ? "HDF5" : "binary proto") << " file "
               << state_path;
    try {
      if (hdf5) {
        write_solver_state_hdf5(state, state_path);
      } else {
        write_file_atomically(state_path, serialize_with_checksum(state, state_path));
      }
    } catch (const Error&) {
      // Weights without their state cannot be resumed from; don't leave them.
      std::remove(model_path.c_str());
      written.clear();
      throw;
    }
    written.push_back(state_path);
  } catch (const Error& error) {
    XLOG(ERROR) << "Snapshot at iteration " << iter_
                << " failed; training continues and earlier snapshots are kept: " << error.what();
    return written;
  }
  last_snapshot_iter_ = iter_;
  last_snapshot_time_ = std::chrono::steady_clock::now();
  SnapshotWritten event;
  event.iteration = iter_;
  event.paths = written;
  event.write_seconds = seconds_since(start);
  for (const std::string& removed :
       remove_old_snapshots(param_.snapshot_prefix(), param_.snapshot_keep())) {
    XLOG(INFO) << "Removed old snapshot file " << removed
               << " (snapshot_keep: " << param_.snapshot_keep() << ")";
  }
  for (const std::string& removed : remove_stale_temporary_files(param_.snapshot_prefix())) {
    XLOG(INFO) << "Removed " << removed << ", left by a snapshot write that was cut off";
  }
  // After the old ones are gone, so that a report lists what is on disk.
  notify(observers_, &TrainingObserver::on_snapshot, event);
  return written;
}

void Solver::restore(const std::string& path) {
  const SolverState state = read_solver_state_file(path);
  // Validate everything before changing anything.
  check_history(state, path);
  std::string weights_path;
  if (state.has_learned_net() && !state.learned_net().empty()) {
    weights_path = locate_learned_net(state, path);
    if (weights_path != state.learned_net()) {
      XLOG(INFO) << "The solver state names weights '" << state.learned_net()
                 << "', which do not exist here; using '" << weights_path << "'";
    }
    check_weights_belong_to_state(weights_path, state, path);
  }
  NetParameter weights;
  if (!weights_path.empty()) weights = read_weights_file(weights_path);

  // Data layers can move to their position only before they start reading:
  // apply the resume state first, so a solver that already trained fails
  // here without having changed its weights.
  if (state.has_resume()) {
    restore_resume_state(state.resume(), path);
  } else {
    XLOG(WARNING) << "'" << path
                  << "' has the weights, iteration and update history (resumed exactly) but no "
                     "data-reader positions or random-stream states (Caffe does not save "
                     "them): the data layers start again from their first record and shuffles, "
                     "augmentation and dropout draw new random numbers";
  }
  if (!weights_path.empty()) {
    XLOG(INFO) << "Restoring weights from " << weights_path;
    net_->copy_trained_layers_from(weights);
  }
  iter_ = state.iter();
  current_step_ = state.current_step();
  read_history(state);
  last_snapshot_iter_ = iter_;
  XLOG(INFO) << "Restored solver state from " << path << " at iteration " << iter_;
}

void Solver::restore_resume_state(const ResumeState& resume, const std::string& path) {
  auto warn_missing = [&](const std::vector<std::string>& missing, const std::string& net) {
    if (missing.empty()) return;
    std::string names;
    for (const std::string& name : missing) names += (names.empty() ? "" : ", ") + name;
    XLOG(WARNING) << "'" << path << "' has no resume state for layer(s) " << names << " of the "
                  << net << " (the net changed since the snapshot?); they continue from a "
                  << "fresh state";
  };
  warn_missing(net_->restore_resume_state(resume.train_net()), "train net");
  if (options_.is_root && resume.test_net_size() != static_cast<int>(test_nets_.size())) {
    XLOG(WARNING) << "'" << path << "' has resume states for " << resume.test_net_size()
                  << " test nets, the solver has " << test_nets_.size()
                  << "; the test nets without one start from their first record";
  }
  for (int i = 0; i < resume.test_net_size() && i < static_cast<int>(test_nets_.size()); ++i) {
    warn_missing(test_nets_[i]->restore_resume_state(resume.test_net(i)),
                 "test net #" + std::to_string(i));
  }
  if (resume.has_random_seed()) seed_ = resume.random_seed();
  train_seconds_before_ = resume.train_seconds();
  loss_scaler_->restore(resume);
  net_->set_loss_scale(loss_scaler_->scale());
}

void fill_default_snapshot_prefix(SolverParameter* param, const std::string& solver_file) {
  namespace fs = std::filesystem;
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
