// pycaffe's global run mode: set_mode_cpu(), set_mode_gpu(), set_device(i),
// set_random_seed(s). Nets and solvers made afterwards use them.
#include <pybind11/stl.h>

#include <mutex>
#include <optional>
#include <string>

#include "bindings.hpp"
#include "xtrain/cpu_threads.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::python {
namespace {

struct Mode {
  bool gpu = false;
  int device_id = 0;
  bool seeded = false;
  std::uint64_t seed = 0;
  std::optional<NumberType> precision;
};

Mode& mode() {
  static Mode state;
  return state;
}

}  // namespace

Device current_device() { return mode().gpu ? Device::gpu(mode().device_id) : Device::cpu(); }
bool has_random_seed() { return mode().seeded; }
std::optional<NumberType> current_precision() { return mode().precision; }
std::uint64_t random_seed() { return mode().seed; }

void bind_mode(pybind11::module_& module) {
  module.def(
      "openmp_waiting", [] { return adapt_openmp_waiting_to_load(); },
      "How idle OpenMP threads wait, as the xtrain tool logs it: chosen from the other "
      "processes' load when the package is imported (a long spin while they leave this "
      "process's CPUs idle, a short one or none while they take them; rechecked every 2 s) "
      "unless OMP_WAIT_POLICY or GOMP_SPINCOUNT was set. Returns the line that says which.");
  module.def(
      "set_mode_cpu", [] { mode().gpu = false; }, "Run nets made from now on on the CPU.");
  module.def(
      "set_mode_gpu",
      [] {
        std::string why;
        XTRAIN_CHECK(cuda_device_count(&why) > 0, "set_mode_gpu(): no usable GPU (", why,
                     "); stay with set_mode_cpu()");
        mode().gpu = true;
      },
      "Run nets made from now on on the GPU chosen by set_device (0 by default).");
  module.def(
      "set_device",
      [](int id) {
        XTRAIN_CHECK(id >= 0, "set_device(", id, "): a device number is 0 or more");
        mode().device_id = id;
      },
      pybind11::arg("device_id"), "Choose the GPU (a CUDA device number) for GPU mode.");
  module.def(
      "set_random_seed",
      [](std::uint64_t seed) {
        mode().seeded = true;
        mode().seed = seed;
      },
      pybind11::arg("seed"),
      "Seed the random streams (fillers, dropout, shuffling) of nets and solvers made from "
      "now on.");
  module.def(
      "set_precision",
      [](const std::optional<std::string>& precision) {
        mode().precision = precision ? std::optional<NumberType>(parse_number_type(
                                           *precision, "set_precision(): the precision"))
                                     : std::nullopt;
      },
      pybind11::arg("precision"),
      "Compute nets and solvers made from now on in one precision: 'fp32', 'bf16' or 'fp16' "
      "(16-bit storage, fp32 master weights; docs/precision.md), as `xtrain train "
      "--precision`; None: as the net's forward_type/backward_type fields say. Blobs read and "
      "write as float32 NumPy arrays whatever the precision.");
  module.def(
      "get_precision",
      [] {
        return mode().precision ? std::optional<std::string>(number_type_name(*mode().precision))
                                : std::nullopt;
      },
      "The precision set_precision() set ('fp32', 'bf16', 'fp16'), or None.");
  module.def("cuda_compiled_in", &cuda_compiled_in, "Whether this build has the CUDA backend.");
  module.def(
      "set_log_level",
      [](int level) {
        XTRAIN_CHECK(level >= 0 && level <= 3, "set_log_level(", level,
                     "): the level is glog's: 0 everything, 1 warnings and errors, 2 or 3 "
                     "errors only");
        set_min_log_severity(static_cast<LogSeverity>(level > 2 ? 2 : level));
      },
      pybind11::arg("level"),
      "Which of xtrain's log lines reach stderr, in glog's numbers (as GLOG_minloglevel, which "
      "is read at import): 0 all, 1 warnings and errors, 2 errors only.");
  module.def(
      "log_level", [] { return static_cast<int>(min_log_severity()); },
      "The level set_log_level set (or GLOG_minloglevel gave).");
}

}  // namespace xtrain::python
