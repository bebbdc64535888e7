/* c_abi_test.c: the C ABI (coop/coop_c.h, libcoop_c.so) from C, linked against that library
 * alone, against real coopd processes.
 *
 *   c_abi_test daemon     starts a coopd of its own on a temporary socket and cache, then:
 *                         catalog, spec setters and their errors, specialize (LTO-IR and entries,
 *                         a cache hit), LLVM bitcode, a bad spec, a bundle, a user operator,
 *                         links to cubins,
 *                         stats; then stops the daemon, which must exit cleanly.
 *   c_abi_test autostart  with no daemon on a fresh socket: the "not reachable" code with
 *                         auto-start off (option or COOPD_NO_AUTOSTART), then a specialize with it
 *                         on starts the coopd found next to libcoop_c.so (COOPD_BIN unset, PATH
 *                         without coopd), which is running afterwards; then stops it.
 *
 * Waits for daemons are liveness bounds, never performance thresholds. */
#define _GNU_SOURCE
#include <coop/coop_c.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef COOPD_BINARY
#error "COOPD_BINARY must name the coopd binary"
#endif

extern char** environ;

static int failures = 0;

#define CHECK(cond, what)                                                                          \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: %s: CHECK(%s) failed; last error: %s\n", __FILE__, __LINE__, (what), \
              #cond, coop_last_error());                                                           \
      ++failures;                                                                                  \
    }                                                                                              \
  } while (0)

/* Checks a status; on a mismatch prints both codes and the library's message. */
static int expect_status(coop_status got, coop_status want, const char* what, int line) {
  if (got == want) return 1;
  fprintf(stderr, "%s:%d: %s: got %s, want %s: %s\n", __FILE__, line, what, coop_status_name(got),
          coop_status_name(want), coop_last_error());
  ++failures;
  return 0;
}
#define EXPECT_STATUS(got, want, what) expect_status((got), (want), (what), __LINE__)

static int contains(const char* haystack, const char* needle) {
  return haystack != NULL && strstr(haystack, needle) != NULL;
}

static int starts_with(const char* s, const char* prefix) {
  return s != NULL && strncmp(s, prefix, strlen(prefix)) == 0;
}

static void sleep_ms(long ms) {
  struct timespec ts;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (ms % 1000) * 1000000L;
  nanosleep(&ts, NULL);
}

static int remove_entry(const char* path, const struct stat* st, int flag, struct FTW* ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static void print_file(const char* path) {
  char buf[4096];
  size_t n;
  FILE* f = fopen(path, "r");
  if (f == NULL) return;
  fprintf(stderr, "---- %s\n", path);
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0) fwrite(buf, 1, n, stderr);
  fclose(f);
}

static coop_client_t* open_client(const char* socket, int autostart, uint64_t timeout_ms) {
  coop_client_t* client = NULL;
  coop_options_t* options = coop_options_create();
  coop_options_set_autostart(options, autostart);
  coop_options_set_client_name(options, "c_abi_test");
  EXPECT_STATUS(coop_options_set_timeout_ms(options, timeout_ms), COOP_OK, "timeout");
  EXPECT_STATUS(coop_client_open(socket, options, &client), COOP_OK, "coop_client_open");
  coop_options_destroy(options); /* the client keeps a copy */
  return client;
}

/* block_reduce sum float32, 256 threads, sm_90: the README's example. */
static coop_spec_t* block_reduce_spec(void) {
  coop_spec_t* spec = coop_spec_create();
  EXPECT_STATUS(coop_spec_set_string(spec, "family", "block_reduce"), COOP_OK, "family");
  EXPECT_STATUS(coop_spec_set_string(spec, "dtype", "float32"), COOP_OK, "dtype");
  EXPECT_STATUS(coop_spec_set_uint(spec, "block.x", 256), COOP_OK, "block.x");
  EXPECT_STATUS(coop_spec_set_string(spec, "arch", "sm_90"), COOP_OK, "arch");
  return spec;
}

/* ---- daemon ------------------------------------------------------------------------------ */

/* Starts COOPD_BINARY on `socket` with its cache in `cache` and its log in `log`; waits until
 * it answers (a liveness bound of two minutes: it probes the toolchain first). */
