// isolated_classes: which classes of calls run alone on their links whenever they run. Classes,
// links and call sites are written out by hand; each case says why its answer must be what it is.

#include "sim/engine/isolated_calls.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace trainsim::engine {
namespace {

// Two classes on links of their own, each issued from one lane: both isolated.
TEST(IsolatedClasses, ClassesOnLinksOfTheirOwnAreIsolated) {
  const std::vector<std::vector<uint32_t>> links{{0, 1}, {2, 3}};
  const std::vector<ClassSite> sites{{0, 0, 1, 10}, {0, 0, 1, 10}, {1, 0, 4, 11}};
  EXPECT_EQ(isolated_classes(links, sites, 4), (std::vector<bool>{true, true}));
}

// Two classes sharing link 1, both issued by slot 0 on lane 1 (a tensor group's reduce-scatters and
// all-gathers on its stream): their calls follow each other, so both are isolated.
TEST(IsolatedClasses, ClassesSharingALinkOnOneLaneAreIsolated) {
  const std::vector<std::vector<uint32_t>> links{{0, 1}, {1, 2}};
  const std::vector<ClassSite> sites{{0, 0, 1, 10}, {1, 0, 1, 10}, {0, 0, 1, 10}};
  EXPECT_EQ(isolated_classes(links, sites, 3), (std::vector<bool>{true, true}));
}

// The same classes issued from two lanes of slot 0: their calls may overlap and contend.
TEST(IsolatedClasses, ClassesSharingALinkOnTwoLanesAreNot) {
  const std::vector<std::vector<uint32_t>> links{{0, 1}, {1, 2}};
  const std::vector<ClassSite> sites{{0, 0, 1, 10}, {1, 0, 2, 11}};
  EXPECT_EQ(isolated_classes(links, sites, 3), (std::vector<bool>{false, false}));
}

// Sharing a link, issued by two different ranks (two groups crossing one NIC): not isolated.
TEST(IsolatedClasses, ClassesSharingALinkOnTwoRanksAreNot) {
  const std::vector<std::vector<uint32_t>> links{{0, 1}, {1, 2}};
  const std::vector<ClassSite> sites{{0, 0, 1, 10}, {1, 1, 1, 11}};
  EXPECT_EQ(isolated_classes(links, sites, 3), (std::vector<bool>{false, false}));
}

// A collective with two simulated members, each on its own lane: every call includes slot 0's
// task, so slot 0's lane orders them all. A send/recv class whose receive is on another lane of the
// same slot as its send is not ordered by either lane.
TEST(IsolatedClasses, OneMemberOnOneLaneOrdersAMeetingsCalls) {
  const std::vector<std::vector<uint32_t>> links{{0, 1}, {2, 3}};
  const std::vector<ClassSite> sites{{0, 0, 1, 10}, {0, 1, 2, 10}, {1, 2, 5, 20}, {1, 2, 6, 20}};
  EXPECT_EQ(isolated_classes(links, sites, 4), (std::vector<bool>{true, false}));
}

// Slot 0 orders classes 0 and 2 on lane 1, but class 1, on its lane 2, shares link 1 with class 0
// and link 3 with class 2: one component, issued from two lanes, none isolated.
TEST(IsolatedClasses, SharingIsTransitive) {
  const std::vector<std::vector<uint32_t>> links{{0, 1}, {1, 3}, {3, 4}};
  const std::vector<ClassSite> sites{{0, 0, 1, 10}, {1, 0, 2, 11}, {2, 0, 1, 12}};
  EXPECT_EQ(isolated_classes(links, sites, 5), (std::vector<bool>{false, false, false}));
}

// A lane that orders the calls of some meetings of a component but is not a member of the others:
// slot 0 is in meeting 10 only, slot 1 in meeting 11 only, and the classes share link 1.
TEST(IsolatedClasses, TheOrderingRankMustJoinEveryMeeting) {
  const std::vector<std::vector<uint32_t>> links{{1}, {1}};
  const std::vector<ClassSite> sites{{0, 0, 1, 10}, {0, 1, 1, 10}, {1, 1, 1, 11}};
  // Slot 1 is in both meetings on lane 1: it orders both classes.
  EXPECT_EQ(isolated_classes(links, sites, 2), (std::vector<bool>{true, true}));
  const std::vector<ClassSite> apart{{0, 0, 1, 10}, {1, 1, 1, 11}};
  EXPECT_EQ(isolated_classes(links, apart, 2), (std::vector<bool>{false, false}));
}

}  // namespace
}  // namespace trainsim::engine
