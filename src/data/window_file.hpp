// R-CNN's window files, as Caffe's WindowData layer reads them: for each
// image, in order,
//
//   # IMAGE_INDEX            (0, 1, 2, ... in order)
//   PATH                     (relative to window_data_param.root_folder)
//   CHANNELS
//   HEIGHT
//   WIDTH
//   NUM_WINDOWS
//   CLASS OVERLAP X1 Y1 X2 Y2    (NUM_WINDOWS lines; pixel corners, inclusive)
//
// A window whose overlap (IoU with a ground-truth box) is >= fg_threshold is
// foreground and keeps its class (which must be > 0); one with overlap <
// bg_threshold is background (class and overlap become 0); the others are
// left out, as in Caffe.
#pragma once

#include <string>
#include <vector>

namespace xtrain {

struct DetectionWindow {
  int image = 0;  // index into WindowFile::images
  int label = 0;
  float overlap = 0;
  int x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  int line = 0;  // in the window file, for errors
};

struct WindowImage {
  std::string path;  // root_folder + the file's path
  int channels = 0;
  int height = 0;
  int width = 0;
};

struct WindowFile {
  std::string path;
  std::vector<WindowImage> images;
  std::vector<DetectionWindow> foreground;
  std::vector<DetectionWindow> background;
};

// Throws xtrain::Error naming the file and line of anything malformed.
WindowFile read_window_file(const std::string& path, const std::string& root_folder,
                            float fg_threshold, float bg_threshold);

}  // namespace xtrain