static pid_t start_daemon(const char* socket, const char* cache, const char* log) {
  char* argv[] = {(char*)COOPD_BINARY, (char*)"--socket",  (char*)socket, (char*)"--cache-dir",
                  (char*)cache,        (char*)"--workers", (char*)"1",    NULL};
  posix_spawn_file_actions_t actions;
  pid_t pid = -1;
  int i;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  if (posix_spawn(&pid, COOPD_BINARY, &actions, NULL, argv, environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  if (pid < 0) return -1;
  for (i = 0; i < 2400; ++i) {
    int status = 0;
    coop_client_t* probe;
    coop_stats_t* stats = NULL;
    coop_status s;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      fprintf(stderr, "coopd exited during start-up (status %d)\n", status);
      print_file(log);
      return -1;
    }
    /* A fresh client each time, with auto-start off: this test started its own daemon. */
    probe = open_client(socket, 0, 2000);
    s = coop_client_stats(probe, &stats);
    coop_stats_destroy(stats);
    coop_client_destroy(probe);
    if (s == COOP_OK) return pid;
    sleep_ms(50);
  }
  fprintf(stderr, "coopd did not become ready\n");
  print_file(log);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return -1;
}

static void test_version(void) {
  CHECK(coop_abi_version() == COOP_C_ABI_VERSION, "the library is the header's version");
  CHECK(strcmp(coop_status_name(COOP_INVALID_ARGUMENT), "INVALID_ARGUMENT") == 0, "name");
  CHECK(strcmp(coop_status_name(COOP_NOT_REACHABLE), "NOT_REACHABLE") == 0, "name");
  CHECK(strcmp(coop_status_name((coop_status)57), "UNKNOWN") == 0, "unlisted value");
}

static void test_catalog(coop_client_t* client) {
  coop_catalog_t* catalog = NULL;
  size_t f, m, families;
  int found_reduce = 0, found_sum = 0, reduce_kind_binary = 0;
  if (!EXPECT_STATUS(coop_client_catalog(client, &catalog), COOP_OK, "catalog")) return;
  families = coop_catalog_family_count(catalog);
  CHECK(families > 10, "the catalogue lists every family");
  for (f = 0; f < families; ++f) {
    CHECK(coop_catalog_family_name(catalog, f)[0] != '\0', "family name");
    if (strcmp(coop_catalog_family_name(catalog, f), "block_reduce") != 0) continue;
    found_reduce = 1;
    CHECK(coop_catalog_family_available(catalog, f) == 1, "block_reduce is available");
    CHECK(coop_catalog_family_description(catalog, f)[0] != '\0', "description");
    CHECK(strcmp(coop_catalog_method_name(catalog, f, 0), "sum") == 0, "sum is the default");
    for (m = 0; m < coop_catalog_method_count(catalog, f); ++m) {
      const char* name = coop_catalog_method_name(catalog, f, m);
      if (strcmp(name, "sum") == 0) {
        found_sum = 1;
        CHECK(strcmp(coop_catalog_method_op_kind(catalog, f, m), "") == 0, "sum takes no op");
      }
      if (strcmp(name, "reduce") == 0) {
        reduce_kind_binary = strcmp(coop_catalog_method_op_kind(catalog, f, m), "binary") == 0;
      }
    }
    CHECK(coop_catalog_method_name(catalog, f, coop_catalog_method_count(catalog, f)) == NULL,
          "a method index out of range is NULL");
  }
  CHECK(found_reduce && found_sum, "block_reduce with method sum");
  CHECK(reduce_kind_binary, "block_reduce reduce takes a binary operator");
  CHECK(coop_catalog_family_name(catalog, families) == NULL, "a family index out of range");
  CHECK(coop_catalog_method_count(catalog, families) == 0, "no methods out of range");
  CHECK(contains(coop_catalog_json(catalog), "\"warp_reductions\""), "the JSON has the rest");
  coop_catalog_destroy(catalog);
}

static void test_spec_setters(void) {
  coop_spec_t* spec = block_reduce_spec();
  coop_spec_t* parsed = NULL;
  coop_spec_t* copy;
  char json[1024];

  EXPECT_STATUS(coop_spec_set_uint(spec, "blok.x", 1), COOP_INVALID_ARGUMENT, "unknown field");
  CHECK(contains(coop_last_error(), "\"blok.x\" is not a spec field"), "names the path");
  CHECK(contains(coop_last_error(), "block.x") && contains(coop_last_error(), "op.user.ltoir") &&
            contains(coop_last_error(), "histogram.bins"),
        "lists the fields");
  CHECK(!contains(coop_last_error(), "digest"), "resolved-only fields are not settable");
  EXPECT_STATUS(coop_spec_set_string(spec, "block", "256"), COOP_INVALID_ARGUMENT, "a message");
  EXPECT_STATUS(coop_spec_set_uint(spec, "family", 3), COOP_INVALID_ARGUMENT, "wrong kind");
  CHECK(contains(coop_last_error(), "\"family\" holds a string: set it with coop_spec_set_string"),
        "names the setter to use");
  EXPECT_STATUS(coop_spec_set_bool(spec, "block.x", 1), COOP_INVALID_ARGUMENT, "wrong kind");
  CHECK(contains(coop_last_error(), "coop_spec_set_uint"), "names the setter to use");
  EXPECT_STATUS(coop_spec_set_uint(spec, "block.x", 1ull << 32), COOP_INVALID_ARGUMENT, "range");
  CHECK(contains(coop_last_error(), "0..4294967295"), "says the range");
  EXPECT_STATUS(coop_spec_set_string(spec, "op.user.operand_dtypes", "x"), COOP_INVALID_ARGUMENT,
                "a list");
  CHECK(contains(coop_last_error(), "coop_spec_add_string"), "names the setter to use");
  EXPECT_STATUS(coop_spec_set_string(spec, "calling_convention", "fortran"), COOP_INVALID_ARGUMENT,
                "enum");
  CHECK(contains(coop_last_error(), "must be one of c, numba; got \"fortran\""), "lists names");
  EXPECT_STATUS(coop_spec_set_bytes(spec, "calling_convention", "c", 1), COOP_INVALID_ARGUMENT,
                "an enum takes a name");
  CHECK(contains(coop_last_error(), "holds a name: set it with coop_spec_set_string"), "says so");
  /* A string field takes UTF-8 only (found by tests/fuzz's c_abi target: the spec's JSON lost
   * such a value). Checked before anything changes: op.user is not made present. */
  EXPECT_STATUS(coop_spec_set_string(spec, "family", "block_\xff"), COOP_INVALID_ARGUMENT,
                "invalid UTF-8");
  CHECK(contains(coop_last_error(),
                 "spec field \"family\" holds UTF-8 text; the value is not UTF-8 at byte 6 (0xff)"),
        coop_last_error());
  EXPECT_STATUS(coop_spec_set_bytes(spec, "op.user.name", "\xc0\x80", 2), COOP_INVALID_ARGUMENT,
                "an overlong NUL");
  EXPECT_STATUS(coop_spec_add_string(spec, "op.user.operand_dtypes", "\xed\xa0\x80"),
                COOP_INVALID_ARGUMENT, "a surrogate");
  EXPECT_STATUS(coop_spec_set_string(NULL, "family", "x"), COOP_INVALID_ARGUMENT, "NULL spec");
  CHECK(contains(coop_last_error(), "spec is NULL"), "names the argument");
  /* The failed setters changed nothing: the JSON still shows exactly the four fields. */
  CHECK(strcmp(coop_spec_json(spec),
               "{\"family\":\"block_reduce\",\"dtype\":\"float32\",\"block\":{\"x\":256},"
               "\"arch\":\"sm_90\"}") == 0,
        coop_spec_json(spec));
  CHECK(contains(coop_last_error(), "spec is NULL"), "accessors leave the last error alone");

  /* The same spec from JSON. */
  snprintf(json, sizeof(json), "%s", coop_spec_json(spec));
  EXPECT_STATUS(coop_spec_from_json(json, &parsed), COOP_OK, "from_json");
  CHECK(strcmp(coop_last_error(), "") == 0, "a success clears the last error");
  CHECK(parsed != NULL && strcmp(coop_spec_json(parsed), json) == 0, "JSON round trip");
  coop_spec_destroy(parsed);
  parsed = (coop_spec_t*)1;
  EXPECT_STATUS(coop_spec_from_json("{\"family\": \"block_reduce\", \"blok\": {}}", &parsed),
                COOP_INVALID_ARGUMENT, "from_json unknown field");
  CHECK(parsed == NULL, "out is NULL on failure");
  CHECK(contains(coop_last_error(), "blok"), "names the field");

  /* Oneof members replace each other; enums by short name; bools; lists. */
  copy = coop_spec_clone(spec);
  EXPECT_STATUS(coop_spec_set_string(copy, "op.builtin", "max"), COOP_OK, "op.builtin");
  EXPECT_STATUS(coop_spec_set_string(copy, "op.user.name", "f"), COOP_OK, "op.user.name");
  EXPECT_STATUS(coop_spec_add_string(copy, "op.user.operand_dtypes", "float32"), COOP_OK, "add");
  EXPECT_STATUS(coop_spec_set_bool(copy, "op.user.stateful", 1), COOP_OK, "bool");
  EXPECT_STATUS(coop_spec_set_bytes(copy, "op.user.ltoir", "a\0b", 3), COOP_OK, "bytes");
  EXPECT_STATUS(coop_spec_set_string(copy, "calling_convention", "numba"), COOP_OK, "enum");
  EXPECT_STATUS(coop_spec_set_uint(copy, "histogram.bins", 16), COOP_OK, "family options");
  EXPECT_STATUS(coop_spec_set_bool(copy, "scan.with_aggregate", 1), COOP_OK, "another member");
  CHECK(!contains(coop_spec_json(copy), "builtin"), "op.user replaced op.builtin");
  CHECK(!contains(coop_spec_json(copy), "histogram"), "scan replaced histogram");
  CHECK(contains(coop_spec_json(copy),
                 "\"op\":{\"user\":{\"name\":\"f\",\"ltoir\":\"YQBi\",\"operand_dtypes\":"
                 "[\"float32\"],\"stateful\":true}}"),
        coop_spec_json(copy));
  CHECK(contains(coop_spec_json(copy), "\"calling_convention\":\"CALLING_CONVENTION_NUMBA\""),
        coop_spec_json(copy));
  CHECK(contains(coop_spec_json(copy), "\"scan\":{\"with_aggregate\":true}"), coop_spec_json(copy));
  CHECK(!contains(coop_spec_json(spec), "op"), "the clone is a copy");
  coop_spec_destroy(copy);
  coop_spec_destroy(spec);
}

/* Specializes the README's block_reduce; returns the artifact (the caller destroys it). */
static coop_artifact_t* test_specialize(coop_client_t* client) {
  coop_spec_t* spec = block_reduce_spec();
  coop_artifact_t* artifact = NULL;
  coop_artifact_t* again = NULL;
  size_t size = 0, first = 9, count = 9, i;
  uint64_t bytes = 0, align = 0;
  const char* symbol;
  const char* key;
  if (!EXPECT_STATUS(coop_client_specialize(client, spec, &artifact), COOP_OK, "specialize")) {
    coop_spec_destroy(spec);
    return NULL;
  }
  CHECK(coop_artifact_ltoir(artifact, &size) != NULL && size > 1000, "LTO-IR bytes");
  CHECK(strcmp(coop_artifact_origin(artifact), "compiled") == 0, "a fresh cache compiles");
  CHECK(strcmp(coop_artifact_arch(artifact), "sm_90") == 0, "arch");
  CHECK(coop_artifact_compile_ms(artifact) > 0, "compile time");
  CHECK(contains(coop_artifact_source(artifact), "BlockReduce"), "the rendered unit");
  CHECK(strcmp(coop_artifact_type_definitions(artifact), "") == 0, "no user types");
  key = coop_artifact_key(artifact);
  CHECK(strlen(key) == 64 && strspn(key, "0123456789abcdef") == 64, "a hex sha256 key");
  coop_artifact_temp_storage(artifact, &bytes, &align);
  CHECK(bytes == 44 && align == 4, "BlockReduce<float, 256> TempStorage: 44 bytes, align 4");
  CHECK(coop_artifact_entry_count(artifact) == 1, "one entry");
  symbol = coop_artifact_entry_symbol(artifact, 0);
  CHECK(starts_with(symbol, "coop_block_reduce_sum_f32_"), symbol);
  CHECK(contains(coop_artifact_entry_declaration(artifact, 0), symbol), "declares the symbol");
  CHECK(starts_with(coop_artifact_entry_declaration(artifact, 0), "extern \"C\" __device__ float "),
        coop_artifact_entry_declaration(artifact, 0));
  CHECK(contains(coop_artifact_entry_description(artifact, 0), "thread 0"), "description");
  CHECK(coop_artifact_entry_symbol(artifact, 1) == NULL, "an entry index out of range is NULL");
  CHECK(coop_artifact_part_count(artifact) == 1, "one part");
  coop_artifact_part_entries(artifact, 0, &first, &count);
  CHECK(first == 0 && count == 1, "the part holds the entry");
  CHECK(contains(coop_artifact_part_spec_json(artifact, 0), "\"algorithm\":\"warp_reductions\""),
        "the resolved spec fills in CUB's default algorithm");
  CHECK(coop_artifact_part_spec_json(artifact, 1) == NULL, "a part index out of range is NULL");
  CHECK(coop_artifact_link_input_count(artifact) == 0, "no link inputs");
  CHECK(coop_artifact_link_input_ltoir(artifact, 0, &size) == NULL && size == 0, "none");

  /* The same spec again: the memory tier, the same key and bytes. */
  if (EXPECT_STATUS(coop_client_specialize(client, spec, &again), COOP_OK, "again")) {
    size_t size_again = 0;
    const void* ltoir_again = coop_artifact_ltoir(again, &size_again);
    CHECK(strcmp(coop_artifact_origin(again), "memory") == 0, "a hit");
    CHECK(strcmp(coop_artifact_key(again), key) == 0, "same key");
    coop_artifact_ltoir(artifact, &size);
    CHECK(
        size_again == size && memcmp(ltoir_again, coop_artifact_ltoir(artifact, &size), size) == 0,
        "same LTO-IR");
    for (i = 0; i < coop_artifact_entry_count(again); ++i) {
      CHECK(strcmp(coop_artifact_entry_symbol(again, i), coop_artifact_entry_symbol(artifact, i)) ==
                0,
            "same entries");
    }
  }
  coop_artifact_destroy(again);
  coop_spec_destroy(spec);
  return artifact;
}

/* LLVM bitcode (clang-22 on the daemon's machine, as install-deps installs it), alone and with the
 * LTO-IR; and a formats value that names nothing. */
static void test_bitcode(coop_client_t* client, const coop_artifact_t* ltoir) {
  coop_spec_t* spec = block_reduce_spec();
  coop_artifact_t* artifact = NULL;
  size_t size = 0;
  const unsigned char* bc;
  if (EXPECT_STATUS(coop_client_specialize_formats(client, spec, COOP_FORMAT_BITCODE, &artifact),
                    COOP_OK, "bitcode")) {
    bc = (const unsigned char*)coop_artifact_bitcode(artifact, &size);
    CHECK(bc != NULL && size > 4 && bc[0] == 'B' && bc[1] == 'C' && bc[2] == 0xC0 && bc[3] == 0xDE,
          "LLVM bitcode");
    CHECK(coop_artifact_ltoir(artifact, &size) == NULL && size == 0, "no LTO-IR asked for");
    CHECK(strcmp(coop_artifact_bitcode_key(artifact), coop_artifact_key(artifact)) == 0,
          "the artifact's key is the bitcode's");
    CHECK(
        ltoir == NULL || strcmp(coop_artifact_bitcode_key(artifact), coop_artifact_key(ltoir)) != 0,
        "a key of its own");
    CHECK(ltoir == NULL || strcmp(coop_artifact_entry_declaration(artifact, 0),
                                  coop_artifact_entry_declaration(ltoir, 0)) == 0,
          "the same declaration in both formats");
  }
  coop_artifact_destroy(artifact);
  artifact = NULL;
  if (EXPECT_STATUS(coop_client_specialize_formats(
                        client, spec, COOP_FORMAT_LTOIR | COOP_FORMAT_BITCODE, &artifact),
                    COOP_OK, "both")) {
    CHECK(coop_artifact_ltoir(artifact, &size) != NULL && size > 1000, "LTO-IR");
    CHECK(coop_artifact_bitcode(artifact, &size) != NULL && size > 4, "and bitcode");
  }
  coop_artifact_destroy(artifact);
  artifact = NULL;
  EXPECT_STATUS(coop_client_specialize_formats(client, spec, 0, &artifact), COOP_INVALID_ARGUMENT,
                "no format");
  CHECK(contains(coop_last_error(), "formats must be COOP_FORMAT_LTOIR, COOP_FORMAT_BITCODE"),
        coop_last_error());
  coop_spec_destroy(spec);
}

static void test_bad_spec(coop_client_t* client) {
  coop_spec_t* spec = block_reduce_spec();
  coop_artifact_t* artifact = (coop_artifact_t*)1;
  coop_spec_set_string(spec, "dtype", "float33");
  EXPECT_STATUS(coop_client_specialize(client, spec, &artifact), COOP_INVALID_ARGUMENT,
                "coopd rejects the dtype");
  CHECK(artifact == NULL, "out is NULL on failure");
  CHECK(contains(coop_last_error(), "dtype") && contains(coop_last_error(), "float33") &&
            contains(coop_last_error(), "float32"),
        "the message names the field, the value and the allowed values");
  coop_spec_set_string(spec, "dtype", "float32");
  coop_spec_set_string(spec, "family", "block_reduse");
  EXPECT_STATUS(coop_client_specialize(client, spec, &artifact), COOP_INVALID_ARGUMENT, "family");
  CHECK(contains(coop_last_error(), "family") && contains(coop_last_error(), "block_scan"),
        "the message lists the families");
  EXPECT_STATUS(coop_client_specialize(client, NULL, &artifact), COOP_INVALID_ARGUMENT, "NULL");
  CHECK(contains(coop_last_error(), "coop_client_specialize: spec is NULL"), "names it");
  coop_spec_destroy(spec);
}

static void test_bundle(coop_client_t* client) {
  coop_spec_t* specs[2];
  coop_artifact_t* bundle = NULL;
  size_t first0 = 9, count0 = 9, first1 = 9, count1 = 9;
  uint64_t bytes = 1, align = 1;
  specs[0] = block_reduce_spec();
  specs[1] = block_reduce_spec();
  coop_spec_set_string(specs[1], "family", "block_scan");
  coop_spec_set_string(specs[1], "method", "exclusive_sum");
  coop_spec_set_string(specs[1], "dtype", "int32");
  coop_spec_set_uint(specs[1], "items_per_thread", 4);
  if (EXPECT_STATUS(
          coop_client_specialize_bundle(client, (const coop_spec_t* const*)specs, 2, &bundle),
          COOP_OK, "bundle")) {
    CHECK(coop_artifact_part_count(bundle) == 2, "a part per spec");
    coop_artifact_part_entries(bundle, 0, &first0, &count0);
    coop_artifact_part_entries(bundle, 1, &first1, &count1);
    CHECK(first0 == 0 && count0 >= 1 && first1 == count0 &&
              first1 + count1 == coop_artifact_entry_count(bundle),
          "the parts' entries tile the artifact's");
    CHECK(starts_with(coop_artifact_entry_symbol(bundle, first1), "coop_block_scan_exclusive_sum"),
          "part 1's entries are the scan's");
    coop_artifact_temp_storage(bundle, &bytes, &align);
    CHECK(bytes == 0 && align == 0, "a bundle has no single temp storage");
    coop_artifact_part_temp_storage(bundle, 0, &bytes, &align);
    CHECK(bytes == 44 && align == 4, "part 0 is the reduce");
    coop_artifact_part_temp_storage(bundle, 1, &bytes, &align);
    CHECK(bytes > 0 && align > 0, "part 1 has its own layout");
    CHECK(contains(coop_artifact_part_spec_json(bundle, 1), "\"method\":\"exclusive_sum\""),
          "part 1's resolved spec");
  }
  coop_artifact_destroy(bundle);
  specs[1] = (coop_spec_t*)NULL;
  EXPECT_STATUS(coop_client_specialize_bundle(client, (const coop_spec_t* const*)specs, 2, &bundle),
                COOP_INVALID_ARGUMENT, "a NULL spec");
  CHECK(contains(coop_last_error(), "specs[1] is NULL"), "names it");
  coop_spec_destroy(specs[0]);
}

/* A reduce with a user operator given as source: its LTO-IR comes back as a link input. */
static coop_artifact_t* test_user_operator(coop_client_t* client) {
  static const char kSource[] =
      "__device__ float clamp_add(float a, float b) { return fminf(a + b, 100.0f); }\n";
  coop_spec_t* spec = block_reduce_spec();
  coop_artifact_t* artifact = NULL;
  size_t size = 0;
  coop_spec_set_string(spec, "method", "reduce");
  coop_spec_set_string(spec, "op.user.name", "clamp_add");
  coop_spec_set_string(spec, "op.user.source", kSource);
  if (EXPECT_STATUS(coop_client_specialize(client, spec, &artifact), COOP_OK, "user operator")) {
    CHECK(coop_artifact_link_input_count(artifact) == 1, "the operator's LTO-IR");
    CHECK(starts_with(coop_artifact_link_input_symbol(artifact, 0), "coop_op_"),
          coop_artifact_link_input_symbol(artifact, 0));
    CHECK(coop_artifact_link_input_ltoir(artifact, 0, &size) != NULL && size > 0, "bytes");
    CHECK(contains(coop_artifact_part_spec_json(artifact, 0), "\"digest\""),
          "the resolved spec names the operator by digest");
  }
  coop_spec_destroy(spec);
  /* An operator that does not compile: INVALID_ARGUMENT with NVRTC's log, in the user's lines. */
  {
    coop_artifact_t* bad = NULL;
    spec = block_reduce_spec();
    coop_spec_set_string(spec, "method", "reduce");
    coop_spec_set_string(spec, "op.user.name", "broken");
    coop_spec_set_string(spec, "op.user.source",
                         "__device__ float broken(float a, float b) {\n"
                         "  return a +* b;\n}\n");
    EXPECT_STATUS(coop_client_specialize(client, spec, &bad), COOP_INVALID_ARGUMENT, "bad op");
    CHECK(contains(coop_last_error(), "broken.cu(2)"), "the log points at the user's line");
    coop_spec_destroy(spec);
  }
  return artifact;
}

/* "op.user.commutative" (UserOperator.commutative) reaches coopd: with algorithm auto, a user
 * operator declared commutative may get raking_commutative_only (the table's choice for
 * block_reduce float32 at 64 threads, 1 item), and one not declared so never does. */
static void test_commutative_operator(coop_client_t* client) {
  static const char kSource[] =
      "__device__ float clamp_add(float a, float b) { return fminf(a + b, 100.0f); }\n";
  int commutative;
  for (commutative = 1; commutative >= 0; --commutative) {
    coop_spec_t* spec = block_reduce_spec();
    coop_artifact_t* artifact = NULL;
    coop_spec_set_uint(spec, "block.x", 64);
    coop_spec_set_string(spec, "method", "reduce");
    coop_spec_set_string(spec, "algorithm", "auto");
    coop_spec_set_string(spec, "op.user.name", "clamp_add");
    coop_spec_set_string(spec, "op.user.source", kSource);
    EXPECT_STATUS(coop_spec_set_bool(spec, "op.user.commutative", commutative), COOP_OK,
                  "op.user.commutative");
    CHECK(contains(coop_spec_json(spec), "\"commutative\":true") == commutative,
          coop_spec_json(spec));
    if (EXPECT_STATUS(coop_client_specialize(client, spec, &artifact), COOP_OK, "commutative")) {
      const char* resolved = coop_artifact_part_spec_json(artifact, 0);
      CHECK(contains(resolved, "\"algorithm\":\"raking_commutative_only\"") == commutative,
            resolved);
      CHECK(!contains(resolved, "\"algorithm\":\"auto\""), resolved);
    }
    coop_artifact_destroy(artifact);
    coop_spec_destroy(spec);
  }
}

/* PTX of a kernel that calls `float symbol(void* temp_storage, float input)` with `bytes` of
 * shared memory aligned to `align`, as a JIT frontend would emit it. */
static void kernel_ptx(char* out, size_t size, const char* symbol, uint64_t bytes, uint64_t align) {
  snprintf(out, size,
           ".version 9.0\n.target sm_90\n.address_size 64\n"
           ".extern .func (.param .b32 retval) %s (.param .b64 p0, .param .b32 p1);\n"
           ".visible .entry block_sums(.param .u64 in, .param .u64 out)\n{\n"
           "  .reg .pred %%p<2>;\n  .reg .f32 %%f<3>;\n  .reg .b32 %%r<6>;\n"
           "  .reg .b64 %%rd<10>;\n  .shared .align %llu .b8 temp[%llu];\n"
           "  ld.param.u64 %%rd2, [in];\n  ld.param.u64 %%rd1, [out];\n"
           "  cvta.to.global.u64 %%rd3, %%rd2;\n  mov.u32 %%r1, %%ctaid.x;\n"
           "  shl.b32 %%r2, %%r1, 8;\n  mov.u32 %%r3, %%tid.x;\n  add.s32 %%r4, %%r2, %%r3;\n"
           "  mul.wide.u32 %%rd4, %%r4, 4;\n  add.s64 %%rd5, %%rd3, %%rd4;\n"
           "  ld.global.f32 %%f2, [%%rd5];\n  mov.u64 %%rd6, temp;\n"
           "  cvta.shared.u64 %%rd6, %%rd6;\n  {\n  .param .b64 param0;\n"
           "  st.param.b64 [param0], %%rd6;\n  .param .b32 param1;\n"
           "  st.param.f32 [param1], %%f2;\n  .param .b32 retval0;\n"
           "  call.uni (retval0), %s, (param0, param1);\n  ld.param.f32 %%f1, [retval0];\n  }\n"
           "  setp.ne.s32 %%p1, %%r3, 0;\n  @%%p1 bra DONE;\n  cvta.to.global.u64 %%rd7, %%rd1;\n"
           "  mul.wide.u32 %%rd8, %%r1, 4;\n  add.s64 %%rd9, %%rd7, %%rd8;\n"
           "  st.global.f32 [%%rd9], %%f1;\nDONE:\n  ret;\n}\n",
           symbol, (unsigned long long)align, (unsigned long long)bytes, symbol);
}

static int is_elf(const coop_cubin_t* cubin) {
  size_t size = 0;
  const unsigned char* data = (const unsigned char*)coop_cubin_data(cubin, &size);
  return data != NULL && size > 4 && memcmp(data, "\177ELF", 4) == 0;
}

/* Links `ptx` for sm_90 with what add() adds; returns the status, *cubin on success. */
static coop_status link_with(coop_client_t* client, const char* ptx, const char* key,
                             const coop_artifact_t* ltoir_of, int with_link_inputs,
                             coop_cubin_t** cubin) {
  coop_link_t* link = coop_link_create("sm_90");
  coop_status s;
  size_t i, size = 0;
  EXPECT_STATUS(coop_link_add_ptx(link, "kernel.ptx", ptx, strlen(ptx)), COOP_OK, "add ptx");
  if (key != NULL) EXPECT_STATUS(coop_link_add_artifact_key(link, key), COOP_OK, "add key");
  if (ltoir_of != NULL) {
    const void* data = coop_artifact_ltoir(ltoir_of, &size);
    EXPECT_STATUS(coop_link_add_ltoir(link, "artifact.ltoir", data, size), COOP_OK, "add ltoir");
    for (i = 0; with_link_inputs && i < coop_artifact_link_input_count(ltoir_of); ++i) {
      data = coop_artifact_link_input_ltoir(ltoir_of, i, &size);
      EXPECT_STATUS(coop_link_add_ltoir(link, NULL, data, size), COOP_OK, "add link input");
    }
  }
  s = coop_client_link(client, link, cubin);
  coop_link_destroy(link);
  return s;
}

static void test_link(coop_client_t* client, const coop_artifact_t* reduce,
                      const coop_artifact_t* with_op) {
  char ptx[8192];
  uint64_t bytes = 0, align = 0;
  coop_cubin_t* cubin = NULL;
  coop_cubin_t* again = NULL;
  coop_artifact_temp_storage(reduce, &bytes, &align);
  kernel_ptx(ptx, sizeof(ptx), coop_artifact_entry_symbol(reduce, 0), bytes, align);

  /* The kernel + the artifact by key. */
  if (EXPECT_STATUS(link_with(client, ptx, coop_artifact_key(reduce), NULL, 0, &cubin), COOP_OK,
                    "link by key")) {
    CHECK(is_elf(cubin), "a cubin");
    CHECK(strcmp(coop_cubin_origin(cubin), "compiled") == 0, "linked now");
    CHECK(strlen(coop_cubin_key(cubin)) == 64, "a key");
    CHECK(coop_cubin_link_ms(cubin) > 0, "link time");
    if (EXPECT_STATUS(link_with(client, ptx, coop_artifact_key(reduce), NULL, 0, &again), COOP_OK,
                      "again")) {
      CHECK(strcmp(coop_cubin_key(again), coop_cubin_key(cubin)) == 0, "same key");
      CHECK(strcmp(coop_cubin_origin(again), "compiled") != 0, "from the cache");
    }
    coop_cubin_destroy(again);
  }
  coop_cubin_destroy(cubin);
  cubin = NULL;
  /* The kernel + the artifact's LTO-IR as a module of the frontend's. */
  if (EXPECT_STATUS(link_with(client, ptx, NULL, reduce, 0, &cubin), COOP_OK, "link LTO-IR")) {
    CHECK(is_elf(cubin), "a cubin");
  }
  coop_cubin_destroy(cubin);
  /* A key this coopd does not hold. */
  EXPECT_STATUS(
      link_with(client, ptx, "0000000000000000000000000000000000000000000000000000000000000000",
                NULL, 0, &cubin),
      COOP_NOT_FOUND, "an unknown key");
  CHECK(contains(coop_last_error(), "is not in this coopd's cache"), "says so");
  /* A kernel calling a symbol no module defines: nvJitLink's log names it. */
  cubin = (coop_cubin_t*)1;
  kernel_ptx(ptx, sizeof(ptx), "coop_no_such_entry", bytes, align);
  EXPECT_STATUS(link_with(client, ptx, coop_artifact_key(reduce), NULL, 0, &cubin),
                COOP_INVALID_ARGUMENT, "an undefined symbol");
  CHECK(cubin == NULL, "out is NULL on failure");
  CHECK(contains(coop_last_error(), "coop_no_such_entry"), "names the symbol");

  if (with_op == NULL) return;
  coop_artifact_temp_storage(with_op, &bytes, &align);
  kernel_ptx(ptx, sizeof(ptx), coop_artifact_entry_symbol(with_op, 0), bytes, align);
  /* By key, coopd adds the operator's LTO-IR by itself. */
  cubin = NULL;
  if (EXPECT_STATUS(link_with(client, ptx, coop_artifact_key(with_op), NULL, 0, &cubin), COOP_OK,
                    "link with operator by key")) {
    CHECK(is_elf(cubin), "a cubin");
  }
  coop_cubin_destroy(cubin);
  /* As modules, the frontend adds the link inputs: without them the operator is missing. */
  cubin = NULL;
  EXPECT_STATUS(link_with(client, ptx, NULL, with_op, 0, &cubin), COOP_INVALID_ARGUMENT,
                "link without the operator");
  CHECK(contains(coop_last_error(), coop_artifact_link_input_symbol(with_op, 0)),
        "names the operator's symbol");
  if (EXPECT_STATUS(link_with(client, ptx, NULL, with_op, 1, &cubin), COOP_OK,
                    "link with the operator's LTO-IR")) {
    CHECK(is_elf(cubin), "a cubin");
  }
  coop_cubin_destroy(cubin);
}

static void test_stats(coop_client_t* client) {
  coop_stats_t* stats = NULL;
  uint64_t requests = 0, hits = 0, workers = 0, degraded = 7;
  double uptime = 0;
  if (!EXPECT_STATUS(coop_client_stats(client, &stats), COOP_OK, "stats")) return;
  EXPECT_STATUS(coop_stats_uint(stats, "requests", &requests), COOP_OK, "requests");
  CHECK(requests >= 4, "the specialize calls of this test");
  EXPECT_STATUS(coop_stats_uint(stats, "memory_hits", &hits), COOP_OK, "memory_hits");
  CHECK(hits >= 1, "the repeated specialize");
  EXPECT_STATUS(coop_stats_uint(stats, "workers", &workers), COOP_OK, "workers");
  CHECK(workers == 1, "--workers 1");
  EXPECT_STATUS(coop_stats_uint(stats, "cache_degraded", &degraded), COOP_OK, "a bool");
  CHECK(degraded == 0, "the cache is writable");
  EXPECT_STATUS(coop_stats_double(stats, "uptime_s", &uptime), COOP_OK, "uptime_s");
  CHECK(uptime > 0, "uptime");
  EXPECT_STATUS(coop_stats_uint(stats, "uptime_s", &requests), COOP_INVALID_ARGUMENT, "kind");
  CHECK(contains(coop_last_error(), "coop_stats_double"), "names the reader to use");
  EXPECT_STATUS(coop_stats_uint(stats, "request", &requests), COOP_INVALID_ARGUMENT, "unknown");
  CHECK(contains(coop_last_error(), "no counter \"request\"") &&
            contains(coop_last_error(), "memory_hits"),
        "lists the counters");
  CHECK(contains(coop_stats_json(stats), "\"tiers\""), "the JSON has the rest");
  coop_stats_destroy(stats);
}

/* A compile log of megabytes (a static_assert quoting a 3,000,000-byte string): the message is
 * a bounded summary; with coop_options_set_full_errors, coop_last_error_details is the whole. */
static void test_huge_error(const char* socket) {
  static const char kX100[] =
      "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
      "xxxxxxxx";
  char source[2048];
  int full;
  snprintf(source, sizeof(source),
           "#define S0 \"%s\"\n"
           "#define S1 S0 S0 S0 S0 S0 S0 S0 S0 S0 S0\n"
           "#define S2 S1 S1 S1 S1 S1 S1 S1 S1 S1 S1\n"
           "#define S3 S2 S2 S2 S2 S2 S2 S2 S2 S2 S2\n"
           "#define S4 S3 S3 S3 S3 S3 S3 S3 S3 S3 S3\n"
           "static_assert(sizeof(float) == 0, S4 S4 S4);\n"
           "__device__ float huge(float a, float b) { return a + b; }\n",
           kX100);
  for (full = 0; full <= 1; ++full) {
    coop_client_t* client = NULL;
    coop_options_t* options = coop_options_create();
    coop_spec_t* spec = block_reduce_spec();
    coop_artifact_t* artifact = NULL;
    coop_options_set_autostart(options, 0);
    coop_options_set_full_errors(options, full);
    EXPECT_STATUS(coop_client_open(socket, options, &client), COOP_OK, "coop_client_open");
    coop_options_destroy(options);
    coop_spec_set_string(spec, "method", "reduce");
    coop_spec_set_string(spec, "op.user.name", "huge");
    coop_spec_set_string(spec, "op.user.source", source);
    EXPECT_STATUS(coop_client_specialize(client, spec, &artifact), COOP_INVALID_ARGUMENT,
                  "an operator with a log of megabytes");
    CHECK(strlen(coop_last_error()) < 4096, "the message is bounded");
    CHECK(contains(coop_last_error(), "bytes not shown"), "and says what it left out");
    if (full) {
      CHECK(strlen(coop_last_error_details()) > 3000000, "the whole log on request");
      CHECK(contains(coop_last_error_details(), "1 error detected in the compilation of"),
            "to its end");
    } else {
      CHECK(strcmp(coop_last_error_details(), "") == 0, "details only on request");
    }
    coop_spec_destroy(spec);
    coop_client_destroy(client);
  }
}

static int run_against_daemon(const char* dir) {
  char socket[PATH_MAX], cache[PATH_MAX], log[PATH_MAX];
  coop_client_t* client;
  coop_artifact_t* reduce;
  coop_artifact_t* with_op;
  int status = 0;
  pid_t pid;
  snprintf(socket, sizeof(socket), "%s/coopd.sock", dir);
  snprintf(cache, sizeof(cache), "%s/cache", dir);
  snprintf(log, sizeof(log), "%s/coopd.log", dir);
  test_version();
  test_spec_setters();
  pid = start_daemon(socket, cache, log);
  if (pid < 0) return 1;
  /* Auto-start off: this test started the daemon it talks to. */
  client = open_client(socket, 0, 600000);
  CHECK(strcmp(coop_client_socket_path(client), socket) == 0, "socket path");
  test_catalog(client);
  reduce = test_specialize(client);
  test_bitcode(client, reduce);
  test_bad_spec(client);
  test_bundle(client);
  with_op = test_user_operator(client);
  test_commutative_operator(client);
  if (reduce != NULL) test_link(client, reduce, with_op);
  test_stats(client);
  test_huge_error(socket);
  coop_artifact_destroy(reduce);
  coop_artifact_destroy(with_op);
  coop_client_destroy(client);
  kill(pid, SIGTERM);
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "coopd exits cleanly on SIGTERM");
  if (failures != 0) print_file(log);
  return failures != 0;
}

