// The hand-written encoder against libprotobuf: the same message must give the same bytes (both
// write fields in field-number order and skip proto3 defaults), and the framing must be protobuf's
// varint length prefix.

#include "tracer/record/wire.hpp"

#include <gtest/gtest.h>

#include "sim/core/trace_io.hpp"
#include "tracer/record/events.hpp"

namespace trainsim::tracer {
namespace {

TEST(Wire, VarintsAsInTheProtobufDocumentation) {
  std::string out;
  append_varint(1, out);
  append_varint(150, out);  // the encoding guide's example: 96 01
  append_varint(UINT64_MAX, out);
  EXPECT_EQ(out, std::string("\x01\x96\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 13));
}

TEST(Wire, NegativeInt32TakesTenBytesLikeProtobuf) {
  std::string ours;
  WireEncoder(ours).sint(8, -1);
  trace::Header h;
  h.set_rank(-1);
  EXPECT_EQ(ours, h.SerializeAsString());
}

TEST(Wire, KernelRecordIsByteIdenticalToLibprotobuf) {
  KernelEvent k;
  k.name = std::string(300, 'k');  // a nested message longer than 127 bytes: two-byte length prefix
  k.device_id = 1;
  k.stream_id = 7;
  k.correlation_id = 99;
  k.start_ns = 1'700'000'000'000'000'000ull;
  k.end_ns = 1'700'000'000'000'012'345ull;
  k.grid = {108, 2, 1};
  k.block = {256, 1, 1};
  k.registers_per_thread = 128;
  std::string ours;
  append_record(k, ours);

  trace::Record expected;
  trace::Kernel* e = expected.mutable_kernel();
  e->set_name(k.name);
  e->set_device_id(1);
  e->set_stream_id(7);
  e->set_correlation_id(99);
  e->set_start_ns(k.start_ns);
  e->set_end_ns(k.end_ns);
  e->mutable_grid()->set_x(108);
  e->mutable_grid()->set_y(2);
  e->mutable_grid()->set_z(1);
  e->mutable_block()->set_x(256);
  e->mutable_block()->set_y(1);
  e->mutable_block()->set_z(1);
  e->set_registers_per_thread(128);
  std::string framed;
  core::append_delimited(expected, framed);
  EXPECT_EQ(ours, framed);
}

TEST(Wire, EmptyOneofMemberIsStillPresent) {
  std::string ours;
  append_record(MemsetEvent{}, ours);
  trace::Record r;
  ASSERT_TRUE(r.ParseFromString(ours.substr(1)));
  EXPECT_TRUE(r.has_memset());
}

}  // namespace
}  // namespace trainsim::tracer
