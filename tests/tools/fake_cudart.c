/* A stand-in for the CUDA runtime's device and context calls, preloaded
 * (LD_PRELOAD) into the xtrain tool by tests/tools/gpu_binding_test.cpp to
 * see which GPUs a process touches, and in which order, on a machine with or
 * without GPUs.
 *
 * It pretends to have FAKE_CUDA_DEVICE_COUNT GPUs and appends one line per
 * call to the file FAKE_CUDART_LOG:
 *   count                   cudaGetDeviceCount (creates no context), then
 *   module_loading <value>  CUDA_MODULE_LOADING as that call sees it
 *   select <gpu>            cudaSetDevice (CUDA 12+ creates the context here)
 *   touch <gpu> <call>      a call that needs the current GPU's context
 * The calls it does not define go to the real runtime. At the N-th stream
 * creation (FAKE_CUDART_STOP_AT_STREAM, default 1) it logs "stop" and ends
 * the process with exit code 42: far enough for the device choice, before
 * any real GPU work. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* cudaError_t values: success, invalid device. */
enum { kSuccess = 0, kInvalidDevice = 101 };

static __thread int current_device = 0;
static int streams_created = 0;

static void log_line(const char* format, int a, const char* b) {
  const char* path = getenv("FAKE_CUDART_LOG");
  if (path == NULL) return;
  FILE* file = fopen(path, "a");
  if (file == NULL) return;
  fprintf(file, format, a, b);
  fputc('\n', file);
  fclose(file);
}

static int device_count(void) {
  const char* count = getenv("FAKE_CUDA_DEVICE_COUNT");
  return count != NULL ? atoi(count) : 1;
}

static int touch(const char* call) {
  log_line("touch %d %s", current_device, call);
  return kSuccess;
}

int cudaGetDeviceCount(int* count) {
  const char* loading = getenv("CUDA_MODULE_LOADING");
  log_line("count%.0d%s", 0, "");
  log_line("module_loading%.0d %s", 0, loading ? loading : "unset");
  *count = device_count();
  return kSuccess;
}

int cudaSetDevice(int device) {
  if (device < 0 || device >= device_count()) return kInvalidDevice;
  log_line("select %d%s", device, "");
  current_device = device;
  return kSuccess;
}

int cudaGetDevice(int* device) {
  *device = current_device;
  return kSuccess;
}

int cudaFree(void* ptr) {
  (void)ptr;
  return touch("cudaFree");
}

int cudaMalloc(void** ptr, size_t size) {
  (void)size;
  *ptr = NULL;
  return touch("cudaMalloc");
}

int cudaHostAlloc(void** ptr, size_t size, unsigned flags) {
  (void)flags;
  *ptr = malloc(size);
  return touch("cudaHostAlloc");
}

int cudaDeviceGetAttribute(int* value, int attribute, int device) {
  (void)attribute;
  *value = 0; /* cudaComputeModeDefault, and zero for anything else */
  log_line("attribute %d%s", device, "");
  return kSuccess;
}

static int create_stream(void** stream) {
  touch("cudaStreamCreate");
  *stream = (void*)(long)(++streams_created);
  const char* stop = getenv("FAKE_CUDART_STOP_AT_STREAM");
  if (streams_created >= (stop != NULL ? atoi(stop) : 1)) {
    log_line("stop%.0d%s", 0, "");
    _exit(42);
  }
  return kSuccess;
}

int cudaStreamCreate(void** stream) { return create_stream(stream); }

int cudaStreamCreateWithFlags(void** stream, unsigned flags) {
  (void)flags;
  return create_stream(stream);
}
