"""Checks a response body against the OpenAI API reference as the official SDK encodes it (its pydantic
types): every field the reference requires is present, at every depth, and the body validates."""

from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel


def assert_matches_reference(model: type[BaseModel], data: Any, where: str = "body") -> None:
    model.model_validate(data)
    _required_present(model, data, where)


def _required_present(model: type[BaseModel], data: Any, where: str) -> None:
    assert isinstance(data, dict), f"{where}: expected an object, got {data!r}"
    for name, field in model.model_fields.items():
        key = field.alias or name
        if field.is_required():
            assert key in data, f"{where}.{key} is required by the reference and missing"
        if key in data and data[key] is not None:
            for nested in _models_in(field.annotation):
                values = data[key] if isinstance(data[key], list) else [data[key]]
                for i, value in enumerate(values):
                    if isinstance(value, dict):
                        _required_present(nested, value, f"{where}.{key}[{i}]")


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]
