// `xtrain <command> --help` (or `xtrain help <command>`): the command's usage
// line and its own flags, one line each (see tools/flag_help.hpp).
#pragma once

#include <string>
#include <vector>

namespace xtrain::cli {

// What the help of one command shows. main.cpp keeps these in a table next
// to its list of commands.
struct CommandHelp {
  const char* name;
  // What follows the flags on the command line, e.g. "NET.prototxt OUT.svg".
  const char* arguments;
  // The flags the command reads, in the order they are listed.
  std::vector<std::string> flags;
};

// The help text of `command` (summary: its line in `xtrain --help`).
// `command_names` are all commands, whose names a flag's description may
// start with ("train/test: weights to start from") and loses here, since
// the help is the command's own. Throws xtrain::Error when a listed flag is
// not DEFINEd.
std::string command_help(const CommandHelp& command, const std::string& summary,
                         const std::vector<std::string>& command_names);

// "train/test: the weights" -> "the weights" when every word before the
// colon is a command name; any other description is returned unchanged.
std::string without_command_tag(const std::string& description,
                                const std::vector<std::string>& command_names);

}  // namespace xtrain::cli
