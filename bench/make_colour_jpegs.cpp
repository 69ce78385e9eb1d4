// Writes COUNT colour JPEGs of SIZE x SIZE into DIR (DIR/<class>/<i>.jpg) and
// DIR/list.txt, for bench/imageset_throughput.sh. The images are smooth
// gradients with shapes and sensor-like noise, so they compress to sizes
// typical of photos (tens of kB at quality 90), not to a few hundred bytes.
//   make_colour_jpegs DIR [COUNT] [SIZE]
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: make_colour_jpegs DIR [COUNT] [SIZE]\n");
    return 1;
  }
  const std::string dir = argv[1];
  const int count = argc > 2 ? std::atoi(argv[2]) : 10000;
  const int size = argc > 3 ? std::atoi(argv[3]) : 256;
  cv::setNumThreads(1);
  cv::RNG rng(20261122);
  std::ofstream list(dir + "/list.txt.partial");
  for (int i = 0; i < count; ++i) {
    const int label = i % 10;
    cv::Mat image(size, size, CV_8UC3);
    const cv::Vec3d base(rng.uniform(0, 255), rng.uniform(0, 255), rng.uniform(0, 255));
    const cv::Vec3d slope(rng.uniform(-1.0, 1.0), rng.uniform(-1.0, 1.0), rng.uniform(-1.0, 1.0));
    for (int h = 0; h < size; ++h) {
      for (int w = 0; w < size; ++w) {
        cv::Vec3b& pixel = image.at<cv::Vec3b>(h, w);
        for (int c = 0; c < 3; ++c) {
          pixel[c] = cv::saturate_cast<uchar>(base[c] + slope[c] * (h + (c + 1) * w) * 0.4);
        }
      }
    }
    for (int shape = 0; shape < 6; ++shape) {
      const cv::Point centre(rng.uniform(0, size), rng.uniform(0, size));
      const cv::Scalar colour(rng.uniform(0, 255), rng.uniform(0, 255), rng.uniform(0, 255));
      if (shape % 2) {
        cv::circle(image, centre, rng.uniform(size / 16, size / 4), colour, cv::FILLED,
                   cv::LINE_AA);
      } else {
        cv::rectangle(image, centre,
                      centre + cv::Point(rng.uniform(8, size / 3), rng.uniform(8, size / 3)),
                      colour, cv::FILLED);
      }
    }
    cv::Mat noise(size, size, CV_8UC3);
    rng.fill(noise, cv::RNG::NORMAL, 0, 6);
    image += noise;
    cv::GaussianBlur(image, image, cv::Size(3, 3), 0.8);
    const std::string relative = "class" + std::to_string(label) + "/" + std::to_string(i) + ".jpg";
    std::filesystem::create_directories(dir + "/class" + std::to_string(label));
    if (!cv::imwrite(dir + "/" + relative, image, {cv::IMWRITE_JPEG_QUALITY, 90})) {
      std::fprintf(stderr, "make_colour_jpegs: cannot write %s/%s\n", dir.c_str(),
                   relative.c_str());
      return 1;
    }
    list << relative << " " << label << "\n";
  }
  list.close();
  std::filesystem::rename(dir + "/list.txt.partial", dir + "/list.txt");
  std::printf("make_colour_jpegs: wrote %d JPEGs of %dx%d to %s\n", count, size, size, dir.c_str());
  return 0;
}
