// --help of every tool and every xtrain command: exit 0, the usage, and the
// tool's own flags, each exactly once on one line of the form
//   --name=<type> (default: X)  description
// and none of gflags' own flags. Which flags are "its own" is read from the
// sources here (the DEFINEs of a single-file tool; the FLAGS_ a command's
// files read), independently of the table in tools/xtrain/main.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tool_runner.hpp"

namespace xtrain::testing {
namespace {

const std::string kToolsSource = std::string(XTRAIN_SOURCE_DIR) + "/tools";

std::string read_text(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::set<std::string> matches(const std::string& text, const std::regex& pattern) {
  std::set<std::string> found;
  for (std::sregex_iterator it(text.begin(), text.end(), pattern), end; it != end; ++it) {
    found.insert((*it)[1]);
  }
  return found;
}

// The names of the flags a source file DEFINEs.
std::set<std::string> defined_flags(const std::string& path) {
  static const std::regex define(
      R"(DEFINE_(?:bool|int32|uint32|int64|uint64|double|string)\(\s*(\w+))");
  return matches(read_text(path), define);
}

// The names of the flags a source file reads (FLAGS_name).
std::set<std::string> read_flags(const std::string& path) {
  static const std::regex use(R"(FLAGS_(\w+))");
  return matches(read_text(path), use);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

// The flags a help text lists, counting how often each appears, and checking
// that every line from "flags:" on is one flag line of the documented form
// (a wrapped description would be a line of its own).
std::map<std::string, int> listed_flags(const std::string& help) {
  static const std::regex flag_line(
      R"(^  --(\w+)=<(bool|int32|uint32|int64|uint64|double|string)> \(default: [^ ]*\)  \S.*$)");
  std::map<std::string, int> listed;
  bool in_flags = false;
  for (const std::string& line : lines_of(help)) {
    if (line == "flags:" || line == "Flags:") {
      in_flags = true;
      continue;
    }
    if (!in_flags && line.rfind("  --", 0) != 0) continue;
    std::smatch match;
    EXPECT_TRUE(std::regex_match(line, match, flag_line)) << "not one flag line: '" << line << "'";
    if (!match.empty()) ++listed[match[1]];
  }
  return listed;
}

void expect_no_gflags_flags(const std::string& help) {
  for (const char* internal : {"--flagfile", "--fromenv", "--tryfromenv", "--undefok", "--helpfull",
                               "--helpshort", "--helpxml", "--helpon", "--helpmatch",
                               "--helppackage", "--version", "--help=", "--tab_completion"}) {
    EXPECT_EQ(help.find(internal), std::string::npos) << internal << " in:\n" << help;
  }
}

// The command names of `xtrain --help`: the lines after "commands:".
std::vector<std::string> xtrain_commands() {
  const ToolResult result = run_tool(tool_path("xtrain") + " --help");
  std::vector<std::string> commands;
  bool in_commands = false;
  for (const std::string& line : lines_of(result.output)) {
    if (line == "commands:") {
      in_commands = true;
    } else if (in_commands && line.rfind("  ", 0) == 0) {
      commands.push_back(line.substr(2, line.find(' ', 2) - 2));
    } else if (in_commands) {
      break;
    }
  }
  return commands;
}

// The flags a command reads: FLAGS_ in tools/xtrain/<command>_*.cpp, plus
// those of configure_compute (tools/xtrain/common.cpp) when it calls it.
std::set<std::string> flags_read_by(const std::string& command) {
  std::set<std::string> flags;
  bool configures_compute = false;
  for (const auto& entry : std::filesystem::directory_iterator(kToolsSource + "/xtrain")) {
    const std::string file = entry.path().filename().string();
    if (file.rfind(command + "_", 0) != 0 || entry.path().extension() != ".cpp") continue;
    for (const std::string& flag : read_flags(entry.path().string())) flags.insert(flag);
    configures_compute |=
        read_text(entry.path().string()).find("configure_compute()") != std::string::npos;
  }
  if (configures_compute) {
    for (const std::string& flag : read_flags(kToolsSource + "/xtrain/common.cpp")) {
      flags.insert(flag);
    }
  }
  return flags;
}

TEST(Help, XtrainHelpListsTheCommandsOnly) {
  const ToolResult result = run_tool(tool_path("xtrain") + " --help");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(result.output.rfind("usage: xtrain <command>", 0), 0u)
      << "the usage line comes first: " << result.output;
  EXPECT_TRUE(listed_flags(result.output).empty()) << result.output;
  expect_no_gflags_flags(result.output);
  const std::vector<std::string> commands = xtrain_commands();
  for (const char* command : {"train", "test", "time", "device_query", "upgrade", "export", "import"}) {
    EXPECT_NE(std::find(commands.begin(), commands.end(), command), commands.end()) << command;
  }
  EXPECT_EQ(run_tool(tool_path("xtrain") + " help").output, result.output);
}

TEST(Help, EveryCommandListsTheFlagsItReadsOnceOnOneLineEach) {
  const std::vector<std::string> commands = xtrain_commands();
  ASSERT_FALSE(commands.empty());
  for (const std::string& command : commands) {
    SCOPED_TRACE(command);
    const ToolResult result = run_tool(tool_path("xtrain") + " " + command + " --help");
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_EQ(result.output.rfind("usage: xtrain " + command, 0), 0u) << result.output;
    EXPECT_EQ(run_tool(tool_path("xtrain") + " help " + command).output, result.output);
    expect_no_gflags_flags(result.output);
    const std::map<std::string, int> listed = listed_flags(result.output);
    for (const auto& [flag, count] : listed) EXPECT_EQ(count, 1) << "--" << flag;
    for (const std::string& flag : flags_read_by(command)) {
      EXPECT_EQ(listed.count(flag), 1u)
          << "xtrain " << command << " reads FLAGS_" << flag << " but its --help does not list it";
    }
  }
}

// So that a new flag cannot be left out of every command's help.
TEST(Help, EveryXtrainFlagIsListedForSomeCommand) {
  std::set<std::string> defined;
  for (const auto& entry : std::filesystem::directory_iterator(kToolsSource + "/xtrain")) {
    if (entry.path().extension() != ".cpp") continue;
    for (const std::string& flag : defined_flags(entry.path().string())) defined.insert(flag);
  }
  ASSERT_GT(defined.size(), 20u);
  std::set<std::string> listed;
  for (const std::string& command : xtrain_commands()) {
    for (const auto& [flag, count] :
         listed_flags(run_tool(tool_path("xtrain") + " " + command + " --help").output)) {
      listed.insert(flag);
      EXPECT_EQ(defined.count(flag), 1u) << "--" << flag << " is not a flag of tools/xtrain";
    }
  }
  for (const std::string& flag : defined) {
    EXPECT_EQ(listed.count(flag), 1u)
        << "--" << flag << " is in no command's --help: add it to kCommandHelp in main.cpp";
  }
}

TEST(Help, UnknownCommandIsOneLineError) {
  for (const char* arguments : {" help no_such_command", " no_such_command --help"}) {
    const ToolResult result = run_tool(tool_path("xtrain") + arguments);
    const std::string line = expect_one_line_error(result, "xtrain");
    EXPECT_EQ(lines_of(result.output).size(), 1u) << result.output;
    EXPECT_CONTAINS(line, "'no_such_command'");
    EXPECT_CONTAINS(line, "train, test");
  }
}

struct SingleFileTool {
  const char* name;
  const char* positional_usage;
};

class SingleFileToolHelp : public ::testing::TestWithParam<SingleFileTool> {};

TEST_P(SingleFileToolHelp, ListsItsUsageAndExactlyItsOwnFlags) {
  const SingleFileTool tool = GetParam();
  const ToolResult result = run_tool(tool_path(tool.name) + " --help");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_CONTAINS(result.output, std::string(tool.name) + " [FLAGS] " + tool.positional_usage);
  expect_no_gflags_flags(result.output);
  const std::map<std::string, int> listed = listed_flags(result.output);
  const std::set<std::string> defined =
      defined_flags(kToolsSource + "/" + std::string(tool.name) + ".cpp");
  ASSERT_FALSE(defined.empty());
  for (const std::string& flag : defined) {
    EXPECT_EQ(listed.count(flag) ? listed.at(flag) : 0, 1) << "--" << flag;
  }
  for (const auto& [flag, count] : listed) {
    EXPECT_EQ(defined.count(flag), 1u) << "--" << flag << " is not " << tool.name << "'s";
  }
  // Without its arguments the tool shows the same help, as an error.
  const ToolResult bare = run_tool(tool_path(tool.name));
  EXPECT_EQ(bare.exit_code, 1);
  EXPECT_EQ(bare.output, result.output);
}

INSTANTIATE_TEST_SUITE_P(
    Tools, SingleFileToolHelp,
    ::testing::Values(SingleFileTool{"convert_imageset", "ROOTFOLDER/ LISTFILE DB_NAME"},
                      SingleFileTool{"convert_annoset", "ROOTFOLDER/ LISTFILE DB_NAME"},
                      SingleFileTool{"compute_mean", "INPUT_DB [OUTPUT_FILE]"},
                      SingleFileTool{"convert_mnist_data", "IMAGES LABELS DB"},
                      SingleFileTool{"idx_to_images", "IMAGES LABELS OUTPUT_DIR"}),
    [](const ::testing::TestParamInfo<SingleFileTool>& param_info) {
      return param_info.param.name;
    });

}  // namespace
}  // namespace xtrain::testing
