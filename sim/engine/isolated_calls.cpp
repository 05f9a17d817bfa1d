#include "sim/engine/isolated_calls.hpp"

#include <algorithm>
#include <numeric>
#include <tuple>

#include "sim/core/error.hpp"

namespace trainsim::engine {
namespace {

constexpr uint32_t NONE = UINT32_MAX;

// Union-find over classes, joined through the links they share.
class Components {
 public:
  explicit Components(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0U); }
  uint32_t root(uint32_t c) {
    while (parent_[c] != c) c = parent_[c] = parent_[parent_[c]];
    return c;
  }
  void join(uint32_t a, uint32_t b) {
    a = root(a);
    b = root(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }

 private:
  std::vector<uint32_t> parent_;
};

// Whether one slot of the component's sites [begin, end) (sorted by slot, lane, meeting) issues all
// of them from one lane and is a member of every meeting they join.
bool one_lane_serializes(std::vector<ClassSite>::const_iterator begin, std::vector<ClassSite>::const_iterator end) {
  std::vector<uint64_t> meetings;
  for (auto s = begin; s != end; ++s) meetings.push_back(s->meeting);
  std::sort(meetings.begin(), meetings.end());
  const size_t all = static_cast<size_t>(std::unique(meetings.begin(), meetings.end()) - meetings.begin());
  for (auto s = begin; s != end;) {
    auto next = s;
    bool one_lane = true;
    size_t joined = 0;
    uint64_t last = 0;
    for (; next != end && next->slot == s->slot; ++next) {
      one_lane = one_lane && next->lane == s->lane;
      if (next == s || next->meeting != last) ++joined;  // sorted: each meeting counted once per lane
      last = next->meeting;
    }
    if (one_lane && joined == all) return true;
    s = next;
  }
  return false;
}

}  // namespace

std::vector<bool> isolated_classes(const std::vector<std::vector<uint32_t>>& links, const std::vector<ClassSite>& sites,
                                   size_t link_count) {
  Components components(links.size());
  std::vector<uint32_t> owner(link_count, NONE);
  for (uint32_t c = 0; c < links.size(); ++c) {
    for (uint32_t l : links[c]) {
      TRAINSIM_CHECK(l < link_count, "a class crosses a link outside the platform");
      if (owner[l] == NONE) {
        owner[l] = c;
      } else {
        components.join(owner[l], c);
      }
    }
  }
  std::vector<ClassSite> sorted = sites;
  for (ClassSite& s : sorted) {
    TRAINSIM_CHECK(s.cls < links.size(), "a call site of an unknown class");
    s.cls = components.root(s.cls);  // from here on: the component
  }
  std::sort(sorted.begin(), sorted.end(), [](const ClassSite& a, const ClassSite& b) {
    return std::tie(a.cls, a.slot, a.lane, a.meeting) < std::tie(b.cls, b.slot, b.lane, b.meeting);
  });
  std::vector<bool> component_isolated(links.size(), false);
  for (auto s = sorted.begin(); s != sorted.end();) {
    auto next = std::find_if(s, sorted.end(), [&](const ClassSite& x) { return x.cls != s->cls; });
    component_isolated[s->cls] = one_lane_serializes(s, next);
    s = next;
  }
  std::vector<bool> out(links.size());
  for (uint32_t c = 0; c < links.size(); ++c) out[c] = component_isolated[components.root(c)];
  return out;
}

}  // namespace trainsim::engine
