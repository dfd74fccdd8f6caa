/* The program behind each of scripts/fetch-llvm23's LLVM 23 wrappers
 * (<cache>/llvm-23/bin/<tool>, one copy per tool, named after it): runs
 * /usr/lib/llvm-23/bin/<tool> inside the Debian sid chroot <cache>/root with
 * the caller's arguments, argv[0] included (LLVM's tools print it and look for
 * their helpers beside it: a shell script could not keep it), in the caller's
 * working folder. Outside the chroot it first enters a mount namespace of its
 * own (unshare; root only) where /proc, /dev, /tmp, <cache> and each folder of
 * $OT_LLVM23_SHARE (':'-separated) are mounted at the same paths inside the
 * chroot: the mounts end with the program, nothing is left mounted. Inside the
 * chroot (a tool starting another by a path that reaches a wrapper) it runs the
 * tool directly. LD_LIBRARY_PATH names bookworm's libzstd 1.5.4 (unpacked in
 * the chroot) unless OT_LLVM23_ZSTD=system: see scripts/fetch-llvm23. */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static const char kMarker[] = "/.offloadtool-llvm23";
static const char kZstd[] = "/opt/libzstd-1.5.4/usr/lib/x86_64-linux-gnu";

static void die(const char *what, const char *arg) {
  fprintf(stderr, "llvm-23 wrapper: %s %s: %s\n", what, arg, strerror(errno));
  exit(125);
}

static void mkdirs(char *path) { /* mkdir -p */
  for (char *p = path + 1; *p; ++p) {
    if (*p != '/') continue;
    *p = 0;
    mkdir(path, 0755);
    *p = '/';
  }
  mkdir(path, 0755);
}

static void bind(const char *root, const char *dir) {
  char target[2 * PATH_MAX];
  struct stat st;
  if (!*dir || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return;
  if (snprintf(target, sizeof target, "%s%s", root, dir) >= (int)sizeof target) die("path too long:", dir);
  mkdirs(target);
  if (mount(dir, target, NULL, MS_BIND, NULL) != 0) die("mount --bind", dir);
}

int main(int argc, char **argv) {
  (void)argc;
  char self[PATH_MAX], tool[PATH_MAX + 32];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) die("readlink", "/proc/self/exe");
  self[n] = 0;
  snprintf(tool, sizeof tool, "/usr/lib/llvm-23/bin/%s", basename(self));
  if (!getenv("OT_LLVM23_ZSTD") || strcmp(getenv("OT_LLVM23_ZSTD"), "system") != 0) setenv("LD_LIBRARY_PATH", kZstd, 1);
  if (access(kMarker, F_OK) == 0) {
    execv(tool, argv);
    die("exec", tool);
  }
  /* <cache>/llvm-23/bin/<tool> -> <cache> */
  char cache[PATH_MAX], root[PATH_MAX + 8], cwd[PATH_MAX];
  strcpy(cache, self);
  for (int up = 0; up < 3; ++up) *strrchr(cache, '/') = 0;
  snprintf(root, sizeof root, "%s/root", cache);
  if (!getcwd(cwd, sizeof cwd)) die("getcwd", "");
  if (unshare(CLONE_NEWNS) != 0) die("unshare", "(needs root)");
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) die("mount --make-rprivate", "/");
  char target[2 * PATH_MAX];
  snprintf(target, sizeof target, "%s/proc", root);
  if (mount("proc", target, "proc", 0, NULL) != 0) die("mount proc", target);
  bind(root, "/dev");
  bind(root, "/tmp");
  bind(root, cache);
  const char *share = getenv("OT_LLVM23_SHARE");
  if (share) {
    char *list = strdup(share);
    for (char *dir = strtok(list, ":"); dir; dir = strtok(NULL, ":")) bind(root, dir);
    free(list);
  }
  if (chroot(root) != 0) die("chroot", root);
  if (chdir(cwd) != 0) die("chdir", cwd);
  execv(tool, argv);
  die("exec", tool);
}
