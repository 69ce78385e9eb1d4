// Turning SIGINT, SIGHUP, SIGTERM and SIGUSR1 into requests the solver polls
// between iterations: the handler only sets a flag, the solver acts on it at
// a safe point (never in the middle of an update or a snapshot).
//
// Batch schedulers warn before they kill: Slurm sends SIGTERM at the time
// limit (and SIGUSR1 early with --signal=USR1@120), LSF its warning action
// signal. Hence the defaults: SIGINT, SIGTERM and SIGUSR1 stop (which
// snapshots, as snapshot_after_train is on by default), SIGHUP snapshots and
// goes on, as in Caffe.
#pragma once

#include <csignal>
#include <string>
#include <vector>

#include "xtrain/solver.hpp"

namespace xtrain::cli {

enum class SignalEffect { kStop, kSnapshot, kNone };

// "stop" | "snapshot" | "none"; throws xtrain::Error naming the flag otherwise.
SignalEffect parse_signal_effect(const std::string& flag_name, const std::string& value);

struct SignalRule {
  int signal_number;
  SignalEffect effect;
};

// Installs the handlers; restores the previous ones when destroyed.
class SignalActions {
 public:
  explicit SignalActions(std::vector<SignalRule> rules);
  ~SignalActions();
  SignalActions(const SignalActions&) = delete;
  SignalActions& operator=(const SignalActions&) = delete;

  // What the solver should do now (consumes pending signals; a stop wins
  // over a snapshot).
  Solver::Action poll();
  // The last signal that asked to stop (0: none).
  int stop_signal() const { return stop_signal_; }

 private:
  std::vector<SignalRule> rules_;
  std::vector<struct sigaction> previous_;
  int stop_signal_ = 0;
};

}  // namespace xtrain::cli
