// Unit tests of the IR rewrite that prepares clang's output for serving as bitcode. The input is
// what clang-22 printed (-O3 -S -emit-llvm) for a unit with a noinline template, a noinline
// member function (clang gives it `align 2`), a __device__ variable, a constant table, inline
// asm (a !srcloc) and the two layout globals COOP_LAYOUT defines:
//
//   struct W { __device__ __noinline__ int get(int x) const { return x * v; } int v; };
//   template <class T> __device__ __noinline__ T twice(T x) { return x + x; }
//   struct S { static constexpr int table[4] = {1,2,3,4}; };
//   __device__ int g_counter;
//   extern "C" __device__ const unsigned long long coop_entry__temp_bytes = 44;
//   extern "C" __device__ const unsigned long long coop_entry__temp_align = 4;
//   extern "C" __device__ int coop_entry(int x) { W w{x}; g_counter++; asm volatile("membar.gl;");
//                                                 return twice(x) + w.get(x) + S::table[x & 3]; }
#include "server/engine/llvm_ir.h"

#include <gtest/gtest.h>

#include <sstream>

namespace coopd {
namespace {

constexpr char kClangIr[] = R"IR(source_filename = "coop_unit.cu"
target datalayout = "e-p3:32:32-p4:32:32-p5:32:32-p6:32:32-p7:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

%struct.W = type { i32 }

$_Z5twiceIiET_S0_ = comdat any

$_ZNK1W3getEi = comdat any

@g_counter = dso_local addrspace(1) externally_initialized global i32 0, align 4
@coop_entry__temp_bytes = dso_local local_unnamed_addr addrspace(4) externally_initialized constant i64 44, align 8
@coop_entry__temp_align = dso_local local_unnamed_addr addrspace(4) externally_initialized constant i64 4, align 8
@_ZN1S5tableE.const = private unnamed_addr constant [4 x i32] [i32 1, i32 2, i32 3, i32 4], align 4
@llvm.compiler.used = appending global [1 x ptr] [ptr addrspacecast (ptr addrspace(1) @g_counter to ptr)], section "llvm.metadata"

; Function Attrs: convergent mustprogress nounwind
define dso_local i32 @coop_entry(i32 noundef %0) local_unnamed_addr #0 {
  %2 = alloca %struct.W, align 4
  call void @llvm.lifetime.start.p0(ptr nonnull %2) #3
  store i32 %0, ptr %2, align 4, !tbaa !8
  %3 = load i32, ptr addrspacecast (ptr addrspace(1) @g_counter to ptr), align 4, !tbaa !4
  %4 = add nsw i32 %3, 1
  store i32 %4, ptr addrspacecast (ptr addrspace(1) @g_counter to ptr), align 4, !tbaa !4
  tail call void asm sideeffect "membar.gl;", ""() #4, !srcloc !10
  %5 = tail call noundef i32 @_Z5twiceIiET_S0_(i32 noundef %0) #3
  %6 = call noundef i32 @_ZNK1W3getEi(ptr noundef nonnull align 4 dereferenceable(4) %2, i32 noundef %0) #3
  %7 = add nsw i32 %6, %5
  %8 = and i32 %0, 3
  %9 = zext nneg i32 %8 to i64
  %10 = getelementptr inbounds nuw i32, ptr @_ZN1S5tableE.const, i64 %9
  %11 = load i32, ptr %10, align 4, !tbaa !4
  %12 = add nsw i32 %7, %11
  call void @llvm.lifetime.end.p0(ptr nonnull %2) #3
  ret i32 %12
}

; Function Attrs: mustprogress nocallback nofree nosync nounwind willreturn memory(argmem: readwrite)
declare void @llvm.lifetime.start.p0(ptr captures(none)) #1

; Function Attrs: mustprogress noinline nounwind
define linkonce_odr dso_local noundef i32 @_Z5twiceIiET_S0_(i32 noundef %0) local_unnamed_addr #2 comdat {
  %2 = shl nsw i32 %0, 1
  ret i32 %2
}

; Function Attrs: mustprogress noinline nounwind
define linkonce_odr dso_local noundef i32 @_ZNK1W3getEi(ptr noundef nonnull align 4 dereferenceable(4) %0, i32 noundef %1) local_unnamed_addr #2 comdat align 2 {
  %3 = load i32, ptr %0, align 4, !tbaa !8
  %4 = mul nsw i32 %3, %1
  ret i32 %4
}

; Function Attrs: mustprogress nocallback nofree nosync nounwind willreturn memory(argmem: readwrite)
declare void @llvm.lifetime.end.p0(ptr captures(none)) #1

attributes #0 = { convergent mustprogress nounwind "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="sm_90a" "target-features"="+ptx88,+sm_90a" }
attributes #1 = { mustprogress nocallback nofree nosync nounwind willreturn memory(argmem: readwrite) }
attributes #2 = { mustprogress noinline nounwind "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="sm_90a" "target-features"="+ptx88,+sm_90a" }
attributes #3 = { nounwind }
attributes #4 = { convergent nounwind }

!llvm.module.flags = !{!0, !1, !2}
!llvm.ident = !{!3}
!llvm.errno.tbaa = !{!4}

