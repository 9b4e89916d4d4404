"""Which arithmetic the embedder runs in, chosen by evidence rather than by a CPU flag.

bfloat16 autocast is several times faster than float32 on CPUs with AMX, but on CPUs that have
AVX512-BF16 without AMX (recent AMD parts, some Intel laptops) it can be slower than float32, and
on CPUs with neither it is emulated and always slower. So `auto` picks bfloat16 where AMX is
present, float32 where there is no native bfloat16, and in between measures both on a short fixed
batch with the model already loaded. The measurement is cached per machine in
`<data_dir>/precision-calibration.json`, keyed by everything that makes it valid (CPU model and
flags, torch version, embedder), so it costs a few seconds once.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

log = logging.getLogger(__name__)

Precision = Literal["float32", "bfloat16"]

CALIBRATION_FILE = "precision-calibration.json"

# bfloat16 must beat float32 by this factor to be chosen: a near-tie on a shared machine is noise,
# and float32 is the exact one.
_BF16_MARGIN = 0.9
_ROUNDS = 2


@dataclass(frozen=True)
class CpuInfo:
    """What decides whether bfloat16 is native: the CPU's model name and its feature flags."""

    model: str
    flags: frozenset[str]

    @property
    def amx(self) -> bool:
        return "amx_bf16" in self.flags

    @property
    def avx512_bf16(self) -> bool:
        return "avx512_bf16" in self.flags


def parse_cpuinfo(text: str) -> CpuInfo:
    """The first processor's model name and flags from /proc/cpuinfo text."""
    model, flags = "", ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and not model:
            model = value.strip()
        elif key == "flags" and not flags:
            flags = value.strip()
    return CpuInfo(model=model, flags=frozenset(flags.split()))


def read_cpuinfo(path: Path = Path("/proc/cpuinfo")) -> CpuInfo:
    try:
        return parse_cpuinfo(path.read_text())
    except OSError:
        return CpuInfo(model="", flags=frozenset())


@dataclass(frozen=True)
class PrecisionChoice:
    """The precision the embedder runs in, and why (shown by `cuerag index` and `cuerag bench`)."""

    precision: Precision
    reason: str


@dataclass(frozen=True)
class Calibration:
    """Best-of-rounds seconds of the same batch in each precision."""

    float32_s: float
    bfloat16_s: float

    def choice(self) -> PrecisionChoice:
        faster = self.bfloat16_s < _BF16_MARGIN * self.float32_s
        return PrecisionChoice(
            "bfloat16" if faster else "float32",
            f"calibrated: f32 {self.float32_s:.2f} s vs bf16 {self.bfloat16_s:.2f} s",
        )


def calibrate(
    run: Callable[[Precision], object],
    *,
    timer: Callable[[], float] = time.perf_counter,
    rounds: int = _ROUNDS,
) -> Calibration:
    """Time `run` (one fixed batch through the embedder) in each precision. A warm-up of each goes
    first (first calls allocate), then the two alternate so that a burst of load elsewhere on the
    machine hits both; the best round of each counts."""
    both: tuple[Precision, Precision] = ("float32", "bfloat16")
    for precision in both:
        run(precision)
    best: dict[Precision, float] = {"float32": float("inf"), "bfloat16": float("inf")}
    for _ in range(rounds):
        for precision in both:
            start = timer()
            run(precision)
            best[precision] = min(best[precision], timer() - start)
    return Calibration(float32_s=best["float32"], bfloat16_s=best["bfloat16"])


_VOCABULARY = (
    "the river city was born in and of a film directed by her album released first year later band "
    "team played for company founded which located north county state university studied music "
    "novel written known as his second wife died at age church built village population census "
    "railway station opened football club league season award won series episode television"
)


def calibration_texts(count: int = 32, words: int = 60) -> list[str]:
    """A fixed synthetic batch shaped like indexed chunks (about 80 tokens each): the same on
    every run, so that calibrations compare."""
    rng = random.Random(16)
    vocabulary = _VOCABULARY.split()
    return [" ".join(rng.choice(vocabulary) for _ in range(words)) + "." for _ in range(count)]


def calibration_key(cpu: CpuInfo, *, torch_version: str, embedder: str) -> str:
    """What a calibration holds for: another CPU, torch build or model measures anew."""
    raw = json.dumps([cpu.model, sorted(cpu.flags), torch_version, embedder])
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


class CalibrationCache:
    """Calibrations by key in one JSON file. A missing, unreadable or corrupt file is an empty
    cache (the cost is one more calibration); a read-only data directory is never written."""

    def __init__(self, path: Path, *, writable: bool = True) -> None:
        self.path = path
        self._writable = writable

    def _entries(self) -> dict[str, dict[str, object]]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, key: str) -> Calibration | None:
        entry = self._entries().get(key)
        if not isinstance(entry, dict):
            return None
        try:
            return Calibration(float32_s=float(entry["float32_s"]), bfloat16_s=float(entry["bfloat16_s"]))  # type: ignore[arg-type]
        except (KeyError, TypeError, ValueError):
            return None

    def put(self, key: str, calibration: Calibration, *, about: str) -> None:
        if not self._writable:
            return
        entries = self._entries()
        entries[key] = {
            "float32_s": round(calibration.float32_s, 4),
            "bfloat16_s": round(calibration.bfloat16_s, 4),
            "about": about,
            "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(entries, indent=2))
            tmp.replace(self.path)  # atomic: two engines starting at once each leave a whole file
        except OSError as exc:
            log.warning("cannot save the precision calibration to %s: %s", self.path, exc)


def choose_precision(
    requested: str,
    *,
    device: str,
    cpu: CpuInfo,
    measure: Callable[[], Calibration],
    cache: CalibrationCache,
    key: str,
) -> PrecisionChoice:
    """The embedder's precision: the user's if set; on a CPU, bfloat16 with AMX, float32 without
    native bfloat16, and a cached calibration (`measure` runs at most once per key) in between."""
    if requested in ("float32", "bfloat16"):
        return PrecisionChoice(requested, "set by user")  # type: ignore[arg-type]
    if requested != "auto":
        raise ValueError(f"unknown precision {requested!r}")
    if device != "cpu":
        # autocast on a GPU is not measured here; float32 is the exact choice.
        return PrecisionChoice("float32", f"device {device}: float32 unless set")
    if cpu.amx:
        return PrecisionChoice("bfloat16", "AMX present")
    if not cpu.avx512_bf16:
        return PrecisionChoice("float32", "no native bf16")
    calibration = cache.get(key)
    if calibration is None:
        calibration = measure()
        cache.put(key, calibration, about=cpu.model)
        log.info(
            "precision calibration: float32 %.2f s, bfloat16 %.2f s", calibration.float32_s, calibration.bfloat16_s
        )
    return calibration.choice()
