#include "core/layer_plugins.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

namespace xtrain {
namespace {

// The folder libxtrain was loaded from.
std::filesystem::path library_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&load_layer_plugin_for), &info) == 0 ||
      info.dli_fname == nullptr) {
    return {};
  }
  return std::filesystem::path(info.dli_fname).parent_path();
}

std::string load_python_plugin() {
  const char* chosen = std::getenv("XTRAIN_PYTHON_PLUGIN");
  const std::string path = chosen != nullptr && *chosen != '\0'
                               ? std::string(chosen)
                               : (library_directory() / "libxtrain_python.so").string();
  // RTLD_GLOBAL: Python's extension modules (NumPy's among them) find
  // libpython's symbols in the process's global scope.
  void* plugin = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (plugin == nullptr) {
    const char* error = dlerror();
    return "cannot load " + path + " (" + (error != nullptr ? error : "unknown error") +
           "); build xtrain with its Python package (python3-dev, python3-numpy and "
           "pybind11-dev installed) to use Python layers";
  }
  using Start = const char* (*)();
  auto start = reinterpret_cast<Start>(dlsym(plugin, "xtrain_python_plugin_start"));
  if (start == nullptr) return path + " is not xtrain's Python plugin";
  const char* problem = start();
  return problem != nullptr ? std::string(problem) : std::string();
}

}  // namespace

bool load_layer_plugin_for(const std::string& type, std::string* why_not) {
  why_not->clear();
  if (type != "Python") return false;
  // Once per process: a second try would find the same.
  static std::once_flag once;
  static std::string problem;
  std::call_once(once, [] { problem = load_python_plugin(); });
  *why_not = problem;
  return problem.empty();
}

}  // namespace xtrain
