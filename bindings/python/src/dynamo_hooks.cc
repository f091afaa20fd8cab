// Placeholder: the capture-backend work replaces this file with the
// torch.compile hook entry points. Until then the module has none.
#include "module.h"

namespace dft_py {

void register_dynamo(nanobind::module_& /*m*/) {}

}  // namespace dft_py
