// "hhash", the arg every event carries: the host hash, which DFTracer's tools
// join with the HH metadata event to name the host. The key is the
// format's, so a user's own arg of that name is written as "user_hhash"
// (its value kept, ours not overridden, no key twice in one object): the
// formatter renames record args, dft_intern_json_fragment renames members
// of interned fragments.
#ifndef DFTRACER_SRC_FILE_HOST_HASH_KEY_H_
#define DFTRACER_SRC_FILE_HOST_HASH_KEY_H_

namespace dftracer {

constexpr char kHostHashKey[] = "hhash";
constexpr char kUserHostHashKey[] = "user_hhash";

}  // namespace dftracer

#endif  // DFTRACER_SRC_FILE_HOST_HASH_KEY_H_
