// The solver's display lines (the formats in training_progress.hpp).
#include "solvers/training_progress.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "xtrain/data_wait.hpp"
#include "xtrain/logging.hpp"

namespace xtrain {

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

void ProgressLog::on_start(const TrainingStart& /*event*/) {
  origin_iteration_ = -1;
  said_diverged_ = false;
}

// After Caffe's lines of the display, so that log parsers meet them first.
void ProgressLog::say_if_diverged(const TrainingDisplay& event) {
  if (std::isfinite(event.smoothed_loss) || said_diverged_) return;
  said_diverged_ = true;
  XLOG(WARNING) << "Iteration " << event.iteration << ": the loss is " << event.smoothed_loss
                << ": training has diverged and will not recover; lower base_lr (the rate is "
                << event.learning_rate
                << " now), set clip_gradients, or check the scale of the input data";
}

void ProgressLog::on_display(const TrainingDisplay& event) {
  if (event.final_pass) {
    XLOG(INFO) << "Iteration " << event.iteration << ", loss = " << event.smoothed_loss;
    say_if_diverged(event);
    return;
  }
  XLOG(INFO) << "Iteration " << event.iteration << " ("
             << static_cast<float>(event.iterations_per_second) << " iter/s, "
             << static_cast<float>(event.seconds_since_display) << "s/" << event.display_interval
             << " iters), loss = " << event.smoothed_loss;
  for (std::size_t k = 0; k < event.outputs.size(); ++k) {
    const NetOutputValue& output = event.outputs[k];
    XLOG(INFO) << "    Train net output #" << k << ": " << output.name << " = " << output.value
               << loss_suffix(output.loss_weight, output.value);
  }
  if (event.loss_scale != 1 || event.skipped_updates > 0) {
    XLOG(INFO) << "    Loss scale = " << event.loss_scale << " (" << event.skipped_updates
               << " update" << (event.skipped_updates == 1 ? "" : "s")
               << " skipped for overflowed gradients)";
  }
  say_if_diverged(event);

  const auto now = std::chrono::steady_clock::now();
  if (origin_iteration_ < 0) {
    origin_iteration_ = event.iteration;
    origin_time_ = now;
  }
  const double session_seconds = std::chrono::duration<double>(now - origin_time_).count();
  const double session_speed =
      session_seconds > 0 ? (event.iteration - origin_iteration_) / session_seconds : 0;
  const double speed = session_speed > 0 ? session_speed : event.iterations_per_second;
  ProgressFigures figures;
  figures.iteration = event.iteration;
  figures.max_iter = event.max_iter;
  figures.seconds_left = speed > 0 && event.iteration <= event.max_iter
                             ? (event.max_iter - event.iteration) / speed
                             : -1;
  figures.images_per_second = event.images_per_second;
  figures.learning_rate = event.learning_rate;
  XLOG(INFO) << "    " << progress_line(figures);
  // A line of its own, so Caffe's parse_log still reads the lines above.
  if (event.data_wait_share >= 0) {
    char share[32];
    std::snprintf(share, sizeof(share), "%.1f", 100.0 * event.data_wait_share);
    XLOG(INFO) << "    Data wait: " << share << "% of the time since the last display";
  }
}

void ProgressLog::on_test(const TestDone& event) {
  if (event.has_loss) XLOG(INFO) << "Test loss: " << event.loss;
  for (std::size_t k = 0; k < event.outputs.size(); ++k) {
    const NetOutputValue& output = event.outputs[k];
    XLOG(INFO) << "    Test net output #" << k << ": " << output.name << " = " << output.value
               << loss_suffix(output.loss_weight, output.value);
  }
}

}  // namespace xtrain