!0 = !{i32 1, !"wchar_size", i32 4}
!1 = !{i32 4, !"nvvm-reflect-ftz", i32 0}
!2 = !{i32 7, !"frame-pointer", i32 2}
!3 = !{!"Debian clang version 22.1.8 (1~deb12u1)"}
!4 = !{!5, !5, i64 0}
!5 = !{!"int", !6, i64 0}
!6 = !{!"omnipotent char", !7, i64 0}
!7 = !{!"Simple C++ TBAA"}
!8 = !{!9, !5, i64 0}
!9 = !{!"_ZTS1W", !5, i64 0}
!10 = !{i64 474}
)IR";

const std::vector<IrLayoutSymbols> kLayouts = {
    {"coop_entry__temp_bytes", "coop_entry__temp_align"}};

// The lines of `ir` that start with `prefix`.
std::vector<std::string> Lines(const std::string& ir, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(ir);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  }
  return out;
}

TEST(LlvmIr, ReadsTheLayoutGlobalsAndRemovesThem) {
  auto r = RewriteIrForBitcode(kClangIr, {"coop_entry"}, kLayouts);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->layouts.size(), 1u);
  EXPECT_EQ(r->layouts[0].first, 44u);
  EXPECT_EQ(r->layouts[0].second, 4u);
  EXPECT_EQ(r->ir.find("__temp_bytes"), std::string::npos);
  EXPECT_EQ(r->ir.find("__temp_align"), std::string::npos);
}

TEST(LlvmIr, LeavesOnlyTheEntriesExternal) {
  auto r = RewriteIrForBitcode(kClangIr, {"coop_entry"}, kLayouts);
  ASSERT_TRUE(r.ok()) << r.status();
  const auto defines = Lines(r->ir, "define ");
  ASSERT_EQ(defines.size(), 3u) << r->ir;
  for (const auto& d : defines) {
    if (d.find("@coop_entry(") != std::string::npos) {
      EXPECT_EQ(d.rfind("define dso_local i32 @coop_entry(", 0), 0u) << d;
    } else {
      EXPECT_EQ(d.rfind("define internal ", 0), 0u) << d;
    }
  }
  const auto globals = Lines(r->ir, "@");
  ASSERT_EQ(globals.size(), 2u) << r->ir;  // g_counter and the table; compiler.used is gone
  for (const auto& g : globals) {
    EXPECT_TRUE(g.find(" = internal ") != std::string::npos ||
                g.find(" = private ") != std::string::npos)
        << g;
  }
  EXPECT_EQ(r->ir.find("llvm.compiler.used"), std::string::npos);
  EXPECT_EQ(r->ir.find("comdat"), std::string::npos) << "comdats of internal symbols stay";
  std::vector<std::string> expected = {"g_counter", "_Z5twiceIiET_S0_", "_ZNK1W3getEi"};
  std::sort(expected.begin(), expected.end());
  std::vector<std::string> got = r->internalized;
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, expected);
}

TEST(LlvmIr, DropsFunctionAlignmentButKeepsParameterAlignment) {
  auto r = RewriteIrForBitcode(kClangIr, {"coop_entry"}, kLayouts);
  ASSERT_TRUE(r.ok()) << r.status();
  for (const auto& d : Lines(r->ir, "define ")) {
    const size_t body = d.rfind(')');
    EXPECT_EQ(d.find(" align ", body), std::string::npos) << d;
  }
  // W::get's `this` keeps its parameter attribute.
  EXPECT_NE(r->ir.find("@_ZNK1W3getEi(ptr noundef nonnull align 4 dereferenceable(4) %0"),
            std::string::npos);
}

TEST(LlvmIr, DropsInlineAsmSourceLocations) {
  ASSERT_NE(std::string(kClangIr).find("!srcloc"), std::string::npos);
  auto r = RewriteIrForBitcode(kClangIr, {"coop_entry"}, kLayouts);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->ir.find("!srcloc"), std::string::npos);
  EXPECT_NE(r->ir.find("asm sideeffect \"membar.gl;\""), std::string::npos);
}

TEST(LlvmIr, AMissingLayoutGlobalIsAnInternalErrorNamingIt) {
  auto r = RewriteIrForBitcode(kClangIr, {"coop_entry"}, {{"coop_other__temp_bytes", "x"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(std::string(r.status().message()).find("coop_other__temp_bytes"), std::string::npos)
      << r.status();
}

TEST(LlvmIr, AnUndefinedEntryIsAnInternalErrorNamingIt) {
  auto r = RewriteIrForBitcode(kClangIr, {"coop_entry", "coop_missing"}, kLayouts);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(std::string(r.status().message()).find("entry coop_missing is not defined"),
            std::string::npos)
      << r.status();
}

TEST(LlvmIr, ALayoutGlobalTheCodeUsesCannotBeRemoved) {
  std::string ir = kClangIr;
  const std::string use = "  %3 = load i32, ptr addrspacecast";
  ir.replace(ir.find(use), 0,
             "  %u = load i64, ptr addrspace(4) @coop_entry__temp_bytes, align 8\n");
  auto r = RewriteIrForBitcode(ir, {"coop_entry"}, kLayouts);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("is used by the module"), std::string::npos)
      << r.status();
}

}  // namespace
}  // namespace coopd
