// libxtrain_python: lets a program that is not Python (the xtrain tool, a
// C++ application) build nets with `type: "Python"` layers. libxtrain loads
// it on first use of that type (src/core/layer_plugins.hpp); it starts a
// Python interpreter inside the process, unless one runs already, and
// imports the xtrain package, whose extension module registers the layer
// type in the same registry.
//
// The package is looked for on PYTHONPATH and then beside this library:
// <lib>/../python (a build tree) and <lib>/python3/dist-packages (an
// installed tree). The interpreter leaves the process's signal handlers
// alone (xtrain's SIGINT/SIGTERM/SIGHUP handling stays), and the GIL is let
// go once started: each Python layer call takes it, from whichever thread.
#include <dlfcn.h>
#include <pybind11/embed.h>

#include <filesystem>
#include <string>

namespace py = pybind11;

namespace {

std::filesystem::path this_library_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&this_library_directory), &info) == 0 ||
      info.dli_fname == nullptr) {
    return {};
  }
  return std::filesystem::path(info.dli_fname).parent_path();
}

void add_package_locations() {
  const std::filesystem::path here = this_library_directory();
  py::list path = py::module_::import("sys").attr("path");
  for (const std::filesystem::path& candidate :
       {here / "python3" / "dist-packages", here.parent_path() / "python"}) {
    std::error_code error;
    if (std::filesystem::is_directory(candidate / "xtrain", error)) {
      path.append(candidate.string());
    }
  }
}

}  // namespace

// Returns null once the layer type is registered, or what went wrong.
extern "C" __attribute__((visibility("default"))) const char* xtrain_python_plugin_start() {
  static std::string problem;
  const bool started_here = !Py_IsInitialized();
  if (started_here) py::initialize_interpreter(/*init_signal_handlers=*/false);
  {
    // With an interpreter of our own this thread holds the GIL already;
    // otherwise it may not.
    py::gil_scoped_acquire gil;
    try {
      add_package_locations();
      py::module_::import("xtrain");
      problem.clear();
    } catch (py::error_already_set& error) {
      problem = std::string("importing the xtrain Python package failed: ") + error.what() +
                " (put its folder on PYTHONPATH)";
    }
  }
  // Let go of the GIL for good: Python layers take it per call.
  if (started_here) PyEval_SaveThread();
  return problem.empty() ? nullptr : problem.c_str();
}
