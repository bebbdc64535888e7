#include "server/catalog/spec.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "absl/status/status.h"
#include "server/catalog/family.h"
#include "server/catalog/user_op.h"
#include "server/util/strings.h"

namespace coopd {
namespace {

using coop::v1::PrimitiveSpec;

bool AcceptsDtype(DtypeRule rule, const DType& t) {
  switch (rule) {
    case DtypeRule::kRadixSortable:
      // CUB's radix traits cover every arithmetic dtype, __half and __nv_bfloat16 included.
      return true;
    case DtypeRule::kUnsignedInteger:
      return t.is_integer && t.name.rfind("uint", 0) == 0;
    default:
      return true;
  }
}

bool FamilyAvailable(const Family& f, const TargetInfo& target) {
  return f.requires_header.empty() ||
         std::find(target.cccl_headers_present.begin(), target.cccl_headers_present.end(),
                   f.requires_header) != target.cccl_headers_present.end();
}

template <class Range, class Fn>
std::string JoinMapped(const Range& r, Fn fn) {
  std::vector<std::string> parts;
  for (const auto& x : r) parts.push_back(std::string(fn(x)));
  return StrJoin(parts, ", ");
}

std::vector<std::string_view> FamilyDtypes(const Family& f) {
  std::vector<std::string_view> names;
  for (const auto& t : DTypes()) {
    if (AcceptsDtype(f.dtypes, t)) names.push_back(t.name);
  }
  return names;
}

// Whether the spec's operator is commutative, as algorithm "auto" needs to know
// (raking_commutative_only): a method without an operator reduces with sum, min or max; with
// one, the builtins sum, min and max, or a user operator declared commutative, are.
bool CommutativeOperator(const PrimitiveSpec& in, const Method& method) {
  if (method.op == OpKind::kNone) return true;
  if (in.op().has_user()) return in.op().user().commutative();
  const std::string& b = in.op().builtin();
  return b == "sum" || b == "min" || b == "max";
}

// The name of a family-options field, as in the proto and in messages.
std::string_view OptionsName(PrimitiveSpec::FamilyOptionsCase c) {
  switch (c) {
    case PrimitiveSpec::kScan:
      return "scan";
    case PrimitiveSpec::kExchange:
      return "exchange";
    case PrimitiveSpec::kRadixSort:
      return "radix_sort";
    case PrimitiveSpec::kMergeSort:
      return "merge_sort";
    case PrimitiveSpec::kHistogram:
      return "histogram";
    case PrimitiveSpec::kTopK:
      return "top_k";
    case PrimitiveSpec::kRunLengthDecode:
      return "run_length_decode";
    case PrimitiveSpec::kRadixRank:
      return "radix_rank";
    default:
      return "";
  }
}

}  // namespace

const std::vector<OpKindInfo>& OpKinds() {
  static const auto* kinds = new std::vector<OpKindInfo>{
      {OpKind::kBinary,
       "binary",
       "(T, T) -> T",
       {"sum", "max", "min", "bit_and", "bit_or", "bit_xor"}},
      {OpKind::kComparator, "comparator", "(T, T) -> bool", {"less", "greater"}},
      {OpKind::kFlag, "flag", "(T, T) -> bool", {"not_equal", "equal"}},
      {OpKind::kDifference, "difference", "(T, T) -> T", {"difference", "sum"}},
  };
  return *kinds;
}

const OpKindInfo& GetOpKind(OpKind kind) {
  for (const auto& k : OpKinds()) {
    if (k.kind == kind) return k;
  }
  std::abort();  // kNone has no info; callers check first
}

const std::vector<DType>& DTypes() {
  static const auto* types = new std::vector<DType>{
      {"int8", "signed char", "i8", true, 1},     {"int16", "short", "i16", true, 2},
      {"int32", "int", "i32", true, 4},           {"int64", "long long", "i64", true, 8},
      {"uint8", "unsigned char", "u8", true, 1},  {"uint16", "unsigned short", "u16", true, 2},
      {"uint32", "unsigned int", "u32", true, 4}, {"uint64", "unsigned long long", "u64", true, 8},
      {"float32", "float", "f32", false, 4},      {"float64", "double", "f64", false, 8},
      {"float16", "__half", "f16", false, 2},     {"bfloat16", "__nv_bfloat16", "bf16", false, 2},
  };
  return *types;
}

const DType* FindDType(std::string_view name) {
  for (const auto& t : DTypes()) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

bool IsWarpFamily(std::string_view family) {
  const Family* f = FindFamily(family);
  return f != nullptr && f->warp;
}

std::string_view CallingConventionName(coop::v1::CallingConvention cc) {
  switch (cc) {
    case coop::v1::CALLING_CONVENTION_NUMBA:
      return "numba";
    default:
      return "c";
  }
}

std::vector<std::string> ArchNames(const std::vector<int>& supported_archs) {
  std::vector<std::string> out;
  for (int a : supported_archs) {
    out.push_back(StrCat("sm_", a));
    // Arch-specific feature sets exist from sm_90 on; NVRTC, nvJitLink and clang take them.
    if (a >= 90) out.push_back(StrCat("sm_", a, "a"));
  }
  return out;
}

absl::Status CheckArch(std::string_view ctx, std::string_view arch, const TargetInfo& target) {
  const std::vector<std::string> allowed = ArchNames(target.supported_archs);
  if (std::find(allowed.begin(), allowed.end(), arch) == allowed.end()) {
    return Invalid(ctx, StrCat("arch must be one of ", StrJoin(allowed, ", "),
                               " (the architectures this NVRTC supports); got ", Quote(arch)));
  }
  return absl::OkStatus();
}

absl::StatusOr<PrimitiveSpec> Canonicalize(const PrimitiveSpec& in, const TargetInfo& target,
                                           coop::v1::AutoExplanation* auto_explanation) {
  const Family* fam = FindFamily(in.family());
  if (fam == nullptr) {
    return Invalid("spec", StrCat("family must be one of ",
                                  JoinMapped(Families(), [](const Family* f) { return f->name; }),
                                  "; got ", Quote(in.family())));
  }
  const std::string_view ctx = fam->name;
  if (!FamilyAvailable(*fam, target)) {
    return absl::FailedPreconditionError(StrCat(
        ctx, ": needs CCCL ", fam->min_cccl, " or newer (", fam->requires_header,
        "); the spec compiles against CCCL ", target.cccl_version, " at ", target.cccl_include,
        ". Name a newer CCCL in cccl (coopctl catalog lists this coopd's), or serve one with "
        "coopd --cccl NAME=DIR, e.g. the headers of `pip install nvidia-cuda-cccl==13.3.3.3.1` "
        "(DIR: its site-packages)"));
  }
  PrimitiveSpec out;
  out.set_family(std::string(fam->name));

  // method
  const Method* method = nullptr;
  if (in.method().empty()) {
    method = &fam->methods.front();
  } else {
    for (const auto& m : fam->methods) {
      if (m.name == in.method()) method = &m;
    }
    if (method == nullptr) {
      return Invalid(ctx, StrCat("method must be one of ",
                                 JoinMapped(fam->methods, [](const Method& m) { return m.name; }),
                                 "; got ", Quote(in.method())));
    }
  }
  out.set_method(std::string(method->name));

  // dtype
  static const DType kUserDType{"user", "", "user", false, 0};
  const bool user_type_ok = fam->user_types;
  const DType* dtype = FindDType(in.dtype());
  if (in.dtype() == "user" && user_type_ok) {
    const uint32_t size = in.user_type().size();
    const uint32_t align = in.user_type().align() == 0 ? 1 : in.user_type().align();
    if (align > 16 || (align & (align - 1)) != 0) {
      return Invalid(ctx, StrCat("user_type.align must be a power of two 1..16, got ", align));
    }
    if (size == 0 || size > 1024 || size % align != 0) {
      return Invalid(ctx, StrCat("user_type.size must be 1..1024 bytes and a multiple of "
                                 "user_type.align (",
                                 align, "), got ", size));
    }
    out.mutable_user_type()->set_size(size);
    out.mutable_user_type()->set_align(align);
    dtype = &kUserDType;
  } else if (dtype == nullptr || !AcceptsDtype(fam->dtypes, *dtype)) {
    return Invalid(
        ctx,
        StrCat("dtype must be one of ", StrJoin(FamilyDtypes(*fam), ", "),
               user_type_ok ? ", or \"user\" (with user_type)" : "", "; got ", Quote(in.dtype()),
               in.dtype() == "user"
                   ? StrCat(" (user types work in ", StrJoin(UserTypeFamilyNames(), ", "), ")")
                   : ""));
  } else if (in.has_user_type()) {
    return Invalid(
        ctx, StrCat("user_type applies only with dtype \"user\"; got dtype ", Quote(in.dtype())));
  }
  out.set_dtype(std::string(dtype->name));
  if (out.has_user_type() && method->arithmetic_only) {
    std::vector<std::string_view> with_op;
    for (const Method& m : fam->methods) {
      if (m.op != OpKind::kNone && !m.arithmetic_only) with_op.push_back(m.name);
    }
    return Invalid(ctx,
                   StrCat("method ", Quote(method->name),
                          " needs an arithmetic dtype (it uses the builtin operator); on a "
                          "user type use ",
                          with_op.empty() ? std::string("another method") : StrJoin(with_op, ", "),
                          " with op.user"));
  }

  // block shape
  if (fam->warp) {
    // The block shape does not change a warp primitive's code; drop it from the canonical spec
    // (and therefore from the key) after checking it is not nonsense.
    if (in.has_block()) {
      uint64_t x = in.block().x(), y = std::max<uint32_t>(in.block().y(), 1),
               z = std::max<uint32_t>(in.block().z(), 1);
      if (x * y * z > 1024) {
        return Invalid(ctx, StrCat("block threads (x*y*z) must be 1..1024, got ", x * y * z));
      }
    }
  } else {
    if (!in.has_block() || in.block().x() == 0) {
      return Invalid(ctx, StrCat("block.x (threads) must be 1..1024, got ",
                                 in.has_block() ? in.block().x() : 0));
    }
    const uint32_t x = in.block().x();
    const uint32_t y = in.block().y() == 0 ? 1 : in.block().y();
    const uint32_t z = in.block().z() == 0 ? 1 : in.block().z();
    if (x > 1024) return Invalid(ctx, StrCat("block.x must be 1..1024, got ", x));
    if (y > 1024) return Invalid(ctx, StrCat("block.y must be 1..1024, got ", y));
    if (z > 64) return Invalid(ctx, StrCat("block.z must be 1..64, got ", z));
    const uint64_t total = uint64_t{x} * y * z;
    if (total > 1024) {
      return Invalid(ctx, StrCat("block threads (x*y*z) must be 1..1024, got ", x, "*", y, "*", z,
                                 " = ", total));
    }
    if (fam->power_of_two_threads && (total & (total - 1)) != 0) {
      return Invalid(ctx, StrCat("block threads (x*y*z) must be a power of two, got ", x, "*", y,
                                 "*", z, " = ", total));
    }
    out.mutable_block()->set_x(x);
    out.mutable_block()->set_y(y);
    out.mutable_block()->set_z(z);
  }

  // items_per_thread
  const uint32_t items = in.items_per_thread() == 0 ? 1 : in.items_per_thread();
  if (method->single_item && items != 1) {
    return Invalid(ctx,
                   StrCat("method \"", method->name, "\" takes items_per_thread 1, got ", items));
  }
  if (!fam->multi_item && items != 1) {
    return Invalid(ctx, StrCat("items_per_thread must be 1, got ", items));
  }
  if (items > 64) {
    return Invalid(ctx, StrCat("items_per_thread must be 1..64, got ", items));
  }
  out.set_items_per_thread(items);

  // algorithm
  if (in.algorithm() == "auto" && fam->auto_algorithms.empty()) {
    return Invalid(
        ctx,
        StrCat("algorithm \"auto\" is accepted only by ", StrJoin(tuning::AutoFamilyNames(), ", "),
               " (families whose algorithms change only speed); ",
               fam->algorithms.empty() ? std::string("this family has no algorithm")
                                       : StrCat("choose one of ", StrJoin(fam->algorithms, ", "))));
  }
  if (fam->algorithms.empty()) {
    if (!in.algorithm().empty()) {
      return Invalid(ctx, StrCat("algorithm does not apply (this family has none); got ",
                                 Quote(in.algorithm())));
    }
  } else {
    std::string_view algo = in.algorithm().empty() ? fam->default_algorithm : in.algorithm();
    if (algo.empty()) {
      return Invalid(ctx, StrCat("algorithm is required (one of ", StrJoin(fam->algorithms, ", "),
                                 ", or auto): CUB's default, direct, is often several times "
                                 "slower than the best choice, so coopd does not pick it "
                                 "silently; auto picks from measurements (docs/tuning.md)"));
    }
    std::string resolved;
    if (algo == "auto") {
      // Resolved before anything reads the algorithm, so the rest of validation, the canonical
      // encoding and the key see only the concrete choice.
      tuning::Query q;
      q.family = fam;
      q.arch = in.arch();
      q.dtype_size = dtype->size != 0 ? dtype->size : out.user_type().size();
      q.threads = fam->warp ? (in.warp_threads() == 0 ? 32 : in.warp_threads())
                            : static_cast<uint32_t>(BlockThreads(out));
      q.items_per_thread = items;
      q.commutative = CommutativeOperator(in, *method);
      const std::shared_ptr<const tuning::TableSet> tables =
          target.tuning != nullptr ? target.tuning : tuning::ActiveTables();
      tuning::Resolution r = tuning::Resolve(q, *tables);
      resolved = std::move(r.chosen);
      if (auto_explanation != nullptr) *auto_explanation = std::move(r.explanation);
      algo = resolved;
    }
    if (std::find(fam->algorithms.begin(), fam->algorithms.end(), algo) == fam->algorithms.end()) {
      return Invalid(ctx, StrCat("algorithm must be one of ", StrJoin(fam->algorithms, ", "),
                                 "; got ", Quote(in.algorithm())));
    }
    const uint64_t threads = uint64_t{out.block().x()} * out.block().y() * out.block().z();
    if (std::find(fam->warp_multiple_algorithms.begin(), fam->warp_multiple_algorithms.end(),
                  algo) != fam->warp_multiple_algorithms.end() &&
        threads % 32 != 0) {
      return Invalid(ctx, StrCat("algorithm \"", algo,
                                 "\" needs a block of a multiple of 32 threads, got ", threads));
    }
    out.set_algorithm(std::string(algo));
  }

  // operator
  if (method->op != OpKind::kNone && in.op().has_user()) {
    const OpKindInfo& kind = GetOpKind(method->op);
    OperatorSignature signature;
    signature.returns_bool = kind.kind == OpKind::kComparator || kind.kind == OpKind::kFlag;
    if (out.has_user_type() && !in.op().user().ltoir().empty() && !in.op().user().by_pointer()) {
      return Invalid(ctx,
                     "op.user.ltoir: an LTO-IR operator on a user type must take its values "
                     "through pointers (set op.user.by_pointer: void name(T* result, const T* a, "
                     "const T* b)); or give it as source (op.user.source), which coopd checks "
                     "against user_type's size and alignment");
    }
    auto user = CanonicalUserOperator(in.op().user(), ctx, *dtype, signature, out.user_type());
    if (!user.ok()) return user.status();
    *out.mutable_op()->mutable_user() = std::move(*user);
  } else if (method->op != OpKind::kNone && out.has_user_type()) {
    return Invalid(ctx, StrCat("method ", Quote(method->name), " on a user type needs op.user (a ",
                               GetOpKind(method->op).name, " operator on your struct, ",
                               GetOpKind(method->op).signature,
                               "); builtin operators work on arithmetic dtypes only"));
  } else if (method->op != OpKind::kNone) {
    const OpKindInfo& kind = GetOpKind(method->op);
    const std::string allowed = StrJoin(kind.builtins, ", ");
    if (in.op().builtin().empty()) {
      return Invalid(
          ctx, StrCat("method ", Quote(method->name), " needs a ", kind.name, " operator ",
                      kind.signature, ": op.builtin must be one of ", allowed, ", or op.user"));
    }
    const std::string& op = in.op().builtin();
    if (std::find(kind.builtins.begin(), kind.builtins.end(), op) == kind.builtins.end()) {
      for (const OpKindInfo& other : OpKinds()) {
        if (std::find(other.builtins.begin(), other.builtins.end(), op) != other.builtins.end()) {
          return Invalid(
              ctx, StrCat("op.builtin ", Quote(op), " is a ", other.name, " operator, but method ",
                          Quote(method->name), " takes a ", kind.name, " operator ", kind.signature,
                          ": one of ", allowed));
        }
      }
      return Invalid(ctx, StrCat("op.builtin must be one of ", allowed, "; got ", Quote(op)));
    }
    if (op.rfind("bit_", 0) == 0 && !dtype->is_integer) {
      return Invalid(ctx, StrCat("op.builtin ", Quote(op), " needs an integer dtype; got ",
                                 Quote(dtype->name)));
    }
    out.mutable_op()->set_builtin(op);
  } else if (in.has_op()) {
    return Invalid(ctx, StrCat("op applies only to methods that take an operator; method ",
                               Quote(method->name), " does not"));
  }

  // prefix callback
  if (in.has_prefix_callback()) {
    if (!method->prefix_callback) {
      std::vector<std::string_view> takers;
      for (const Family* f : Families()) {
        if (std::any_of(f->methods.begin(), f->methods.end(),
                        [](const Method& m) { return m.prefix_callback; })) {
          takers.push_back(f->name);
        }
      }
      return Invalid(ctx,
                     StrCat("prefix_callback applies only to ", StrJoin(takers, " and "),
                            "'s *_prefix methods; method ", Quote(method->name), " takes none"));
    }
    coop::v1::UserOperator callback = in.prefix_callback();
    callback.set_stateful(true);
    OperatorSignature signature;
    signature.arity = 1;
    auto user =
        CanonicalUserOperator(callback, StrCat(ctx, ": prefix_callback"), *dtype, signature);
    if (!user.ok()) return user.status();
    *out.mutable_prefix_callback() = std::move(*user);
  }

  // warp_threads
  if (fam->warp) {
    const uint32_t wt = in.warp_threads() == 0 ? 32 : in.warp_threads();
    if (wt > 32 || (wt & (wt - 1)) != 0) {
      return Invalid(ctx, StrCat("warp_threads must be a power of two 1..32 (1, 2, 4, 8, "
                                 "16, 32), got ",
                                 wt));
    }
    out.set_warp_threads(wt);
  } else if (in.warp_threads() != 0) {
    return Invalid(ctx,
                   StrCat("warp_threads applies only to warp_* families, got ", in.warp_threads()));
  }

  // What CUB's static_asserts require of the fields above.
  const SpecContext spec_context{ctx, in, *method, target.cccl_version};
  if (fam->check != nullptr) {
    if (absl::Status st = fam->check(spec_context, out); !st.ok()) return st;
  }

  // arch
  if (absl::Status st = CheckArch(ctx, in.arch(), target); !st.ok()) return st;
  out.set_arch(in.arch());

  // calling convention
  switch (in.calling_convention()) {
    case coop::v1::CALLING_CONVENTION_UNSPECIFIED:
    case coop::v1::CALLING_CONVENTION_C:
      out.set_calling_convention(coop::v1::CALLING_CONVENTION_C);
      break;
    case coop::v1::CALLING_CONVENTION_NUMBA:
      out.set_calling_convention(coop::v1::CALLING_CONVENTION_NUMBA);
      break;
    default:
      return Invalid(ctx, StrCat("calling_convention must be C (1) or NUMBA (2), got ",
                                 static_cast<int>(in.calling_convention())));
  }

  // family options: a message the family does not take is an error; the family reads its own.
  if (in.family_options_case() != PrimitiveSpec::FAMILY_OPTIONS_NOT_SET &&
      in.family_options_case() != fam->options) {
    std::vector<std::string_view> takers;
    for (const Family* f : Families()) {
      if (f->options == in.family_options_case() && f->named_in_options_errors) {
        takers.push_back(f->name);
      }
    }
    return Invalid(ctx, StrCat(OptionsName(in.family_options_case()), " options apply only to ",
                               StrJoin(takers, " and ")));
  }
  if (fam->canonicalize_options != nullptr) {
    if (absl::Status st = fam->canonicalize_options(spec_context, out); !st.ok()) return st;
  }
  return out;
}

std::string CanonicalEncoding(const PrimitiveSpec& s) {
  // One field per line, always all fields, in a fixed order. Changing this format changes every
  // key; bump kKeySchema in cache_key.cc when you do.
  return StrCat(
      "family=", s.family(), "\nmethod=", s.method(), "\ndtype=", s.dtype(),
      "\nblock=", s.block().x(), "x", s.block().y(), "x", s.block().z(),
      "\nitems_per_thread=", s.items_per_thread(), "\nalgorithm=", s.algorithm(),
      "\nop=", s.op().has_user() ? "user:" + s.op().user().digest() : s.op().builtin(),
      // Only user-type specs carry this line.
      s.has_user_type() ? StrCat("\nuser_type=", s.user_type().size(), "x", s.user_type().align())
                        : std::string(),
      "\nwarp_threads=", s.warp_threads(), "\narch=", s.arch(),
      "\ncalling_convention=", CallingConventionName(s.calling_convention()),
      "\nscan.with_aggregate=", s.has_scan() && s.scan().with_aggregate() ? 1 : 0, "\n",
      // Only block_exchange specs carry this line, so adding it changed no other key.
      s.has_exchange()
          ? StrCat("exchange.warp_time_slicing=", s.exchange().warp_time_slicing() ? 1 : 0, "\n")
          : std::string(),
      // Likewise: only the sort and histogram families' specs carry these lines.
      s.has_radix_sort() ? StrCat("radix_sort.value_dtype=", s.radix_sort().value_dtype(),
                                  "\nradix_sort.radix_bits=", s.radix_sort().radix_bits(), "\n")
                         : std::string(),
      s.has_merge_sort() ? StrCat("merge_sort.value_dtype=", s.merge_sort().value_dtype(), "\n")
                         : std::string(),
      s.has_histogram() ? StrCat("histogram.bins=", s.histogram().bins(), "\n") : std::string(),
      s.has_run_length_decode() ? StrCat("run_length_decode.decoded_items_per_thread=",
                                         s.run_length_decode().decoded_items_per_thread(), "\n")
                                : std::string(),
      s.has_radix_rank() ? StrCat("radix_rank.radix_bits=", s.radix_rank().radix_bits(), "\n")
                         : std::string(),
      s.has_top_k() ? StrCat("top_k.value_dtype=", s.top_k().value_dtype(), "\n") : std::string(),
      // Only partial-tile top-k specs carry this line, so adding it changed no other key.
      s.has_top_k() && s.top_k().valid_items() ? "top_k.valid_items=1\n" : "",
      s.has_prefix_callback() ? StrCat("prefix_callback=user:", s.prefix_callback().digest(), "\n")
                              : std::string());
}

std::string UserTypeCName(const coop::v1::UserType& t) {
  return StrCat("coop_user_", t.size(), "_", t.align());
}

std::string UserTypeDefinition(const coop::v1::UserType& t) {
  const std::string name = UserTypeCName(t);
  std::string guard = name;
  for (char& c : guard) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return StrCat("#ifndef ", guard, "_DEFINED\n#define ", guard, "_DEFINED\nstruct alignas(",
                t.align(), ") ", name, " {\n  unsigned char bytes[", t.size(), "];\n};\n#endif\n");
}

std::vector<std::string> OptionalCcclHeaders() {
  std::vector<std::string> out;
  for (const Family* f : Families()) {
    if (!f->requires_header.empty()) out.emplace_back(f->requires_header);
  }
  return out;
}

coop::v1::CatalogResponse Catalog(const TargetInfo& target) {
  coop::v1::CatalogResponse out;
  for (const Family* family : Families()) {
    const Family& f = *family;
    auto* pf = out.add_families();
    pf->set_name(std::string(f.name));
    pf->set_description(std::string(f.description));
    for (const auto& m : f.methods) {
      auto* pm = pf->add_methods();
      pm->set_name(std::string(m.name));
      pm->set_needs_op(m.op != OpKind::kNone);
      if (m.op != OpKind::kNone) pm->set_op_kind(std::string(GetOpKind(m.op).name));
      pm->set_description(std::string(m.description));
    }
    for (const auto& a : f.algorithms) pf->add_algorithms(std::string(a));
    pf->set_default_algorithm(std::string(f.default_algorithm));
    for (const auto& a : f.auto_algorithms) pf->add_auto_algorithms(std::string(a));
    pf->set_auto_baseline(std::string(f.auto_baseline));
    pf->set_auto_measured_method(std::string(f.auto_measured_method));
    pf->set_warp(f.warp);
    pf->set_max_items_per_thread(f.multi_item ? 64 : 1);
    pf->set_scan_options(f.options == PrimitiveSpec::kScan);
    for (const auto& a : f.warp_multiple_algorithms) {
      pf->add_warp_multiple_algorithms(std::string(a));
    }
    pf->set_exchange_options(f.options == PrimitiveSpec::kExchange);
    pf->set_family_options(std::string(OptionsName(f.options)));
    for (const auto& t : FamilyDtypes(f)) pf->add_dtypes(std::string(t));
    pf->set_power_of_two_threads(f.power_of_two_threads);
    pf->set_available(FamilyAvailable(f, target));
    if (!f.requires_header.empty()) {
      pf->set_requires(StrCat("CCCL ", f.min_cccl, " or newer (", f.requires_header, ")"));
    }
  }
  for (const auto& t : DTypes()) out.add_dtypes(std::string(t.name));
  for (const auto& o : GetOpKind(OpKind::kBinary).builtins) out.add_builtin_ops(std::string(o));
  for (const auto& k : OpKinds()) {
    auto* pk = out.add_op_kinds();
    pk->set_name(std::string(k.name));
    pk->set_signature(std::string(k.signature));
    for (const auto& b : k.builtins) pk->add_builtins(std::string(b));
  }
  for (const auto& a : ArchNames(target.supported_archs)) out.add_archs(a);
  out.add_calling_conventions("c");
  out.add_calling_conventions("numba");
  return out;
}

}  // namespace coopd
