// Every public name of the C and C++ headers (include/dftracer/), checked at
// compile time: a name that disappears from a header fails the build of this
// test. Nothing here is called (sizeof and decltype do not evaluate), so it
// needs no library; the test binary only says it was built.
#include <dftracer/dftracer.h>
#include <dftracer/dftracer.hpp>
#include <dftracer/io.h>
#include <dftracer/torch.h>

#include <cstdio>
#include <type_traits>

#define DFT_PUBLIC(name) static_assert(sizeof(&name) > 0, #name)

// dftracer.h, io.h
DFT_PUBLIC(dft_init);
DFT_PUBLIC(dft_init_opt_in);
DFT_PUBLIC(dft_relocate);
DFT_PUBLIC(dft_env_enable);
DFT_PUBLIC(dft_init_from_env);
DFT_PUBLIC(dft_finalize);
DFT_PUBLIC(dft_enabled);
DFT_PUBLIC(dft_trace_path);
DFT_PUBLIC(dft_trace_prefix);
DFT_PUBLIC(dft_trace_file_name);
DFT_PUBLIC(dft_flush);
DFT_PUBLIC(dft_get_stats);
DFT_PUBLIC(dft_ticks);
DFT_PUBLIC(dft_now_ns);
DFT_PUBLIC(dft_ticks_to_ns);
DFT_PUBLIC(dft_intern);
DFT_PUBLIC(dft_intern_cstr);
DFT_PUBLIC(dft_intern_bounded);
DFT_PUBLIC(dft_string);
DFT_PUBLIC(dft_intern_json_fragment);
DFT_PUBLIC(dft_complete_ticks);
DFT_PUBLIC(dft_complete_ticks_plain);
DFT_PUBLIC(dft_complete_ns);
DFT_PUBLIC(dft_complete_ticks_named);
DFT_PUBLIC(dft_complete_ns_named);
DFT_PUBLIC(dft_region_begin);
DFT_PUBLIC(dft_region_end);
DFT_PUBLIC(dft_instant);
DFT_PUBLIC(dft_instant_named);
DFT_PUBLIC(dft_flow);
DFT_PUBLIC(dft_metadata);
DFT_PUBLIC(dft_metadata_len);
DFT_PUBLIC(dft_custom_metadata_len);
DFT_PUBLIC(dft_hash_metadata);
DFT_PUBLIC(dft_hash_metadata_as);
DFT_PUBLIC(dft_hash64);
DFT_PUBLIC(dft_set_thread_name);
DFT_PUBLIC(dft_metadata_i64);
DFT_PUBLIC(dft_set_process_name);
DFT_PUBLIC(dft_warn);
DFT_PUBLIC(dft_stderr_replaced);
DFT_PUBLIC(dft_stderr_verified);
DFT_PUBLIC(dft_set_tracer_thread_hook);
DFT_PUBLIC(dft_is_tracer_signal_handler);
DFT_PUBLIC(dft_tracer_signal_action);
DFT_PUBLIC(dft_finalize_before_exit);
DFT_PUBLIC(dft_suspend_for_exec);
DFT_PUBLIC(dft_resume_after_failed_exec);
DFT_PUBLIC(dft_stop_tracing_threads);
DFT_PUBLIC(dft_set_launch_scope);
DFT_PUBLIC(dft_launch_scope_current);
DFT_PUBLIC(dft_launch_scope_inline);
DFT_PUBLIC(dft_complete_ns_on_track);
DFT_PUBLIC(dft_flow_ns_on_track);
DFT_PUBLIC(dft_name_track);
DFT_PUBLIC(dft_pid);
DFT_PUBLIC(dft_tid);
DFT_PUBLIC(dft_io_install);
DFT_PUBLIC(dft_io_set_data_dir);
DFT_PUBLIC(dft_io_pause_thread);
DFT_PUBLIC(dft_io_mode);
DFT_PUBLIC(dft_io_direct_syscalls);

// torch.h
DFT_PUBLIC(dftracer::torch::enable);
DFT_PUBLIC(dftracer::torch::disable);
DFT_PUBLIC(dftracer::torch::enabled);
DFT_PUBLIC(dftracer::torch::shapes_enabled);
DFT_PUBLIC(dftracer::torch::flops_enabled);
DFT_PUBLIC(dftracer::torch::enable_noop_for_benchmark);
DFT_PUBLIC(dftracer::torch::enable_from_env);
DFT_PUBLIC(dftracer::torch::set_graph_depth_probe);
DFT_PUBLIC(dftracer::torch::set_graph_memory_probe);
DFT_PUBLIC(dftracer::torch::suspend_this_thread);
DFT_PUBLIC(dftracer::torch::resume_this_thread);

// Types and constants
static_assert(sizeof(dft_stats) > 0, "dft_stats");
static_assert(sizeof(dft_hot_state) > 0, "dft_hot_state");
static_assert(sizeof(dft_launch_scope) > 0, "dft_launch_scope");
static_assert(offsetof(dft_launch_scope, struct_size) == 0 && DFT_LAUNCH_SCOPE_MIN_SIZE <= sizeof(dft_launch_scope),
              "dft_launch_scope opens with its size");
static_assert(sizeof(dft_id) > 0, "dft_id");
static_assert(sizeof(dft_arg_type) > 0, "dft_arg_type");
static_assert(sizeof(dft_arg) > 0, "dft_arg");
static_assert(sizeof(dft_thread_hook) > 0, "dft_thread_hook");
static_assert(DFT_MAX_INLINE_STR > 0 && DFT_MAX_ARGS > 0, "limits");
static_assert(std::is_class_v<dftracer::Session> && std::is_class_v<dftracer::Region>, "C++ API");
static_assert(std::is_same_v<decltype(dftracer::intern("x")), dft_id>, "dftracer::intern");
#if !defined(DFT_REGION) || !defined(DFT_FUNCTION)
#error "DFT_REGION or DFT_FUNCTION is gone from dftracer.hpp"
#endif

int main() {
  std::puts("the public C/C++ API compiles");
  return 0;
}
