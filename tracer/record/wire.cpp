#include "tracer/record/wire.hpp"

namespace trainsim::tracer {
namespace {

constexpr uint32_t WIRE_VARINT = 0;
constexpr uint32_t WIRE_LENGTH_DELIMITED = 2;

size_t varint_size(uint64_t value) {
  size_t n = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++n;
  }
  return n;
}

}  // namespace

void append_varint(uint64_t value, std::string& out) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void WireEncoder::tag(uint32_t field, uint32_t wire_type) {
  append_varint((static_cast<uint64_t>(field) << 3) | wire_type, *out_);
}

void WireEncoder::uint(uint32_t field, uint64_t value) {
  if (value == 0) return;
  tag(field, WIRE_VARINT);
  append_varint(value, *out_);
}

void WireEncoder::sint(uint32_t field, int64_t value) {
  if (value == 0) return;
  tag(field, WIRE_VARINT);
  append_varint(static_cast<uint64_t>(value), *out_);
}

void WireEncoder::boolean(uint32_t field, bool value) {
  if (!value) return;
  tag(field, WIRE_VARINT);
  out_->push_back(1);
}

void WireEncoder::string(uint32_t field, std::string_view value) {
  if (value.empty()) return;
  tag(field, WIRE_LENGTH_DELIMITED);
  append_varint(value.size(), *out_);
  out_->append(value.data(), value.size());
}

void WireEncoder::packed_int32(uint32_t field, const int32_t* values, size_t count) {
  if (count == 0) return;
  std::string body;
  for (size_t i = 0; i < count; ++i) append_varint(static_cast<uint64_t>(static_cast<int64_t>(values[i])), body);
  string(field, body);
}

size_t WireEncoder::begin_message(uint32_t field) {
  tag(field, WIRE_LENGTH_DELIMITED);
  return out_->size();
}

void WireEncoder::end_message(size_t token) {
  // The body was written first; its length prefix is inserted in front of it. Trace records are a
  // few hundred bytes, so moving the body once is cheaper than computing sizes in a first pass.
  const uint64_t length = out_->size() - token;
  std::string prefix;
  prefix.reserve(varint_size(length));
  append_varint(length, prefix);
  out_->insert(token, prefix);
}

void append_framed(const std::string& record_body, std::string& out) {
  append_varint(record_body.size(), out);
  out += record_body;
}

}  // namespace trainsim::tracer