/* ---- autostart ---------------------------------------------------------------------------- */

/* The pid in <socket>.lock (the daemon that holds the socket), or -1. */
static pid_t lock_owner(const char* socket) {
  char path[PATH_MAX];
  long pid = -1;
  FILE* f;
  snprintf(path, sizeof(path), "%s.lock", socket);
  f = fopen(path, "r");
  if (f == NULL) return -1;
  if (fscanf(f, "%ld", &pid) != 1) pid = -1;
  fclose(f);
  return (pid_t)pid;
}

static void stop_detached(pid_t pid) {
  int i;
  if (pid <= 0) return;
  kill(pid, SIGTERM);
  for (i = 0; i < 600 && kill(pid, 0) == 0; ++i) sleep_ms(50);
  if (kill(pid, 0) == 0) {
    fprintf(stderr, "coopd %ld did not stop on SIGTERM\n", (long)pid);
    ++failures;
    kill(pid, SIGKILL);
  }
}

static int run_autostart(const char* dir) {
  char socket[PATH_MAX], cache[PATH_MAX], log[PATH_MAX], exe[PATH_MAX], proc_exe[64];
  char want[PATH_MAX];
  coop_client_t* client;
  coop_catalog_t* catalog = (coop_catalog_t*)1;
  coop_spec_t* spec;
  coop_artifact_t* artifact = NULL;
  struct stat st;
  size_t size = 0;
  pid_t pid;
  ssize_t n;
  snprintf(socket, sizeof(socket), "%s/run/coopd.sock", dir);
  snprintf(cache, sizeof(cache), "%s/cache", dir);
  snprintf(log, sizeof(log), "%s/run/coopd.log", dir);
  /* The daemon it starts inherits this environment: its cache here, one worker. The binary is
   * found next to libcoop_c.so (build/client/../server/coopd): not in COOPD_BIN, not on PATH. */
  setenv("COOPD_CACHE_DIR", cache, 1);
  setenv("COOPD_WORKERS", "1", 1);
  unsetenv("COOPD_BIN");
  setenv("PATH", "/usr/bin:/bin", 1);
  {
    /* Nor beside this program, where the client also looks. */
    char self[PATH_MAX], beside[PATH_MAX + 32], build_tree[PATH_MAX + 32];
    n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    self[n > 0 ? n : 0] = '\0';
    if (strrchr(self, '/') != NULL) *strrchr(self, '/') = '\0';
    snprintf(beside, sizeof(beside), "%s/coopd", self);
    snprintf(build_tree, sizeof(build_tree), "%s/../server/coopd", self);
    if (access(beside, X_OK) == 0 || access(build_tree, X_OK) == 0) {
      fprintf(stderr, "a coopd beside %s: this test could not tell where it was found\n", self);
      return 1;
    }
  }

  /* Auto-start off, by option and by COOPD_NO_AUTOSTART: "not reachable", nothing started. */
  client = open_client(socket, 0, 10000);
  EXPECT_STATUS(coop_client_catalog(client, &catalog), COOP_NOT_REACHABLE, "autostart off");
  CHECK(catalog == NULL, "out is NULL on failure");
  CHECK(contains(coop_last_error(), "not reachable") &&
            contains(coop_last_error(), "auto-start is off for this client"),
        "says why");
  coop_client_destroy(client);
  setenv("COOPD_NO_AUTOSTART", "1", 1);
  client = open_client(socket, 1, 10000);
  EXPECT_STATUS(coop_client_catalog(client, &catalog), COOP_NOT_REACHABLE, "COOPD_NO_AUTOSTART");
  CHECK(contains(coop_last_error(), "COOPD_NO_AUTOSTART is set"), "says why");
  coop_client_destroy(client);
  CHECK(stat(socket, &st) != 0 && lock_owner(socket) < 0, "no daemon was started");

  /* Auto-start on, no daemon: the call starts one and gets its artifact (a liveness bound of
   * ten minutes: the daemon probes the toolchain, then compiles on a cold worker). */
  unsetenv("COOPD_NO_AUTOSTART");
  client = open_client(socket, 1, 600000);
  spec = block_reduce_spec();
  if (EXPECT_STATUS(coop_client_specialize(client, spec, &artifact), COOP_OK, "autostart")) {
    CHECK(coop_artifact_ltoir(artifact, &size) != NULL && size > 0, "LTO-IR");
    CHECK(coop_artifact_entry_count(artifact) == 1, "its entry");
  }
  coop_artifact_destroy(artifact);
  coop_spec_destroy(spec);
  coop_client_destroy(client);

  pid = lock_owner(socket);
  CHECK(pid > 0 && kill(pid, 0) == 0, "a coopd is running afterwards, holding the socket");
  CHECK(stat(log, &st) == 0, "it logs beside its socket");
  snprintf(proc_exe, sizeof(proc_exe), "/proc/%ld/exe", (long)pid);
  n = pid > 0 ? readlink(proc_exe, exe, sizeof(exe) - 1) : -1;
  if (n >= 0) exe[n] = '\0';
  CHECK(n > 0 && realpath(COOPD_BINARY, want) != NULL && strcmp(exe, want) == 0,
        "the coopd found next to libcoop_c.so");
  CHECK(stat(cache, &st) == 0 && S_ISDIR(st.st_mode), "COOPD_CACHE_DIR reached it");
  stop_detached(pid);
  if (failures != 0) print_file(log);
  return failures != 0;
}

int main(int argc, char** argv) {
  char dir[] = "/tmp/coop-c-abi-XXXXXX";
  int rc;
  if (argc != 2 || (strcmp(argv[1], "daemon") != 0 && strcmp(argv[1], "autostart") != 0)) {
    fprintf(stderr, "usage: %s daemon|autostart\n", argv[0]);
    return 2;
  }
  if (mkdtemp(dir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  rc = strcmp(argv[1], "daemon") == 0 ? run_against_daemon(dir) : run_autostart(dir);
  nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  if (rc == 0) printf("c_abi_test %s: all checks passed\n", argv[1]);
  return rc;
}
