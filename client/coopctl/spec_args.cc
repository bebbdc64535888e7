#include "coopctl/spec_args.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace coopctl {

void UsageFail(const std::string& message) {
  throw CommandError(kExitUsage, "USAGE", message);
}

int ExitStatusFor(const coop::Error& e) {
  using C = coop::ErrorCode;
  if (e.code == C::kUnavailable && !e.from_server) return kExitUnreachable;
  switch (e.code) {
    case C::kInvalidArgument:
    case C::kFailedPrecondition:
    case C::kNotFound:
    case C::kOutOfRange:
    case C::kAlreadyExists:
    case C::kUnimplemented:
      return kExitRefused;
    case C::kPermissionDenied:
    case C::kUnauthenticated:
      return kExitDenied;
    case C::kResourceExhausted:
    case C::kDeadlineExceeded:
    case C::kAborted:
    case C::kCancelled:
    case C::kUnavailable:
      return kExitBusy;
    default:
      return kExitFailed;
  }
}

uint32_t ParseUint(const std::string& flag, const std::string& v) {
  if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos) {
    UsageFail(flag + ": expected a non-negative whole number, got \"" + v + "\"");
  }
  return static_cast<uint32_t>(std::stoul(v));
}

namespace {

// A number flag kept as text (converted strictly by ToSpec), with its check at parse time.
void AddNumber(CLI::App* app, const std::string& name, std::string* target, const char* help) {
  app->add_option(name, *target, help)
      ->type_name("N")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            if (v.empty() || v.size() > 9 ||
                v.find_first_not_of("0123456789") != std::string::npos) {
              return "expected a non-negative whole number, got \"" + v + "\"";
            }
            return "";
          },
          "", "whole number"));
}

coop::Dim3 ParseThreads(const std::string& v) {
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t comma = v.find(',', start);
    parts.push_back(v.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (parts.size() > 3) UsageFail("--threads: expected X[,Y[,Z]], got \"" + v + "\"");
  coop::Dim3 d;
  d.x = ParseUint("--threads", parts[0]);
  if (parts.size() > 1) d.y = ParseUint("--threads", parts[1]);
  if (parts.size() > 2) d.z = ParseUint("--threads", parts[2]);
  return d;
}

}  // namespace

CLI::Validator OneOf(const std::vector<std::string>& values) {
  std::string allowed, names;
  for (size_t i = 0; i < values.size(); ++i) {
    allowed += (i == 0 ? "" : i + 1 == values.size() ? " or " : ", ") + values[i];
    names += (i == 0 ? "" : "|") + values[i];
  }
  return CLI::Validator(
      [values, allowed](std::string& v) -> std::string {
        if (std::find(values.begin(), values.end(), v) != values.end()) return "";
        return "must be " + allowed + ", got \"" + v + "\"";
      },
      names, "one of");
}

