#include "solvers/training_metrics.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "xtrain/error.hpp"
#include "xtrain/input_file.hpp"
#include "xtrain/logging.hpp"

namespace xtrain {
namespace {

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

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// JSON has no NaN or infinity: a diverged loss is written as null.
// A value that came from a float (a net output) is written in the fewest
// digits that read back as that float: 0.0992, not 0.0992000028.
std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  char text[32];
  const float as_float = static_cast<float>(value);
  if (static_cast<double>(as_float) == value) {
    const auto result = std::to_chars(text, text + sizeof(text), as_float);
    return std::string(text, result.ptr);
  }
  std::snprintf(text, sizeof(text), "%.9g", value);
  return text;
}

// A recursive-descent reader for the JSON this file writes: objects,
// strings, numbers, null, true/false (arrays are skipped over).
class JsonLineReader {
 public:
  explicit JsonLineReader(const std::string& text) : text_(text) {}

  MetricsRecord read_record() {
    MetricsRecord record;
    bool has_kind = false;
    expect('{');
    if (!consume('}')) {
      do {
        const std::string key = read_string();
        expect(':');
        if (key == "kind") {
          const std::string kind = read_string();
          if (kind == "run") {
            record.kind = MetricsRecord::Kind::kRun;
          } else if (kind == "train") {
            record.kind = MetricsRecord::Kind::kTrain;
          } else if (kind == "test") {
            record.kind = MetricsRecord::Kind::kTest;
          } else {
            fail("unknown kind \"" + kind + "\" (expected run, train or test)");
          }
          has_kind = true;
        } else if (key == "iteration") {
          record.iteration = read_count(key);
        } else if (key == "seconds") {
          record.seconds = read_number();
        } else if (key == "loss") {
          record.loss = read_optional_number();
        } else if (key == "lr") {
          record.lr = read_optional_number();
        } else if (key == "images_per_second") {
          record.images_per_second = read_optional_number();
        } else if (key == "net") {
          record.net = read_count(key);
        } else if (key == "outputs") {
          read_outputs(&record.outputs);
        } else if (key == "net_name") {
          record.net_name = read_string();
        } else if (key == "device") {
          record.device = read_string();
        } else if (key == "start_time") {
          record.start_time = read_string();
        } else if (key == "solver") {
          record.solver_text = read_string();
        } else {
          skip_value();
        }
      } while (consume(','));
      expect('}');
    }
    skip_spaces();
    if (position_ != text_.size()) fail("unexpected text after the object");
    if (!has_kind) fail("the object has no \"kind\"");
    return record;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("column " + std::to_string(position_ + 1) + ": " + what);
  }

  void skip_spaces() {
    while (position_ < text_.size() && std::strchr(" \t\r\n", text_[position_]) != nullptr) {
      ++position_;
    }
  }

  bool consume(char c) {
    skip_spaces();
    if (position_ < text_.size() && text_[position_] == c) {
      ++position_;
      return true;
    }
    return false;
  }

  void expect(char c) {
    if (!consume(c)) {
      fail(std::string("expected '") + c + "'" +
           (position_ < text_.size() ? std::string(", found '") + text_[position_] + "'"
                                     : std::string(", found the end of the line")));
    }
  }

  bool consume_word(const char* word) {
    skip_spaces();
    const std::size_t length = std::strlen(word);
    if (text_.compare(position_, length, word) != 0) return false;
    position_ += length;
    return true;
  }

  std::string read_string() {
    expect('"');
    std::string out;
    while (position_ < text_.size() && text_[position_] != '"') {
      char c = text_[position_++];
      if (c == '\\') {
        if (position_ >= text_.size()) break;
        const char escaped = text_[position_++];
        switch (escaped) {
          case 'n':
            c = '\n';
            break;
          case 't':
            c = '\t';
            break;
          case 'r':
            c = '\r';
            break;
          case 'b':
            c = '\b';
            break;
          case 'f':
            c = '\f';
            break;
          case 'u': {
            if (position_ + 4 > text_.size()) fail("a \\u escape needs four hex digits");
            const long code = std::strtol(text_.substr(position_, 4).c_str(), nullptr, 16);
            position_ += 4;
            // Only what the writer escapes (control characters) is decoded
            // exactly; other code points become '?'.
            c = code < 0x80 ? static_cast<char>(code) : '?';
            break;
          }
          default:
            c = escaped;  // \" \\ \/
        }
      }
      out += c;
    }
    expect('"');
    return out;
  }

