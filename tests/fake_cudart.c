/* A stand-in CUDA runtime for tests on machines without a GPU.
 *
 * It exports the libcudart functions benchctl resolves, with the same C
 * signatures. "GPU time" is the host's CLOCK_MONOTONIC at cudaEventRecord, so
 * a timed call's elapsed time is the host time of the call. Extra fake_*
 * functions (called through ctypes) count what the native timer did and arm
 * failures, so the tests can check ordering, cleanup and error reporting.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
  long long ns;
  void* stream;
  int recorded;
} fake_event;

static int live_events, created, destroyed, records, synchronizes, elapsed_queries;
static void* last_stream;
static int pending_error;
static int device_count_value = 1, device_count_error;
static int driver_version_value = 13000;

/* One armed failure: the `fail_at`-th call (1-based) of `fail_name` returns `fail_code`. */
static char fail_name[64];
static int fail_at, fail_code, fail_seen;

static int failing(const char* name) {
  if (fail_name[0] == '\0' || strcmp(name, fail_name) != 0) return 0;
  return ++fail_seen == fail_at;
}

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- control and inspection, for the tests ---- */

void fake_reset(void) {
  live_events = created = destroyed = records = synchronizes = elapsed_queries = 0;
  last_stream = NULL;
  pending_error = 0;
  device_count_value = 1;
  device_count_error = 0;
  driver_version_value = 13000;
  fail_name[0] = '\0';
  fail_at = fail_code = fail_seen = 0;
}

void fake_fail(const char* name, int at, int code) {
  snprintf(fail_name, sizeof fail_name, "%s", name);
  fail_at = at;
  fail_code = code;
  fail_seen = 0;
}

void fake_set_devices(int count, int error, int driver_version) {
  device_count_value = count;
  device_count_error = error;
  driver_version_value = driver_version;
}

void fake_set_pending_error(int code) { pending_error = code; }

long long fake_stat(const char* what) {
  if (!strcmp(what, "live_events")) return live_events;
  if (!strcmp(what, "created")) return created;
  if (!strcmp(what, "destroyed")) return destroyed;
  if (!strcmp(what, "records")) return records;
  if (!strcmp(what, "synchronizes")) return synchronizes;
  if (!strcmp(what, "elapsed_queries")) return elapsed_queries;
  if (!strcmp(what, "last_stream")) return (long long)last_stream;
  return -1;
}

/* ---- the libcudart functions ---- */

const char* cudaGetErrorString(int code) {
  static char text[64];
  snprintf(text, sizeof text, "fake cudart error %d", code);
  return text;
}

int cudaGetLastError(void) {
  int e = pending_error;
  pending_error = 0;
  return e;
}

int cudaGetDeviceCount(int* count) {
  if (device_count_error) return device_count_error;
  *count = device_count_value;
  return 0;
}

int cudaRuntimeGetVersion(int* v) {
  *v = 13000;
  return 0;
}

int cudaDriverGetVersion(int* v) {
  *v = driver_version_value;
  return 0;
}

int cudaEventCreateWithFlags(void** event, unsigned int flags) {
  (void)flags;
  if (failing("cudaEventCreateWithFlags")) return fail_code;
  fake_event* e = calloc(1, sizeof *e);
  if (!e) return 2; /* cudaErrorMemoryAllocation */
  *event = e;
  ++created;
  ++live_events;
  return 0;
}

int cudaEventRecord(void* event, void* stream) {
  if (failing("cudaEventRecord")) return fail_code;
  fake_event* e = event;
  e->ns = now_ns();
  e->stream = stream;
  e->recorded = 1;
  last_stream = stream;
  ++records;
  return 0;
}

int cudaEventSynchronize(void* event) {
  if (failing("cudaEventSynchronize")) return fail_code;
  ++synchronizes;
  return ((fake_event*)event)->recorded ? 0 : 400; /* cudaErrorInvalidResourceHandle */
}

int cudaEventElapsedTime(float* ms, void* start, void* end) {
  if (failing("cudaEventElapsedTime")) return fail_code;
  fake_event *a = start, *b = end;
  ++elapsed_queries;
  if (!a->recorded || !b->recorded) return 400;
  *ms = (float)((b->ns - a->ns) / 1e6);
  return 0;
}

int cudaEventDestroy(void* event) {
  if (failing("cudaEventDestroy")) return fail_code;
  free(event);
  ++destroyed;
  --live_events;
  return 0;
}