void AddSpecOptions(CLI::App* app, SpecArgs* a) {
  app->add_option("FAMILY", a->family, "primitive family (see coopctl catalog)")->required();
  app->add_option("--method", a->method, "CUB member function, e.g. sum, exclusive_sum");
  app->add_option("--dtype", a->dtype, "value type, e.g. float32, int32, uint8");
  app->add_option("--threads", a->threads, "block shape")->type_name("X[,Y[,Z]]");
  AddNumber(app, "--items", &a->items, "items per thread (default 1)");
  app->add_option("--algorithm", a->algorithm,
                  "CUB algorithm, e.g. warp_transpose, or auto (chosen from measurements)");
  app->add_option("--op", a->op, "built-in operator, e.g. sum, max, less");
  AddNumber(app, "--warp-threads", &a->warp_threads, "logical warp size (warp families)");
  app->add_flag("--with-aggregate", a->with_aggregate, "scans: also return the block aggregate");
  app->add_flag("--warp-time-slicing", a->warp_time_slicing, "exchanges: CUB's time slicing");
  app->add_option("--value-dtype", a->value_dtype, "sorts: values of key-value pairs");
  app->add_flag("--valid-items", a->valid_items,
                "block_topk: the partial-tile form, whose entry takes num_valid (CCCL 3.5+)");
  AddNumber(app, "--radix-bits", &a->radix_bits, "radix sort and rank: bits per pass");
  AddNumber(app, "--bins", &a->bins, "histogram: number of bins");
  AddNumber(app, "--decoded-items", &a->decoded_items, "run-length decode: items per thread");
  app->add_option("--abi", a->abi, "calling convention of the entries (default c)")
      ->check(OneOf({"c", "numba"}));
  app->add_option("--arch", a->arch, "target architecture, e.g. sm_90, sm_90a");
  app->add_option("--cccl", a->cccl,
                  "the CCCL to compile against: a name (toolkit, default, or one the daemon "
                  "configured) or a version (3.5.0, 3.5); default: the daemon's default "
                  "(coopctl catalog lists them)")
      ->type_name("NAME|VERSION");
  app->add_option("--user-type", a->user_type, "an opaque struct instead of --dtype")
      ->type_name("SIZE[,ALIGN]");
  app->add_option("--op-name", a->op_name, "a user operator instead of --op: its name");
  app->add_option("--op-source", a->op_source, "the user operator's CUDA C++ source")
      ->type_name("FILE");
  app->add_option("--op-ltoir", a->op_ltoir, "the user operator's LTO-IR")->type_name("FILE");
  app->add_flag("--op-stateful", a->op_stateful, "the operator takes a leading void* state");
  app->add_flag("--op-commutative", a->op_commutative,
                "the user operator is commutative (lets --algorithm auto consider "
                "raking_commutative_only)");
  app->add_flag("--op-by-pointer", a->op_by_pointer,
                "the --op-ltoir operator takes (T* result, const T* a, const T* b) (needed on a "
                "--user-type)");
  app->add_option("--prefix-name", a->prefix_name, "block-prefix callback: its name");
  app->add_option("--prefix-source", a->prefix_source, "the callback's source")->type_name("FILE");
  app->add_option("--prefix-ltoir", a->prefix_ltoir, "the callback's LTO-IR")->type_name("FILE");
}

