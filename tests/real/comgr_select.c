/* comgr_select: ROCm's code object manager (comgr) as the reference for
 * `offloadtool compat select`. amd_comgr_lookup_code_object is how the HIP
 * runtime picks the entry of an offload bundle a GPU loads.
 *
 *   comgr_select isas
 *       every ISA name comgr knows (amd_comgr_get_isa_name), one a line
 *   comgr_select lookup FILE OFFSET SIZE ISA...
 *       the bundle held by bytes [OFFSET, OFFSET+SIZE) of FILE (SIZE 0: to the
 *       end), as AMD_COMGR_DATA_KIND_FATBIN, looked up for each ISA with ONE
 *       query per call (comgr hands each code object to the first matching
 *       query of a list, so a list would hide later matches); one line per ISA:
 *           <isa> <offset> <size>     the entry comgr selects (offset from the
 *                                     bundle's start, as comgr reports it)
 *           <isa> none                nothing in the bundle fits
 *           <isa> error <status>      comgr refused the lookup
 *
 * Exit 0 when every lookup ran (whatever it found), 2 on usage or I/O errors
 * or when comgr fails outside a lookup. Built by tests/real/meson.build
 * against Debian's libamd-comgr-dev (scripts/install-deps installs it).
 */
#include <amd_comgr.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *status_text(amd_comgr_status_t s) {
  const char *text = "unknown status";
  if (amd_comgr_status_string(s, &text) != AMD_COMGR_STATUS_SUCCESS) return "unknown status";
  return text;
}

static void die_status(const char *what, amd_comgr_status_t s) {
  fprintf(stderr, "comgr_select: %s: %s\n", what, status_text(s));
  exit(2);
}

static int list_isas(void) {
  size_t count = 0;
  amd_comgr_status_t s = amd_comgr_get_isa_count(&count);
  if (s != AMD_COMGR_STATUS_SUCCESS) die_status("amd_comgr_get_isa_count", s);
  for (size_t i = 0; i < count; ++i) {
    const char *name = NULL;
    s = amd_comgr_get_isa_name(i, &name);
    if (s != AMD_COMGR_STATUS_SUCCESS) die_status("amd_comgr_get_isa_name", s);
    printf("%s\n", name);
  }
  return 0;
}

static char *read_range(const char *path, uint64_t offset, uint64_t size, size_t *got) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "comgr_select: %s: %s\n", path, strerror(errno));
    exit(2);
  }
  if (size == 0) {
    if (fseeko(f, 0, SEEK_END) != 0) goto io;
    off_t end = ftello(f);
    if (end < 0 || (uint64_t)end < offset) goto io;
    size = (uint64_t)end - offset;
  }
  if (fseeko(f, (off_t)offset, SEEK_SET) != 0) goto io;
  char *buf = malloc(size ? size : 1);
  if (!buf) goto io;
  if (fread(buf, 1, size, f) != size) goto io;
  fclose(f);
  *got = size;
  return buf;
io:
  fprintf(stderr, "comgr_select: %s: cannot read %" PRIu64 " bytes at offset %" PRIu64 "\n", path, size, offset);
  exit(2);
}

static uint64_t number(const char *text) {
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 0);
  if (errno || !end || *end || !*text) {
    fprintf(stderr, "comgr_select: not a number: %s\n", text);
    exit(2);
  }
  return v;
}

static int lookup(const char *path, uint64_t offset, uint64_t size, char **isas, int isa_count) {
  size_t bytes = 0;
  char *buf = read_range(path, offset, size, &bytes);
  amd_comgr_data_t data;
  amd_comgr_status_t s = amd_comgr_create_data(AMD_COMGR_DATA_KIND_FATBIN, &data);
  if (s != AMD_COMGR_STATUS_SUCCESS) die_status("amd_comgr_create_data", s);
  s = amd_comgr_set_data(data, bytes, buf);
  if (s != AMD_COMGR_STATUS_SUCCESS) die_status("amd_comgr_set_data", s);
  for (int i = 0; i < isa_count; ++i) {
    amd_comgr_code_object_info_t query = {isas[i], 0, 0};
    s = amd_comgr_lookup_code_object(data, &query, 1);
    if (s != AMD_COMGR_STATUS_SUCCESS)
      printf("%s error %s\n", isas[i], status_text(s));
    else if (query.size == 0)
      printf("%s none\n", isas[i]);
    else
      printf("%s %" PRIu64 " %zu\n", isas[i], query.offset, query.size);
  }
  amd_comgr_release_data(data);
  free(buf);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "isas") == 0) return list_isas();
  if (argc >= 6 && strcmp(argv[1], "lookup") == 0)
    return lookup(argv[2], number(argv[3]), number(argv[4]), argv + 5, argc - 5);
  fprintf(stderr, "usage: comgr_select isas\n"
                  "       comgr_select lookup FILE OFFSET SIZE ISA...\n");
  return 2;
}