  double read_number() {
    skip_spaces();
    const char* start = text_.c_str() + position_;
    char* end = nullptr;
    errno = 0;
    const double value = std::strtod(start, &end);
    if (end == start) fail("expected a number");
    position_ += static_cast<std::size_t>(end - start);
    return value;
  }

  // A whole number from 0 to INT_MAX (an iteration, a test net's index):
  // a damaged file may hold 1e308 there, which no int can take.
  int read_count(const std::string& key) {
    skip_spaces();
    const std::size_t start = position_;
    const double value = read_number();
    if (!(value >= 0 && value <= INT_MAX && value == std::floor(value))) {
      const std::string number = text_.substr(start, position_ - start);
      position_ = start;
      fail("\"" + key + "\" must be a whole number from 0 to " + std::to_string(INT_MAX) +
           ", got " + number);
    }
    return static_cast<int>(value);
  }

  std::optional<double> read_optional_number() {
    if (consume_word("null")) return std::nullopt;
    return read_number();
  }

  void read_outputs(std::vector<std::pair<std::string, double>>* outputs) {
    expect('{');
    if (consume('}')) return;
    do {
      std::string name = read_string();
      expect(':');
      const std::optional<double> value = read_optional_number();
      outputs->emplace_back(std::move(name),
                            value.value_or(std::numeric_limits<double>::quiet_NaN()));
    } while (consume(','));
    expect('}');
  }

  void skip_value() {
    skip_spaces();
    if (position_ >= text_.size()) fail("expected a value");
    const char c = text_[position_];
    if (c == '"') {
      read_string();
    } else if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++position_;
      if (consume(close)) return;
      do {
        if (c == '{') {
          read_string();
          expect(':');
        }
        skip_value();
      } while (consume(','));
      expect(close);
    } else if (!consume_word("null") && !consume_word("true") && !consume_word("false")) {
      read_number();
    }
  }

  const std::string& text_;
  std::size_t position_ = 0;
};

}  // namespace

std::string metrics_record_to_json(const MetricsRecord& record) {
  std::string out = "{\"kind\":" + json_string(kind_name(record.kind)) +
                    ",\"iteration\":" + std::to_string(record.iteration) +
                    ",\"seconds\":" + json_number(record.seconds);
  switch (record.kind) {
    case MetricsRecord::Kind::kRun:
      out += ",\"net_name\":" + json_string(record.net_name) +
             ",\"device\":" + json_string(record.device) +
             ",\"start_time\":" + json_string(record.start_time) +
             ",\"solver\":" + json_string(record.solver_text);
      return out + "}";
    case MetricsRecord::Kind::kTrain:
      if (record.loss) out += ",\"loss\":" + json_number(*record.loss);
      if (record.lr) out += ",\"lr\":" + json_number(*record.lr);
      break;
    case MetricsRecord::Kind::kTest:
      out += ",\"net\":" + std::to_string(record.net);
      break;
  }
  out += ",\"outputs\":{";
  for (std::size_t i = 0; i < record.outputs.size(); ++i) {
    if (i > 0) out += ",";
    out += json_string(record.outputs[i].first) + ":" + json_number(record.outputs[i].second);
  }
  out += "}";
  if (record.kind == MetricsRecord::Kind::kTrain && record.images_per_second) {
    out += ",\"images_per_second\":" + json_number(*record.images_per_second);
  }
  return out + "}";
}

MetricsRecord metrics_record_from_json(const std::string& line) {
  return JsonLineReader(line).read_record();
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
