#include "reporting/training_log_reading.hpp"

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <regex>

#include "xtrain/error.hpp"
#include "xtrain/input_file.hpp"
#include "xtrain/logging.hpp"

namespace xtrain {
namespace {

// glog's prefix: severity, MMDD, time (the year is not in the log).
// glog before 0.6 writes "I1121 21:27:03.496044 ...", 0.6 and later put the
// year first: "I20261121 21:27:03.496044 ...". Groups: year (optional),
// month, day, hours, minutes, seconds, fraction.
const std::regex kGlogPrefix(R"(^[IWEF](\d{4})?(\d\d)(\d\d) (\d\d):(\d\d):(\d\d)(\.\d+)?\s)");
const std::regex kSolving(R"(\] Solving (\S+))");
const std::regex kTesting(R"(Iteration (\d+), Testing net \(#(\d+)\))");
// Caffe 1.0 puts the speed between the iteration and the comma.
const std::regex kTrainLoss(R"(Iteration (\d+)(?: \([^)]*\))?, loss = (\S+))");
const std::regex kLearningRate(R"(Iteration (\d+), lr = (\S+))");
const std::regex kTrainOutput(R"(Train net output #(\d+): (\S+) = (\S+))");
const std::regex kTestOutput(R"(Test net output #(\d+): (\S+) = (\S+))");
const std::regex kImagesPerSecond(R"(\]     Progress: .*, ([0-9.eE+-]+) images/s)");
const std::regex kSnapshot(
    R"(\] Snapshotting (?:solver state )?to (?:binary proto|HDF5) file (\S+))");
const std::regex kDevice(R"(\] Use (.+)\.\s*$)");

// libstdc++'s std::regex matches by recursion, a stack frame per character a
// pattern's `.*` or `\S+` runs over: a line of ~26,000 characters overflowed
// the 8 MiB stack of `xtrain plot` (SIGSEGV). The lines this reader takes are
// under 200 characters in Caffe's and xtrain's logs, so no pattern is
// matched against a longer line than this (~1.3 MiB of stack at most).
constexpr std::size_t kLongestReadLine = 4096;

// Seconds since the start of the year (a non-leap one: the log has no year).
double seconds_of_year(const std::smatch& prefix) {
  static const int kDaysBeforeMonth[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
  const int month = std::stoi(prefix[2]);
  const int day = std::stoi(prefix[3]);
  const int days = kDaysBeforeMonth[(month >= 1 && month <= 12) ? month - 1 : 0] + day - 1;
  const double fraction = prefix[7].matched ? std::stod("0" + prefix[7].str()) : 0.0;
  return ((days * 24.0 + std::stoi(prefix[4])) * 60 + std::stoi(prefix[5])) * 60 +
         std::stoi(prefix[6]) + fraction;
}

// "1121 21:27:03": the month, day and time of a log line, without the year.
std::string start_time_of(const std::smatch& prefix) {
  return prefix[2].str() + prefix[3].str() + " " + prefix[4].str() + ":" + prefix[5].str() + ":" +
         prefix[6].str();
}

class LogReader {
 public:
  explicit LogReader(const std::string& name) : name_(name) {
    log_.records.emplace_back();
    run().kind = MetricsRecord::Kind::kRun;
  }

  void read_line(const std::string& line) {
    ++line_number_;
    if (line.size() > kLongestReadLine) {
      pass_over_long_line(line);
      return;
    }
    std::smatch prefix;
    if (!std::regex_search(line, prefix, kGlogPrefix)) {
      // Caffe prints the solver's parameters on lines of their own.
      if (in_solver_parameters_) run().solver_text += line + "\n";
      return;
    }
    in_solver_parameters_ = line.find("Initializing solver from parameters:") != std::string::npos;
    const double time = seconds_of_year(prefix);
    if (!start_time_) {
      start_time_ = time;
      run().start_time = start_time_of(prefix);
    }
    std::smatch match;
    if (std::regex_search(line, match, kSolving)) {
      start_time_ = time;
      run().net_name = match[1];
      run().start_time = start_time_of(prefix);
      return;
    }
    double seconds = time - *start_time_;
    if (seconds < 0) seconds += 365 * 24 * 3600.0;  // over new year

    if (line.find("Testing net") != std::string::npos && std::regex_search(line, match, kTesting)) {
      open_test_ =
          add_record(MetricsRecord::Kind::kTest, whole_number(match[1], line, "iteration"), seconds);
      log_.records[open_test_].net = whole_number(match[2], line, "test net");
      return;
    }
    if (line.find("Test net output #") != std::string::npos) {
      add_output(line, kTestOutput, "a test output", open_test_);
      return;
    }
    if (line.find(", loss = ") != std::string::npos) {
      require(std::regex_search(line, match, kTrainLoss), line, "a train loss");
      open_train_ = add_record(MetricsRecord::Kind::kTrain,
                               whole_number(match[1], line, "iteration"), seconds);
      log_.records[open_train_].loss = number(match[2], line);
      return;
    }
    if (line.find("Train net output #") != std::string::npos) {
      add_output(line, kTrainOutput, "a train output", open_train_);
      return;
    }
    if (line.find(", lr = ") != std::string::npos) {
      require(std::regex_search(line, match, kLearningRate), line, "a learning rate");
      const double rate = number(match[2], line);
      if (open_train_ != 0 &&
          log_.records[open_train_].iteration == whole_number(match[1], line, "iteration")) {
        log_.records[open_train_].lr = rate;
      }
      return;
    }
    if (line.find(" images/s") != std::string::npos &&
        std::regex_search(line, match, kImagesPerSecond) && open_train_ != 0) {
      log_.records[open_train_].images_per_second = number(match[1], line);
      return;
    }
    if (line.find("Snapshotting") != std::string::npos &&
        std::regex_search(line, match, kSnapshot)) {
      log_.snapshots.push_back(match[1]);
      return;
    }
    if (run().device.empty() && std::regex_search(line, match, kDevice)) run().device = match[1];
  }

  TrainingLog finish() {
    XTRAIN_CHECK(log_.records.size() > 1, name_,
                 ": no training lines found (\"Iteration N, loss = L\", \"Test net output #k: "
                 "name = v\"); is this a Caffe or xtrain training log?");
    return std::move(log_);
  }

 private:
  MetricsRecord& run() { return log_.records.front(); }

  // Starts a train or test line of the metrics; returns its index, where
  // the log's "... net output #k" lines after it add their values.
  std::size_t add_record(MetricsRecord::Kind kind, int iteration, double seconds) {
    MetricsRecord record;
    record.kind = kind;
    record.iteration = iteration;
    record.seconds = seconds;
    log_.records.push_back(record);
    return log_.records.size() - 1;
  }

  // A long line is other output (a layer printing an array, say), passed over
  // as every line is that is no training line; one that has a glog prefix is
  // said in a warning, should it have been meant as one.
  void pass_over_long_line(const std::string& line) const {
    std::smatch prefix;
    const std::string head = line.substr(0, 64);
    if (!std::regex_search(head, prefix, kGlogPrefix)) return;
    XLOG(WARNING) << name_ << ":" << line_number_ << ": passed over a line of " << line.size()
                  << " characters (longer than any training line, " << kLongestReadLine
                  << "); it starts: " << line.substr(0, 120);
  }

  // "... net output #k: name = value" into the record at `open` (0: no
  // train or test line came before it, so it is passed over).
  void add_output(const std::string& line, const std::regex& pattern, const char* what,
                  std::size_t open) {
    std::smatch match;
    require(std::regex_search(line, match, pattern), line, what);
    const double value = number(match[3], line);
    if (open == 0) return;
    log_.records[open].outputs.emplace_back(match[2], value);
  }

  void require(bool matched, const std::string& line, const char* what) const {
    XTRAIN_CHECK(matched, name_, ":", line_number_, ": cannot read ", what,
                 " from this line: ", line);
  }

  double number(const std::string& token, const std::string& line) const {
    // Caffe may glue a comma or parenthesis to the value; a trailing
    // separator is not part of the number.
    std::string text = token;
    while (!text.empty() && std::strchr(",;)", text.back()) != nullptr) text.pop_back();
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    XTRAIN_CHECK(!text.empty() && *end == '\0', name_, ":", line_number_, ": '", token,
                 "' is not a number in: ", line);
    return value;
  }

  // The digits of an iteration or net number as an int: a damaged or
  // hand-edited log may hold more digits than any run counts to.
  int whole_number(const std::string& digits, const std::string& line, const char* what) const {
    errno = 0;
    char* end = nullptr;
    const long value = std::strtol(digits.c_str(), &end, 10);
    XTRAIN_CHECK(!digits.empty() && *end == '\0' && errno == 0 && value >= 0 && value <= INT_MAX,
                 name_, ":", line_number_, ": the ", what, " '", digits,
                 "' is not a whole number from 0 to ", INT_MAX, " in: ", line);
    return static_cast<int>(value);
  }

  std::string name_;
  int line_number_ = 0;
  TrainingLog log_;
  std::optional<double> start_time_;
  bool in_solver_parameters_ = false;
  // Indices in log_.records of the records that later lines add to (0: none,
  // since record 0 is the run record).
  std::size_t open_train_ = 0;
  std::size_t open_test_ = 0;
};

}  // namespace

TrainingLog read_training_log(std::istream& log, const std::string& name) {
  LogReader reader(name);
  for (std::string line; std::getline(log, line);) reader.read_line(line);
  return reader.finish();
}

TrainingLog read_training_log_file(const std::string& path) {
  std::ifstream file = open_input_file(path, "the log");
  return read_training_log(file, path);
}

}  // namespace xtrain
