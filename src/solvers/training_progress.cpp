// The solver's display lines, metrics records and report (Solver members
// declared in xtrain/solver.hpp; the formats in training_progress.hpp,
// training_metrics.hpp and training_report.hpp).
#include "solvers/training_progress.hpp"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <sstream>

#include "solvers/training_metrics.hpp"
#include "solvers/training_report.hpp"
#include "xtrain/data_wait.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/lr_policy.hpp"
#include "xtrain/snapshot_files.hpp"
#include "xtrain/solver.hpp"

namespace xtrain {
namespace {

constexpr double kReportSecondsBetweenDisplays = 30;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string local_time_now() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", &local);
  return text;
}

// Output names for the metrics: a blob of several values gives name[k].
std::vector<std::pair<std::string, double>> named_outputs(
    const std::vector<std::pair<std::string, float>>& values) {
  std::map<std::string, int> count;
  for (const auto& value : values) ++count[value.first];
  std::map<std::string, int> seen;
  std::vector<std::pair<std::string, double>> named;
  for (const auto& [name, value] : values) {
    const int index = seen[name]++;
    named.emplace_back(count[name] > 1 ? name + "[" + std::to_string(index) + "]" : name, value);
  }
  return named;
}

// The .caffemodel and .solverstate of each snapshot on disk, oldest first.
std::vector<std::string> snapshot_files(const std::string& prefix) {
  std::vector<std::string> paths;
  std::vector<SnapshotOnDisk> snapshots;
  try {
    snapshots = list_snapshots(prefix);
  } catch (const Error&) {
    return paths;  // no snapshot directory yet
  }
  for (auto it = snapshots.rbegin(); it != snapshots.rend(); ++it) {
    std::string weights = it->solverstate_path;
    const std::size_t at = weights.rfind(".solverstate");
    if (at != std::string::npos) weights.replace(at, 12, ".caffemodel");
    paths.push_back(weights);
    paths.push_back(it->solverstate_path);
  }
  return paths;
}

}  // namespace

std::string loss_suffix(float loss_weight, float value) {
  if (loss_weight == 0) return "";
  std::ostringstream out;
  out << " (* " << loss_weight << " = " << loss_weight * value << " loss)";
  return out.str();
}

std::string format_eta(double seconds) {
  const long total = std::lround(std::max(0.0, seconds));
  char text[48];
  if (total >= 3600) {
    std::snprintf(text, sizeof(text), "%ldh %02ldm", total / 3600, total / 60 % 60);
  } else if (total >= 60) {
    std::snprintf(text, sizeof(text), "%ldm %02lds", total / 60, total % 60);
  } else {
    std::snprintf(text, sizeof(text), "%lds", total);
  }
  return text;
}

std::string progress_line(const ProgressFigures& figures) {
  std::ostringstream line;
  line << "Progress: " << figures.iteration;
  if (figures.max_iter > 0) {
    char percent[16];
    std::snprintf(percent, sizeof(percent), "%.1f", 100.0 * figures.iteration / figures.max_iter);
    line << "/" << figures.max_iter << " (" << percent << "%)";
  }
  line << ", ETA " << (figures.seconds_left < 0 ? "unknown" : format_eta(figures.seconds_left));
  if (figures.images_per_second >= 0) {
    line << ", " << std::lround(figures.images_per_second) << " images/s";
  }
  line << ", learning rate " << figures.learning_rate;
  return line.str();
}

double images_per_iteration(const Net& net, int iter_size, int replicas) {
  const auto& blobs = net.blobs();
  const int batch = !blobs.empty() && blobs.front()->num_axes() > 0 ? blobs.front()->shape(0) : 0;
  return static_cast<double>(batch) * iter_size * replicas;
}

double take_data_wait(const Net& train_net, const std::vector<std::shared_ptr<Net>>& test_nets) {
  double seconds = take_data_wait_seconds(train_net);
  for (const auto& test_net : test_nets) seconds += take_data_wait_seconds(*test_net);
  return seconds;
}

void Solver::display_train_outputs() const {
  const BlobVec& outputs = net_->output_blobs();
  int score_index = 0;
  for (std::size_t j = 0; j < outputs.size(); ++j) {
    const int blob_index = net_->output_blob_indices()[j];
    const std::string& name = net_->blob_names()[blob_index];
    const float loss_weight = net_->blob_loss_weights()[blob_index];
    const float* values = outputs[j]->cpu_data();
    for (std::size_t k = 0; k < outputs[j]->count(); ++k) {
      XLOG(INFO) << "    Train net output #" << score_index++ << ": " << name << " = " << values[k]
                 << loss_suffix(loss_weight, values[k]);
    }
  }
}

float Solver::display_learning_rate() const {
  // The rate apply_update() is about to use (on a copy of the schedule's
  // position, which only apply_update may advance).
  int step = current_step_;
  return learning_rate(param_, iter_, &step);
}

