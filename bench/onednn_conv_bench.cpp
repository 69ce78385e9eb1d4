// oneDNN's convolutions alone, per shape of the bench nets: forward,
// backward-data and backward-weights, each on the layouts oneDNN picks
// (format_tag::any for activations and weights, so no reorder is timed),
// bias in forward and backward-weights as in Caffe. Builds against oneDNN
// 2.x (op descriptors) and 3.x (primitive descriptors made directly), so the
// same program compares Debian's 2.6 with a newer one:
// bench/onednn_versions.sh builds it both ways and runs both.
//
//   onednn_conv_bench [--shapes bench/onednn_conv_shapes.txt] [--nets lenet,alexnet]
//                     [--calls 5] [--min-seconds 0.05] [--all-implementations]
//
// Per shape and pass it prints the median milliseconds of the timed calls
// (at least --calls, more until --min-seconds, after one untimed warm-up
// call), the fastest call, the median CPU time per thread (see Timing),
// GFLOP/s and the implementation oneDNN chose; then per net the sum over
// its layers (a shape's time x its count), per pass. Lines starting with
// "result" carry the same figures for bench/onednn_compare.py.
// --all-implementations also times every alternative oneDNN lists for each
// pass (what xtrain's choose_implementation can pick from), as "impl" lines;
// an alternative may want other activation layouts than its neighbours,
// i.e. reorders in a net, which are not timed here.
// ONEDNN_MAX_CPU_ISA caps the kernels as usual; OMP_NUM_THREADS the threads.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include <omp.h>

#include "oneapi/dnnl/dnnl.hpp"

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using DataType = memory::data_type;

struct ConvShape {
  std::string net, layer;
  int count = 0;
  memory::dim batch = 0, channels = 0, height = 0, width = 0, outputs = 0, kernel = 0, stride = 0,
              pad = 0, group = 0;
  memory::dim out_height() const { return (height + 2 * pad - kernel) / stride + 1; }
  memory::dim out_width() const { return (width + 2 * pad - kernel) / stride + 1; }
  // Multiply-adds x 2; each backward pass does as many as forward.
  double gflop() const {
    return 2.0 * batch * outputs * out_height() * out_width() * (channels / group) * kernel *
           kernel / 1e9;
  }
};

std::vector<ConvShape> read_shapes(const std::string& path, const std::string& nets) {
  std::ifstream file(path);
  if (!file) {
    std::fprintf(stderr, "onednn_conv_bench: cannot read %s\n", path.c_str());
    std::exit(2);
  }
  std::vector<ConvShape> shapes;
  std::string line;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    ConvShape s;
    fields >> s.net >> s.layer >> s.count >> s.batch >> s.channels >> s.height >> s.width >>
        s.outputs >> s.kernel >> s.stride >> s.pad >> s.group;
    if (!fields) {
      std::fprintf(stderr, "onednn_conv_bench: bad line in %s: %s\n", path.c_str(), line.c_str());
      std::exit(2);
    }
    if (nets.empty() || ("," + nets + ",").find("," + s.net + ",") != std::string::npos) {
      shapes.push_back(s);
    }
  }
  return shapes;
}

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// The three primitive descriptors of one shape, made the way the library
// version wants: 2.x through op descriptors, 3.x directly. In 2.x a
// descriptor's list of implementations points into its op descriptor, so
// those are kept, at fixed addresses, for as long as the list is walked.
struct PassDescs {
#if DNNL_VERSION_MAJOR < 3
  std::shared_ptr<dnnl::convolution_forward::desc> forward_op;
  std::shared_ptr<dnnl::convolution_backward_data::desc> backward_data_op;
  std::shared_ptr<dnnl::convolution_backward_weights::desc> backward_weights_op;
#endif
  dnnl::convolution_forward::primitive_desc forward;
  dnnl::convolution_backward_data::primitive_desc backward_data;
  dnnl::convolution_backward_weights::primitive_desc backward_weights;
};

