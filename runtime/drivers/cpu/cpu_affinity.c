/* The CPUs this process may run on, whatever the calling thread's own mask says. An OpenMP
 * runtime with OMP_PROC_BIND / GOMP_CPU_AFFINITY pins the thread that ran its first parallel
 * region (often the main thread) to one CPU, and threads inherit their creator's mask: pool
 * workers created from that thread would all share one CPU. The process's CPUs are the union
 * of every thread's mask (OpenMP's own workers keep the other places) and of the mask the
 * thread that loaded the driver had then. A restriction of the whole process (taskset, a
 * cgroup cpuset) is in every mask, so it is kept. */
#define _GNU_SOURCE
#include "cpu_driver.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cpu_set_t at_load;
static bool have_at_load;

__attribute__((constructor)) static void snapshot_at_load(void) {
  have_at_load = sched_getaffinity(0, sizeof at_load, &at_load) == 0;
}

/* Adds a kernel CPU list ("0-3,8,10-11") to set. */
static void add_list(const char *s, cpu_set_t *set) {
  while (*s >= '0' && *s <= '9') {
    char *end;
    unsigned long lo = strtoul(s, &end, 10), hi = lo;
    if (*end == '-') hi = strtoul(end + 1, &end, 10);
    for (unsigned long c = lo; c <= hi && c < CPU_SETSIZE; c++)
      CPU_SET(c, set);
    s = *end == ',' ? end + 1 : end;
  }
}

/* Adds the Cpus_allowed_list of thread `tid` of this process. */
static void add_thread(const char *tid, cpu_set_t *set) {
  char path[64], line[4096];
  snprintf(path, sizeof path, "/proc/self/task/%s/status", tid);
  FILE *f = fopen(path, "r");
  if (!f) return; /* the thread has just exited */
  static const char key[] = "Cpus_allowed_list:";
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, key, sizeof key - 1)) {
      add_list(line + sizeof key - 1 + strspn(line + sizeof key - 1, " \t"), set);
      break;
    }
  fclose(f);
}

bool cpu_process_cpus(cpu_set_t *set) {
  CPU_ZERO(set);
  if (have_at_load) CPU_OR(set, set, &at_load);
  cpu_set_t mine;
  if (sched_getaffinity(0, sizeof mine, &mine) == 0) CPU_OR(set, set, &mine);
  DIR *d = opendir("/proc/self/task");
  if (d) {
    for (struct dirent *e; (e = readdir(d));)
      if (e->d_name[0] != '.') add_thread(e->d_name, set);
    closedir(d);
  }
  return CPU_COUNT(set) > 0;
}
