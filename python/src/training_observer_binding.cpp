// Training events for Python: solver.add_observer(callback) calls
// callback(kind, event) with kind "start", "iteration", "display", "test",
// "snapshot" or "end" and the event as a dict, on the training thread with
// the GIL taken. The package's progress bar (python/xtrain/progress.py) is
// one such observer; a notebook may add its own.
//
// A callback that raises stops training after the iteration, as Ctrl-C does:
// the exception stays set, the solver's stop request (solver_binding.cpp)
// sees it, and step()/solve() raise it once they return. No Python runs
// while it is set.
#include <pybind11/stl.h>

#include <map>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "xtrain/solver.hpp"
#include "xtrain/training_observer.hpp"

namespace py = pybind11;

namespace xtrain::python {
namespace {

py::dict outputs_dict(const std::vector<NetOutputValue>& outputs) {
  // A blob of several values gives name[0], name[1], ... as the metrics file does.
  std::map<std::string, int> count;
  for (const auto& output : outputs) ++count[output.name];
  std::map<std::string, int> seen;
  py::dict values;
  for (const auto& output : outputs) {
    const int index = seen[output.name]++;
    const std::string name =
        count[output.name] > 1 ? output.name + "[" + std::to_string(index) + "]" : output.name;
    values[py::str(name)] = output.value;
  }
  return values;
}

class PythonObserver : public TrainingObserver {
 public:
  // Made and dropped with the GIL taken (from Python, with its solver).
  explicit PythonObserver(py::function callback) : callback_(std::move(callback)) {}

  void on_start(const TrainingStart& event) override {
    send("start", [&] {
      return py::dict(py::arg("iteration") = event.iteration, py::arg("max_iter") = event.max_iter,
                      py::arg("resumed") = event.resumed);
    });
  }
  void on_display(const TrainingDisplay& event) override {
    send("display", [&] {
      py::dict values(py::arg("iteration") = event.iteration, py::arg("max_iter") = event.max_iter,
                      py::arg("loss") = event.smoothed_loss,
                      py::arg("final_pass") = event.final_pass,
                      py::arg("outputs") = outputs_dict(event.outputs));
      if (!event.final_pass) {
        values["learning_rate"] = event.learning_rate;
        values["iterations_per_second"] = event.iterations_per_second;
        if (event.images_per_second >= 0) values["images_per_second"] = event.images_per_second;
        values["loss_scale"] = event.loss_scale;
      }
      return values;
    });
  }
  void on_test(const TestDone& event) override {
    send("test", [&] {
      py::dict values(py::arg("iteration") = event.iteration, py::arg("test_net") = event.test_net,
                      py::arg("outputs") = outputs_dict(event.outputs));
      if (event.has_loss) values["loss"] = event.loss;
      return values;
    });
  }
  void on_snapshot(const SnapshotWritten& event) override {
    send("snapshot", [&] {
      return py::dict(py::arg("iteration") = event.iteration, py::arg("paths") = event.paths);
    });
  }
  void on_end(const TrainingEnd& event) override {
    send("end", [&] {
      return py::dict(py::arg("iteration") = event.iteration,
                      py::arg("stopped_early") = event.stopped_early);
    });
  }
  void on_iteration(int iteration) {
    send("iteration", [&] { return py::dict(py::arg("iteration") = iteration); });
  }

 private:
  template <typename MakeEvent>
  void send(const char* kind, MakeEvent&& make_event) {
    py::gil_scoped_acquire gil;
    if (PyErr_Occurred() != nullptr) return;  // training is stopping for it
    try {
      callback_(kind, make_event());
    } catch (py::error_already_set& error) {
      error.restore();
    }
  }

  py::function callback_;
};

}  // namespace

void add_python_observer(Solver& solver, const py::function& callback) {
  auto observer = std::make_shared<PythonObserver>(callback);
  solver.add_observer(observer);
  solver.add_iteration_start_callback(
      [observer](Solver& training) { observer->on_iteration(training.iter()); });
}

}  // namespace xtrain::python
