#pragma once
// A minimal protobuf wire-format encoder: enough to write trace.proto's messages (varints, 64-bit
// fixed, length-delimited strings and nested messages) without linking libprotobuf into the traced
// process. PyTorch and other frameworks ship their own libprotobuf; two copies in one process clash
// on symbols and on the global descriptor pool, so the injected library stays independent of it.
//
// Example (Record{kernel = Kernel{name = "k", start_ns = 5}}):
//   WireEncoder w(out);
//   size_t rec = w.begin_message(2);   // Record.kernel
//   w.string(1, "k");                  // Kernel.name
//   w.uint(6, 5);                      // Kernel.start_ns
//   w.end_message(rec);
//
// Fields holding their proto3 default (0, false, "") are skipped, as protobuf does. Tests parse the
// output with libprotobuf's generated classes.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace trainsim::tracer {

// Appends `value` as a base-128 varint.
void append_varint(uint64_t value, std::string& out);

class WireEncoder {
 public:
  // REQUIRES: `out` outlives the encoder. Bytes are appended to it.
  explicit WireEncoder(std::string& out) : out_(&out) {}

  // uint32/uint64/enum fields (varint); skipped when 0.
  void uint(uint32_t field, uint64_t value);
  // int32/int64 fields: negative values take ten bytes (two's complement), as protobuf encodes them.
  void sint(uint32_t field, int64_t value);
  void boolean(uint32_t field, bool value);
  // string/bytes fields; skipped when empty.
  void string(uint32_t field, std::string_view value);
  // A packed repeated int32 field; skipped when empty.
  void packed_int32(uint32_t field, const int32_t* values, size_t count);

  // Starts a nested message in `field`; returns a token for end_message(). Nesting is allowed.
  size_t begin_message(uint32_t field);
  // Closes the message begun with `token`, writing its length prefix. An empty nested message is
  // still written (presence matters for oneof members).
  void end_message(size_t token);

 private:
  void tag(uint32_t field, uint32_t wire_type);
  std::string* out_;
};

// Wraps `record_body` (the encoded fields of a Record) in the file framing: a varint byte count.
void append_framed(const std::string& record_body, std::string& out);

}  // namespace trainsim::tracer
