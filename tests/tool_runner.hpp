// Running the command-line tools from tests, as a user would.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace xtrain::testing {

struct ToolResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs `command` through the shell from `working_dir`.
inline ToolResult run_tool(const std::string& command, const std::string& working_dir = ".") {
  const std::string full = "cd '" + working_dir + "' && " + command + " 2>&1";
  ToolResult result;
  FILE* pipe = ::popen(full.c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe)) result.output += buffer.data();
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

inline std::string tool_path(const std::string& name) {
  return std::string(XTRAIN_TOOLS_DIR) + "/" + name;
}

// A fresh directory under the system temp dir, removed by the destructor.
class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    path_ =
        std::filesystem::temp_directory_path() /
        ("xtrain_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string path() const { return path_.string(); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string write(const std::string& name, const std::string& contents) const {
    const auto target = path_ / name;
    std::filesystem::create_directories(target.parent_path());
    std::ofstream(target) << contents;
    return target.string();
  }

 private:
  static int& counter() {
    static int value = 0;
    return value;
  }
  std::filesystem::path path_;
};

// The last non-empty line of a tool's output.
inline std::string last_line(const std::string& output) {
  std::size_t end = output.find_last_not_of('\n');
  if (end == std::string::npos) return "";
  std::size_t start = output.rfind('\n', end);
  return output.substr(start == std::string::npos ? 0 : start + 1,
                       end - (start == std::string::npos ? 0 : start + 1) + 1);
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

// The error line of a failed run of `tool` ("xtrain train"), checked for the
// promises every tool makes: exit code 1, the last line "<tool>: error: ...",
// no glog "Check failed", no std::terminate.
inline std::string expect_one_line_error(const ToolResult& result, const std::string& tool) {
  EXPECT_EQ(result.exit_code, 1) << result.output;
  const std::string line = last_line(result.output);
  EXPECT_EQ(line.rfind(tool + ": error: ", 0), 0u) << result.output;
  EXPECT_EQ(result.output.find("Check failed"), std::string::npos) << result.output;
  EXPECT_EQ(result.output.find("terminate"), std::string::npos) << result.output;
  return line;
}

}  // namespace xtrain::testing
