// Layer types that live outside libxtrain and are loaded on first use.
//
// One today: "Python" (`type: "Python"` layers), which needs a Python
// interpreter. Linking libpython into libxtrain would burden every program
// for the few nets that use it, so the registry, on meeting the type
// unregistered, loads libxtrain_python (python/embed/) from the folder
// libxtrain is in (or $XTRAIN_PYTHON_PLUGIN); it starts an interpreter and
// imports the xtrain package, which registers the type. A process that is
// Python already (import xtrain) has the type registered and never gets here.
#pragma once

#include <string>

namespace xtrain {

// Loads the plugin that provides `type`, if there is one for it. Returns
// true once it ran (the caller looks the type up again); false with the
// reason in *why_not (empty if no plugin provides such a type).
bool load_layer_plugin_for(const std::string& type, std::string* why_not);

}  // namespace xtrain
