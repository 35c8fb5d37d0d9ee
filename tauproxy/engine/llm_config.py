"""Which model plays a role and with which arguments; split into sampling params and connection."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, model_validator

from tauproxy.data_model.call import ConnectionSettings
from tauproxy.data_model.key import without_connection_settings
from tauproxy.data_model.result import ModelInfo
from tauproxy.proxy.families import check_model_options
from tauproxy.redact import redact_llm_args

_CONNECTION_ALIASES = {
    "base_url": "api_base",
    "max_retries": "num_retries",
    "request_timeout": "timeout",
    "headers": "extra_headers",
}


class LLMConfig(BaseModel):
    model: str
    args: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _options_of_its_family(self) -> LLMConfig:
        """The model's `?` options and its llm args, checked against its family's schemas: a
        ModelOptionsError (a ConfigError, so not wrapped by pydantic) names the valid ones."""
        check_model_options(self.model, self.args)
        return self

    def params(self, seed: int | None) -> dict[str, Any]:
        """Sampling parameters for one trial; the per-trial seed travels in every request."""
        params = without_connection_settings(self.args)
        if seed is not None:
            params["seed"] = seed
        return params

    def connection(self) -> ConnectionSettings:
        values: dict[str, Any] = {}
        for name, value in self.args.items():
            target = _CONNECTION_ALIASES.get(name, name)
            if target in ConnectionSettings.model_fields:
                values[target] = value
        return ConnectionSettings(**values)

    def info(self, system_prompt_sha256: str | None = None, implementation: str | None = None) -> ModelInfo:
        """The role as run.json and results.json record it: the args every request carries, never the
        connection settings (where and how long to call changes no answer, so changing them must not
        block a resume), nor anything secret."""
        return ModelInfo(
            llm=self.model,
            llm_args=redact_llm_args(self.params(seed=None)),
            system_prompt_sha256=system_prompt_sha256,
            implementation=implementation,
        )
