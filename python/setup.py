"""pip's build of the torch bridge: `pip install ./python` builds hookscope._C
against the torch of the interpreter running pip, as PyTorch's own C++
extensions are built (torch.utils.cpp_extension). The CMake build
(python/CMakeLists.txt) is the other way, with the same sources.

    python3 -m venv --system-site-packages venv     # sees Debian's torch
    venv/bin/pip install --no-build-isolation ./python

--no-build-isolation: the extension must be built against the torch that
will import it, not a fresh one pip would download into an isolated build
environment. Needs a C++20 compiler and libfmt-dev, libzstd-dev.
"""
import os
import re

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def repo_path(*parts):
    return os.path.relpath(os.path.join(REPO, *parts), HERE)


def version():
    with open(os.path.join(REPO, "CMakeLists.txt")) as f:
        return re.search(r"project\(hookscope VERSION ([0-9.]+)", f.read()).group(1)


def trace_sources():
    with open(os.path.join(HERE, "trace_sources.txt")) as f:
        return [repo_path(line.strip()) for line in f if line.strip() and not line.startswith("#")]


# The trace writer (core/trace) and module.cpp are C++20; nodes.cpp and
# observers.cpp include libtorch's headers, which 1.13 writes in C++17 (they
# use what C++20 removed): the standard is chosen per file, as in CMake.
CXX20 = {os.path.normpath(os.path.join(HERE, p)) for p in trace_sources() + ["hookscope/csrc/module.cpp"]}


class Build(BuildExtension):
    def build_extension(self, ext):
        compile_one = self.compiler._compile  # torch's wrapper, installed by build_extensions

        def compile_with_standard(obj, src, ext_, cc_args, extra_postargs, pp_opts):
            if os.path.normpath(os.path.abspath(src)) in CXX20:
                if isinstance(extra_postargs, dict):
                    extra_postargs = dict(extra_postargs)
                    extra_postargs["cxx"] = [a.replace("-std=c++17", "-std=c++20") for a in extra_postargs["cxx"]]
                else:
                    extra_postargs = [a.replace("-std=c++17", "-std=c++20") for a in extra_postargs]
            return compile_one(obj, src, ext_, cc_args, extra_postargs, pp_opts)

        self.compiler._compile = compile_with_standard
        try:
            super().build_extension(ext)
        finally:
            self.compiler._compile = compile_one


setup(
    name="hookscope",
    version=version(),
    description="Record a PyTorch program's autograd hooks and DDP Reducers for the hookscope debugger",
    packages=["hookscope"],
    python_requires=">=3.11",
    ext_modules=[CppExtension(
        name="hookscope._C",
        sources=sorted(os.path.join("hookscope", "csrc", f) for f in os.listdir(os.path.join(HERE, "hookscope", "csrc"))
                       if f.endswith(".cpp")) + trace_sources(),
        include_dirs=[os.path.join(REPO, "core")],
        define_macros=[("HOOKSCOPE_VERSION", f'"{version()}"'), ("FMT_SHARED", None)],
        extra_compile_args={"cxx": ["-std=c++17", "-O2", "-Wno-unused-parameter", "-Wno-sign-compare",
                                    "-Wno-missing-field-initializers"]},
        libraries=["fmt", "zstd"],
        extra_link_args=["-pthread"],
    )],
    # ninja would compile through its own path, past the per-file standard above.
    cmdclass={"build_ext": Build.with_options(use_ninja=False)},
)