void Solver::display_progress(bool show_data_wait) {
  const auto now = std::chrono::steady_clock::now();
  const double lapse = seconds_since(display_timer_);
  const double per_second = (iter_ - iterations_at_last_display_) / (lapse > 0 ? lapse : 1);
  XLOG(INFO) << "Iteration " << iter_ << " (" << static_cast<float>(per_second) << " iter/s, "
             << static_cast<float>(lapse) << "s/" << param_.display()
             << " iters), loss = " << smoothed_loss_;
  const double data_wait = take_data_wait(*net_, test_nets_);
  const int iterations_before_display = iterations_at_last_display_;
  display_timer_ = now;
  iterations_at_last_display_ = iter_;
  display_train_outputs();

  // The time left from the speed since this session's first display (tests
  // and snapshots included), or the last interval's before that.
  if (progress_origin_iter_ < 0) {
    progress_origin_iter_ = iter_;
    progress_origin_time_ = now;
  }
  const double session_seconds = std::chrono::duration<double>(now - progress_origin_time_).count();
  const double session_speed =
      session_seconds > 0 ? (iter_ - progress_origin_iter_) / session_seconds : 0;
  const double speed = session_speed > 0 ? session_speed : per_second;
  ProgressFigures figures;
  figures.iteration = iter_;
  figures.max_iter = param_.max_iter();
  figures.seconds_left =
      speed > 0 && iter_ <= param_.max_iter() ? (param_.max_iter() - iter_) / speed : -1;
  const int replicas = data_parallel() ? options_.communicator->size() : 1;
  // Unknown at the session's first iteration (no iterations timed yet).
  figures.images_per_second =
      iter_ > iterations_before_display
          ? images_per_iteration(*net_, param_.iter_size(), replicas) * per_second
          : -1;
  figures.learning_rate = display_learning_rate();
  XLOG(INFO) << "    " << progress_line(figures);
  // A line of its own, so Caffe's parse_log still reads the lines above.
  if (show_data_wait) {
    char share[32];
    std::snprintf(share, sizeof(share), "%.1f", 100.0 * data_wait / (lapse > 0 ? lapse : 1));
    XLOG(INFO) << "    Data wait: " << share << "% of the time since the last display";
  }

  record_train_point(figures.learning_rate, figures.images_per_second >= 0
                                                ? std::optional<double>(figures.images_per_second)
                                                : std::nullopt);
  if (seconds_since(last_report_time_) >= kReportSecondsBetweenDisplays) write_training_report();
}

void Solver::start_training_record(const std::string& resume_file) {
  if (!options_.is_root || (options_.metrics_path.empty() && options_.report_path.empty())) return;
  metrics_ = std::make_shared<TrainingMetrics>(options_.metrics_path, !resume_file.empty());
  if (!options_.metrics_path.empty()) {
    XLOG(INFO) << (resume_file.empty() ? "Writing" : "Appending") << " training metrics to "
               << options_.metrics_path;
  }
  MetricsRecord run;
  run.kind = MetricsRecord::Kind::kRun;
  run.iteration = iter_;
  run.seconds = train_seconds_before_ + seconds_since(session_start_);
  run.net_name = net_->name();
  run.device = device_.to_string();
  run.start_time = local_time_now();
  run.solver_text = param_.DebugString();
  metrics_->add(run);
  progress_origin_iter_ = -1;
  last_report_time_ = std::chrono::steady_clock::now();
}

void Solver::record_train_point(std::optional<double> lr, std::optional<double> images_per_second) {
  if (!metrics_) return;
  MetricsRecord record;
  record.kind = MetricsRecord::Kind::kTrain;
  record.iteration = iter_;
  record.seconds = train_seconds_before_ + seconds_since(session_start_);
  record.loss = smoothed_loss_;
  record.lr = lr;
  record.images_per_second = images_per_second;
  std::vector<std::pair<std::string, float>> values;
  const BlobVec& outputs = net_->output_blobs();
  for (std::size_t j = 0; j < outputs.size(); ++j) {
    const std::string& name = net_->blob_names()[net_->output_blob_indices()[j]];
    const float* data = outputs[j]->cpu_data();
    for (std::size_t k = 0; k < outputs[j]->count(); ++k) values.emplace_back(name, data[k]);
  }
  record.outputs = named_outputs(values);
  metrics_->add(record);
}

void Solver::record_test(int test_net_id) {
  if (!metrics_) return;
  MetricsRecord record;
  record.kind = MetricsRecord::Kind::kTest;
  record.iteration = iter_;
  record.seconds = train_seconds_before_ + seconds_since(session_start_);
  record.net = test_net_id;
  record.outputs = named_outputs(last_test_results_[test_net_id]);
  metrics_->add(record);
  write_training_report();
}

void Solver::write_training_report() {
  if (!metrics_ || options_.report_path.empty()) return;
  last_report_time_ = std::chrono::steady_clock::now();
  ReportContents contents;
  contents.records = metrics_->records();
  contents.snapshots = snapshot_files(param_.snapshot_prefix());
  contents.source = options_.metrics_path.empty() ? "this training" : options_.metrics_path;
  try {
    ::xtrain::write_training_report(options_.report_path, contents);
  } catch (const Error& error) {
    // The report is a view of the training, never a reason to stop it.
    XLOG(WARNING) << "Could not write the training report: " << error.what();
  }
}

}  // namespace xtrain
