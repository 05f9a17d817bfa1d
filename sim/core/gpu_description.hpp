#pragma once
// The GPU of a scenario (`cluster.gpu`): a catalog GPU by name, a catalog GPU with some figures
// changed, or a GPU the scenario describes in full.
//
//   "gpu": "H100-SXM5-80GB"                                           // the catalog's figures
//   "gpu": { "base": "H100-SXM5-80GB", "hbm_bandwidth": "6.7 TB/s" }  // what-if: one figure changed
//   "gpu": { "name": "X1", "dense_peak": { "bf16": "1200 TFLOP/s", "fp8": "2400 TFLOP/s" },
//            "hbm_capacity": "144 GiB", "hbm_bandwidth": "6 TB/s", "nvlink_bandwidth": "600 GB/s",
//            "pcie_bandwidth": "63 GB/s", "sm_count": 160, "sparse_tensor_cores": true }
//
// Keys of the object (quantities are unit strings; `trainsim describe gpus` lists the catalog):
//   base                 a catalog name: every figure not given is the base's, and the scenario keeps
//                        the base's built-in device profile. Absent: every figure marked * is required.
//   name *               the GPU's name in reports; not a catalog name (the figures differ from the
//                        catalog's). With base, default "<base> (custom)".
//   dense_peak *         an object by precision (fp32, tf32, bf16, fp16, fp8) of dense tensor-core
//                        rates, "989 TFLOP/s"; 0 ("0 TFLOP/s") = the precision is not supported.
//                        Without base at least one rate is positive and the precisions left out are
//                        unsupported; with base the rates given replace the base's.
//   hbm_capacity *       device memory, "80 GiB" (> 0)
//   hbm_bandwidth *      device memory bandwidth, "3.35 TB/s" (> 0)
//   nvlink_bandwidth *   GPU-to-GPU link bandwidth per GPU and direction, "450 GB/s"; "0 GB/s": none
//                        (the intra-node fabric then defaults to pcie)
//   pcie_bandwidth *     host link per direction, "63 GB/s" (> 0)
//   sm_count *           streaming multiprocessors (compute units), 1 to 100000: GEMM wave quantization
//   sparse_tensor_cores  2:4 structured sparsity at twice the dense rate; default: the base's, else false
//   nvlink_sharp         NVLink SHARP (NVLS) on its NVSwitch systems, which cluster.intra_node.nvls needs
//                        (network/feasibility.hpp); default: the base's, else false
//   label                a short name for tables: `compare --vary` column headers and `sweep` rows show
//                        it instead of the object; default: none (they show the name)
//   source               free text, where the figures come from; default: the base's source plus the
//                        figures the scenario changed, or "described in the scenario"
//
// Example:
//   core::Diagnostics diag;  core::ObjectReader r(cluster_json, "s.json", "/cluster", diag);
//   core::GpuChoice gpu = core::read_gpu(r, "gpu", "A100-SXM4-80GB");
//   diag.throw_if_any();  use(gpu.spec);  write(gpu.to_json());

#include <string>
#include <string_view>

#include "sim/core/device.hpp"
#include "sim/core/json_reader.hpp"

namespace trainsim::core {

struct GpuChoice {
  GpuSpec spec;
  // The catalog GPU whose built-in device profile applies: the GPU itself when named from the
  // catalog, the object's "base", "" for a GPU described from scratch (DeviceProfile::defaults()).
  std::string base;
  bool described = false;  // given as an object

  // The catalog name, or the object with "base" (when there is one) and every figure, which
  // read_gpu reads back to the same GpuChoice.
  Json to_json() const;
};

// Reads `key` of `r`; absent: the catalog GPU `fallback` (REQUIRES: a catalog name). Problems
// (unknown names with a "did you mean" hint, missing or malformed figures, unknown keys) go to r's
// Diagnostics, and the result is then the fallback GPU, so that what depends on it reads on.
GpuChoice read_gpu(ObjectReader& r, std::string_view key, const std::string& fallback);

}  // namespace trainsim::core
