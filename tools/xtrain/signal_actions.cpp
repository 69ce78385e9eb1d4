#include "signal_actions.hpp"

#include <atomic>

#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::cli {
namespace {
// One pending flag per signal number; async-signal-safe to set.
constexpr int kMaxSignal = 65;
std::atomic<bool> g_pending[kMaxSignal];

void on_signal(int signal_number) {
  if (signal_number > 0 && signal_number < kMaxSignal) g_pending[signal_number] = true;
}

Solver::Action to_action(SignalEffect effect) {
  switch (effect) {
    case SignalEffect::kStop:
      return Solver::Action::kStop;
    case SignalEffect::kSnapshot:
      return Solver::Action::kSnapshot;
    case SignalEffect::kNone:
      return Solver::Action::kNone;
  }
  return Solver::Action::kNone;
}
}  // namespace

SignalEffect parse_signal_effect(const std::string& flag_name, const std::string& value) {
  if (value == "stop") return SignalEffect::kStop;
  if (value == "snapshot") return SignalEffect::kSnapshot;
  if (value == "none") return SignalEffect::kNone;
  throw Error("--" + flag_name + "=" + value + ": use stop, snapshot or none");
}

SignalActions::SignalActions(std::vector<SignalRule> rules)
    : rules_(std::move(rules)), previous_(rules_.size()) {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (std::size_t i = 0; i < rules_.size(); ++i) {
    XTRAIN_ASSERT(rules_[i].signal_number > 0 && rules_[i].signal_number < kMaxSignal,
                  "signal number ", rules_[i].signal_number);
    g_pending[rules_[i].signal_number] = false;
    sigaction(rules_[i].signal_number, &action, &previous_[i]);
  }
}

SignalActions::~SignalActions() {
  for (std::size_t i = 0; i < rules_.size(); ++i) {
    sigaction(rules_[i].signal_number, &previous_[i], nullptr);
  }
}

Solver::Action SignalActions::poll() {
  Solver::Action action = Solver::Action::kNone;
  for (const SignalRule& rule : rules_) {
    if (!g_pending[rule.signal_number].exchange(false)) continue;
    const Solver::Action requested = to_action(rule.effect);
    XLOG(INFO) << "Received " << strsignal(rule.signal_number) << " (signal " << rule.signal_number
               << "): "
               << (requested == Solver::Action::kStop       ? "stopping"
                   : requested == Solver::Action::kSnapshot ? "snapshotting"
                                                            : "ignored");
    if (requested == Solver::Action::kStop) stop_signal_ = rule.signal_number;
    if (requested == Solver::Action::kStop || action == Solver::Action::kNone) action = requested;
  }
  return action;
}

}  // namespace xtrain::cli
