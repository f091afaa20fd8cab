#include "working_dir.h"

#include <cstdlib>
#include <cstring>

namespace dftracer::io {

struct WorkingDir::Node {
  Node* next;
  size_t len;   // of `path`, which ends in '/'
  char path[1];  // allocated to len + 1
};

const WorkingDir::Node* WorkingDir::intern(const char* dir) {
  size_t len = std::strlen(dir);
  bool slash = len > 0 && dir[len - 1] == '/';
  size_t want = len + (slash ? 0 : 1);
  for (Node* n = __atomic_load_n(&all_, __ATOMIC_ACQUIRE); n != nullptr; n = n->next)
    if (n->len == want && std::memcmp(n->path, dir, len) == 0) return n;
  Node* n = static_cast<Node*>(std::malloc(sizeof(Node) + want));
  if (n == nullptr) return nullptr;
  std::memcpy(n->path, dir, len);
  n->path[len] = '/';
  n->path[want] = '\0';
  n->len = want;
  n->next = __atomic_load_n(&all_, __ATOMIC_ACQUIRE);
  // Two threads entering the same new directory at once may each add a node:
  // harmless (both strings stay valid), and no worse than one extra string.
  while (!__atomic_compare_exchange_n(&all_, &n->next, n, true, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
  }
  return n;
}

void WorkingDir::publish(const char* dir) {
  const Node* n = dir != nullptr && dir[0] == '/' ? intern(dir) : nullptr;
  __atomic_store_n(&current_, n, __ATOMIC_RELEASE);
}

bool WorkingDir::join(const char* path, char* out, size_t cap) const {
  const Node* cwd = __atomic_load_n(&current_, __ATOMIC_ACQUIRE);
  if (cwd == nullptr) return false;
  while (path[0] == '.' && path[1] == '/') path += 2;
  size_t len = std::strlen(path);
  if (cwd->len + len + 1 > cap) return false;
  std::memcpy(out, cwd->path, cwd->len);
  std::memcpy(out + cwd->len, path, len + 1);
  return true;
}

size_t WorkingDir::distinct() const {
  size_t k = 0;
  for (const Node* n = __atomic_load_n(&all_, __ATOMIC_ACQUIRE); n != nullptr; n = n->next) ++k;
  return k;
}

}  // namespace dftracer::io
