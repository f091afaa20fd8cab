/* A C user of the installed core: the public header is C99 (its inline
 * hot-path helpers included), built with -pedantic -Werror by the
 * find_package test, and the C API records an event. */
#include <stdio.h>

#include "dftracer/dftracer.h"

int main(int argc, char** argv) {
  uint64_t t0, t1;
  if (argc < 2 || dft_init_opt_in(argv[1], NULL, -1) != 0) return 2;
  if (!dft_enabled_inline()) return 4;
  t0 = dft_ticks_inline();
  t1 = dft_ticks_inline();
  if (t1 < t0) return 5;
  dft_complete_ticks(dft_intern_cstr("c_consumer"), dft_intern_cstr("app"), t0, t1, NULL, 0);
  dft_finalize();
  if (dft_enabled_inline()) return 6;
  printf("ok\n");
  return 0;
}
