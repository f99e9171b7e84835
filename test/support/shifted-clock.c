// Test support: moves CLOCK_REALTIME (and gettimeofday, time) of the process it is preloaded into
// by the milliseconds written in $CLOCK_SHIFT_FILE, read at every call (see shifted-clock.ts); or
// stops it at the epoch millisecond in $CLOCK_PINNED_MS, read once (no file read per call).
// Raw system calls only, no malloc or dlsym, so it loads beside jemalloc, which redis-server links
// and libfaketime cannot (wolfcw/libfaketime#130).
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long long shift_ms(void) {
  const char *path = getenv("CLOCK_SHIFT_FILE");
  if (path == NULL) return 0;
  long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);
  if (fd < 0) return 0;
  char buf[32];
  long n = syscall(SYS_read, fd, buf, sizeof buf);
  syscall(SYS_close, fd);
  long long value = 0;
  int i = n > 0 && buf[0] == '-' ? 1 : 0;
  for (int j = i; j < n && buf[j] >= '0' && buf[j] <= '9'; j++) value = value * 10 + (buf[j] - '0');
  return i ? -value : value;
}

/** $CLOCK_PINNED_MS as a number, parsed at the first call; -1 when unset. */
static long long pinned_ms(void) {
  static long long pinned = -2;
  if (pinned != -2) return pinned;
  const char *text = getenv("CLOCK_PINNED_MS");
  long long value = -1;
  if (text != NULL && *text >= '0' && *text <= '9') {
    value = 0;
    for (; *text >= '0' && *text <= '9'; text++) value = value * 10 + (*text - '0');
  }
  pinned = value;
  return pinned;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
  long r = syscall(SYS_clock_gettime, id, ts);
  if (r != 0 || (id != CLOCK_REALTIME && id != CLOCK_REALTIME_COARSE)) return (int)r;
  long long pinned = pinned_ms();
  if (pinned >= 0) {
    ts->tv_sec = pinned / 1000;
    ts->tv_nsec = (pinned % 1000) * 1000000LL;
    return 0;
  }
  long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + shift_ms() * 1000000LL;
  ts->tv_sec = ns / 1000000000LL;
  ts->tv_nsec = ns % 1000000000LL;
  return 0;
}

int gettimeofday(struct timeval *tv, void *tz) {
  (void)tz;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  tv->tv_sec = ts.tv_sec;
  tv->tv_usec = ts.tv_nsec / 1000;
  return 0;
}

time_t time(time_t *out) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  if (out != NULL) *out = ts.tv_sec;
  return ts.tv_sec;
}
