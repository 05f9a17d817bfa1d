// cluster.gpu (sim/core/gpu_description.hpp): catalog names, a catalog GPU with figures changed, a
// GPU described in full, their round trip through the resolved form, and their input errors; the
// catalog's entries added with issue 17 (datasheet figures).

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/core/gpu_description.hpp"

namespace trainsim::core {
namespace {

GpuChoice read(const Json& gpu) {
  const Json cluster = {{"gpu", gpu}};
  Diagnostics diag;
  ObjectReader r(cluster, "s.json", "/cluster", diag);
  GpuChoice c = read_gpu(r, "gpu", "A100-SXM4-80GB");
  diag.throw_if_any();
  return c;
}

// Every problem message, one per line.
std::string errors_of(const Json& gpu) {
  try {
    read(gpu);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

double peak(const GpuSpec& g, Precision p) { return g.peak(p).value(); }

Json full_x1() {
  return Json{{"name", "X1"},
              {"dense_peak", {{"bf16", "1200 TFLOP/s"}, {"fp8", "2.4 PFLOP/s"}}},
              {"hbm_capacity", "144 GiB"},
              {"hbm_bandwidth", "6 TB/s"},
              {"nvlink_bandwidth", "600 GB/s"},
              {"pcie_bandwidth", "63 GB/s"},
              {"sm_count", 160}};
}

void expect_same_spec(const GpuSpec& a, const GpuSpec& b) {
  EXPECT_EQ(a.name, b.name);
  for (int p = 0; p < PRECISION_COUNT; ++p) EXPECT_EQ(a.dense_peak[p].value(), b.dense_peak[p].value()) << p;
  EXPECT_EQ(a.hbm_capacity.value(), b.hbm_capacity.value());
  EXPECT_EQ(a.hbm_bandwidth.value(), b.hbm_bandwidth.value());
  EXPECT_EQ(a.nvlink_bandwidth.value(), b.nvlink_bandwidth.value());
  EXPECT_EQ(a.pcie_bandwidth.value(), b.pcie_bandwidth.value());
  EXPECT_EQ(a.sm_count, b.sm_count);
  EXPECT_EQ(a.sparse_tensor_cores, b.sparse_tensor_cores);
  EXPECT_EQ(a.source, b.source);
}

TEST(GpuDescription, CatalogNameOrAbsentKeyGivesTheCatalogGpu) {
  const GpuChoice h100 = read("H100-SXM5-80GB");
  EXPECT_FALSE(h100.described);
  EXPECT_EQ(h100.base, "H100-SXM5-80GB");
  expect_same_spec(h100.spec, *find_gpu("H100-SXM5-80GB"));
  EXPECT_EQ(h100.to_json(), "H100-SXM5-80GB");

  Diagnostics diag;
  const Json empty = Json::object();
  ObjectReader r(empty, "s.json", "/cluster", diag);
  EXPECT_EQ(read_gpu(r, "gpu", "B200").spec.name, "B200");
}

// The what-if of issue 17: one figure of a catalog GPU changed, every other figure the base's.
TEST(GpuDescription, BaseWithOneFigureChangesOnlyThatFigure) {
  const GpuChoice c = read({{"base", "H100-SXM5-80GB"}, {"hbm_bandwidth", "6.7 TB/s"}});
  const GpuSpec& h100 = *find_gpu("H100-SXM5-80GB");
  EXPECT_TRUE(c.described);
  EXPECT_EQ(c.base, "H100-SXM5-80GB");
  EXPECT_EQ(c.spec.name, "H100-SXM5-80GB (custom)");
  EXPECT_DOUBLE_EQ(c.spec.hbm_bandwidth.value(), 6.7e12);
  EXPECT_DOUBLE_EQ(c.spec.hbm_bandwidth.value(), 2 * h100.hbm_bandwidth.value());
  for (int p = 0; p < PRECISION_COUNT; ++p) EXPECT_EQ(c.spec.dense_peak[p].value(), h100.dense_peak[p].value());
  EXPECT_EQ(c.spec.hbm_capacity.value(), h100.hbm_capacity.value());
  EXPECT_EQ(c.spec.nvlink_bandwidth.value(), h100.nvlink_bandwidth.value());
  EXPECT_EQ(c.spec.sm_count, h100.sm_count);
  EXPECT_TRUE(c.spec.sparse_tensor_cores);
  EXPECT_EQ(c.spec.source, h100.source + "; changed in the scenario: hbm_bandwidth 6.7 TB/s");

  // A rate of 0 removes a precision from the base; a name may be given.
  const GpuChoice no_fp8 = read({{"base", "H100-SXM5-80GB"}, {"name", "H100-noFP8"}, {"dense_peak", {{"fp8", 0}}}});
  EXPECT_EQ(peak(no_fp8.spec, Precision::FP8), 0);
  EXPECT_EQ(peak(no_fp8.spec, Precision::BF16), 989e12);
  EXPECT_EQ(no_fp8.spec.name, "H100-noFP8");
}

TEST(GpuDescription, FullDescriptionTakesEveryFigureAndLeavesOutPrecisionsUnsupported) {
  const GpuChoice c = read(full_x1());
  EXPECT_TRUE(c.described);
  EXPECT_EQ(c.base, "");
  EXPECT_EQ(c.spec.name, "X1");
  EXPECT_EQ(peak(c.spec, Precision::BF16), 1200e12);
  EXPECT_EQ(peak(c.spec, Precision::FP8), 2400e12);
  EXPECT_EQ(peak(c.spec, Precision::FP16), 0) << "not given: unsupported";
  EXPECT_EQ(c.spec.hbm_capacity.value(), 144.0 * GiB);
  EXPECT_EQ(c.spec.hbm_bandwidth.value(), 6e12);
  EXPECT_EQ(c.spec.nvlink_bandwidth.value(), 600e9);
  EXPECT_EQ(c.spec.pcie_bandwidth.value(), 63e9);
  EXPECT_EQ(c.spec.sm_count, 160);
  EXPECT_FALSE(c.spec.sparse_tensor_cores);
  EXPECT_EQ(c.spec.source, "described in the scenario");

  Json pcie_only = full_x1();
  pcie_only["nvlink_bandwidth"] = "0 GB/s";
  pcie_only["sparse_tensor_cores"] = true;
  const GpuChoice p = read(pcie_only);
  EXPECT_EQ(p.spec.nvlink_bandwidth.value(), 0);
  EXPECT_TRUE(p.spec.sparse_tensor_cores);
}

// `trainsim check` writes the object with every figure; it reads back to the same GPU.
TEST(GpuDescription, ResolvedFormReadsBackToTheSameGpu) {
  Json odd = full_x1();
  odd["hbm_bandwidth"] = "3.3512345678 TB/s";  // more digits than the readable form keeps
  for (const Json& given : {Json{{"base", "H100-SXM5-80GB"}, {"hbm_bandwidth", "6.7 TB/s"}}, full_x1(), odd,
                            Json{{"base", "L40S"}, {"dense_peak", {{"fp8", 0}}}},
                            Json{{"base", "A100-SXM4-80GB"}, {"nvlink_sharp", true}, {"label", "A100 + NVLS"}}}) {
    SCOPED_TRACE(given.dump());
    const GpuChoice c = read(given);
    const Json resolved = c.to_json();
    const GpuChoice back = read(resolved);
    EXPECT_EQ(back.base, c.base);
    EXPECT_TRUE(back.described);
    expect_same_spec(back.spec, c.spec);
    EXPECT_EQ(back.spec.nvlink_sharp, c.spec.nvlink_sharp);
    EXPECT_EQ(back.spec.label, c.spec.label);
    EXPECT_EQ(back.to_json(), resolved);
  }
  // NVLink SHARP is the base's unless given; a label names the GPU in tables and changes no figure.
  EXPECT_TRUE(read(Json{{"base", "H100-SXM5-80GB"}}).spec.nvlink_sharp);
  EXPECT_FALSE(read(Json{{"base", "A100-SXM4-80GB"}}).spec.nvlink_sharp);
  EXPECT_FALSE(read(full_x1()).spec.nvlink_sharp) << "described from scratch: false unless given";
  const GpuChoice labelled = read(Json{{"base", "A100-SXM4-80GB"}, {"nvlink_sharp", true}, {"label", "A100 + NVLS"}});
  EXPECT_EQ(labelled.spec.label, "A100 + NVLS");
  EXPECT_EQ(labelled.to_json()["label"], "A100 + NVLS");
  EXPECT_EQ(labelled.spec.source.find("label"), std::string::npos) << labelled.spec.source;
}

TEST(GpuDescription, MissingFiguresOfAFullDescriptionAreEachNamed) {
  EXPECT_EQ(errors_of(Json{{"name", "X1"}}),
            "s.json: /cluster/gpu/dense_peak: missing: the dense tensor-core rates by precision, e.g. {\"bf16\": \"989 "
            "TFLOP/s\"} (a GPU described without \"base\" gives every figure)\n"
            "s.json: /cluster/gpu/hbm_capacity: missing: the GPU's memory, e.g. \"80 GiB\" (a GPU described without "
            "\"base\" gives every figure)\n"
            "s.json: /cluster/gpu/hbm_bandwidth: missing: its memory bandwidth, e.g. \"3.35 TB/s\" (a GPU described "
            "without \"base\" gives every figure)\n"
            "s.json: /cluster/gpu/nvlink_bandwidth: missing: its NVLink bandwidth per direction, e.g. \"450 GB/s\" "
            "(\"0 GB/s\": none) (a GPU described without \"base\" gives every figure)\n"
            "s.json: /cluster/gpu/pcie_bandwidth: missing: its PCIe bandwidth per direction, e.g. \"63 GB/s\" (a GPU "
            "described without \"base\" gives every figure)\n"
            "s.json: /cluster/gpu/sm_count: missing: its streaming multiprocessors, e.g. 132 (a GPU described without "
            "\"base\" gives every figure)");
  Json no_name = full_x1();
  no_name.erase("name");
  EXPECT_EQ(errors_of(no_name), "s.json: /cluster/gpu/name: missing: the GPU's name, e.g. \"X1-SXM-144GB\" (a GPU "
                                "described without \"base\" gives every figure)");
}

TEST(GpuDescription, MalformedValuesAreEachNamed) {
  EXPECT_EQ(errors_of(12), "s.json: /cluster/gpu: expected a GPU of the catalog (\"V100-SXM2-32GB\", \"A100-SXM4-40GB\", "
                           "\"A100-SXM4-80GB\", \"H100-SXM5-80GB\", \"H800-SXM5-80GB\", \"H200-SXM-141GB\", \"B200\", "
                           "\"GB200\", \"L40S\", \"MI300X\") or an object describing one, found 12");
  EXPECT_NE(errors_of("MI300"), "(accepted)");
  EXPECT_NE(errors_of("MI300").find("found \"MI300\" (did you mean \"MI300X\"?)"), std::string::npos) << errors_of("MI300");
  EXPECT_NE(errors_of(Json{{"base", "H100"}}).find("/cluster/gpu/base: expected a GPU of the catalog"), std::string::npos);

  Json bad = full_x1();
  bad["dense_peak"] = {{"bf16", "1200 TFLOPS/s"}, {"fp9", "1 TFLOP/s"}};
  bad["hbm_capacity"] = "0 GiB";
  bad["hbm_bandwidth"] = "0 TB/s";
  bad["sm_count"] = 0;
  bad["colour"] = "green";
  EXPECT_EQ(errors_of(bad),
            "s.json: /cluster/gpu/dense_peak/bf16: expected a compute rate such as \"312 TFLOP/s\", found \"1200 "
            "TFLOPS/s\"\n"
            "s.json: /cluster/gpu/dense_peak/fp9: unknown key \"fp9\" (did you mean \"fp8\"?)\n"
            "s.json: /cluster/gpu/hbm_capacity: must be positive, found \"0 GiB\"\n"
            "s.json: /cluster/gpu/hbm_bandwidth: must be positive, found \"0 TB/s\"\n"
            "s.json: /cluster/gpu/sm_count: expected an integer in [1, 100000], found 0\n"
            "s.json: /cluster/gpu/colour: unknown key \"colour\" (known keys: \"base\", \"dense_peak\", "
            "\"hbm_bandwidth\", \"hbm_capacity\", \"label\", \"name\", \"nvlink_bandwidth\", \"nvlink_sharp\", "
            "\"pcie_bandwidth\", \"sm_count\", \"source\" or \"sparse_tensor_cores\")");

  Json zeros = full_x1();
  zeros["dense_peak"] = {{"bf16", 0}};
  EXPECT_EQ(errors_of(zeros), "s.json: /cluster/gpu/dense_peak: expected at least one positive rate (fp32, tf32, bf16, "
                              "fp16, fp8), e.g. \"989 TFLOP/s\"");
  Json catalog_name = full_x1();
  catalog_name["name"] = "H100-SXM5-80GB";
  EXPECT_EQ(errors_of(catalog_name), "s.json: /cluster/gpu/name: \"H100-SXM5-80GB\" is a catalog GPU: a described GPU "
                                     "takes another name (or use \"gpu\": \"H100-SXM5-80GB\")");
}

// A GPU with problems reads as the fallback, so that the rest of the cluster section reads on.
TEST(GpuDescription, AGpuWithProblemsIsTheFallbackForWhatFollows) {
  const Json cluster = {{"gpu", {{"name", "X1"}}}};
  Diagnostics diag;
  ObjectReader r(cluster, "s.json", "/cluster", diag);
  const GpuChoice c = read_gpu(r, "gpu", "A100-SXM4-80GB");
  EXPECT_FALSE(diag.empty());
  EXPECT_EQ(c.spec.name, "A100-SXM4-80GB");
  EXPECT_GT(c.spec.hbm_bandwidth.value(), 0);
}

// Issue 17's additions to the catalog, with the datasheet figures their sources quote.
TEST(GpuCatalog, NewGpusCarryTheirDatasheetFigures) {
  struct Expected {
    const char* name;
    double bf16_tflops, fp8_tflops, hbm_gib, hbm_tbps, nvlink_gbps;
    int sms;
    const char* document;
  };
  for (const Expected& e : std::vector<Expected>{
           {"H800-SXM5-80GB", 989, 1979, 80, 3.35, 200, 132, "NVIDIA H800 Tensor Core GPU datasheet"},
           {"GB200", 2500, 5000, 186, 8.0, 900, 148, "GB200 NVL72"},
           {"L40S", 362.05, 733, 48, 0.864, 0, 142, "NVIDIA L40S datasheet"},
           {"MI300X", 1307.4, 2614.9, 192, 5.3, 448, 304, "AMD Instinct MI300X accelerator data sheet"}}) {
    SCOPED_TRACE(e.name);
    const GpuSpec* g = find_gpu(e.name);
    ASSERT_NE(g, nullptr);
    EXPECT_DOUBLE_EQ(peak(*g, Precision::BF16), e.bf16_tflops * 1e12);
    EXPECT_DOUBLE_EQ(peak(*g, Precision::FP8), e.fp8_tflops * 1e12);
    EXPECT_DOUBLE_EQ(g->hbm_capacity.value(), e.hbm_gib * GiB);
    EXPECT_DOUBLE_EQ(g->hbm_bandwidth.value(), e.hbm_tbps * 1e12);
    EXPECT_DOUBLE_EQ(g->nvlink_bandwidth.value(), e.nvlink_gbps * 1e9);
    EXPECT_EQ(g->sm_count, e.sms);
    EXPECT_TRUE(g->sparse_tensor_cores);
    EXPECT_NE(g->source.find(e.document), std::string::npos) << g->source;
  }
  EXPECT_FALSE(find_gpu("V100-SXM2-32GB")->sparse_tensor_cores) << "Volta has no sparse tensor cores";
  EXPECT_TRUE(find_gpu("A100-SXM4-80GB")->sparse_tensor_cores);
  for (const GpuSpec& g : gpu_catalog()) EXPECT_FALSE(g.source.empty()) << g.name;
}

// New catalog GPUs have built-in profiles named after them; a described GPU's name has none.
TEST(GpuCatalog, BuiltInProfilesNameTheirGpu) {
  for (const GpuSpec& g : gpu_catalog()) {
    EXPECT_EQ(DeviceProfile::defaults_for(g.name).fitted_on.gpu, g.name);
  }
  EXPECT_EQ(DeviceProfile::defaults_for("X1").fitted_on.gpu, "");
  EXPECT_DOUBLE_EQ(DeviceProfile::defaults_for("H800-SXM5-80GB").op(OpClass::GEMM).max_efficiency,
                   DeviceProfile::defaults_for("H100-SXM5-80GB").op(OpClass::GEMM).max_efficiency);
  EXPECT_DOUBLE_EQ(DeviceProfile::defaults_for("MI300X").op(OpClass::GEMM).max_efficiency, 781.9 / 1307.4 * 0.86);
}

}  // namespace
}  // namespace trainsim::core
