#include "calibrate/traced_work.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "calibrate/iteration_marks.hpp"
#include "calibrate/trace_summary.hpp"

namespace trainsim::calibrate {
namespace {

// One GPU activity of a trace: its span, and its class when it is compute.
struct Activity {
  Interval span;
  bool compute = false;  // false: communication (busy, but no class)
  core::OpClass op_class = core::OpClass::ELEMENTWISE;
  bool copy = false;     // a device copy or memset (counted as ELEMENTWISE)
};

// Every kernel, copy and memset of `file`, classed once.
std::vector<Activity> activities(const core::TraceFile& file, bool fused_attention) {
  std::vector<Activity> out;
  for (const trace::Record& rec : file.records) {
    Activity a;
    if (rec.has_kernel()) {
      a.span = {rec.kernel().start_ns(), rec.kernel().end_ns()};
      a.compute = kernel_op_class(rec.kernel().name(), fused_attention, a.op_class);
    } else if (rec.has_memcpy() || rec.has_memset()) {
      a.span = rec.has_memcpy() ? Interval{rec.memcpy().start_ns(), rec.memcpy().end_ns()}
                                : Interval{rec.memset().start_ns(), rec.memset().end_ns()};
      a.compute = a.copy = true;
    } else {
      continue;
    }
    if (a.span.end >= a.span.start) out.push_back(a);
  }
  return out;
}

// Nanoseconds of `span` inside [lo, hi).
uint64_t inside(const Interval& span, uint64_t lo, uint64_t hi) {
  const uint64_t a = std::max(span.start, lo), b = std::min(span.end, hi);
  return b > a ? b - a : 0;
}

}  // namespace

bool kernel_op_class(std::string_view name, bool fused_attention, core::OpClass& out) {
  switch (categorize_kernel(name)) {
    case TimeCategory::COMMUNICATION:
      return false;
    case TimeCategory::GEMM:
      out = core::OpClass::GEMM;
      return true;
    case TimeCategory::ATTENTION:  // fused attention, or a softmax: with FlashAttention, the loss's
      out = fused_attention_kernel(name) ? core::OpClass::FLASH_ATTENTION
            : fused_attention            ? core::OpClass::ELEMENTWISE
                                         : core::OpClass::ATTENTION;
      return true;
    default:
      break;
  }
  out = kernel_name_has(name, {"layer_norm", "layernorm", "rms_norm", "rmsnorm"})  ? core::OpClass::NORM
        : kernel_name_has(name, {"multi_tensor_apply", "adam", "optimizer"})        ? core::OpClass::OPTIMIZER
        : kernel_name_has(name, {"embedding", "index_select", "indexselect"})       ? core::OpClass::EMBEDDING
                                                                                    : core::OpClass::ELEMENTWISE;
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
    const std::vector<Activity> all = activities(traces.files()[traces.ranks()[r].file], fused_attention);
    std::vector<Interval> busy;
    busy.reserve(all.size());
    for (const Activity& a : all) busy.push_back(a.span);
    for (int64_t number : common) {
      const MarkWindow window = marks[r].at(number);
      for (const Activity& a : all) {
        if (!a.compute) continue;
        const double s = static_cast<double>(inside(a.span, window.start, window.end)) * per;
        w.seconds[static_cast<size_t>(a.op_class)] += s;
        if (a.copy) w.copies_s += s;
      }
      w.iteration_s += static_cast<double>(window.end - window.start) * per;
      w.idle_s += static_cast<double>(window.end - window.start - union_length(busy, window.start, window.end)) * per;
    }
  }
  return w;
}

}  // namespace trainsim::calibrate
