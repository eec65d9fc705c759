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
            models = _models_in(field.annotation)
            values = data[key] if isinstance(data[key], list) else [data[key]]
            for i, value in enumerate(values):
                if isinstance(value, dict):
                    for nested in _members_for(models, value):
                        _required_present(nested, value, f"{where}.{key}[{i}]")


def _members_for(models: list[type[BaseModel]], value: dict[str, Any]) -> list[type[BaseModel]]:
    """The members of a union that ``value`` is: those whose ``type`` literal names its type (a discriminated
    union, as the Responses API's items and parts are), else every member."""
    typed = [m for m in models if value.get("type") in typing.get_args(_type_literal(m))]
    return typed or models


def _type_literal(model: type[BaseModel]) -> Any:
    field = model.model_fields.get("type")
    return field.annotation if field is not None else None


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]
