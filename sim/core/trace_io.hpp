#pragma once
// Reading and writing trace files (sim/core/trace.proto): one rank per file, a Header record first,
// then event records, each framed as a varint byte count followed by a serialized Record.
//
// Example:
//   TraceWriter w("rank0.trace", header);        // creates the file and writes the header
//   w.append(record);                            // buffered
//   w.flush();                                   // on disk
//
//   TraceReader r("rank0.trace");                // throws InputError unless a trace file
//   trace::Record rec;
//   while (r.next(rec)) { ... }
//   if (r.lost_bytes() > 0) ... // a truncated tail: the last record was cut short
//
// A truncated file (a run killed while writing) is read up to its last whole record; the bytes of
// the incomplete record are reported by lost_bytes(). Anything else that is wrong is an InputError
// naming the file and the byte offset of the bad record. The reader never reads past the end of a
// record's declared length and never loops without consuming bytes.

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "sim/core/trace.pb.h"
#include "sim/core/workload.hpp"

namespace trainsim::core {

inline constexpr const char* TRACE_MAGIC = "trainsim.trace";
inline constexpr uint32_t TRACE_FORMAT_VERSION = 1;
// A record longer than this is taken as corruption, not as a record (the largest real records, a
// header with many devices or a status with many errors, are a few KiB).
inline constexpr uint64_t TRACE_MAX_RECORD_BYTES = 64ull << 20;
// The largest world size a trace header may claim (2^20 ranks). A header's world_size, rank and
// local_rank are checked against it (and against each other) before anything is sized by them: a
// corrupt or hand-edited header claiming 2^31-1 ranks is an input error, not gigabytes allocated.
inline constexpr int32_t TRACE_MAX_WORLD_SIZE = 1 << 20;

// Appends the framing (varint length) and the serialized message to `out`.
void append_delimited(const google::protobuf::MessageLite& message, std::string& out);

class TraceWriter {
 public:
  // Creates (truncates) `path` and writes `header` as the first record. Throws InputError naming
  // the path when the file cannot be created. Fills in magic and format_version when left empty.
  TraceWriter(std::string path, trace::Header header);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // REQUIRES: `record` does not hold a header.
  void append(const trace::Record& record);
  // Writes buffered records to the file; throws InputError when the write fails (disk full, ...).
  void flush();
  const std::string& path() const { return path_; }
  uint64_t records_written() const { return records_; }

 private:
  std::string path_;
  std::ofstream out_;
  std::string buffer_;
  uint64_t records_ = 0;
};

class TraceReader {
 public:
  // Opens `path` and reads its header. Throws InputError when the file cannot be opened, is empty,
  // or does not start with a trainsim trace header of a known format version, or when the header's
  // world_size, rank or local_rank is out of range (-1 or 0 = unknown; at most
  // TRACE_MAX_WORLD_SIZE; a rank below the world size when both are known).
  explicit TraceReader(std::string path);

  const trace::Header& header() const { return header_; }
  const std::string& path() const { return path_; }

  // Reads the next event record into `out`. Returns false at the end of the file, or at a truncated
  // tail (then lost_bytes() > 0). Throws InputError (file and byte offset) for a corrupt record: a
  // malformed or implausibly large length, or bytes that do not parse as a Record.
  bool next(trace::Record& out);

  uint64_t offset() const { return offset_; }          // bytes consumed so far
  uint64_t file_size() const { return size_; }
  uint64_t lost_bytes() const { return lost_bytes_; }  // of an incomplete last record
  uint64_t records_read() const { return records_; }   // event records, the header not counted

 private:
  // Reads one framed message into `payload`; false at the end or at a truncated tail.
  bool read_frame(std::string& payload, uint64_t& frame_offset);

  std::string path_;
  std::ifstream in_;
  trace::Header header_;
  uint64_t size_ = 0;
  uint64_t offset_ = 0;
  uint64_t lost_bytes_ = 0;
  uint64_t records_ = 0;
};

// A whole trace file in memory.
struct TraceFile {
  std::string path;
  trace::Header header;
  std::vector<trace::Record> records;  // without the header
  uint64_t lost_bytes = 0;             // of a truncated tail, or from a corrupt record on
  std::string corruption;              // the corrupt record that ended the reading; "" if none
};

// Reads every record of `path`. The header is checked as TraceReader does (InputError); the records
// are read up to the last complete one: a truncated tail or a corrupt record (bad length prefix,
// bytes that do not parse, a second header) ends the reading, and what was dropped is in
// lost_bytes and corruption (see truncation_warning).
TraceFile read_trace_file(const std::string& path);

// The warning for a file read up to its last whole record ("warning: PATH: truncated: ..." or
// "warning: PATH: corrupt record at byte offset N: ..."), naming the bytes dropped and the records
// kept; "" when the file was read whole.
std::string truncation_warning(const TraceFile& file);

// The IR's collective for a traced one; false for COLLECTIVE_OP_UNKNOWN.
bool to_collective_op(trace::CollectiveOp traced, CollectiveOp& out);

// The trace files of `paths`: files are taken as they are, folders are searched (not recursively)
// for *.trace files, in name order. Throws InputError for a path that does not exist, or a folder
// without trace files.
std::vector<std::string> expand_trace_paths(const std::vector<std::string>& paths);

}  // namespace trainsim::core
