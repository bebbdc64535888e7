// The probe specs (catalog/probe_specs.h): one accepted spec per family and method, built from
// the descriptions alone, so that a daemon's probe of a CCCL covers the whole catalogue.
#include "server/catalog/probe_specs.h"

#include <gtest/gtest.h>

#include <set>

#include "server/catalog/family.h"
#include "server/catalog/render.h"

namespace coopd {
namespace {

TargetInfo Target(bool optional_headers) {
  TargetInfo t;
  t.supported_archs = {80, 90};
  t.cccl_version = optional_headers ? "3.5.0" : "3.0.1";
  t.cccl_include = "/opt/cccl";
  if (optional_headers) t.cccl_headers_present = OptionalCcclHeaders();
  return t;
}

TEST(ProbeSpecs, CoverEveryMethodOfEveryFamilyWhenTheHeadersAreAllThere) {
  const ProbeSpecs probe = MakeProbeSpecs(Target(true), "sm_90");
  EXPECT_TRUE(probe.refused.empty()) << probe.refused.front();
  std::set<std::pair<std::string, std::string>> covered;
  for (const auto& s : probe.specs) {
    EXPECT_EQ(s.arch(), "sm_90");
    covered.insert({s.family(), s.method()});
  }
  size_t methods = 0;
  for (const Family* f : Families()) {
    for (const Method& m : f->methods) {
      ++methods;
      EXPECT_TRUE(covered.count({std::string(f->name), std::string(m.name)}))
          << f->name << " " << m.name << " has no probe spec";
    }
  }
  EXPECT_EQ(probe.specs.size(), methods);
  // Each family's specs render together, as the probe compiles them.
  for (const Family* f : Families()) {
    std::vector<coop::v1::PrimitiveSpec> group;
    for (const auto& s : probe.specs) {
      if (s.family() == f->name) group.push_back(s);
    }
    const RenderedUnit unit = Render(group);
    EXPECT_EQ(unit.parts.size(), group.size()) << f->name;
  }
}

TEST(ProbeSpecs, NameTheFamiliesAnOlderCcclLacksAndWhy) {
  const ProbeSpecs probe = MakeProbeSpecs(Target(false), "sm_90");
  std::set<std::string> lacking;
  for (const Family* f : Families()) {
    if (!f->requires_header.empty()) lacking.insert(std::string(f->name));
  }
  ASSERT_FALSE(lacking.empty());
  ASSERT_EQ(probe.refused.size(), lacking.size());
  for (const std::string& r : probe.refused) {
    const std::string family = r.substr(0, r.find(':'));
    EXPECT_TRUE(lacking.count(family)) << r;
    EXPECT_NE(r.find("needs CCCL"), std::string::npos) << r;
    EXPECT_EQ(r.find(family + ": " + family), std::string::npos) << "named twice: " << r;
  }
  for (const auto& s : probe.specs) EXPECT_FALSE(lacking.count(s.family())) << s.family();
}

}  // namespace
}  // namespace coopd
