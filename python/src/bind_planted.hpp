// Bindings: writing planted-mechanism models (train/planted_export.hpp), the models the verdict rules are
// calibrated on, so that Python users can calibrate their own methods on them (sinkscope.planted).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <string>

#include <sinkscope/train/planted_export.hpp>

namespace sinkscope::python {

inline void bind_planted(nanobind::module_& m) {
    namespace nb = nanobind;
    m.def("_write_planted",
          [](const std::string& construction, const std::string& out, bool twin, double dose, std::uint64_t seed,
             const std::string& layout) {
              train::PlantedRequest r;
              r.construction = construction;
              r.twin = twin;
              r.massive.dose = dose;
              r.massive.seed = seed;
              nlohmann::json note = train::write_planted(out, train::planted_config(construction, layout), r);
              note["layout"] = layout;
              return note.dump();
          },
          nb::arg("construction"), nb::arg("out"), nb::arg("twin"), nb::arg("dose"), nb::arg("seed"), nb::arg("layout"));
}

}  // namespace sinkscope::python
