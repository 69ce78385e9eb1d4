#include "core/thread_device_work.hpp"

#include <algorithm>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace xtrain {
namespace {

// Every thread's drains in one list, each with its thread: a drain object
// may be destroyed on another thread than the one that made it (a solver
// that a replica thread ran, destroyed by the main thread), and must then
// still leave the list.
struct Registered {
  std::thread::id thread;
  const std::function<void()>* drain;
};
std::mutex drains_mutex;
std::vector<Registered>& drains() {
  static auto* registered = new std::vector<Registered>();  // never destroyed: used at exit
  return *registered;
}

// The running layer: pointers to the caller's strings, which outlive the
// RunningLayer that stores them. A pointer store per pass, no allocation.
thread_local const std::string* running_name = nullptr;
thread_local const char* running_type = nullptr;
thread_local const char* running_pass = nullptr;

}  // namespace

PendingWorkDrain::PendingWorkDrain(std::function<void()> drain) : drain_(std::move(drain)) {
  const std::lock_guard<std::mutex> lock(drains_mutex);
  drains().push_back({std::this_thread::get_id(), &drain_});
}

PendingWorkDrain::~PendingWorkDrain() {
  const std::lock_guard<std::mutex> lock(drains_mutex);
  auto& registered = drains();
  registered.erase(std::remove_if(registered.begin(), registered.end(),
                                  [this](const Registered& r) { return r.drain == &drain_; }),
                   registered.end());
}

int drain_pending_work() {
  std::vector<const std::function<void()>*> mine;
  {
    const std::lock_guard<std::mutex> lock(drains_mutex);
    for (const Registered& r : drains()) {
      if (r.thread == std::this_thread::get_id()) mine.push_back(r.drain);
    }
  }
  // Outside the lock: a drain waits, and may start or end other work.
  for (auto it = mine.rbegin(); it != mine.rend(); ++it) (**it)();
  return static_cast<int>(mine.size());
}

std::string running_layer() {
  if (!running_name) return "";
  return "layer '" + *running_name + "' (" + running_type + "), " + running_pass;
}

RunningLayer::RunningLayer(const std::string& name, const char* type, const char* pass)
    : previous_name_(running_name), previous_type_(running_type), previous_pass_(running_pass) {
  running_name = &name;
  running_type = type;
  running_pass = pass;
}

RunningLayer::~RunningLayer() {
  running_name = previous_name_;
  running_type = previous_type_;
  running_pass = previous_pass_;
}

}  // namespace xtrain
