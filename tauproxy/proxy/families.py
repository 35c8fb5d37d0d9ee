"""Model families: which transport answers a model name, and the option schemas each one registers.

    scripted/...   in-process stand-ins (proxy/scripted.py): per-model options after `?`, the
                   common sampling args (accepted, change no answer)
    local/...      llama.cpp models (proxy/local.py): no options after `?`, llama.cpp's sampling args
    anything else  a provider through litellm (proxy/live.py): the name is the provider's; the
                   common sampling args are typed, other args pass on to the provider as given

`check_model_options` is what LLMConfig runs on every model and its llm args, so a bad option is one
line before anything is planned, for the CLI, the Python API and the pytest plugin alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from tauproxy.data_model.key import without_connection_settings
from tauproxy.errors import ConfigError
from tauproxy.proxy.local import PREFIX as LOCAL_PREFIX
from tauproxy.proxy.local import LocalArgs, check_local_name
from tauproxy.proxy.model_options import SamplingArgs, check_llm_args
from tauproxy.proxy.scripted import PREFIX as SCRIPTED_PREFIX
from tauproxy.proxy.scripted import ScriptedArgs, parse_spec


class ProviderArgs(SamplingArgs):
    """A provider model's llm args: the common sampling args typed, any other arg (reasoning_effort,
    response_format, a provider's own) passed on to litellm as given, for the provider to judge."""

    model_config = ConfigDict(extra="allow")


@dataclass(frozen=True)
class ModelFamily:
    name: str
    prefix: str  # "" for the provider family, which takes every name the others do not
    # Raises a ConfigError if the name (with its `?` options) is not one this family can answer.
    check_name: Callable[[str], object]
    args: type[BaseModel]

    def owns(self, model: str) -> bool:
        return model.startswith(self.prefix)


def _any_name(model: str) -> None:
    return None


FAMILIES: tuple[ModelFamily, ...] = (
    ModelFamily("scripted", SCRIPTED_PREFIX, parse_spec, ScriptedArgs),
    ModelFamily("local", LOCAL_PREFIX, check_local_name, LocalArgs),
    ModelFamily("provider", "", _any_name, ProviderArgs),  # last: it owns every name
)


def family_of(model: str) -> ModelFamily:
    return next(family for family in FAMILIES if family.owns(model))


# Longer than any provider's model name (a Bedrock ARN is about 100 characters).
MAX_MODEL_NAME = 512


def check_model_name(model: str) -> None:
    """Refuse a name no family could answer: empty, over MAX_MODEL_NAME, or holding whitespace, control
    characters or bytes that were not UTF-8 (a lone surrogate)."""
    shown = model if len(model) <= 60 else f"{model[:40]}... ({len(model):,} characters)"
    if not model:
        raise ConfigError("the model name is empty")
    if len(model) > MAX_MODEL_NAME:
        raise ConfigError(f"model name {shown!r} is over {MAX_MODEL_NAME} characters")
    if any(c.isspace() or not c.isprintable() for c in model):  # a lone surrogate is not printable
        raise ConfigError(f"model name {shown!r} holds whitespace, a control character or a byte that is not UTF-8")


def check_model_options(model: str, args: dict[str, Any]) -> None:
    """Refuse, with one line naming the valid options, a model name whose `?` options its family does
    not take, or llm args (connection settings aside) of an unknown key, wrong type or out of range."""
    check_model_name(model)
    family = family_of(model)
    family.check_name(model)
    check_llm_args(model, without_connection_settings(args), family.args)
