#include "calibrate/traced_work.hpp"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <string>
#include <vector>

#include "calibrate/iteration_marks.hpp"

namespace trainsim::calibrate {
namespace {

bool contains_any(const std::string& haystack, std::initializer_list<std::string_view> needles) {
  return std::any_of(needles.begin(), needles.end(),
                     [&](std::string_view n) { return haystack.find(n) != std::string::npos; });
}

struct Span {
  uint64_t start = 0;
  uint64_t end = 0;
};

// Length of the union of `spans`, each clipped to [lo, hi).
uint64_t covered(std::vector<Span> spans, uint64_t lo, uint64_t hi) {
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.start < b.start; });
  uint64_t total = 0, reach = lo;
  for (const Span& s : spans) {
    const uint64_t a = std::max(s.start, reach), b = std::min(s.end, hi);
    if (b > a) {
      total += b - a;
      reach = b;
    }
  }
  return total;
}

// Nanoseconds of [start, end) inside [lo, hi).
uint64_t inside(uint64_t start, uint64_t end, uint64_t lo, uint64_t hi) {
  const uint64_t a = std::max(start, lo), b = std::min(end, hi);
  return b > a ? b - a : 0;
}

}  // namespace

bool kernel_op_class(std::string_view name, bool fused_attention, core::OpClass& out) {
  std::string n(name);
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (contains_any(n, {"nccl"})) return false;
  if (contains_any(n, {"flash", "fmha", "attention", "attn"})) {
    out = core::OpClass::FLASH_ATTENTION;
  } else if (contains_any(n, {"softmax"})) {
    out = fused_attention ? core::OpClass::ELEMENTWISE : core::OpClass::ATTENTION;
  } else if (contains_any(n, {"gemm", "cutlass", "xmma", "cublas", "nvjet", "matmul"})) {
    out = core::OpClass::GEMM;
  } else if (contains_any(n, {"layer_norm", "layernorm", "rms_norm", "rmsnorm"})) {
    out = core::OpClass::NORM;
  } else if (contains_any(n, {"multi_tensor_apply", "adam", "optimizer"})) {
    out = core::OpClass::OPTIMIZER;
  } else if (contains_any(n, {"embedding", "index_select", "indexselect"})) {
    out = core::OpClass::EMBEDDING;
  } else {
    out = core::OpClass::ELEMENTWISE;
  }
  return true;
}

TracedWork traced_work(const TraceSet& traces, bool fused_attention) {
  TracedWork w;
  const std::vector<std::map<int64_t, MarkWindow>> marks = iteration_marks(traces);
  const std::set<int64_t> common = common_iterations(marks);
  if (common.empty()) return w;
  w.iterations = common.size();
  const double ranks = static_cast<double>(traces.ranks().size());
  const double per = 1e-9 / (ranks * static_cast<double>(common.size()));  // ns summed over ranks and iterations -> s
  for (size_t r = 0; r < traces.ranks().size(); ++r) {
    const core::TraceFile& file = traces.files()[traces.ranks()[r].file];
    for (int64_t number : common) {
      const MarkWindow window = marks[r].at(number);
      const uint64_t lo = window.start, hi = window.end;
      std::vector<Span> busy;  // every GPU activity, communication included
      for (const trace::Record& rec : file.records) {
        Span span;
        core::OpClass c = core::OpClass::ELEMENTWISE;
        bool compute = true;
        if (rec.has_kernel()) {
          span = {rec.kernel().start_ns(), rec.kernel().end_ns()};
          compute = kernel_op_class(rec.kernel().name(), fused_attention, c);
        } else if (rec.has_memcpy()) {
          span = {rec.memcpy().start_ns(), rec.memcpy().end_ns()};
        } else if (rec.has_memset()) {
          span = {rec.memset().start_ns(), rec.memset().end_ns()};
        } else {
          continue;
        }
        if (span.end < span.start) continue;
        busy.push_back(span);
        if (!compute) continue;
        const double s = static_cast<double>(inside(span.start, span.end, lo, hi)) * per;
        w.seconds[static_cast<size_t>(c)] += s;
        if (!rec.has_kernel()) w.copies_s += s;
      }
      w.iteration_s += static_cast<double>(hi - lo) * per;
      w.idle_s += static_cast<double>(hi - lo - covered(std::move(busy), lo, hi)) * per;
    }
  }
  return w;
}

}  // namespace trainsim::calibrate
