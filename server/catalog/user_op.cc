#include "server/catalog/user_op.h"

#include <algorithm>

#include "server/util/escape.h"
#include "server/util/sha256.h"
#include "server/util/strings.h"

namespace coopd {
namespace {

using coop::v1::UserOperator;

absl::Status Invalid(std::string_view context, std::string_view detail) {
  return absl::InvalidArgumentError(StrCat(context, ": ", detail));
}

bool IsIdentifier(std::string_view s) {
  if (s.empty() || s.size() > 128) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  return std::all_of(s.begin(), s.end(),
                     [&](char c) { return alpha(c) || (c >= '0' && c <= '9'); });
}

std::string CType(std::string_view dtype, const UserOperator& op) {
  if (dtype == "bool") return "bool";
  if (dtype == "user") return UserTypeCName(op.user_type());
  const DType* t = FindDType(dtype);
  return t == nullptr ? std::string() : std::string(t->c_type);
}

// The parameter list of the operator's extern "C" symbol, with names when `named`: by value,
// or for a pointer-ABI operator the result pointer first and the operands by pointer.
std::string Params(const UserOperator& op, bool named) {
  std::vector<std::string> params;
  if (op.stateful()) params.push_back(named ? "void* state" : "void*");
  const std::string t = UserOperatorOperandCType(op);
  if (UserOperatorResultByPointer(op)) {
    params.push_back(StrCat(CType(op.result_dtype(), op), "*", named ? " result" : ""));
  }
  const std::string operand = op.by_pointer() ? StrCat("const ", t, "*") : t;
  for (int i = 0; i < op.operand_dtypes_size(); ++i) {
    params.push_back(named ? StrCat(operand, " x", i) : operand);
  }
  return StrJoin(params, ", ");
}

}  // namespace

absl::StatusOr<UserOperator> CanonicalUserOperator(const UserOperator& in, std::string_view context,
                                                   const DType& dtype,
                                                   const OperatorSignature& signature,
                                                   const coop::v1::UserType& user_type) {
  if (!IsIdentifier(in.name())) {
    return Invalid(context, StrCat("op.user.name must be a C identifier of 1..128 characters "
                                   "([A-Za-z_][A-Za-z0-9_]*); got ",
                                   QuoteValue(in.name())));
  }
  if (in.name().rfind("coop_", 0) == 0) {
    return Invalid(context, StrCat("op.user.name must not start with \"coop_\" (coopd's own "
                                   "symbols); got ",
                                   QuoteValue(in.name())));
  }
  if (in.source().empty() == in.ltoir().empty()) {
    return Invalid(context, "op.user: exactly one of source and ltoir must be set");
  }
  if (in.by_pointer() && !in.source().empty()) {
    return Invalid(context,
                   "op.user.by_pointer applies to operators given as op.user.ltoir; a source "
                   "operator is called by value (leave by_pointer false)");
  }
  if (in.source().size() > kMaxOperatorSourceBytes) {
    return Invalid(context, StrCat("op.user.source must be at most ", kMaxOperatorSourceBytes,
                                   " bytes; got ", in.source().size()));
  }
  if (in.ltoir().size() > kMaxOperatorLtoIrBytes) {
    return Invalid(context, StrCat("op.user.ltoir must be at most ", kMaxOperatorLtoIrBytes,
                                   " bytes; got ", in.ltoir().size()));
  }
  if (!in.digest().empty()) {
    return Invalid(context, "op.user.digest is set by coopd; leave it empty in requests");
  }
  // The signature: the method decides it, the request confirms it.
  const std::string expected_operands = StrJoin(
      std::vector<std::string_view>(static_cast<size_t>(signature.arity), dtype.name), ", ");
  if (in.operand_dtypes_size() != 0) {
    std::vector<std::string> got(in.operand_dtypes().begin(), in.operand_dtypes().end());
    if (StrJoin(got, ", ") != expected_operands) {
      // Names of dtypes as they are; anything else quoted (bounded, escaped), and at most a few.
      constexpr size_t kShown = 4;
      const size_t count = got.size();
      if (count > kShown) got.resize(kShown);
      for (auto& g : got) {
        if (FindDType(g) == nullptr) g = QuoteValue(g);
      }
      if (count > kShown) got.push_back(StrCat("... (", count, " in all)"));
      return Invalid(context,
                     StrCat("op.user.operand_dtypes must be (", expected_operands,
                            ") for this method and dtype; got (", StrJoin(got, ", "), ")"));
    }
  }
  const std::string_view expected_result = signature.returns_bool ? "bool" : dtype.name;
  if (!in.result_dtype().empty() && in.result_dtype() != expected_result) {
    return Invalid(context,
                   StrCat("op.user.result_dtype must be \"", expected_result,
                          "\" for this method and dtype; got ", QuoteValue(in.result_dtype())));
  }

  UserOperator out;
  out.set_name(in.name());
  for (int i = 0; i < signature.arity; ++i) out.add_operand_dtypes(std::string(dtype.name));
  out.set_result_dtype(std::string(expected_result));
  out.set_stateful(in.stateful());
  out.set_by_pointer(in.by_pointer());
  if (dtype.name == "user") *out.mutable_user_type() = user_type;
  Sha256 h;
  h.UpdateField("coopd-user-op-v1");
  h.UpdateField(in.source().empty() ? "ltoir" : "source");
  h.UpdateField(out.name());
  h.UpdateField(StrJoin(
      std::vector<std::string>(out.operand_dtypes().begin(), out.operand_dtypes().end()), ","));
  h.UpdateField(out.result_dtype());
  h.UpdateField(out.stateful() ? "stateful" : "stateless");
  if (out.has_user_type()) h.UpdateField(UserTypeCName(out.user_type()));
  // Only pointer-ABI operators add a field, so the digests of by-value operators (and the keys
  // cached under them) stay what they were.
  if (out.by_pointer()) h.UpdateField("by_pointer");
  h.UpdateField(in.source().empty() ? in.ltoir() : in.source());
  // The digest's last character records the kind, so a resolved operator says which it is
  // without carrying the bytes: 's' for source, 'l' for LTO-IR.
  out.set_digest(StrCat(h.FinishHex(), in.source().empty() ? "l" : "s"));
  return out;
}

bool UserOperatorResultByPointer(const UserOperator& resolved) {
  return resolved.by_pointer() && resolved.result_dtype() != "bool";
}

bool UserOperatorIsSource(const UserOperator& resolved) {
  return !resolved.digest().empty() && resolved.digest().back() == 's';
}

std::string UserOperatorSymbol(const UserOperator& resolved) {
  if (UserOperatorIsSource(resolved)) return StrCat("coop_op_", resolved.digest().substr(0, 24));
  return resolved.name();
}

std::string UserOperatorResultCType(const UserOperator& resolved) {
  return CType(resolved.result_dtype(), resolved);
}

std::string UserOperatorOperandCType(const UserOperator& resolved) {
  return resolved.operand_dtypes_size() == 0 ? std::string()
                                             : CType(resolved.operand_dtypes(0), resolved);
}

std::string UserOperatorDeclaration(const UserOperator& resolved) {
  return StrCat("extern \"C\" __device__ ",
                UserOperatorResultByPointer(resolved) ? "void" : UserOperatorResultCType(resolved),
                " ", UserOperatorSymbol(resolved), "(", Params(resolved, false), ");");
}

std::string RenderOperatorUnit(const UserOperator& request, const UserOperator& resolved) {
  const std::string r = UserOperatorResultCType(resolved);
  const std::string t = UserOperatorOperandCType(resolved);
  const std::string& name = resolved.name();
  std::string out = StrCat(
      "#include <cuda/std/bit>\n#include <cuda/std/tuple>\n#include <cuda/std/type_traits>\n"
      "#include <cuda_bf16.h>\n"
      "#include <cuda_fp16.h>\n#line 1 \"",
      name, ".cu\"\n", request.source(), "\n#line 1 \"coopd-operator-check\"\n");
  // For a user type, the function takes the frontend's own struct: the forwarder moves the
  // bytes with bit_cast, once a static_assert has checked the struct's size and alignment.
  const bool user = resolved.has_user_type();
  std::string operand = t;  // the type the function's operands are converted to
  if (user) {
    const auto& ut = resolved.user_type();
    StrAppend(
        &out, UserTypeDefinition(ut),
        "template <class F> struct coop_operand;\n"
        "template <class R, class... A> struct coop_operand<R (*)(A...)> {\n"
        "  template <int I> using at = ::cuda::std::remove_cv_t<::cuda::std::remove_reference_t<"
        "::cuda::std::tuple_element_t<I, ::cuda::std::tuple<A...>>>>;\n};\n",
        "using coop_operand_t = coop_operand<decltype(&", name, ")>::at<",
        resolved.stateful() ? 1 : 0, ">;\n", "static_assert(sizeof(coop_operand_t) == ", ut.size(),
        " && alignof(coop_operand_t) == ", ut.align(), ", \"op.user: ", name,
        "'s operand type must have the size and alignment of user_type (", ut.size(),
        " bytes, aligned to ", ut.align(), ")\");\n");
    operand = "coop_operand_t";
  }
  std::vector<std::string> declvals, args;
  if (resolved.stateful()) {
    declvals.push_back("::cuda::std::declval<void*>()");
    args.push_back("state");
  }
  for (int i = 0; i < resolved.operand_dtypes_size(); ++i) {
    declvals.push_back(StrCat("::cuda::std::declval<", operand, ">()"));
    args.push_back(user ? StrCat("::cuda::std::bit_cast<coop_operand_t>(x", i, ")")
                        : StrCat("x", i));
  }
  const std::string call = StrCat(name, "(", StrJoin(args, ", "), ")");
  const bool user_result = user && r == t;  // a reduction on the user type returns one
  const std::string shown = StrCat(name, "(", Params(resolved, false), ")");
  StrAppend(&out, "static_assert(::cuda::std::is_same<decltype(", name, "(",
            StrJoin(declvals, ", "), ")), ", user_result ? operand : r,
            ">::value, \"op.user: ", shown, " must return ", user_result ? "the operand type" : r,
            " (the operator's declared signature)\");\n", "extern \"C\" __device__ ", r, " ",
            UserOperatorSymbol(resolved), "(", Params(resolved, true), ") {\n  return ",
            user_result ? StrCat("::cuda::std::bit_cast<", t, ">(", call, ")") : call, ";\n}\n");
  return out;
}

std::string RenderOperatorProbe(const std::vector<UserOperator>& resolved) {
  std::string out = "#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n";
  for (size_t i = 0; i < resolved.size(); ++i) {
    const UserOperator& op = resolved[i];
    std::vector<std::string> args;
    if (op.stateful()) args.push_back("state");
    if (UserOperatorResultByPointer(op)) args.push_back("out");
    for (int k = 0; k < op.operand_dtypes_size(); ++k) {
      args.push_back(StrCat(op.by_pointer() ? "&" : "", "x[", k, "]"));
    }
    const std::string call = StrCat(UserOperatorSymbol(op), "(", StrJoin(args, ", "), ")");
    if (op.has_user_type()) StrAppend(&out, UserTypeDefinition(op.user_type()));
    StrAppend(&out, UserOperatorDeclaration(op), "\nextern \"C\" __global__ void coop_probe_", i,
              "(", UserOperatorResultCType(op), "* out, void* state, const ",
              UserOperatorOperandCType(op), "* x) {\n  (void)state;\n  ",
              UserOperatorResultByPointer(op) ? call : StrCat("*out = ", call), ";\n}\n");
  }
  return out;
}

std::string OperatorEncoding(const UserOperator& resolved, std::string_view arch) {
  return StrCat("operator=", resolved.digest(), "\nname=", resolved.name(),
                "\nsymbol=", UserOperatorSymbol(resolved), "\narch=", arch, "\n");
}

}  // namespace coopd
