#include "pending_calls.h"

namespace dftracer::dynamo {

void PendingCalls::push(const PendingCall& call) {
  std::lock_guard<std::mutex> lock(mu_);
  if (calls_.size() >= kMaxPending) calls_.erase(calls_.begin());
  calls_.push_back(call);
}

bool PendingCalls::take(uint64_t key, PendingCall* out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (calls_.empty()) return false;
  size_t at = calls_.size() - 1;  // LIFO unless the key finds the exact call
  if (key != 0) {
    for (size_t j = calls_.size(); j-- > 0;) {
      if (calls_[j].key == key) {
        at = j;
        break;
      }
    }
  }
  *out = calls_[at];
  calls_.erase(calls_.begin() + static_cast<std::ptrdiff_t>(at));
  return true;
}

size_t PendingCalls::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_.size();
}

}  // namespace dftracer::dynamo
