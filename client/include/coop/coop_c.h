/* coop/coop_c.h: the C ABI of the coopd client, for frontends written in languages other than
 * C++ (Julia, Rust, Mojo, Go, in-house JITs). Link with libcoop_c.so and nothing else: it holds
 * the C++ client and exports only the coop_* functions declared here. C99; no C++ types cross
 * this boundary.
 *
 *   coop_client_t* client;
 *   coop_spec_t* spec = coop_spec_create();
 *   coop_artifact_t* artifact;
 *   coop_spec_set_string(spec, "family", "block_reduce");
 *   coop_spec_set_string(spec, "dtype", "float32");
 *   coop_spec_set_uint(spec, "block.x", 256);
 *   coop_spec_set_string(spec, "arch", "sm_90");
 *   if (coop_client_open(NULL, NULL, &client) != COOP_OK ||
 *       coop_client_specialize(client, spec, &artifact) != COOP_OK) {
 *     fprintf(stderr, "coopd: %s\n", coop_last_error());
 *   }
 *   ... coop_artifact_ltoir(artifact, &size): link with nvJitLink;
 *   ... coop_artifact_entry_declaration(artifact, 0): paste into the kernel's source;
 *   ... coop_artifact_temp_storage(artifact, &bytes, &align): reserve shared memory.
 *   coop_artifact_destroy(artifact); coop_spec_destroy(spec); coop_client_destroy(client);
 *
 * Conventions, which hold for every function unless its comment says otherwise:
 *  - Errors. A function that can fail returns a coop_status. On failure it sets its handle
 *    out-parameter to NULL, and coop_last_error() returns the message (naming the field and the
 *    allowed values for a bad request).
 *  - Ownership. Every handle a function hands out (through `*out`, or returned by a
 *    coop_*_create) belongs to the caller, who releases it with its coop_*_destroy function;
 *    destroying NULL does nothing. Strings and byte arrays that accessors return belong to the
 *    handle they were read from and stay valid, unchanged, until it is destroyed. Strings are
 *    NUL-terminated UTF-8; byte arrays come with their size. Everything passed in is copied: the
 *    caller keeps what it passed, and may free it as soon as the call returns.
 *  - Indexes. An accessor given an index out of range returns NULL (strings, bytes) or 0.
 *  - Threads. A coop_client_t may be used by several threads at once. Results (artifact, cubin,
 *    catalog, stats) never change after they are handed out, so any number of threads may read
 *    one. A builder (options, spec, link request) may be read by several calls at once but must
 *    not be changed while another thread uses it.
 *  - Auto-start. When no coopd answers on the client's socket, a call starts one
 *    (`coopd --socket PATH`, detached, its log in coopd.log beside the socket) and waits for it
 *    within the call's deadline. The binary: coop_options_set_coopd_binary, else $COOPD_BIN,
 *    else a coopd next to libcoop_c.so (or in ../server/ of a build tree), next to the program,
 *    else on PATH. coop_options_set_autostart(options, 0) or COOPD_NO_AUTOSTART=1 turns it off.
 *  - Loading. libcoop_c.so holds coop.proto's generated C++ code and registers it with the
 *    shared libprotobuf, so a process must not also hold another copy of it (a program linked
 *    with coopd's C++ client, coop_client): libprotobuf aborts on the second registration.
 */
#ifndef COOP_COOP_C_H_
#define COOP_COOP_C_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Version ---------------------------------------------------------------------------- */

/* The version of this interface. It grows when functions are added; a function's signature and
 * meaning never change under the same library name. */
#define COOP_C_ABI_VERSION 3

/* COOP_C_ABI_VERSION of the loaded library; a frontend built against a header of version N
 * needs a library of version N or newer. */
int coop_abi_version(void);

/* ---- Status and errors ------------------------------------------------------------------- */

