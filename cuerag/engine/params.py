"""Retrieval parameters from loose values (a tool's arguments, the CLI's options), with range
errors turned into `InvalidArguments` that name each field, its value and its allowed range."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from cuerag.config import QIterParams
from cuerag.errors import ArgumentProblem, InvalidArguments


def make_params(**overrides: object) -> QIterParams:
    """QIterParams from loose values (None means the default), range errors as InvalidArguments."""
    try:
        return QIterParams(**{k: v for k, v in overrides.items() if v is not None})  # type: ignore[arg-type]
    except ValidationError as exc:
        raise InvalidArguments("retrieval parameters", [_problem(e) for e in exc.errors()]) from exc


def _problem(error: Any) -> ArgumentProblem:
    name = ".".join(str(p) for p in error["loc"])
    allowed = None
    field = QIterParams.model_fields.get(name)
    if field is not None:
        bounds = {type(m).__name__: m for m in field.metadata}
        low, high = bounds.get("Ge"), bounds.get("Le")
        if low is not None and high is not None:
            allowed = (low.ge, high.le)
    return ArgumentProblem(name, error["msg"], error.get("input"), allowed)