PassDescs make_descs(const ConvShape& s) {
  const memory::dims src_dims = {s.batch, s.channels, s.height, s.width};
  const memory::dims dst_dims = {s.batch, s.outputs, s.out_height(), s.out_width()};
  const memory::dims weight_dims =
      s.group == 1 ? memory::dims{s.outputs, s.channels, s.kernel, s.kernel}
                   : memory::dims{s.group, s.outputs / s.group, s.channels / s.group, s.kernel,
                                  s.kernel};
  const memory::desc src(src_dims, DataType::f32, Tag::any);
  const memory::desc dst(dst_dims, DataType::f32, Tag::any);
  const memory::desc weights(weight_dims, DataType::f32, Tag::any);
  const memory::desc bias({s.outputs}, DataType::f32, Tag::x);
  const memory::dims strides = {s.stride, s.stride}, padding = {s.pad, s.pad};
  const auto direct = dnnl::algorithm::convolution_direct;
  const auto& engine = cpu_engine();
  PassDescs pd;
#if DNNL_VERSION_MAJOR >= 3
  pd.forward = dnnl::convolution_forward::primitive_desc(
      engine, dnnl::prop_kind::forward_training, direct, src, weights, bias, dst, strides,
      padding, padding);
  pd.backward_data = dnnl::convolution_backward_data::primitive_desc(
      engine, direct, src, weights, dst, strides, padding, padding, pd.forward);
  pd.backward_weights = dnnl::convolution_backward_weights::primitive_desc(
      engine, direct, src, weights, bias, dst, strides, padding, padding, pd.forward);
#else
  pd.forward_op = std::make_shared<dnnl::convolution_forward::desc>(
      dnnl::prop_kind::forward_training, direct, src, weights, bias, dst, strides, padding,
      padding);
  pd.backward_data_op = std::make_shared<dnnl::convolution_backward_data::desc>(
      direct, src, weights, dst, strides, padding, padding);
  pd.backward_weights_op = std::make_shared<dnnl::convolution_backward_weights::desc>(
      direct, src, weights, bias, dst, strides, padding, padding);
  pd.forward = dnnl::convolution_forward::primitive_desc(*pd.forward_op, engine);
  pd.backward_data =
      dnnl::convolution_backward_data::primitive_desc(*pd.backward_data_op, engine, pd.forward);
  pd.backward_weights = dnnl::convolution_backward_weights::primitive_desc(
      *pd.backward_weights_op, engine, pd.forward);
#endif
  return pd;
}

// A buffer in the layout a primitive chose, filled with small values that
// stay clear of denormals (their speed must not depend on the data).
memory filled(const memory::desc& desc) {
  memory result(desc, cpu_engine());
  float* data = static_cast<float*>(result.get_data_handle());
  const size_t count = desc.get_size() / sizeof(float);
  for (size_t i = 0; i < count; ++i) data[i] = 0.01f * static_cast<float>(i % 97) - 0.48f;
  return result;
}

