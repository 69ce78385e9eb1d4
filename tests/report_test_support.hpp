// Reading the training report's curves back, as tools and tests may: every
// curve is a <polyline class="series"> whose data-* attributes name it and
// give its last point (src/solvers/training_report.hpp).
#pragma once

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

namespace xtrain::testing {

struct LastPoint {
  int iteration = -1;
  double value = 0;
  std::string text;  // the value as written
};

// Series name -> last point, over the whole page or one chart's <svg>.
inline std::map<std::string, LastPoint> report_last_points(const std::string& html) {
  static const std::regex polyline(
      R"re(<polyline class="series" data-series="([^"]*)" data-last-iteration="(-?\d+)" )re"
      R"re(data-last-value="([^"]*)")re");
  std::map<std::string, LastPoint> points;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), polyline);
       it != std::sregex_iterator(); ++it) {
    LastPoint point;
    point.iteration = std::stoi((*it)[2]);
    point.value = std::stod((*it)[3]);
    point.text = (*it)[3];
    points[(*it)[1]] = point;
  }
  return points;
}

// The <svg id="chart_id"> element of the page ("" if absent).
inline std::string report_chart(const std::string& html, const std::string& chart_id) {
  const std::size_t start = html.find("<svg id=\"" + chart_id + "\"");
  if (start == std::string::npos) return "";
  const std::size_t end = html.find("</svg>", start);
  return html.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

inline std::string read_text_file(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace xtrain::testing
