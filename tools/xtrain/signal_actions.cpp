#include "signal_actions.hpp"

#include <csignal>

#include <atomic>

#include "xtrain/error.hpp"

namespace xtrain::cli {
namespace {
std::atomic<bool> g_got_sigint{false};
std::atomic<bool> g_got_sighup{false};
struct sigaction g_previous_sigint;
struct sigaction g_previous_sighup;

void on_signal(int signal_number) {
  if (signal_number == SIGINT) g_got_sigint = true;
  if (signal_number == SIGHUP) g_got_sighup = true;
}

Solver::Action to_action(SignalEffect effect) {
  switch (effect) {
    case SignalEffect::kStop: return Solver::Action::kStop;
    case SignalEffect::kSnapshot: return Solver::Action::kSnapshot;
    case SignalEffect::kNone: return Solver::Action::kNone;
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

SignalActions::SignalActions(SignalEffect on_sigint, SignalEffect on_sighup)
    : on_sigint_(on_sigint), on_sighup_(on_sighup) {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, &g_previous_sigint);
  sigaction(SIGHUP, &action, &g_previous_sighup);
}

SignalActions::~SignalActions() {
  sigaction(SIGINT, &g_previous_sigint, nullptr);
  sigaction(SIGHUP, &g_previous_sighup, nullptr);
}

Solver::Action SignalActions::poll() {
  if (g_got_sigint.exchange(false)) return to_action(on_sigint_);
  if (g_got_sighup.exchange(false)) return to_action(on_sighup_);
  return Solver::Action::kNone;
}

}  // namespace xtrain::cli