double process_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// One pass's figures over its timed calls, in milliseconds: the median and
// the fastest by the wall clock, and the median of the process's CPU time
// over the thread count. On a machine that other jobs share, the wall
// clock counts the time slices our threads waited for (an OpenMP barrier
// waits for its slowest thread) while the CPU time does not, so run with
// OMP_WAIT_POLICY=passive (waiting threads then sleep rather than spin,
// and do not count) to compare kernels there.
struct Timing {
  double median_ms, fastest_ms, cpu_ms;
  std::string implementation;
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

Timing time_calls(const dnnl::primitive& primitive, const std::unordered_map<int, memory>& args,
                  const char* implementation, int min_calls, double min_seconds) {
  dnnl::stream stream(cpu_engine());
  primitive.execute(stream, args);  // warm-up: first-touch, JIT, caches
  stream.wait();
  const int threads = omp_get_max_threads();
  std::vector<double> wall_ms, cpu_ms;
  double total = 0;
  while (static_cast<int>(wall_ms.size()) < min_calls ||
         (total < min_seconds && wall_ms.size() < 200)) {
    double cpu_start = process_cpu_seconds();
    auto start = std::chrono::steady_clock::now();
    primitive.execute(stream, args);
    stream.wait();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    cpu_ms.push_back(1e3 * (process_cpu_seconds() - cpu_start) / threads);
    wall_ms.push_back(1e3 * seconds);
    total += seconds;
  }
  return {median(wall_ms), *std::min_element(wall_ms.begin(), wall_ms.end()), median(cpu_ms),
          implementation};
}

const char* const kPassNames[3] = {"forward", "backward_data", "backward_weights"};

using Args = std::unordered_map<int, memory>;

// Times one pass with the implementation `pd` stands on and, with
// all_implementations, every later one in oneDNN's list too (walking the
// list moves `pd`, so it is taken by value): the first Timing is oneDNN's
// own choice. Each implementation gets buffers in the layouts it chose.
template <typename Primitive, typename ArgsFor>
std::vector<Timing> time_pass(typename Primitive::primitive_desc pd, ArgsFor args_for,
                              bool all_implementations, int min_calls, double min_seconds) {
  std::vector<Timing> timings;
  do {
    // Reference kernels are 100x slower and never what xtrain would pick.
    if (!timings.empty() && std::strncmp(pd.impl_info_str(), "ref", 3) == 0) continue;
    try {
      timings.push_back(time_calls(Primitive(pd), args_for(pd), pd.impl_info_str(), min_calls,
                                   min_seconds));
    } catch (const dnnl::error& e) {
      // oneDNN lists some implementations it then cannot create; only its
      // own first choice must work.
      if (timings.empty()) throw;
      std::fprintf(stderr, "onednn_conv_bench: skipped %s: %s\n", pd.impl_info_str(), e.what());
    }
  } while (all_implementations && pd.next_impl());
  return timings;
}

// Per pass (forward, backward-data, backward-weights), the timings of
// oneDNN's choice and, with all_implementations, of its alternatives.
std::vector<std::vector<Timing>> time_shape(const ConvShape& s, bool all_implementations,
                                            int min_calls, double min_seconds) {
  PassDescs pd = make_descs(s);
  const memory::desc bias_desc({s.outputs}, DataType::f32, Tag::x);
  auto forward_args = [&](const dnnl::convolution_forward::primitive_desc& p) {
    return Args{{DNNL_ARG_SRC, filled(p.src_desc())}, {DNNL_ARG_WEIGHTS, filled(p.weights_desc())},
                {DNNL_ARG_BIAS, filled(bias_desc)}, {DNNL_ARG_DST, filled(p.dst_desc())}};
  };
  auto backward_data_args = [](const dnnl::convolution_backward_data::primitive_desc& p) {
    return Args{{DNNL_ARG_DIFF_DST, filled(p.diff_dst_desc())},
                {DNNL_ARG_WEIGHTS, filled(p.weights_desc())},
                {DNNL_ARG_DIFF_SRC, filled(p.diff_src_desc())}};
  };
  auto backward_weights_args = [&](const dnnl::convolution_backward_weights::primitive_desc& p) {
    return Args{{DNNL_ARG_SRC, filled(p.src_desc())}, {DNNL_ARG_DIFF_DST, filled(p.diff_dst_desc())},
                {DNNL_ARG_DIFF_WEIGHTS, filled(p.diff_weights_desc())},
                {DNNL_ARG_DIFF_BIAS, filled(bias_desc)}};
  };
  // Forward last: oneDNN 3.x's next_impl() changes the forward descriptor
  // in place, and the backward ones still refer to it as their hint.
  auto backward_data = time_pass<dnnl::convolution_backward_data>(
      pd.backward_data, backward_data_args, all_implementations, min_calls, min_seconds);
  auto backward_weights = time_pass<dnnl::convolution_backward_weights>(
      pd.backward_weights, backward_weights_args, all_implementations, min_calls, min_seconds);
  auto forward = time_pass<dnnl::convolution_forward>(pd.forward, forward_args,
                                                      all_implementations, min_calls, min_seconds);
  return {forward, backward_data, backward_weights};
}

[[noreturn]] void usage(const char* problem, int status) {
  std::fprintf(status ? stderr : stdout,
               "onednn_conv_bench: %s\nusage: onednn_conv_bench [--shapes FILE] [--nets a,b] "
               "[--calls N] [--min-seconds S] [--all-implementations]\n",
               problem);
  std::exit(status);
}

}  // namespace

