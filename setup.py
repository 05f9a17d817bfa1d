"""`pip install --no-build-isolation .` (docs/python.md): the package python/trainsim plus its compiled
part, built by the project's own CMake (the target _trainsim only; no tests, no MPI, no GPU module) for
the interpreter that runs pip. Needs the Debian packages of scripts/setup.sh and pybind11-dev and
python3-dev; downloads nothing. The version is the CMake project's."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def version():
    match = re.search(r"project\(trainsim VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text())
    if not match:
        raise RuntimeError("CMakeLists.txt: no `project(trainsim VERSION x.y.z ...)` line")
    return match.group(1)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = Path(self.build_temp).resolve() / "cmake"
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
                        "-DTRAINSIM_BUILD_TESTS=OFF", "-DTRAINSIM_PYTHON=ON", "-DTRAINSIM_MPI=OFF",
                        "-DTRAINSIM_EMULATE_GPU=OFF", f"-DPython_EXECUTABLE={sys.executable}"], check=True)
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "_trainsim", "--parallel", jobs], check=True)
        built = sorted((build_dir / "python" / "trainsim").glob("_trainsim*.so"))
        if len(built) != 1:
            raise RuntimeError(f"expected one _trainsim*.so in {build_dir / 'python' / 'trainsim'}, found {built}")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(built[0], target)


setup(version=version(), packages=["trainsim"], package_dir={"": "python"},
      ext_modules=[Extension("trainsim._trainsim", sources=[])], cmdclass={"build_ext": CMakeBuild})
