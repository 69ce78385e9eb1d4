// Rendering the training report with headless Chromium and looking at the
// screenshot: tests/tools/report_render_test.cpp and the end-to-end LeNet
// test share these.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <string>

#include "tool_runner.hpp"

namespace xtrain::testing {

inline std::string find_chromium() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    const ToolResult found = run_tool(std::string("command -v ") + name);
    if (found.exit_code == 0 && !found.output.empty()) return last_line(found.output);
  }
  return "";
}

// Pixels within `tolerance` (per channel) of an RGB colour, in rows [top, bottom).
inline int pixels_of_colour(const cv::Mat& image, int red, int green, int blue, int top, int bottom,
                            int tolerance = 40) {
  int count = 0;
  for (int y = std::max(0, top); y < std::min(bottom, image.rows); ++y) {
    for (int x = 0; x < image.cols; ++x) {
      const cv::Vec3b pixel = image.at<cv::Vec3b>(y, x);  // BGR
      if (std::abs(pixel[0] - blue) <= tolerance && std::abs(pixel[1] - green) <= tolerance &&
          std::abs(pixel[2] - red) <= tolerance) {
        ++count;
      }
    }
  }
  return count;
}

inline int non_white_pixels(const cv::Mat& image) {
  int count = 0;
  for (int y = 0; y < image.rows; ++y) {
    for (int x = 0; x < image.cols; ++x) {
      const cv::Vec3b pixel = image.at<cv::Vec3b>(y, x);
      if (pixel[0] < 240 || pixel[1] < 240 || pixel[2] < 240) ++count;
    }
  }
  return count;
}

// Renders `html` to `png` (1200 x 1600) and returns the screenshot (empty
// if Chromium failed; `log` gets its output).
inline cv::Mat render_page(const std::string& chromium, const std::string& html,
                           const std::string& png, std::string* log) {
  const ToolResult rendered =
      run_tool("timeout 60 " + chromium +
               " --headless --no-sandbox --disable-gpu --hide-scrollbars --screenshot=" + png +
               " --window-size=1200,1600 file://" + html);
  *log = rendered.output;
  return cv::imread(png, cv::IMREAD_COLOR);
}

}  // namespace xtrain::testing
