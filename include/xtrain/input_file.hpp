// Files a user names -- nets, solvers, weights, snapshots, images, lists,
// logs -- opened with one error that says what is wrong with the path
// (missing, a directory, unreadable) and what was expected there, instead of
// a stream that reads nothing or a library's puzzle ("basic_filebuf::underflow
// error") later on.
#pragma once

#include <fstream>
#include <string>

#include "xtrain/export.hpp"

namespace xtrain {

// Throws xtrain::Error unless `path` names a file this process may open.
// `what` says what the file should be ("the labels file"; empty for none):
//   "cannot open the labels file 'x': No such file or directory"
//   "the labels file 'x' is a directory, not a file; give the file's path"
XTRAIN_API void check_input_file(const std::string& path, const std::string& what);

// check_input_file, then the open stream (binary when asked).
XTRAIN_API std::ifstream open_input_file(const std::string& path, const std::string& what,
                                         bool binary = false);

// The whole file as bytes; a read error throws too.
XTRAIN_API std::string read_input_file(const std::string& path, const std::string& what);

}  // namespace xtrain
