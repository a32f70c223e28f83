// One bind_<concern>() per concern, each in its own bind_<concern>.cpp;
// bindings.cpp calls them all. Binding files only bind: no logic.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

namespace benchctl {
void bind_clock(pybind11::module_& m);
void bind_omp(pybind11::module_& m);
void bind_affinity(pybind11::module_& m);
void bind_cuda(pybind11::module_& m);
void bind_counters(pybind11::module_& m);
void bind_fpenv(pybind11::module_& m);
void bind_sampler(pybind11::module_& m);
void bind_trace(pybind11::module_& m);

// A C++ struct bound as a read-only record: each field() is a named,
// read-only attribute, and repr() lists them in order, e.g.
// TeamMember(omp_thread=0, tid=4242, cpu=3). No constructor: records come
// only from the native calls that return them. Hidden like its pybind11 base
// (the module builds with -fvisibility=hidden; this keeps other builds quiet).
template <typename T>
class __attribute__((visibility("hidden"))) Record : public pybind11::class_<T> {
 public:
  Record(pybind11::handle scope, const char* name, const char* doc)
      : pybind11::class_<T>(scope, name, doc), fields_(std::make_shared<std::vector<std::string>>()) {
    this->def("__repr__", [fields = fields_, type_name = std::string(name)](pybind11::handle self) {
      std::string out = type_name + "(";
      for (size_t i = 0; i < fields->size(); ++i) {
        const std::string& field = (*fields)[i];
        out += (i ? ", " : "") + field + "=" + std::string(pybind11::repr(self.attr(field.c_str())));
      }
      return out + ")";
    });
  }

  template <typename D>
  Record& field(const char* name, const D T::*member, const char* doc) {
    this->def_readonly(name, member, doc);
    fields_->push_back(name);
    return *this;
  }

 private:
  std::shared_ptr<std::vector<std::string>> fields_;  // shared with __repr__
};
}  // namespace benchctl
