#include "data/window_file.hpp"

#include <fstream>
#include <sstream>

#include "xtrain/error.hpp"

namespace xtrain {
namespace {

// The file's whitespace-separated words with their line numbers, read one at
// a time as Caffe's stream extraction does, but with a line for errors.
class WordReader {
 public:
  explicit WordReader(const std::string& path) : path_(path), file_(path) {
    XTRAIN_CHECK(file_.good(), "cannot open the window file '", path, "'");
  }

  bool next(std::string* word) {
    while (!(words_ >> *word)) {
      std::string text;
      if (!std::getline(file_, text)) return false;
      ++line_;
      words_.clear();
      words_.str(text);
    }
    return true;
  }

  std::string expect(const char* what) {
    std::string word;
    XTRAIN_CHECK(next(&word), where(), ": the file ends where ", what, " should be");
    return word;
  }

  template <typename Number>
  Number number(const char* what) {
    const std::string word = expect(what);
    std::istringstream parse(word);
    Number value{};
    char rest = 0;
    XTRAIN_CHECK((parse >> value) && !(parse >> rest), where(), ": expected ", what, ", found '",
                 word, "'");
    return value;
  }

  int line() const { return line_; }
  std::string where() const { return "window file '" + path_ + "' line " + std::to_string(line_); }

 private:
  std::string path_;
  std::ifstream file_;
  std::istringstream words_;
  int line_ = 0;
};

}  // namespace

WindowFile read_window_file(const std::string& path, const std::string& root_folder,
                            float fg_threshold, float bg_threshold) {
  WindowFile file;
  file.path = path;
  WordReader reader(path);
  std::string hash;
  while (reader.next(&hash)) {
    XTRAIN_CHECK(hash == "#", reader.where(), ": expected '# IMAGE_INDEX' to start image ",
                 file.images.size(), ", found '", hash, "'");
    const int index = reader.number<int>("the image index");
    XTRAIN_CHECK(index == static_cast<int>(file.images.size()), reader.where(), ": image index ",
                 index, " where ", file.images.size(),
                 " comes next; number the images 0, 1, 2, ... in order");
    WindowImage image;
    image.path = root_folder + reader.expect("the image path");
    image.channels = reader.number<int>("the channel count");
    image.height = reader.number<int>("the image height");
    image.width = reader.number<int>("the image width");
    XTRAIN_CHECK(image.channels > 0 && image.height > 0 && image.width > 0, reader.where(),
                 ": image '", image.path, "' has size ", image.channels, " x ", image.height, " x ",
                 image.width, "; all three must be positive");
    const int windows = reader.number<int>("the number of windows");
    XTRAIN_CHECK(windows >= 0, reader.where(), ": negative number of windows ", windows);
    for (int w = 0; w < windows; ++w) {
      DetectionWindow window;
      window.image = index;
      window.label = reader.number<int>("a window's class");
      window.line = reader.line();
      window.overlap = reader.number<float>("a window's overlap");
      window.x1 = reader.number<int>("x1");
      window.y1 = reader.number<int>("y1");
      window.x2 = reader.number<int>("x2");
      window.y2 = reader.number<int>("y2");
      XTRAIN_CHECK(window.x1 <= window.x2 && window.y1 <= window.y2, reader.where(), ": window (",
                   window.x1, ", ", window.y1, ", ", window.x2, ", ", window.y2,
                   ") is empty; give x1 <= x2 and y1 <= y2 (inclusive corners)");
      if (window.overlap >= fg_threshold) {
        XTRAIN_CHECK(window.label > 0, reader.where(), ": a foreground window (overlap ",
                     window.overlap, " >= fg_threshold ", fg_threshold, ") has class ",
                     window.label, "; class 0 is the background, objects count from 1");
        file.foreground.push_back(window);
      } else if (window.overlap < bg_threshold) {
        window.label = 0;
        window.overlap = 0;
        file.background.push_back(window);
      }
    }
    file.images.push_back(image);
  }
  XTRAIN_CHECK(!file.images.empty(), "the window file '", path, "' lists no image");
  return file;
}

}  // namespace xtrain
