#include "command_help.hpp"

#include <gflags/gflags.h>

#include <algorithm>

#include "flag_help.hpp"
#include "xtrain/error.hpp"

namespace xtrain::cli {

std::string without_command_tag(const std::string& description,
                                const std::vector<std::string>& command_names) {
  const std::size_t colon = description.find(": ");
  if (colon == std::string::npos || colon == 0) return description;
  const std::string tag = description.substr(0, colon);
  std::size_t start = 0;
  while (start <= tag.size()) {
    const std::size_t slash = std::min(tag.find('/', start), tag.size());
    const std::string word = tag.substr(start, slash - start);
    if (std::find(command_names.begin(), command_names.end(), word) == command_names.end()) {
      return description;
    }
    start = slash + 1;
  }
  return description.substr(colon + 2);
}

std::string command_help(const CommandHelp& command, const std::string& summary,
                         const std::vector<std::string>& command_names) {
  std::string text =
      "usage: xtrain " + std::string(command.name) + (command.flags.empty() ? "" : " [flags]") +
      (*command.arguments ? " " + std::string(command.arguments) : "") + "\n" + summary + "\n";
  if (command.flags.empty()) return text;
  text += "\nflags:\n";
  for (const std::string& name : command.flags) {
    gflags::CommandLineFlagInfo flag;
    XTRAIN_CHECK(gflags::GetCommandLineFlagInfo(name.c_str(), &flag), "the help of '", command.name,
                 "' lists --", name,
                 ", which no file DEFINEs (a typo in kCommandHelp, tools/xtrain/main.cpp?)");
    text += tools::flag_help_line(flag, without_command_tag(flag.description, command_names));
  }
  return text;
}

}  // namespace xtrain::cli
