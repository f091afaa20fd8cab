// Fixture for the layout check (tests/CMakeLists.txt): a writer file that
// includes an analyzer header, which the check must refuse.
#include "read/summary.hpp"