int main(int argc, char** argv) {
  std::string shapes_path = "bench/onednn_conv_shapes.txt", nets;
  int min_calls = 5;
  double min_seconds = 0.05;
  bool all_implementations = false;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      usage("oneDNN convolution passes per bench-net shape (see bench/onednn_conv_bench.cpp)", 0);
    }
    if (flag == "--all-implementations") {
      all_implementations = true;
      continue;
    }
    if (i + 1 >= argc) usage(("missing value after " + flag).c_str(), 2);
    std::string value = argv[++i];
    if (flag == "--shapes") shapes_path = value;
    else if (flag == "--nets") nets = value;
    else if (flag == "--calls") min_calls = std::atoi(value.c_str());
    else if (flag == "--min-seconds") min_seconds = std::atof(value.c_str());
    else usage(("unknown option " + flag).c_str(), 2);
  }
  if (min_calls < 1) usage("--calls must be at least 1", 2);
  const std::vector<ConvShape> shapes = read_shapes(shapes_path, nets);
  if (shapes.empty()) usage("no shapes (check --nets)", 2);

  const dnnl_version_t* version = dnnl_version();
  const char* isa_cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  std::printf("oneDNN %d.%d.%d (%s), ONEDNN_MAX_CPU_ISA=%s, %d threads; >= %d calls per pass\n",
              version->major, version->minor, version->patch, version->hash,
              isa_cap ? isa_cap : "(unset)", omp_get_max_threads(), min_calls);
  std::printf("ms: median by the wall clock (fastest call; median CPU time / threads)\n");
  std::printf("%-14s %-26s %3s %-16s %9s %9s %9s %8s  %s\n", "net", "layer", "n", "pass", "ms",
              "fastest", "cpu", "GFLOP/s", "implementation");
  // Per net and pass, the sum of count x time, in the order nets appear.
  std::vector<std::string> net_order;
  std::map<std::string, std::vector<double>> net_ms;
  for (const ConvShape& s : shapes) {
    if (!net_ms.count(s.net)) {
      net_order.push_back(s.net);
      net_ms[s.net] = std::vector<double>(3, 0.0);
    }
    std::vector<std::vector<Timing>> timings =
        time_shape(s, all_implementations, min_calls, min_seconds);
    for (int pass = 0; pass < 3; ++pass) {
      const Timing& t = timings[pass].front();
      std::printf("%-14s %-26s %3d %-16s %9.3f %9.3f %9.3f %8.1f  %s\n", s.net.c_str(),
                  s.layer.c_str(), s.count, kPassNames[pass], t.median_ms, t.fastest_ms, t.cpu_ms,
                  s.gflop() / (t.median_ms / 1e3), t.implementation.c_str());
      std::printf("result %s %s %d %s %.4f %.4f %.4f %.6f %s\n", s.net.c_str(), s.layer.c_str(),
                  s.count, kPassNames[pass], t.median_ms, t.fastest_ms, t.cpu_ms, s.gflop(),
                  t.implementation.c_str());
      net_ms[s.net][pass] += s.count * t.median_ms;
      for (const Timing& other : timings[pass]) {  // oneDNN's choice among them
        std::printf("impl %s %s %d %s %.4f %.4f %.4f %.6f %s\n", s.net.c_str(), s.layer.c_str(),
                    s.count, kPassNames[pass], other.median_ms, other.fastest_ms, other.cpu_ms,
                    s.gflop(), other.implementation.c_str());
      }
    }
    std::fflush(stdout);
  }
  std::printf("\nper net, sum over its convolution layers (median ms): forward, backward-data, "
              "backward-weights, all\n");
  for (const std::string& net : net_order) {
    const std::vector<double>& ms = net_ms[net];
    std::printf("%-14s %9.2f %9.2f %9.2f %9.2f\n", net.c_str(), ms[0], ms[1], ms[2],
                ms[0] + ms[1] + ms[2]);
  }
  return 0;
}