/* The codes of google.rpc.Code, as coopd uses them, plus COOP_NOT_REACHABLE. */
typedef enum coop_status {
  COOP_OK = 0,
  COOP_CANCELLED = 1,
  COOP_UNKNOWN = 2,
  COOP_INVALID_ARGUMENT = 3,  /* the request is wrong; the message names the field */
  COOP_DEADLINE_EXCEEDED = 4, /* a compile or the call ran past its deadline */
  COOP_NOT_FOUND = 5,         /* e.g. a link names an artifact key coopd does not hold */
  COOP_ALREADY_EXISTS = 6,
  COOP_PERMISSION_DENIED = 7,
  COOP_RESOURCE_EXHAUSTED = 8,  /* a limit was hit (sizes, memory, a full disk) */
  COOP_FAILED_PRECONDITION = 9, /* the daemon's toolchain lacks something (e.g. a CCCL release) */
  COOP_ABORTED = 10,
  COOP_OUT_OF_RANGE = 11,
  COOP_UNIMPLEMENTED = 12,
  COOP_INTERNAL = 13,    /* the compiler failed on a valid request (the log is in the message) */
  COOP_UNAVAILABLE = 14, /* coopd answered that it is busy or stopping: retry */
  COOP_DATA_LOSS = 15,
  COOP_UNAUTHENTICATED = 16,
  /* Not a gRPC code: no coopd answered on the socket (none running and auto-start off or
   * failed; the message says which). */
  COOP_NOT_REACHABLE = 100
} coop_status;

/* "OK", "INVALID_ARGUMENT", ..., "NOT_REACHABLE"; "UNKNOWN" for a value not listed above. The
 * string is static. */
const char* coop_status_name(coop_status status);

/* The message of the last coop_* call on this thread that returned a coop_status: "" after
 * one that returned COOP_OK. Never NULL. Owned by the library; valid until the next such call
 * on this thread. (Frontends whose tasks move between OS threads, e.g. Go, should read it
 * before anything else can run on the thread: in Go, under runtime.LockOSThread.) */
const char* coop_last_error(void);

/* The whole message of the last failed call on this thread, when coopd bounded its status
 * message (a compiler log of megabytes: coop_last_error() then holds its first lines and how
 * many bytes were left out) and the client asked for it (coop_options_set_full_errors); ""
 * otherwise. Never NULL; owned and valid as coop_last_error()'s. Since ABI version 3. */
const char* coop_last_error_details(void);

/* ---- Client ------------------------------------------------------------------------------ */

typedef struct coop_options_t coop_options_t;
typedef struct coop_client_t coop_client_t;

/* Client options, defaults first: a 3-minute deadline per call, auto-start on. */
coop_options_t* coop_options_create(void);
void coop_options_destroy(coop_options_t* options);
/* The deadline of each call, in milliseconds: 1 to 31536000000 (a year), else
 * COOP_INVALID_ARGUMENT. A first compile takes about a second, a cold daemon a few. */
coop_status coop_options_set_timeout_ms(coop_options_t* options, uint64_t timeout_ms);
/* 0 turns auto-start off for this client; any other value turns it on (the default). */
void coop_options_set_autostart(coop_options_t* options, int autostart);
/* The coopd binary auto-start runs; NULL or "" for the search described at the top. */
void coop_options_set_coopd_binary(coop_options_t* options, const char* path);
/* A name for coopd's logs ("my-jit 1.2"); NULL or "" for none. */
void coop_options_set_client_name(coop_options_t* options, const char* name);
/* Non-zero: ask coopd for the whole message of errors whose status message it bounds
 * (coop_last_error_details); the client then accepts metadata of up to 64 MiB. Default 0.
 * Since ABI version 3. */
void coop_options_set_full_errors(coop_options_t* options, int full_errors);

/* Opens a client of the coopd on `socket_path` (NULL or "": the default socket, the one coopd
 * and coopctl use: $COOPD_SOCKET, else $XDG_RUNTIME_DIR/coopd/coopd.sock, else
 * /tmp/coopd-$UID/coopd.sock) with `options` (NULL: the defaults; copied, so they may be
 * destroyed at once). Connects lazily: a missing daemon shows in the first call. */
coop_status coop_client_open(const char* socket_path, const coop_options_t* options,
                             coop_client_t** out);
/* Every call on `client` (from any thread) must have returned. */
void coop_client_destroy(coop_client_t* client);
/* The socket this client talks to. */
const char* coop_client_socket_path(const coop_client_t* client);

/* ---- Spec: what to specialize ---------------------------------------------------------- */

