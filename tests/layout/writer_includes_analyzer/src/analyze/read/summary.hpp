// Fixture for the layout check (tests/CMakeLists.txt): an analyzer header.
#pragma once
