#include "reporting/training_report.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

#include "xtrain/atomic_file.hpp"

namespace xtrain {
namespace {

const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                               "#9467bd", "#8c564b", "#e377c2", "#17becf"};

std::string escape_html(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Values as the log prints them (6 significant digits).
std::string format_value(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.6g", value);
  return text;
}

std::string format_coordinate(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", value);
  return text;
}

std::string format_duration(double seconds) {
  const long total = static_cast<long>(std::lround(seconds));
  char text[48];
  if (total >= 3600) {
    std::snprintf(text, sizeof(text), "%ldh %02ldm %02lds", total / 3600, total / 60 % 60,
                  total % 60);
  } else if (total >= 60) {
    std::snprintf(text, sizeof(text), "%ldm %02lds", total / 60, total % 60);
  } else {
    std::snprintf(text, sizeof(text), "%lds", total);
  }
  return text;
}

// A tick spacing of 1, 2 or 5 times a power of ten giving about `count`
// ticks over `range`.
double tick_step(double range, int count) {
  const double raw = range / count;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  const double fraction = raw / power;
  return (fraction < 1.5 ? 1 : fraction < 3.5 ? 2 : fraction < 7.5 ? 5 : 10) * power;
}

struct Range {
  double low;
  double high;
};

Range value_range(const std::vector<ReportSeries>& series, bool from_zero) {
  double low = INFINITY;
  double high = -INFINITY;
  for (const ReportSeries& one : series) {
    for (const auto& point : one.points) {
      low = std::min(low, point.second);
      high = std::max(high, point.second);
    }
  }
  if (from_zero && low >= 0) low = 0;
  if (high - low <= 0) {
    const double pad = std::max(std::fabs(high) * 0.1, 1e-6);
    return {low - pad, high + pad};
  }
  const double pad = from_zero ? 0.0 : 0.05 * (high - low);
  return {low - pad, high + 0.05 * (high - low)};
}

// What every chart shares: one iteration axis, and where sessions resumed.
struct IterationAxis {
  int first = 0;
  int last = 0;
  std::vector<int> resumed_at;
};

IterationAxis iteration_axis(const std::vector<MetricsRecord>& records) {
  IterationAxis axis;
  bool any = false;
  bool first_session = true;
  for (const MetricsRecord& record : records) {
    if (record.kind == MetricsRecord::Kind::kRun) {
      if (!first_session) axis.resumed_at.push_back(record.iteration);
      first_session = false;
      continue;
    }
    axis.first = any ? std::min(axis.first, record.iteration) : record.iteration;
    axis.last = any ? std::max(axis.last, record.iteration) : record.iteration;
    any = true;
  }
  return axis;
}

std::string svg_chart(const std::string& title, const std::string& id,
                      const std::vector<ReportSeries>& series, bool from_zero,
                      const IterationAxis& axis) {
  const double width = 1100;
  const double height = 320;
  const double left = 80;
  const double right = width - 20;
  const double top = 40;
  const double bottom = height - 45;
  std::string svg = "<svg id=\"" + id + "\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" " +
                    "width=\"1100\" height=\"320\" viewBox=\"0 0 1100 320\">\n";
  svg += "<text x=\"" + format_coordinate(left) + "\" y=\"22\" class=\"chart-title\">" +
         escape_html(title) + "</text>\n";
  svg += "<rect x=\"" + format_coordinate(left) + "\" y=\"" + format_coordinate(top) +
         "\" width=\"" + format_coordinate(right - left) + "\" height=\"" +
         format_coordinate(bottom - top) + "\" class=\"plot-area\"/>\n";
  std::size_t points = 0;
  for (const ReportSeries& one : series) points += one.points.size();
  const int first_iteration = axis.first;
  const int last_iteration = axis.last;
  if (points == 0) {
    svg += "<text x=\"" + format_coordinate((left + right) / 2) + "\" y=\"" +
           format_coordinate((top + bottom) / 2) +
           "\" text-anchor=\"middle\" class=\"no-data\">no data yet</text>\n";
    return svg + "</svg>\n";
  }
  const Range x_range =
      last_iteration > first_iteration
          ? Range{static_cast<double>(first_iteration), static_cast<double>(last_iteration)}
          : Range{first_iteration - 1.0, first_iteration + 1.0};
  const Range y_range = value_range(series, from_zero);
  auto x_of = [&](double iteration) {
    return left + (iteration - x_range.low) / (x_range.high - x_range.low) * (right - left);
  };
  auto y_of = [&](double value) {
    return bottom - (value - y_range.low) / (y_range.high - y_range.low) * (bottom - top);
  };

  // Grid and tick labels.
  const double y_step = tick_step(y_range.high - y_range.low, 5);
  for (double tick = std::ceil(y_range.low / y_step) * y_step; tick <= y_range.high + 1e-12;
       tick += y_step) {
    const std::string y = format_coordinate(y_of(tick));
    svg += "<line x1=\"" + format_coordinate(left) + "\" y1=\"" + y + "\" x2=\"" +
           format_coordinate(right) + "\" y2=\"" + y + "\" class=\"grid\"/>\n";
    svg += "<text x=\"" + format_coordinate(left - 6) + "\" y=\"" + y +
           "\" dy=\"4\" text-anchor=\"end\" class=\"tick\">" +
           format_value(std::fabs(tick) < y_step * 1e-6 ? 0.0 : tick) + "</text>\n";
  }
  const double x_step = std::max(1.0, tick_step(x_range.high - x_range.low, 8));
  for (double tick = std::ceil(x_range.low / x_step) * x_step; tick <= x_range.high + 1e-9;
       tick += x_step) {
    const std::string x = format_coordinate(x_of(tick));
    svg += "<line x1=\"" + x + "\" y1=\"" + format_coordinate(top) + "\" x2=\"" + x + "\" y2=\"" +
           format_coordinate(bottom) + "\" class=\"grid\"/>\n";
    svg += "<text x=\"" + x + "\" y=\"" + format_coordinate(bottom + 16) +
           "\" text-anchor=\"middle\" class=\"tick\">" + format_value(tick) + "</text>\n";
  }
  for (const int iteration : axis.resumed_at) {
    const std::string x = format_coordinate(x_of(iteration));
    svg += "<line x1=\"" + x + "\" y1=\"" + format_coordinate(top) + "\" x2=\"" + x + "\" y2=\"" +
           format_coordinate(bottom) + "\" class=\"resume\"/>\n";
    svg += "<text x=\"" + x + "\" y=\"" + format_coordinate(top - 4) +
           "\" text-anchor=\"middle\" class=\"tick\">resumed</text>\n";
  }
  svg += "<text x=\"" + format_coordinate((left + right) / 2) + "\" y=\"" +
         format_coordinate(height - 6) +
         "\" text-anchor=\"middle\" class=\"axis\">iteration</text>\n";

  // Curves, then the legend above the plot.
  double legend_x = right;
  for (std::size_t s = series.size(); s-- > 0;) {
    const ReportSeries& one = series[s];
    if (one.points.empty()) continue;
    const char* color = kColors[s % (sizeof(kColors) / sizeof(kColors[0]))];
    std::string coordinates;
    for (const auto& point : one.points) {
      if (!coordinates.empty()) coordinates += ' ';
      coordinates +=
          format_coordinate(x_of(point.first)) + "," + format_coordinate(y_of(point.second));
    }
    const auto& last = one.points.back();
    svg += "<polyline class=\"series\" data-series=\"" + escape_html(one.name) +
           "\" data-last-iteration=\"" + std::to_string(last.first) + "\" data-last-value=\"" +
           format_value(last.second) + "\" fill=\"none\" stroke=\"" + color +
           "\" stroke-width=\"2\" points=\"" + coordinates + "\"><title>" + escape_html(one.name) +
           ": last point iteration " + std::to_string(last.first) + ", value " +
           format_value(last.second) + "</title></polyline>\n";
    // A lone point (or the last one) stays visible as a dot.
    svg += "<circle cx=\"" + format_coordinate(x_of(last.first)) + "\" cy=\"" +
           format_coordinate(y_of(last.second)) + "\" r=\"3\" fill=\"" + color + "\"/>\n";
    const std::string label = one.name + " " + format_value(last.second);
    legend_x -= 12.0 + 7.0 * static_cast<double>(label.size()) + 18;
    svg += "<rect x=\"" + format_coordinate(legend_x) +
           "\" y=\"14\" width=\"12\" height=\"4\" fill=\"" + color + "\"/>\n";
    svg += "<text x=\"" + format_coordinate(legend_x + 16) + "\" y=\"20\" class=\"legend\">" +
           escape_html(label) + "</text>\n";
  }
  return svg + "</svg>\n";
}

// The series of one chart, in the order their first points came.
class ChartSeries {
 public:
  void add_point(const std::string& name, int iteration, double value) {
    if (!std::isfinite(value)) return;  // a diverged loss has no place on the axis
    auto [entry, inserted] = by_name_.try_emplace(name);
    if (inserted) {
      entry->second.name = name;
      order_.push_back(name);
    }
    entry->second.points.emplace_back(iteration, value);
  }

  std::vector<ReportSeries> in_order() {
    std::vector<ReportSeries> series;
    for (const std::string& name : order_) series.push_back(std::move(by_name_[name]));
    return series;
  }

 private:
  std::map<std::string, ReportSeries> by_name_;
  std::vector<std::string> order_;
};

std::string test_output_name(const MetricsRecord& record, const std::string& output) {
  return "test #" + std::to_string(record.net) + " " + output;
}

std::string configuration_html(const std::vector<MetricsRecord>& records) {
  std::string html;
  int session = 0;
  for (const MetricsRecord& record : records) {
    if (record.kind != MetricsRecord::Kind::kRun) continue;
    ++session;
    html += "<h3>Session " + std::to_string(session) + "</h3>\n<table class=\"config\">";
    html += "<tr><th>started</th><td>" + escape_html(record.start_time) + "</td></tr>";
    html += "<tr><th>at iteration</th><td>" + std::to_string(record.iteration) + "</td></tr>";
    html += "<tr><th>net</th><td>" + escape_html(record.net_name) + "</td></tr>";
    html += "<tr><th>device</th><td>" + escape_html(record.device) + "</td></tr>";
    if (!record.precision.empty()) {
      html += "<tr><th>precision</th><td>" + escape_html(record.precision) + "</td></tr>";
    }
    html += "</table>\n";
    if (!record.solver_text.empty()) {
      html += "<details open><summary>solver</summary><pre>" + escape_html(record.solver_text) +
              "</pre></details>\n";
    }
  }
  return html.empty() ? "<p>not recorded</p>\n" : html;
}

std::string summary_html(const std::vector<MetricsRecord>& records) {
  const MetricsRecord* last_train = nullptr;
  // The last known of each (the final display has no rate or throughput).
  std::optional<double> lr;
  std::optional<double> images_per_second;
  std::map<int, const MetricsRecord*> last_test;
  const MetricsRecord* net_info = nullptr;
  double seconds = 0;
  for (const MetricsRecord& record : records) {
    seconds = std::max(seconds, record.seconds);
    if (record.kind == MetricsRecord::Kind::kTrain) {
      last_train = &record;
      if (record.lr) lr = record.lr;
      if (record.images_per_second) images_per_second = record.images_per_second;
    }
    if (record.kind == MetricsRecord::Kind::kTest) last_test[record.net] = &record;
    if (record.kind == MetricsRecord::Kind::kRun) net_info = &record;
  }
  std::string html = "<table class=\"summary\">";
  if (net_info != nullptr && !net_info->net_name.empty()) {
    html += "<tr><th>net</th><td>" + escape_html(net_info->net_name) + "</td></tr>";
  }
  if (last_train != nullptr) {
    html += "<tr><th>iteration</th><td>" + std::to_string(last_train->iteration) + "</td></tr>";
    if (last_train->loss) {
      html += "<tr><th>train loss</th><td>" + format_value(*last_train->loss) + "</td></tr>";
    }
    if (lr) html += "<tr><th>learning rate</th><td>" + format_value(*lr) + "</td></tr>";
    if (images_per_second) {
      html += "<tr><th>images/s</th><td>" + format_value(*images_per_second) + "</td></tr>";
    }
  }
  for (const auto& [net, record] : last_test) {
    for (const auto& [name, value] : record->outputs) {
      html += "<tr><th>" + escape_html(test_output_name(*record, name)) + " (iteration " +
              std::to_string(record->iteration) + ")</th><td>" + format_value(value) + "</td></tr>";
    }
  }
  html += "<tr><th>training time</th><td>" + format_duration(seconds) + "</td></tr>";
  return html + "</table>\n";
}

}  // namespace

bool is_loss_output(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.find("loss") != std::string::npos;
}

std::vector<MetricsRecord> latest_history(const std::vector<MetricsRecord>& records) {
  // A resumed session recomputes from its snapshot's iteration on: its
  // points replace the later ones of the session that was cut off, series by
  // series (train, each test net).
  std::vector<MetricsRecord> kept;
  std::map<std::pair<int, int>, int> last_iteration;  // (kind, net) -> iteration
  for (const MetricsRecord& record : records) {
    const std::pair<int, int> series{static_cast<int>(record.kind), record.net};
    const auto last = last_iteration.find(series);
    const bool goes_back = last != last_iteration.end() && last->second >= record.iteration;
    last_iteration[series] = record.iteration;
    if (record.kind != MetricsRecord::Kind::kRun && goes_back) {
      for (std::size_t i = kept.size(); i-- > 0;) {
        const MetricsRecord& earlier = kept[i];
        if (earlier.kind == record.kind && earlier.net == record.net &&
            earlier.iteration >= record.iteration) {
          kept.erase(kept.begin() + static_cast<std::ptrdiff_t>(i));
        }
      }
    }
    kept.push_back(record);
  }
  return kept;
}

namespace {

// A test line's outputs, one series per net and output: those whose name
// says they are losses, or (losses false) the others.
void add_test_outputs(ChartSeries* chart, const MetricsRecord& record, bool losses) {
  if (record.kind != MetricsRecord::Kind::kTest) return;
  for (const auto& [name, value] : record.outputs) {
    if (is_loss_output(name) == losses) {
      chart->add_point(test_output_name(record, name), record.iteration, value);
    }
  }
}

// The one series of a figure that train lines may carry (the learning
// rate, images/s).
std::vector<ReportSeries> train_figure_series(const std::vector<MetricsRecord>& records,
                                              std::optional<double> MetricsRecord::*figure,
                                              const std::string& name) {
  ChartSeries chart;
  for (const MetricsRecord& record : records) {
    const std::optional<double>& value = record.*figure;
    if (record.kind == MetricsRecord::Kind::kTrain && value) {
      chart.add_point(name, record.iteration, *value);
    }
  }
  return chart.in_order();
}

}  // namespace

std::vector<ReportSeries> loss_series(const std::vector<MetricsRecord>& records) {
  ChartSeries chart;
  for (const MetricsRecord& record : records) {
    if (record.kind == MetricsRecord::Kind::kTrain && record.loss) {
      chart.add_point("train loss", record.iteration, *record.loss);
    }
    add_test_outputs(&chart, record, /*losses=*/true);
  }
  return chart.in_order();
}

std::vector<ReportSeries> test_score_series(const std::vector<MetricsRecord>& records) {
  ChartSeries chart;
  for (const MetricsRecord& record : records) add_test_outputs(&chart, record, /*losses=*/false);
  return chart.in_order();
}

std::vector<ReportSeries> learning_rate_series(const std::vector<MetricsRecord>& records) {
  return train_figure_series(records, &MetricsRecord::lr, "learning rate");
}

std::vector<ReportSeries> throughput_series(const std::vector<MetricsRecord>& records) {
  return train_figure_series(records, &MetricsRecord::images_per_second, "images/s");
}

std::string build_training_report(const ReportContents& contents) {
  const std::vector<MetricsRecord> records = latest_history(contents.records);
  std::string net_name;
  for (const MetricsRecord& record : records) {
    if (record.kind == MetricsRecord::Kind::kRun && !record.net_name.empty()) {
      net_name = record.net_name;
    }
  }
  const std::string title = "Training report" + (net_name.empty() ? "" : ": " + net_name);
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
      escape_html(title) +
      "</title>\n<style>\n"
      "body { font-family: sans-serif; margin: 20px 30px; color: #222; background: #fff; }\n"
      "h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 18px; margin-top: 26px; }\n"
      "h3 { font-size: 15px; } .source { color: #666; font-size: 13px; }\n"
      "table { border-collapse: collapse; font-size: 14px; }\n"
      "th { text-align: left; padding: 2px 14px 2px 0; font-weight: normal; color: #555; }\n"
      "td { padding: 2px 10px 2px 0; font-family: monospace; }\n"
      ".chart { display: block; margin: 10px 0; }\n"
      ".plot-area { fill: #fbfbfb; stroke: #999; }\n"
      ".grid { stroke: #e2e2e2; stroke-width: 1; }\n"
      ".resume { stroke: #888; stroke-width: 1; stroke-dasharray: 4 3; }\n"
      ".tick { font-size: 12px; fill: #555; } .axis { font-size: 13px; fill: #333; }\n"
      ".chart-title { font-size: 15px; font-weight: bold; fill: #222; }\n"
      ".legend { font-size: 12px; fill: #222; } .no-data { font-size: 14px; fill: #999; }\n"
      "pre { background: #f6f6f6; padding: 8px; font-size: 12px; max-height: 400px; "
      "overflow: auto; }\n"
      "</style>\n</head>\n<body>\n<h1>" +
      escape_html(title) + "</h1>\n";
  if (!contents.source.empty()) {
    html += "<div class=\"source\">from " + escape_html(contents.source) + "</div>\n";
  }
  html += summary_html(records);
  html += "<h2>Curves</h2>\n";
  const IterationAxis axis = iteration_axis(records);
  html += svg_chart("Loss (train: smoothed over average_loss; test: mean over test_iter)",
                    "loss-chart", loss_series(records), true, axis);
  html += svg_chart("Test scores", "test-score-chart", test_score_series(records), false, axis);
  html +=
      svg_chart("Learning rate", "learning-rate-chart", learning_rate_series(records), false, axis);
  const std::vector<ReportSeries> throughput = throughput_series(records);
  if (!throughput.empty()) {
    html += svg_chart("Throughput (images/s)", "throughput-chart", throughput, true, axis);
  }
  html += "<h2>Snapshots</h2>\n";
  if (contents.snapshots.empty()) {
    html += "<p>none</p>\n";
  } else {
    html += "<ul>\n";
    for (const std::string& path : contents.snapshots) {
      html += "<li><code>" + escape_html(path) + "</code></li>\n";
    }
    html += "</ul>\n";
  }
  html += "<h2>Configuration</h2>\n" + configuration_html(records);
  return html + "</body>\n</html>\n";
}

void write_training_report(const std::string& path, const ReportContents& contents) {
  write_file_atomically(path, build_training_report(contents));
}

}  // namespace xtrain
