// Error reporting for the nccmatch library: every fallible call returns a Status; nothing aborts.
#pragma once

#include <string>
#include <utility>

namespace nccmatch {

class Status {
 public:
  Status() = default;  // success
  static Status error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const std::string& message() const { return message_; }

 private:
  explicit Status(std::string message) : failed_(true), message_(std::move(message)) {}
  bool failed_ = false;
  std::string message_;
};

}  // namespace nccmatch

// Propagates a failed Status to the caller.
#define NCC_RETURN_IF_ERROR(expr)              \
  do {                                         \
    ::nccmatch::Status ncc_status_ = (expr);   \
    if (!ncc_status_.ok()) return ncc_status_; \
  } while (0)