std::string ReadFileOrFail(const std::string& flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) UsageFail(flag + ": cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

coop::Spec ToSpec(const SpecArgs& a, const std::filesystem::path& base) {
  auto read = [&base](const char* flag, const std::string& path) {
    const std::filesystem::path p(path);
    return ReadFileOrFail(flag, (p.is_relative() && !base.empty() ? base / p : p).string());
  };
  coop::Spec spec;
  spec.family = a.family;
  spec.method = a.method;
  spec.dtype = a.dtype;
  if (!a.threads.empty()) spec.block = ParseThreads(a.threads);
  if (!a.items.empty()) spec.items_per_thread = ParseUint("--items", a.items);
  spec.algorithm = a.algorithm;
  spec.op = a.op;
  if (!a.warp_threads.empty()) spec.warp_threads = ParseUint("--warp-threads", a.warp_threads);
  spec.arch = a.arch;
  spec.cccl = a.cccl;
  spec.scan.with_aggregate = a.with_aggregate;
  spec.exchange.warp_time_slicing = a.warp_time_slicing;
  spec.top_k.valid_items = a.valid_items;
  // Held in radix_sort until RouteSortFlags moves them to the family's options message.
  spec.radix_sort.value_dtype = a.value_dtype;
  if (!a.radix_bits.empty()) spec.radix_sort.radix_bits = ParseUint("--radix-bits", a.radix_bits);
  if (!a.bins.empty()) spec.histogram.bins = ParseUint("--bins", a.bins);
  if (!a.decoded_items.empty()) {
    spec.run_length_decode.decoded_items_per_thread = ParseUint("--decoded-items", a.decoded_items);
  }
  if (a.abi == "numba") spec.calling_convention = coop::CallingConvention::kNumba;
  if (!a.user_type.empty()) {
    // SIZE[,ALIGN]: dtype "user", an opaque struct.
    const size_t comma = a.user_type.find(',');
    spec.dtype = "user";
    spec.user_type_size = ParseUint("--user-type", a.user_type.substr(0, comma));
    spec.user_type_align =
        comma == std::string::npos ? 1 : ParseUint("--user-type", a.user_type.substr(comma + 1));
  }
  spec.user_op.name = a.op_name;
  if (!a.op_source.empty()) spec.user_op.source = read("--op-source", a.op_source);
  if (!a.op_ltoir.empty()) spec.user_op.ltoir = read("--op-ltoir", a.op_ltoir);
  spec.user_op.stateful = a.op_stateful;
  spec.user_op.commutative = a.op_commutative;
  spec.user_op.by_pointer = a.op_by_pointer;
  spec.prefix_callback.name = a.prefix_name;
  if (!a.prefix_source.empty())
    spec.prefix_callback.source = read("--prefix-source", a.prefix_source);
  if (!a.prefix_ltoir.empty()) spec.prefix_callback.ltoir = read("--prefix-ltoir", a.prefix_ltoir);
  return spec;
}

void RouteSortFlags(coop::Client& client, std::vector<coop::Spec>* specs) {
  bool any = false;
  for (const auto& s : *specs) {
    any = any || !s.radix_sort.value_dtype.empty() || s.radix_sort.radix_bits != 0;
  }
  if (!any) return;
  auto catalog = client.GetCatalog();
  if (!catalog) {
    throw CommandError(
        ExitStatusFor(catalog.error()), coop::ErrorCodeName(catalog.error().code),
        std::string(coop::ErrorCodeName(catalog.error().code)) + ": " + catalog.error().message);
  }
  for (auto& s : *specs) {
    std::string options;
    for (const auto& f : catalog->families) {
      if (f.name == s.family) options = f.family_options;
    }
    // A family the catalogue does not know keeps them in radix_sort, and coopd names the problem.
    coop::RadixSortOptions held = s.radix_sort;
    if (options == "merge_sort" && held.radix_bits == 0) {
      s.merge_sort.value_dtype = held.value_dtype;
      s.radix_sort = {};
    } else if (options == "top_k" && held.radix_bits == 0) {
      s.top_k.value_dtype = held.value_dtype;
      s.radix_sort = {};
    } else if (options == "radix_rank" && held.value_dtype.empty()) {
      s.radix_rank.radix_bits = held.radix_bits;
      s.radix_sort = {};
    }
  }
}

std::string ValueDtype(const coop::Spec& s) {
  for (const std::string* v :
       {&s.radix_sort.value_dtype, &s.merge_sort.value_dtype, &s.top_k.value_dtype}) {
    if (!v->empty()) return *v;
  }
  return "";
}

uint32_t RadixBits(const coop::Spec& s) {
  return s.radix_sort.radix_bits != 0 ? s.radix_sort.radix_bits : s.radix_rank.radix_bits;
}

std::string Shape(const coop::Spec& s) {
  std::string out;
  if (s.block.x != 0) {
    out += " block " + std::to_string(s.block.x) + "x" + std::to_string(s.block.y) + "x" +
           std::to_string(s.block.z);
  }
  if (s.warp_threads != 0) out += " logical warp " + std::to_string(s.warp_threads);
  if (s.items_per_thread != 0) out += " items " + std::to_string(s.items_per_thread);
  if (!s.algorithm.empty()) out += " algorithm " + s.algorithm;
  if (!s.op.empty()) out += " op " + s.op;
  if (!s.user_op.name.empty()) out += " op user:" + s.user_op.name;
  const std::string values = ValueDtype(s);
  if (!values.empty()) out += " values " + values;
  if (RadixBits(s) != 0) out += " radix_bits " + std::to_string(RadixBits(s));
  if (s.histogram.bins != 0) out += " bins " + std::to_string(s.histogram.bins);
  if (s.run_length_decode.decoded_items_per_thread != 0) {
    out += " decoded_items " + std::to_string(s.run_length_decode.decoded_items_per_thread);
  }
  if (s.calling_convention == coop::CallingConvention::kNumba) out += " abi numba";
  return out;
}

std::string Describe(const coop::Spec& s) {
  std::string out = s.family;
  if (!s.method.empty()) out += " " + s.method;
  if (!s.dtype.empty()) out += " " + s.dtype;
  return out + Shape(s) + " " + s.arch + (s.cccl.empty() ? "" : " cccl " + s.cccl);
}

std::vector<std::vector<std::string>> SplitAtPlus(const std::vector<std::string>& args) {
  std::vector<std::vector<std::string>> out(1);
  for (const auto& a : args) {
    if (a == "+") {
      out.emplace_back();
    } else {
      out.back().push_back(a);
    }
  }
  return out;
}

void ParseSegment(CLI::App* app, const std::string& what, std::vector<std::string> argv) {
  app->allow_extras();
  // CLI11 takes its arguments last first.
  std::vector<std::string> reversed(argv.rbegin(), argv.rend());
  try {
    app->parse(reversed);
  } catch (const CLI::ParseError& e) {
    UsageFail(what + ": " + e.what());
  }
  const auto extras = app->remaining();
  if (!extras.empty()) {
    UsageFail(what + ": unknown argument \"" + extras[0] + "\"");
  }
}

}  // namespace coopctl
