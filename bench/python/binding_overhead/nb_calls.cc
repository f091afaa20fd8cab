#include <nanobind/nanobind.h>
#include "calls.h"
NB_MODULE(nb_calls, m) {
  m.def("noop", &noop);
  m.def("ticks", &ticks);
  m.def("end", &end);
}
