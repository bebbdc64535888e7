#include "server/catalog/family.h"

#include <cstdio>

#include "server/catalog/user_op.h"
#include "server/util/escape.h"
#include "server/util/strings.h"

namespace coopd {

const Family* FindFamily(std::string_view name) {
  for (const Family* f : Families()) {
    if (f->name == name) return f;
  }
  return nullptr;
}

bool CcclAtLeast(std::string_view version, int major, int minor) {
  int got_major = 0, got_minor = 0;
  if (std::sscanf(std::string(version).c_str(), "%d.%d", &got_major, &got_minor) != 2) {
    return false;
  }
  return got_major != major ? got_major > major : got_minor >= minor;
}

absl::Status Invalid(std::string_view context, std::string_view detail) {
  return absl::InvalidArgumentError(StrCat(context, ": ", detail));
}

std::string Quote(std::string_view s) {
  return QuoteValue(s);
}

std::string AllDTypeNames() {
  std::vector<std::string_view> names;
  for (const DType& t : DTypes()) names.push_back(t.name);
  return StrJoin(names, ", ");
}

absl::Status CheckValueDtype(std::string_view ctx, std::string_view options,
                             const std::string& value_dtype) {
  if (value_dtype.empty() || FindDType(value_dtype) != nullptr) return absl::OkStatus();
  return Invalid(ctx, StrCat(options, ".value_dtype must be empty (keys only) or one of ",
                             AllDTypeNames(), "; got ", Quote(value_dtype)));
}

absl::Status CheckRequiredCount(std::string_view ctx, std::string_view field, uint32_t value,
                                uint32_t max) {
  if (value >= 1 && value <= max) return absl::OkStatus();
  return Invalid(ctx, StrCat(field, " is required and must be 1..", max, ", got ", value));
}

uint64_t BlockThreads(const coop::v1::PrimitiveSpec& s) {
  return uint64_t{s.block().x()} * s.block().y() * s.block().z();
}

std::string OperatorExpr(std::string_view builtin, std::string_view c_type) {
  if (builtin == "sum") return StrCat("::cuda::std::plus<", c_type, ">{}");
  if (builtin == "difference") return StrCat("::cuda::std::minus<", c_type, ">{}");
  if (builtin == "less") return StrCat("::cuda::std::less<", c_type, ">{}");
  if (builtin == "greater") return StrCat("::cuda::std::greater<", c_type, ">{}");
  if (builtin == "equal") return StrCat("::cuda::std::equal_to<", c_type, ">{}");
  if (builtin == "not_equal") return StrCat("::cuda::std::not_equal_to<", c_type, ">{}");
  if (builtin == "max") return StrCat("::cuda::maximum<", c_type, ">{}");
  if (builtin == "min") return StrCat("::cuda::minimum<", c_type, ">{}");
  if (builtin == "bit_and") return StrCat("::cuda::std::bit_and<", c_type, ">{}");
  if (builtin == "bit_or") return StrCat("::cuda::std::bit_or<", c_type, ">{}");
  return StrCat("::cuda::std::bit_xor<", c_type, ">{}");  // bit_xor
}

std::string UserFunctorName(const coop::v1::UserOperator& user) {
  return StrCat("coop_fn_", UserOperatorSymbol(user));
}

std::string OperatorExpr(const coop::v1::Operator& op, std::string_view c_type) {
  if (!op.has_user()) return OperatorExpr(op.builtin(), c_type);
  return StrCat(UserFunctorName(op.user()), "{", op.user().stateful() ? "op_state" : "", "}");
}

std::string OperatorName(const coop::v1::Operator& op) {
  return op.has_user() ? op.user().name() : op.builtin();
}

std::string AlgorithmEnum(const coop::v1::PrimitiveSpec& s) {
  const Family* f = FindFamily(s.family());
  if (f == nullptr || f->algorithm_enum.empty()) return "";
  std::string upper;
  for (char c : s.algorithm()) upper.push_back(static_cast<char>(c == '_' ? '_' : c - 'a' + 'A'));
  return StrCat(f->algorithm_enum, upper);
}

std::string SortValueType(std::string_view value_dtype) {
  if (value_dtype.empty()) return "::cub::NullType";
  return std::string(FindDType(value_dtype)->c_type);
}

}  // namespace coopd