/* A coop.v1.PrimitiveSpec (proto/coop/v1/coop.proto documents every field, its default and its
 * allowed values), built field by field. Fields are named by their path in that message, in
 * snake_case: "family", "method", "dtype", "block.x", "items_per_thread", "algorithm",
 * "op.builtin", "op.user.name", "op.user.source", "op.user.ltoir", "op.user.commutative",
 * "warp_threads", "arch", "calling_convention", "user_type.size", "histogram.bins", ... (every
 * field of the message and of the messages in it, except those coopd sets in resolved specs; a
 * path that is not one fails with a message listing them all). Members of one oneof replace
 * each other ("op.builtin" and "op.user.*"; the family options "scan.*", "histogram.*", ...):
 * the last one set wins.
 *
 * A setter fails with COOP_INVALID_ARGUMENT for a path that is not a field (the message lists
 * the fields) or a value of the wrong kind (it names the setter to use). Values are checked by
 * coopd when the spec is sent: an unknown family or dtype is COOP_INVALID_ARGUMENT from
 * coop_client_specialize, naming the field and the allowed values. */
typedef struct coop_spec_t coop_spec_t;

coop_spec_t* coop_spec_create(void);
void coop_spec_destroy(coop_spec_t* spec);
/* A copy of `spec`. */
coop_spec_t* coop_spec_clone(const coop_spec_t* spec);
/* Parses protobuf's JSON mapping of coop.v1.PrimitiveSpec (snake_case or lowerCamel names,
 * e.g. {"family": "block_scan", "block": {"x": 128}, "calling_convention":
 * "CALLING_CONVENTION_NUMBA"}; bytes such as op.user.ltoir in base64). Unknown names fail. */
coop_status coop_spec_from_json(const char* json, coop_spec_t** out);
/* A string or bytes field (NULL sets ""); also "calling_convention", by its short name ("c",
 * "numba"). */
coop_status coop_spec_set_string(coop_spec_t* spec, const char* field, const char* value);
/* A bytes or string field, from `size` bytes that may hold NULs: "op.user.ltoir". */
coop_status coop_spec_set_bytes(coop_spec_t* spec, const char* field, const void* data,
                                size_t size);
/* An unsigned integer field ("block.x", "items_per_thread", "histogram.bins", ...); a value
 * the field cannot hold is COOP_INVALID_ARGUMENT. */
coop_status coop_spec_set_uint(coop_spec_t* spec, const char* field, uint64_t value);
/* A bool field ("op.user.stateful", "op.user.commutative" (lets algorithm "auto" consider
 * raking_commutative_only), "scan.with_aggregate", ...): 0 is false, else true. */
coop_status coop_spec_set_bool(coop_spec_t* spec, const char* field, int value);
/* Appends to a list field: "op.user.operand_dtypes", "prefix_callback.operand_dtypes". */
coop_status coop_spec_add_string(coop_spec_t* spec, const char* field, const char* value);
/* The spec as JSON (protobuf's mapping, snake_case names, fields left at their default
 * omitted), for logs. Owned by `spec`; valid until the next coop_spec_json or change of
 * `spec`, or its destruction. */
const char* coop_spec_json(coop_spec_t* spec);

/* ---- Specialize ------------------------------------------------------------------------- */

typedef struct coop_artifact_t coop_artifact_t;

/* One specialization: compiled by coopd, or served from its cache. */
coop_status coop_client_specialize(coop_client_t* client, const coop_spec_t* spec,
                                   coop_artifact_t** out);
/* `count` (1..64) specs compiled into one LTO-IR in one round trip, all for one arch; each keeps
 * its own entries and temp storage (the artifact's parts, in the order of `specs`). */
coop_status coop_client_specialize_bundle(coop_client_t* client, const coop_spec_t* const* specs,
                                          size_t count, coop_artifact_t** out);
void coop_artifact_destroy(coop_artifact_t* artifact);

/* Since version 2: the formats to ask for, or-ed (COOP_FORMAT_LTOIR | COOP_FORMAT_BITCODE for
 * both). coop_client_specialize and _bundle ask for LTO-IR alone. LLVM bitcode (clang, the same
 * unit) is what frontends that link bitcode libraries take (CuTe DSL); a daemon without clang
 * answers COOP_FAILED_PRECONDITION naming the package to install. 0 is COOP_INVALID_ARGUMENT. */
enum { COOP_FORMAT_LTOIR = 1, COOP_FORMAT_BITCODE = 2 };
coop_status coop_client_specialize_formats(coop_client_t* client, const coop_spec_t* spec,
                                           unsigned formats, coop_artifact_t** out);
