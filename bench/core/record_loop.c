/* Instructions per record call, for callgrind (bench/core/record_instructions.sh):
 *   record_loop N region|record|op
 * N region calls (dft_region_begin + dft_region_end, no args), record-only
 * calls (dft_complete_ticks, no args) or op events (two JSON-fragment args). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dftracer/dftracer.h"
int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 100000;
  const char* mode = argc > 2 ? argv[2] : "region";
  setenv("DFTRACER_LOG_LEVEL", "error", 1);
  dft_init_opt_in("/tmp/dft-record-loop/loop", NULL, -1);
  dft_id name = dft_intern_cstr("function.mm.default"), cat = dft_intern_cstr("dynamo");
  uint64_t t = dft_ticks();
  /* warm: attach the thread */
  dft_region_end(name, cat, dft_region_begin(), NULL, 0);
  if (!strcmp(mode, "region"))
    for (int i = 0; i < n; ++i) { uint64_t t0 = dft_region_begin(); dft_region_end(name, cat, t0, NULL, 0); }
  else if (!strcmp(mode, "record"))
    for (int i = 0; i < n; ++i) dft_complete_ticks(name, cat, t + i, t + i + 7, NULL, 0);
  else if (!strcmp(mode, "op")) {
    static const char kNode[] = "\"graph\":0,\"node\":17";
    dft_arg args[2]; memset(args, 0, sizeof args);
    args[0].type = DFT_ARG_JSON; args[0].v.id = dft_intern_json_fragment(kNode, sizeof kNode - 1);
    args[1].type = DFT_ARG_JSON; args[1].v.id = args[0].v.id;
    for (int i = 0; i < n; ++i) dft_complete_ticks(name, cat, t + i, t + i + 7, args, 2);
  }
  dft_stats st; dft_get_stats(&st);
  dft_finalize();
  fprintf(stderr, "recorded %llu\n", (unsigned long long)st.events_recorded);
  return 0;
}
