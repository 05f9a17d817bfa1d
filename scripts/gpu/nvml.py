"""NVML through ctypes (libnvidia-ml.so.1 comes with the driver; nothing to install): the board's
energy counter, power, limit and clocks, for scripts/gpu/power.py and train_step.py.

  from nvml import Nvml
  g = Nvml(0); e0 = g.energy_j(); ...; joules = g.energy_j() - e0

nvmlDeviceGetTotalEnergyConsumption counts millijoules since the driver loaded (Volta and later),
which integrates the draw between samples; the instantaneous figure is nvmlDeviceGetPowerUsage.
"""
import ctypes

NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_TEMPERATURE_GPU = 0


class NvmlError(RuntimeError):
    pass


class Nvml:
    def __init__(self, index=0):
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        self._check(self.lib.nvmlInit_v2(), "nvmlInit_v2")
        self.handle = ctypes.c_void_p()
        self._check(self.lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(self.handle)),
                    "nvmlDeviceGetHandleByIndex_v2")

    def _check(self, rc, what):
        if rc != 0:
            raise NvmlError(f"{what} returned NVML error {rc}")

    def _uint(self, fn, *args):
        v = ctypes.c_uint()
        self._check(getattr(self.lib, fn)(self.handle, *args, ctypes.byref(v)), fn)
        return v.value

    def energy_j(self):
        v = ctypes.c_ulonglong()
        self._check(self.lib.nvmlDeviceGetTotalEnergyConsumption(self.handle, ctypes.byref(v)),
                    "nvmlDeviceGetTotalEnergyConsumption")
        return v.value / 1000.0

    def power_w(self):
        return self._uint("nvmlDeviceGetPowerUsage") / 1000.0

    def limit_w(self):
        return self._uint("nvmlDeviceGetEnforcedPowerLimit") / 1000.0

    def sm_clock_mhz(self):
        return self._uint("nvmlDeviceGetClockInfo", NVML_CLOCK_SM)

    def mem_clock_mhz(self):
        return self._uint("nvmlDeviceGetClockInfo", NVML_CLOCK_MEM)

    def temperature_c(self):
        return self._uint("nvmlDeviceGetTemperature", NVML_TEMPERATURE_GPU)


def try_open(index=0):
    """An Nvml, or None where the library or the counter is missing (the step still runs)."""
    try:
        g = Nvml(index)
        g.energy_j()
        return g
    except (OSError, NvmlError, AttributeError):
        return None
