#include "reporting/training_metrics.hpp"

#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "xtrain/error.hpp"
#include "xtrain/input_file.hpp"
#include "xtrain/logging.hpp"

namespace xtrain {
namespace {

using Json = nlohmann::ordered_json;  // keeps the outputs in the order written

const char* kind_name(MetricsRecord::Kind kind) {
  switch (kind) {
    case MetricsRecord::Kind::kRun:
      return "run";
    case MetricsRecord::Kind::kTrain:
      return "train";
    case MetricsRecord::Kind::kTest:
      return "test";
  }
  return "train";
}

// JSON has no NaN or infinity: a diverged loss is written as null. A value
// that came from a float (a net output) is written in the fewest digits that
// read back as that float (0.0992, not 0.0992000028), and a whole number
// without a fraction (2600, not 2600.0).
Json json_number(double value) {
  if (!std::isfinite(value)) return nullptr;
  const float as_float = static_cast<float>(value);
  if (static_cast<double>(as_float) == value) {
    char text[32];
    const auto result = std::to_chars(text, text + sizeof(text), as_float);
    value = std::strtod(std::string(text, result.ptr).c_str(), nullptr);
  }
  if (value == std::floor(value) && std::fabs(value) < 9007199254740992.0) {
    return static_cast<std::int64_t>(value);
  }
  return value;
}

[[noreturn]] void fail(const std::string& what) { throw Error(what); }

double number_of(const Json& value, const std::string& key) {
  if (!value.is_number()) fail("\"" + key + "\" must be a number, got " + value.dump());
  return value.get<double>();
}

std::optional<double> optional_number_of(const Json& value, const std::string& key) {
  if (value.is_null()) return std::nullopt;
  return number_of(value, key);
}

// A whole number from 0 to INT_MAX (an iteration, a test net's index): a
// damaged file may hold 1e308 there, which no int can take.
int count_of(const Json& value, const std::string& key) {
  const double number = value.is_number() ? value.get<double>() : -1;
  if (!(number >= 0 && number <= INT_MAX && number == std::floor(number))) {
    fail("\"" + key + "\" must be a whole number from 0 to " + std::to_string(INT_MAX) + ", got " +
         value.dump());
  }
  return static_cast<int>(number);
}

std::string string_of(const Json& value, const std::string& key) {
  if (!value.is_string()) fail("\"" + key + "\" must be a string, got " + value.dump());
  return value.get<std::string>();
}

MetricsRecord record_of(const Json& object) {
  if (!object.is_object()) fail("expected a JSON object, got " + object.dump());
  MetricsRecord record;
  const auto kind = object.find("kind");
  if (kind == object.end()) fail("the object has no \"kind\"");
  const std::string kind_text = string_of(*kind, "kind");
  if (kind_text == "run") {
    record.kind = MetricsRecord::Kind::kRun;
  } else if (kind_text == "train") {
    record.kind = MetricsRecord::Kind::kTrain;
  } else if (kind_text == "test") {
    record.kind = MetricsRecord::Kind::kTest;
  } else {
    fail("unknown kind \"" + kind_text + "\" (expected run, train or test)");
  }
  // Unknown fields are skipped, so that later versions can add some.
  for (const auto& [key, value] : object.items()) {
    if (key == "iteration") {
      record.iteration = count_of(value, key);
    } else if (key == "seconds") {
      record.seconds = number_of(value, key);
    } else if (key == "loss") {
      record.loss = optional_number_of(value, key);
    } else if (key == "lr") {
      record.lr = optional_number_of(value, key);
    } else if (key == "images_per_second") {
      record.images_per_second = optional_number_of(value, key);
    } else if (key == "loss_scale") {
      record.loss_scale = optional_number_of(value, key);
    } else if (key == "skipped_updates") {
      record.skipped_updates = optional_number_of(value, key);
    } else if (key == "precision") {
      record.precision = string_of(value, key);
    } else if (key == "net") {
      record.net = count_of(value, key);
    } else if (key == "outputs") {
      if (!value.is_object()) fail("\"outputs\" must be an object, got " + value.dump());
      for (const auto& [name, output] : value.items()) {
        record.outputs.emplace_back(name, optional_number_of(output, "outputs." + name)
                                              .value_or(std::numeric_limits<double>::quiet_NaN()));
      }
    } else if (key == "net_name") {
      record.net_name = string_of(value, key);
    } else if (key == "device") {
      record.device = string_of(value, key);
    } else if (key == "start_time") {
      record.start_time = string_of(value, key);
    } else if (key == "solver") {
      record.solver_text = string_of(value, key);
    }
  }
  return record;
}

// nlohmann's "[json.exception.parse_error.101] parse error at line 1,
// column 29: syntax error ..." from the column on, and its other errors
// without their "[json.exception....]" tag.
std::string parse_error_text(const nlohmann::json::exception& error) {
  std::string text = error.what();
  const std::size_t prefix_end = text.find("] ");
  if (text.rfind("[json.exception.", 0) == 0 && prefix_end != std::string::npos) {
    text = text.substr(prefix_end + 2);
  }
  const std::size_t at = text.find("column ");
  return at == std::string::npos ? text : text.substr(at);
}

}  // namespace

std::vector<std::pair<std::string, double>> named_output_values(
    const std::vector<NetOutputValue>& values) {
  std::map<std::string, int> count;
  for (const auto& value : values) ++count[value.name];
  std::map<std::string, int> seen;
  std::vector<std::pair<std::string, double>> named;
  for (const auto& value : values) {
    const int index = seen[value.name]++;
    named.emplace_back(
        count[value.name] > 1 ? value.name + "[" + std::to_string(index) + "]" : value.name,
        value.value);
  }
  return named;
}

std::string metrics_record_to_json(const MetricsRecord& record) {
  Json out;
  out["kind"] = kind_name(record.kind);
  out["iteration"] = record.iteration;
  out["seconds"] = json_number(record.seconds);
  switch (record.kind) {
    case MetricsRecord::Kind::kRun:
      out["net_name"] = record.net_name;
      out["device"] = record.device;
      out["start_time"] = record.start_time;
      out["solver"] = record.solver_text;
      if (!record.precision.empty()) out["precision"] = record.precision;
      break;
    case MetricsRecord::Kind::kTrain:
      if (record.loss) out["loss"] = json_number(*record.loss);
      if (record.lr) out["lr"] = json_number(*record.lr);
      break;
    case MetricsRecord::Kind::kTest:
      out["net"] = record.net;
      break;
  }
  if (record.kind != MetricsRecord::Kind::kRun) {
    Json outputs = Json::object();
    for (const auto& [name, value] : record.outputs) outputs[name] = json_number(value);
    out["outputs"] = std::move(outputs);
  }
  if (record.kind == MetricsRecord::Kind::kTrain && record.images_per_second) {
    out["images_per_second"] = json_number(*record.images_per_second);
  }
  if (record.kind == MetricsRecord::Kind::kTrain && record.loss_scale) {
    out["loss_scale"] = json_number(*record.loss_scale);
    out["skipped_updates"] = json_number(record.skipped_updates.value_or(0));
  }
  // A solver text with bytes that are not UTF-8 (a path in another
  // encoding) is written with U+FFFD in their place rather than refused.
  return out.dump(-1, ' ', false, Json::error_handler_t::replace);
}

MetricsRecord metrics_record_from_json(const std::string& line) {
  Json object;
  try {
    object = Json::parse(line);
  } catch (const nlohmann::json::exception& error) {
    // A syntax error, and also a number too large for a double (1e30801,
    // out_of_range: found by fuzz/metrics_jsonl_fuzzer).
    fail(parse_error_text(error));
  }
  return record_of(object);
}

std::vector<MetricsRecord> read_metrics_file(const std::string& path, bool skip_damaged_last_line) {
  std::ifstream file = open_input_file(path, "the metrics file");
  std::vector<std::string> lines;
  for (std::string line; std::getline(file, line);) lines.push_back(line);
  std::vector<MetricsRecord> records;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      records.push_back(metrics_record_from_json(lines[i]));
    } catch (const Error& error) {
      const bool last = i + 1 == lines.size();
      if (last && skip_damaged_last_line) {
        XLOG(WARNING) << "Dropping the damaged last line of " << path << " (" << error.what()
                      << "), cut off when the earlier run was stopped";
        break;
      }
      throw Error(path + ":" + std::to_string(i + 1) +
                  ": not a metrics record (one JSON object per line): " + error.what());
    }
  }
  return records;
}

