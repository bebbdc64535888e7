#include "server/catalog/render.h"

#include <algorithm>
#include <string_view>

#include "server/catalog/family.h"
#include "server/catalog/spec.h"
#include "server/catalog/user_op.h"
#include "server/util/sha256.h"
#include "server/util/strings.h"

namespace coopd {
namespace {

using coop::v1::PrimitiveSpec;

// Declares a user operator's symbol and defines the functor that calls it.
std::string UserOperatorPreamble(const coop::v1::UserOperator& user) {
  const std::string t = UserOperatorOperandCType(user);
  const std::string r = UserOperatorResultCType(user);
  std::vector<std::string> params, args;
  if (user.stateful()) args.push_back("state");
  const bool result_by_pointer = UserOperatorResultByPointer(user);
  if (result_by_pointer) args.push_back("&result");
  for (int i = 0; i < user.operand_dtypes_size(); ++i) {
    params.push_back(StrCat("const ", t, "& x", i));
    args.push_back(StrCat(user.by_pointer() ? "&" : "", "x", i));
  }
  const std::string call = StrCat(UserOperatorSymbol(user), "(", StrJoin(args, ", "), ")");
  // A pointer-ABI operator writes its result through a pointer to a local, which LTO turns
  // back into registers once the call is inlined.
  const std::string body = result_by_pointer
                               ? StrCat("    ", r, " result;\n    ", call, ";\n    return result;")
                               : StrCat("    return ", call, ";");
  return StrCat("\n// user operator ", user.name(), "\n", UserOperatorDeclaration(user), "\n",
                "struct ", UserFunctorName(user), " {\n", user.stateful() ? "  void* state;\n" : "",
                "  __device__ __forceinline__ ", r, " operator()(", StrJoin(params, ", "),
                ") const {\n", body, "\n  }\n};\n");
}

// What every entry of a spec adds to its description: the thread order of a 2D or 3D block, and
// the barrier before its temp storage may be reused (CUB's rule for every collective).
std::string EntryNotes(const PrimitiveSpec& s) {
  if (IsWarpFamily(s.family())) {
    return "; __syncwarp() before this logical warp's temp_storage is reused";
  }
  std::string out;
  const uint32_t x = s.block().x(), y = s.block().y(), z = s.block().z();
  if (y * z > 1) {
    out = StrCat("; the block's threads are in the order of their linear id = threadIdx.x + ", x,
                 " * threadIdx.y", z > 1 ? StrCat(" + ", x * y, " * threadIdx.z") : "",
                 " (x fastest)");
  }
  return out + "; __syncthreads() before temp_storage is reused";
}

// CUDA's 16-bit float structs and the opaque user types: values Numba cannot pass by value.
bool IsStructValueType(std::string_view type, std::string_view user_c_name) {
  return type == "__half" || type == "__nv_bfloat16" ||
         (!user_c_name.empty() && type == user_c_name);
}

}  // namespace

RenderedUnit Render(const std::vector<PrimitiveSpec>& specs) {
  RenderedUnit unit;
  std::string body;
  std::vector<std::string> user_symbols;  // declared already
  for (size_t i = 0; i < specs.size(); ++i) {
    const PrimitiveSpec& s = specs[i];
    const Family& family = *FindFamily(s.family());
    // A user type: an opaque struct of its size and alignment, defined once per unit.
    std::string user_c_name, user_short_name;
    if (s.has_user_type()) {
      user_c_name = UserTypeCName(s.user_type());
      user_short_name = StrCat("u", s.user_type().size(), "a", s.user_type().align());
      const std::string definition = UserTypeDefinition(s.user_type());
      if (unit.type_definitions.find(definition) == std::string::npos) {
        unit.type_definitions += definition;
        StrAppend(&body, "\n", definition);
      }
    }
    const bool user_op = s.op().has_user();
    for (const coop::v1::UserOperator* u :
         {user_op ? &s.op().user() : nullptr,
          s.has_prefix_callback() ? &s.prefix_callback() : nullptr}) {
      if (u == nullptr) continue;
      const std::string symbol = UserOperatorSymbol(*u);
      if (std::find(user_symbols.begin(), user_symbols.end(), symbol) == user_symbols.end()) {
        user_symbols.push_back(symbol);
        StrAppend(&body, UserOperatorPreamble(*u));
      }
    }
    const DType user_dt{"user", user_c_name, user_short_name, false, s.user_type().size()};
    const DType& dt = s.has_user_type() ? user_dt : *FindDType(s.dtype());
    RenderedPart part;
    // The symbol names the spec, so distinct specs linked into one kernel never collide, and
    // the same spec always gets the same name (independent of toolchain and of bundling).
    const std::string spec_digest = Sha256::Hex(CanonicalEncoding(s)).substr(0, 16);
    part.symbol_base =
        StrCat("coop_", s.family(), "_", s.method(), "_", dt.short_name, "_", spec_digest);
    part.temp_bytes_symbol = part.symbol_base + "__temp_bytes";
    part.temp_align_symbol = part.symbol_base + "__temp_align";
    const std::string alias = StrCat("coop_prim_", i, "_t");
    StrAppend(&body, "\n// ", s.family(), " ", s.method(), " ", s.dtype(), "\n", "using ", alias,
              " = ", family.primitive_type(s, dt.c_type), ";\n", "COOP_LAYOUT(", part.symbol_base,
              ", ", alias, ")\n");

    const bool numba = s.calling_convention() == coop::v1::CALLING_CONVENTION_NUMBA;
    const std::string notes = EntryNotes(s);
    for (EntryPlan& p : family.plan_entries(s, dt)) {
      if (user_op && s.op().user().stateful()) {
        p.params.push_back({"void*", "op_state"});
        p.description += "; op_state is passed to the operator unchanged";
      }
      p.description += notes;
      RenderedEntry e;
      e.symbol = part.symbol_base + p.suffix;
      std::string params;
      // Numba passes a result pointer first even to a void function; such entries ignore it.
      if (numba) params = StrCat(p.result == "void" ? "void" : p.result, "* result, ");
      params += "void* temp_storage";
      // Numba has no by-value form of CUDA's struct types: its float16 is a 16-bit scalar where
      // NVRTC passes a struct __half, and a call whose signature differs from the definition's
      // is never inlined. The numba convention takes such values by const reference (a pointer
      // in the ABI), which the entry plan's call reads like the value.
      for (const auto& [type, name] : p.params) {
        const bool by_reference = numba && IsStructValueType(type, user_c_name);
        StrAppend(&params, ", ", by_reference ? StrCat("const ", type, "&") : type, " ", name);
      }
      const std::string ret = numba ? "int" : p.result;
      const std::string signature =
          StrCat("extern \"C\" __device__ ", ret, " ", e.symbol, "(", params, ")");
      e.declaration = signature + ";";
      e.description = p.description;
      std::string stmt;
      if (numba) {
        stmt = p.result == "void" ? StrCat("  ", p.call, ";\n  return 0;\n")
                                  : StrCat("  *result = ", p.call, ";\n  return 0;\n");
      } else {
        stmt =
            p.result == "void" ? StrCat("  ", p.call, ";\n") : StrCat("  return ", p.call, ";\n");
      }
      StrAppend(&body, signature, "\n{\n", "  using Prim = ", alias, ";\n", stmt, "}\n");
      part.entries.push_back(std::move(e));
    }
    unit.parts.push_back(std::move(part));
  }
  unit.source = StrCat(kPreludeUnit, body);
  return unit;
}

}  // namespace coopd