coop_status coop_client_specialize_bundle_formats(coop_client_t* client,
                                                  const coop_spec_t* const* specs, size_t count,
                                                  unsigned formats, coop_artifact_t** out);

/* The LTO-IR to link into the kernel with nvJitLink (-lto); its size in *size (0 and NULL when
 * the request asked for bitcode alone). */
const void* coop_artifact_ltoir(const coop_artifact_t* artifact, size_t* size);
/* Since version 2: the LLVM bitcode (for the artifact's arch) and its own cache key; size 0 and
 * NULL, and "", when the request did not ask for it. */
const void* coop_artifact_bitcode(const coop_artifact_t* artifact, size_t* size);
const char* coop_artifact_bitcode_key(const coop_artifact_t* artifact);
/* The cache key (64 hex digits): what coop_link_add_artifact_key takes. */
const char* coop_artifact_key(const coop_artifact_t* artifact);
const char* coop_artifact_arch(const coop_artifact_t* artifact); /* "sm_90" */
/* Where the bytes came from for this reply: "compiled", "memory", "disk", "remote". */
const char* coop_artifact_origin(const coop_artifact_t* artifact);
/* Milliseconds of the compile that produced the bytes (also for a cache hit), and its NVRTC log
 * (often ""). */
double coop_artifact_compile_ms(const coop_artifact_t* artifact);
const char* coop_artifact_compile_log(const coop_artifact_t* artifact);
/* The CUDA C++ unit coopd rendered and compiled. */
const char* coop_artifact_source(const coop_artifact_t* artifact);
/* C++ definitions of the user types the declarations name (paste them before the
 * declarations); "" when no spec uses one. */
const char* coop_artifact_type_definitions(const coop_artifact_t* artifact);
/* The shared memory one instance needs: sizeof and alignof of CUB's TempStorage, for a
 * single-spec artifact (0 and 0 for a bundle: see coop_artifact_part_temp_storage). Either
 * pointer may be NULL. */
void coop_artifact_temp_storage(const coop_artifact_t* artifact, uint64_t* bytes, uint64_t* align);

/* Entry points: every part's, in part order. The symbol to call, its exact C declaration (ready
 * to paste into the kernel's source), and one line on which thread holds what. */
size_t coop_artifact_entry_count(const coop_artifact_t* artifact);
const char* coop_artifact_entry_symbol(const coop_artifact_t* artifact, size_t entry);
const char* coop_artifact_entry_declaration(const coop_artifact_t* artifact, size_t entry);
const char* coop_artifact_entry_description(const coop_artifact_t* artifact, size_t entry);

/* Parts: one per spec (one for coop_client_specialize). A part's entries are the artifact's
 * entries [*first, *first + *count); its resolved spec (every default filled in) is JSON as
 * coop_spec_json writes it. Pointers may be NULL. */
size_t coop_artifact_part_count(const coop_artifact_t* artifact);
void coop_artifact_part_entries(const coop_artifact_t* artifact, size_t part, size_t* first,
                                size_t* count);
void coop_artifact_part_temp_storage(const coop_artifact_t* artifact, size_t part, uint64_t* bytes,
                                     uint64_t* align);
const char* coop_artifact_part_spec_json(const coop_artifact_t* artifact, size_t part);

/* LTO-IR the artifact needs at link time besides its own, one per user operator: link it too
 * (coop_client_link adds it by itself for an artifact given by key). The symbol it defines, and
 * its bytes (size in *size). */
size_t coop_artifact_link_input_count(const coop_artifact_t* artifact);
const char* coop_artifact_link_input_symbol(const coop_artifact_t* artifact, size_t input);
const void* coop_artifact_link_input_ltoir(const coop_artifact_t* artifact, size_t input,
                                           size_t* size);
/* Since version 2: the operator's bitcode, when the artifact carries bitcode. */
const void* coop_artifact_link_input_bitcode(const coop_artifact_t* artifact, size_t input,
                                             size_t* size);

/* ---- Link: kernel + artifacts -> cubin --------------------------------------------------- */

typedef struct coop_link_t coop_link_t;
typedef struct coop_cubin_t coop_cubin_t;

/* A link request for `arch` ("sm_90"; every module and artifact must be for it). coopd links
 * with -optimize-unused-variables unless told to keep them. */