TrainingMetrics::TrainingMetrics(const std::string& path, bool resume) : path_(path) {
  if (path_.empty()) return;
  bool ends_with_newline = true;
  if (resume) {
    std::ifstream existing(path_, std::ios::binary);
    if (existing.is_open()) {
      records_ = read_metrics_file(path_, /*skip_damaged_last_line=*/true);
      existing.seekg(0, std::ios::end);
      if (existing.tellg() > 0) {
        existing.seekg(-1, std::ios::end);
        ends_with_newline = existing.get() == '\n';
      }
    }
  }
  file_.open(path_, resume ? std::ios::app : std::ios::trunc);
  XTRAIN_CHECK(file_.is_open(), "cannot open the metrics file ", path_,
               " for writing: ", std::strerror(errno),
               "; check the directory, or pass --metrics=none");
  // A line cut off by a kill must not swallow the first new record.
  if (!ends_with_newline) file_ << '\n';
}

void TrainingMetrics::add(const MetricsRecord& record) {
  records_.push_back(record);
  if (!file_.is_open()) return;
  file_ << metrics_record_to_json(record) << '\n';
  file_.flush();
  if (!file_) {
    XLOG(WARNING) << "Could not append to the metrics file " << path_
                  << " (disk full?); training goes on";
    file_.clear();
  }
}

}  // namespace xtrain
