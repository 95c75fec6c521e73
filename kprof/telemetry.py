"""GPU telemetry through NVML (``pynvml``): clocks, temperature, power and throttle reasons.

Read before and after each measurement; a result whose SM clock dropped, or during which a
throttle reason other than "idle" or "applications clocks setting" was active, carries a warning.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

# nvmlClocksEventReason* / nvmlClocksThrottleReason* bits
_REASONS = {
    0x1: "gpu-idle",
    0x2: "applications-clocks-setting",
    0x4: "sw-power-cap",
    0x8: "hw-slowdown",
    0x10: "sync-boost",
    0x20: "sw-thermal-slowdown",
    0x40: "hw-thermal-slowdown",
    0x80: "hw-power-brake-slowdown",
    0x100: "display-clock-setting",
}
BENIGN = {"gpu-idle", "applications-clocks-setting"}


@dataclass(frozen=True)
class Snapshot:
    gpu: str
    driver: str
    sm_clock_mhz: int | None
    mem_clock_mhz: int | None
    max_sm_clock_mhz: int | None
    temperature_c: int | None
    power_w: float | None
    reasons: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@contextmanager
def _device(index: int) -> Iterator[tuple[Any, Callable[..., Any]] | None]:
    """(pynvml, read) for GPU ``index``, or None without NVML; ``read(fn, *args)`` is ``fn(handle,
    *args)``, None where this GPU or driver lacks the reading."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no NVML, no telemetry: the measurement stands without it
        yield None
        return
    try:
        target = nvml_target(index, os.environ.get("CUDA_VISIBLE_DEVICES"))
        h = (pynvml.nvmlDeviceGetHandleByUUID(target) if isinstance(target, str)
             else pynvml.nvmlDeviceGetHandleByIndex(target))

        def read(fn: Any, *args: Any) -> object:
            try:
                return fn(h, *args)
            except Exception:  # noqa: BLE001 - a reading this GPU or driver lacks is None, not an error
                return None

        yield pynvml, read
    finally:
        pynvml.nvmlShutdown()


def nvml_target(index: int, visible: str | None) -> int | str:
    """The NVML index (or UUID) of CUDA's device ``index`` under ``CUDA_VISIBLE_DEVICES``: NVML
    counts every GPU of the host, CUDA only the visible ones (``"1"`` -> NVML 1; ``"GPU-8f..."`` ->
    that UUID). CUDA orders devices fastest first and NVML by PCI bus, which agree on a host of
    identical GPUs. Pure."""
    if visible is None or not visible.strip():
        return index
    entries = [e.strip() for e in visible.split(",")]
    if index >= len(entries):
        return index
    entry = entries[index]
    if entry.isdigit():
        return int(entry)
    return entry  # a GPU- or MIG- UUID


def snapshot(index: int = 0) -> Snapshot | None:
    """None when NVML is not available (no driver, no GPU)."""
    with _device(index) as nvml:
        if nvml is None:
            return None
        pynvml, safe = nvml
        mask = safe(getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
                    or pynvml.nvmlDeviceGetCurrentClocksThrottleReasons) or 0
        power = safe(pynvml.nvmlDeviceGetPowerUsage)
        name = safe(pynvml.nvmlDeviceGetName)
        driver = pynvml.nvmlSystemGetDriverVersion()
        return Snapshot(
            gpu=name.decode() if isinstance(name, bytes) else str(name or "unknown GPU"),
            driver=driver.decode() if isinstance(driver, bytes) else str(driver),
            sm_clock_mhz=safe(pynvml.nvmlDeviceGetClockInfo, pynvml.NVML_CLOCK_SM),
            mem_clock_mhz=safe(pynvml.nvmlDeviceGetClockInfo, pynvml.NVML_CLOCK_MEM),
            max_sm_clock_mhz=safe(pynvml.nvmlDeviceGetMaxClockInfo, pynvml.NVML_CLOCK_SM),
            temperature_c=safe(pynvml.nvmlDeviceGetTemperature, pynvml.NVML_TEMPERATURE_GPU),
            power_w=power / 1000 if power is not None else None,
            reasons=[name for bit, name in _REASONS.items() if mask & bit],
        )


def clock_limits(index: int = 0) -> dict[str, int]:
    """NVML's peak memory clock, memory bus width and peak SM clock, in the units of the CUDA device
    attributes they stand in for where a driver no longer gives those (kHz, bits, kHz); {} without
    NVML."""
    with _device(index) as nvml:
        if nvml is None:
            return {}
        pynvml, read = nvml
        mem, sm = (read(pynvml.nvmlDeviceGetMaxClockInfo, clock)
                   for clock in (pynvml.NVML_CLOCK_MEM, pynvml.NVML_CLOCK_SM))
        found = {"memory_clock_khz": mem and int(mem) * 1000,
                 "bus_width_bits": read(pynvml.nvmlDeviceGetMemoryBusWidth),
                 "clock_khz": sm and int(sm) * 1000}
        return {k: int(v) for k, v in found.items() if v}


def free_memory(index: int = 0) -> int | None:
    """The GPU's free memory in bytes (NVML), or None without NVML."""
    with _device(index) as nvml:
        if nvml is None:
            return None
        pynvml, read = nvml
        info = read(pynvml.nvmlDeviceGetMemoryInfo)
        return int(info.free) if info is not None else None


def warnings(before: Snapshot | None, after: Snapshot | None) -> list[str]:
    """What in the telemetry makes a timing less trustworthy. Pure."""
    out: list[str] = []
    if after is None:
        return out
    bad = [r for r in after.reasons if r not in BENIGN]
    if bad:
        out.append(f"throttling during measurement: {', '.join(bad)}")
    if before and before.sm_clock_mhz and after.sm_clock_mhz and after.sm_clock_mhz < 0.9 * before.sm_clock_mhz:
        out.append(f"SM clock dropped from {before.sm_clock_mhz} to {after.sm_clock_mhz} MHz")
    if after.max_sm_clock_mhz and after.sm_clock_mhz and after.sm_clock_mhz < 0.8 * after.max_sm_clock_mhz \
            and "gpu-idle" not in after.reasons:
        out.append(f"SM clock {after.sm_clock_mhz} MHz is well below its maximum "
                   f"{after.max_sm_clock_mhz} MHz")
    return out
