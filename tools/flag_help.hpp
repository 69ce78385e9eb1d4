// The --help of every tool: its usage, then its own flags, one line each:
//
//   --name=<type> (default: X)  description
//
// gflags' built-in --help lists every flag of every linked file, gflags'
// own (--flagfile, --tryfromenv, ...) included. A tool parses its flags with
// gflags::ParseCommandLineNonHelpFlags, so gflags does not answer --help, and
// answers it itself with the flags it names, read through gflags'
// introspection (type, default and description from the DEFINE).
#pragma once

#include <gflags/gflags.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace xtrain::tools {

// True when the command line asked for help. gflags' other help flags
// (--helpfull, --helpshort) get the same answer: this tool's flags.
inline bool help_requested() {
  for (const char* name : {"help", "helpfull", "helpshort"}) {
    std::string value;
    if (gflags::GetCommandLineOption(name, &value) && value == "true") return true;
  }
  return false;
}

// --version (gflags parses it; without its help handling nobody answers it).
inline bool version_requested() {
  std::string value;
  return gflags::GetCommandLineOption("version", &value) && value == "true";
}

// "  --name=<type> (default: X)  description" (an empty default as "").
inline std::string flag_help_line(const gflags::CommandLineFlagInfo& flag,
                                  const std::string& description) {
  const std::string shown_default = flag.default_value.empty() ? "\"\"" : flag.default_value;
  std::string line =
      "  --" + flag.name + "=<" + flag.type + "> (default: " + shown_default + ")  " + description;
  // A description is one line by contract; a stray newline would break it.
  std::replace(line.begin(), line.end(), '\n', ' ');
  return line + "\n";
}

inline std::string flag_help_line(const gflags::CommandLineFlagInfo& flag) {
  return flag_help_line(flag, flag.description);
}

// The flags DEFINEd in the source file named `file_name` (a base name, e.g.
// "convert_imageset.cpp"), sorted by name.
inline std::vector<gflags::CommandLineFlagInfo> flags_defined_in(const std::string& file_name) {
  std::vector<gflags::CommandLineFlagInfo> all;
  gflags::GetAllFlags(&all);
  std::vector<gflags::CommandLineFlagInfo> own;
  for (const gflags::CommandLineFlagInfo& flag : all) {
    const std::string& path = flag.filename;
    const bool same_file = path == file_name || (path.size() > file_name.size() &&
                                                 path.compare(path.size() - file_name.size(),
                                                              file_name.size(), file_name) == 0 &&
                                                 path[path.size() - file_name.size() - 1] == '/');
    if (same_file) own.push_back(flag);
  }
  std::sort(own.begin(), own.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return own;
}

// The base name of a path: flags_defined_in(base_name(__FILE__)).
inline std::string base_name(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The help of a single-file tool: its usage text, then the flags DEFINEd in
// its source file.
inline std::string single_file_tool_help(const std::string& usage, const std::string& source_file) {
  std::string text = usage + "\n\nFlags:\n";
  for (const gflags::CommandLineFlagInfo& flag : flags_defined_in(base_name(source_file))) {
    text += flag_help_line(flag);
  }
  return text;
}

// For a single-file tool's main(): parses the flags; on --help prints the
// help to stdout and returns true (exit 0), with the wrong number of
// arguments prints it to stderr (the caller exits 1).
inline bool parse_flags_or_answer_help(int* argc, char*** argv, const std::string& usage,
                                       const std::string& source_file) {
  gflags::SetUsageMessage(usage);
  gflags::ParseCommandLineNonHelpFlags(argc, argv, true);
  if (!help_requested()) return false;
  std::fputs(single_file_tool_help(usage, source_file).c_str(), stdout);
  return true;
}

// The main() of a single-file tool named after its source file (e.g.
// convert_imageset.cpp): answers --help (exit 0); with fewer than
// `min_arguments` or more than `max_arguments` arguments prints the help to
// stderr (exit 1); else runs `run(argc, argv)`, reporting an exception as
// "<tool>: error: <what>" (exit 1).
template <typename Run>
int run_single_file_tool(int argc, char** argv, const std::string& usage,
                         const std::string& source_file, int min_arguments, int max_arguments,
                         const Run& run) {
  if (parse_flags_or_answer_help(&argc, &argv, usage, source_file)) return 0;
  if (argc - 1 < min_arguments || argc - 1 > max_arguments) {
    std::fputs(single_file_tool_help(usage, source_file).c_str(), stderr);
    return 1;
  }
  try {
    run(argc, argv);
  } catch (const std::exception& error) {
    const std::string name = base_name(source_file);
    std::fprintf(stderr, "%s: error: %s\n", name.substr(0, name.rfind('.')).c_str(), error.what());
    return 1;
  }
  return 0;
}

}  // namespace xtrain::tools
