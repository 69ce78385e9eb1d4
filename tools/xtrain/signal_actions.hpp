// Turning SIGINT/SIGHUP into requests the solver polls between iterations:
// the handler only sets a flag, the solver acts on it at a safe point.
#pragma once

#include <string>

#include "xtrain/solver.hpp"

namespace xtrain::cli {

enum class SignalEffect { kStop, kSnapshot, kNone };

// "stop" | "snapshot" | "none"; throws xtrain::Error naming the flag otherwise.
SignalEffect parse_signal_effect(const std::string& flag_name, const std::string& value);

// Installs the handlers; restores the previous ones when destroyed.
class SignalActions {
 public:
  SignalActions(SignalEffect on_sigint, SignalEffect on_sighup);
  ~SignalActions();
  SignalActions(const SignalActions&) = delete;
  SignalActions& operator=(const SignalActions&) = delete;

  // What the solver should do now (consumes the pending signal).
  Solver::Action poll();

 private:
  SignalEffect on_sigint_;
  SignalEffect on_sighup_;
};

}  // namespace xtrain::cli
