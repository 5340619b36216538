// sinkscope._sinkscope: the compiled part of the sinkscope Python package (python/sinkscope/ holds the
// Python part, which users import). One translation unit: the library is header-only and heavy to
// compile, so the bindings are small headers included here (models and hooks; theory functions; planted models).
#include <nanobind/nanobind.h>

#include <sinkscope/core/error.hpp>
#include <sinkscope/version.hpp>

#include "bind_model.hpp"
#include "bind_planted.hpp"
#include "bind_theory.hpp"

NB_MODULE(_sinkscope, m) {
    // sinkscope::Error keeps its message, "sinkscope: … [file F] [tensor N] [offset O]".
    nanobind::exception<sinkscope::Error>(m, "Error", PyExc_RuntimeError);
    m.attr("__version__") = sinkscope::version();
    sinkscope::python::bind_model(m);
    sinkscope::python::bind_theory(m);
    sinkscope::python::bind_planted(m);
}
