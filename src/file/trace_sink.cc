#include "trace_sink.h"

#include <cstring>
#include <string>

#include "dftracer/dftracer.h"

namespace dftracer {

void TraceSink::report_failure(int err) {
  if (!failed_) {
    std::string msg = "cannot write trace file " + path_ + ": " + std::strerror(err) +
                      "; events from now on are lost (counted as dropped), the program continues";
    dft_warn(msg.c_str());
  }
  failed_ = true;
}

}  // namespace dftracer
