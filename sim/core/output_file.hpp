#pragma once
// Output files that are complete or absent: written to a temporary file next to the destination and
// renamed over it once every byte is written and the file closed without error. A write error (a
// full disk, a quota) or an exception before commit() leaves no file behind (and an existing file at
// the path untouched); the error is an InputError naming the path. A destination that exists and is
// not a regular file (a FIFO, /dev/stdout, /dev/full) is written in place: it cannot be renamed
// over, and its write errors are reported the same way.

#include <fstream>
#include <string>

namespace trainsim::core {

class OutputFile {
 public:
  // Opens the temporary file. `flag` names the option the path came from in messages ("--out");
  // may be empty. Throws InputError when it cannot be created.
  OutputFile(std::string path, std::string flag = "");
  ~OutputFile();  // removes the temporary file unless committed
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::ostream& stream() { return out_; }
  // Closes the temporary file; throws InputError (naming the path and the system's reason) when any
  // write failed. Files that belong together (run --out) are all closed before any is committed.
  void close();
  // close() if not done, then renames onto the path.
  void commit();

 private:
  [[noreturn]] void fail(const std::string& what);

  std::string path_;
  std::string flag_;
  std::string temp_;  // empty: written in place
  std::ofstream out_;
  bool closed_ = false;
  bool committed_ = false;
};

// OutputFile for a whole text.
void write_output_file(const std::string& path, const std::string& text, const std::string& flag = "");

// Flushes `out` (standard output) and throws InputError naming it when a write failed (a closed
// pipe, /dev/full): results that did not reach their reader are not a success.
void check_stream_written(std::ostream& out, const std::string& name);

}  // namespace trainsim::core
