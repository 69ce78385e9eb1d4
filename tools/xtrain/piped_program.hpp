// Running another program (Graphviz's dot) with text on its stdin and its
// stdout and stderr collected: no shell, so no quoting of arguments.
#pragma once

#include <string>
#include <vector>

namespace xtrain::cli {

struct ProgramResult {
  // The program's exit code, or -1 if a signal ended it (see `signal`).
  int exit_code = -1;
  int signal = 0;
  std::string standard_output;
  std::string standard_error;
};

// Runs `arguments[0]` (looked up on PATH) with `arguments`, writes `input`
// to its stdin and waits for it. Throws xtrain::Error if it cannot be
// started; `missing_hint` is appended when the program is not found.
ProgramResult run_piped_program(const std::vector<std::string>& arguments, const std::string& input,
                                const std::string& missing_hint);

}  // namespace xtrain::cli
