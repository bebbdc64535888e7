#include "server/engine/llvm_ir.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "server/util/strings.h"

namespace coopd {
namespace {

bool IdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$' ||
         c == '-';
}

// The global name starting at `at` (just after '@'): plain or "quoted". Sets *end past it.
std::string ParseName(std::string_view line, size_t at, size_t* end) {
  if (at < line.size() && line[at] == '"') {
    size_t close = line.find('"', at + 1);
    if (close == std::string_view::npos) close = line.size() - 1;
    *end = close + 1;
    return std::string(line.substr(at + 1, close - at - 1));
  }
  size_t e = at;
  while (e < line.size() && IdentChar(line[e])) ++e;
  *end = e;
  return std::string(line.substr(at, e - at));
}

// True when `name` occurs as a global reference (@name, not a prefix of a longer name).
bool References(std::string_view text, const std::string& name) {
  const std::string needle = "@" + name;
  for (size_t pos = text.find(needle); pos != std::string_view::npos;
       pos = text.find(needle, pos + 1)) {
    const size_t after = pos + needle.size();
    if (after >= text.size() || !IdentChar(text[after])) return true;
  }
  return false;
}

const std::set<std::string_view>& LinkageWords() {
  static const std::set<std::string_view> words = {
      "private",   "internal",    "available_externally", "linkonce", "weak",    "common",
      "appending", "extern_weak", "linkonce_odr",         "weak_odr", "external"};
  return words;
}

// Drops the words that a local definition must not carry (linkage, preemption, visibility, DLL
// storage) from the front of `rest`, and returns it after "internal ". Unchanged (nullopt-like
// empty) when the symbol is local already.
bool Internalize(std::string_view rest, std::string* out) {
  static const std::set<std::string_view> dropped = {
      "dso_local", "dso_preemptable", "default", "hidden", "protected", "dllimport", "dllexport"};
  size_t pos = 0;
  for (;;) {
    const size_t end = rest.find(' ', pos);
    if (end == std::string_view::npos) break;
    const std::string_view word = rest.substr(pos, end - pos);
    if (word == "private" || word == "internal") return false;
    if (!LinkageWords().count(word) && !dropped.count(word)) break;
    pos = end + 1;
  }
  *out = StrCat("internal ", rest.substr(pos));
  return true;
}

// The first word of a global variable's definition after "= " when it is a declaration or an
// appending array (neither is made internal).
bool IsDeclarationOrAppending(std::string_view rest) {
  const std::string_view word = rest.substr(0, rest.find(' '));
  return word == "external" || word == "extern_weak" || word == "appending";
}

// Removes every `marker` ("comdat" after ' ' or ", "), with its "($name)" if any, from `line`.
void EraseComdat(std::string* line, std::string_view marker) {
  for (size_t pos = line->find(marker); pos != std::string::npos; pos = line->find(marker, pos)) {
    size_t end = pos + marker.size();
    if (end < line->size() && (*line)[end] == '(') {
      const size_t close = line->find(')', end);
      end = close == std::string::npos ? line->size() : close + 1;
    } else if (end < line->size() && IdentChar((*line)[end])) {
      pos = end;  // some other word that starts with "comdat"
      continue;
    }
    line->erase(pos, end - pos);
  }
}

// Removes " comdat" / " comdat($name)" and " align N" from the part of a function header after
// its parameter list (parameter attributes such as `align 4` stay).
std::string CleanFunctionTail(std::string_view tail) {
  std::string out(tail);
  EraseComdat(&out, " comdat");
  for (size_t pos = out.find(" align "); pos != std::string::npos; pos = out.find(" align ")) {
    size_t end = pos + 7;
    while (end < out.size() && std::isdigit(static_cast<unsigned char>(out[end]))) ++end;
    if (end == pos + 7) break;
    out.erase(pos, end - pos);
  }
  return out;
}

// Removes ", comdat" / ", comdat($name)" from a global variable's definition.
std::string CleanGlobal(std::string_view line) {
  std::string out(line);
  EraseComdat(&out, ", comdat");
  return out;
}

// The position just past the parameter list that starts at `open` ('(').
size_t SkipParens(std::string_view line, size_t open) {
  int depth = 0;
  for (size_t i = open; i < line.size(); ++i) {
    if (line[i] == '(') ++depth;
    if (line[i] == ')' && --depth == 0) return i + 1;
  }
  return line.size();
}

std::string StripSrcloc(std::string_view line) {
  std::string out(line);
  for (size_t pos; (pos = out.find(", !srcloc !")) != std::string::npos;) {
    size_t end = pos + 11;
    while (end < out.size() && std::isdigit(static_cast<unsigned char>(out[end]))) ++end;
    out.erase(pos, end - pos);
  }
  return out;
}

// The integer a layout global is initialized with: "... constant i64 44, align 8".
bool ParseI64Initializer(std::string_view line, uint64_t* value) {
  for (std::string_view marker :
       {std::string_view(" constant i64 "), std::string_view(" global i64 ")}) {
    const size_t at = line.find(marker);
    if (at == std::string_view::npos) continue;
    size_t p = at + marker.size(), e = p;
    while (e < line.size() && std::isdigit(static_cast<unsigned char>(line[e]))) ++e;
    if (e == p) return false;
    *value = std::stoull(std::string(line.substr(p, e - p)));
    return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<RewrittenIr> RewriteIrForBitcode(std::string_view ir,
                                                const std::vector<std::string>& entries,
                                                const std::vector<IrLayoutSymbols>& layouts) {
  std::set<std::string> layout_names;
  for (const auto& l : layouts) {
    layout_names.insert(l.bytes_symbol);
    layout_names.insert(l.align_symbol);
  }
  const std::set<std::string> entry_names(entries.begin(), entries.end());
  std::map<std::string, uint64_t> values;
  std::set<std::string> defined;
  RewrittenIr result;
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < ir.size()) {
    size_t end = ir.find('\n', start);
    if (end == std::string_view::npos) end = ir.size();
    std::string_view line = ir.substr(start, end - start);
    start = end + 1;
    if (line.rfind("@", 0) == 0) {
      size_t name_end = 0;
      const std::string name = ParseName(line, 1, &name_end);
      const std::string_view rest =
          line.substr(std::min(line.size(), name_end + 3));  // after "@name = "
      if (line.compare(name_end, 3, " = ") != 0) {
        lines.emplace_back(line);
        continue;
      }
      if (layout_names.count(name)) {
        uint64_t v = 0;
        if (!ParseI64Initializer(line, &v)) {
          return absl::InternalError(
              StrCat("clang: layout global ", name, " has no integer initializer: ", line));
        }
        values[name] = v;
        continue;  // removed
      }
      if (name == "llvm.compiler.used") continue;
      if (name.rfind("llvm.", 0) == 0 || IsDeclarationOrAppending(rest)) {
        lines.emplace_back(line);
        continue;
      }
      std::string local;
      if (!entry_names.count(name) && Internalize(rest, &local)) {
        result.internalized.push_back(name);
        lines.push_back(CleanGlobal(StrCat(line.substr(0, name_end), " = ", local)));
      } else {
        lines.push_back(CleanGlobal(line));
      }
      continue;
    }
    if (line.rfind("define ", 0) == 0) {
      const size_t at = line.find('@');
      if (at == std::string_view::npos) {
        return absl::InternalError(StrCat("clang: a function header without a name: ", line));
      }
      size_t name_end = 0;
      const std::string name = ParseName(line, at + 1, &name_end);
      defined.insert(name);
      const size_t params_end = SkipParens(line, name_end);
      const std::string head(line.substr(0, params_end));
      const std::string tail = CleanFunctionTail(line.substr(params_end));
      std::string local;
      if (!entry_names.count(name) && Internalize(std::string_view(head).substr(7), &local)) {
        result.internalized.push_back(name);
        lines.push_back(StrCat("define ", local, tail));
      } else {
        lines.push_back(head + tail);
      }
      continue;
    }
    if (line.rfind("$", 0) == 0 && line.find(" = comdat ") != std::string_view::npos) {
      continue;  // comdats are dropped with the comdat references above
    }
    lines.push_back(StripSrcloc(line));
  }
  for (const auto& name : entries) {
    if (!defined.count(name)) {
      return absl::InternalError(StrCat("clang: entry ", name, " is not defined in the module"));
    }
  }
  for (const auto& l : layouts) {
    for (const std::string* s : {&l.bytes_symbol, &l.align_symbol}) {
      if (!values.count(*s)) {
        return absl::InternalError(StrCat("clang: layout global ", *s, " not found in the module"));
      }
    }
    result.layouts.emplace_back(values[l.bytes_symbol], values[l.align_symbol]);
  }
  result.ir = StrJoin(lines, "\n");
  result.ir.push_back('\n');
  for (const auto& name : layout_names) {
    if (References(result.ir, name)) {
      return absl::InternalError(
          StrCat("clang: layout global ", name, " is used by the module; it cannot be removed"));
    }
  }
  return result;
}

}  // namespace coopd