coop_link_t* coop_link_create(const char* arch);
void coop_link_destroy(coop_link_t* link);
/* The frontend's modules (1..16 in all, at most 64 MiB): LTO-IR, or PTX text. `name` (NULL: a
 * generated one) labels the module in nvJitLink's log. */
coop_status coop_link_add_ltoir(coop_link_t* link, const char* name, const void* data, size_t size);
coop_status coop_link_add_ptx(coop_link_t* link, const char* name, const char* ptx, size_t size);
/* An artifact held in coopd's cache, by key (coop_artifact_key); its link inputs come along. */
coop_status coop_link_add_artifact_key(coop_link_t* link, const char* key);
/* An extra nvJitLink option, e.g. "-lineinfo" (part of the cubin's cache key). */
coop_status coop_link_add_option(coop_link_t* link, const char* option);
/* Nonzero: do not pass -optimize-unused-variables. */
void coop_link_set_keep_unused_variables(coop_link_t* link, int keep);

/* Links in coopd (cached under a key of every input). A failed link is COOP_INVALID_ARGUMENT
 * whose message holds nvJitLink's whole log. */
coop_status coop_client_link(coop_client_t* client, const coop_link_t* link, coop_cubin_t** out);
void coop_cubin_destroy(coop_cubin_t* cubin);
const void* coop_cubin_data(const coop_cubin_t* cubin, size_t* size); /* an ELF image */
const char* coop_cubin_key(const coop_cubin_t* cubin);
const char* coop_cubin_origin(const coop_cubin_t* cubin); /* as coop_artifact_origin */
double coop_cubin_link_ms(const coop_cubin_t* cubin);

/* ---- Catalog: what this daemon accepts ------------------------------------------------- */

typedef struct coop_catalog_t coop_catalog_t;

/* Generated by coopd from the tables its validator uses. */
coop_status coop_client_catalog(coop_client_t* client, coop_catalog_t** out);
void coop_catalog_destroy(coop_catalog_t* catalog);
/* Families, in catalogue order: name ("block_reduce"), one line of description, and whether
 * this daemon's CCCL headers have it (1) or requests get COOP_FAILED_PRECONDITION (0). */
size_t coop_catalog_family_count(const coop_catalog_t* catalog);
const char* coop_catalog_family_name(const coop_catalog_t* catalog, size_t family);
const char* coop_catalog_family_description(const coop_catalog_t* catalog, size_t family);
int coop_catalog_family_available(const coop_catalog_t* catalog, size_t family);
/* A family's methods, the default first: name, description, and the kind of operator it takes
 * ("binary", "comparator", "flag", "difference"; "" for none). */
size_t coop_catalog_method_count(const coop_catalog_t* catalog, size_t family);
const char* coop_catalog_method_name(const coop_catalog_t* catalog, size_t family, size_t method);
const char* coop_catalog_method_description(const coop_catalog_t* catalog, size_t family,
                                            size_t method);
const char* coop_catalog_method_op_kind(const coop_catalog_t* catalog, size_t family,
                                        size_t method);
/* Everything (algorithms, dtypes, operator kinds, archs, ...): coop.v1.CatalogResponse as JSON,
 * snake_case names. */
const char* coop_catalog_json(const coop_catalog_t* catalog);

/* ---- Stats ------------------------------------------------------------------------------ */

typedef struct coop_stats_t coop_stats_t;

/* The daemon's counters (auto-starts like every call: open the client with auto-start off to
 * only report on a running daemon). */
coop_status coop_client_stats(coop_client_t* client, coop_stats_t** out);
void coop_stats_destroy(coop_stats_t* stats);
/* A counter of coop.v1.Stats by field name: an integer or bool one ("requests", "memory_hits",
 * "compiles", "workers", "cache_degraded", ...) as uint64, a double one ("uptime_s",
 * "compile_ms_p50", ...) as double. Another name is COOP_INVALID_ARGUMENT listing the
 * allowed ones. */
coop_status coop_stats_uint(const coop_stats_t* stats, const char* name, uint64_t* value);
coop_status coop_stats_double(const coop_stats_t* stats, const char* name, double* value);
/* Everything (tiers, workers, toolchain, ...): coop.v1.Stats as JSON, snake_case names. */
const char* coop_stats_json(const coop_stats_t* stats);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* COOP_COOP_C_H_ */
