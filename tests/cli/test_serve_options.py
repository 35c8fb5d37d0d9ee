"""`tauproxy serve`'s defaults are ServeConfig's (written out in cli/serve.py so --help imports no server
model), so a server started either way behaves alike."""

from __future__ import annotations

import dataclasses
import inspect

from tauproxy.serve.config import ServeConfig
from tauproxy_cli.serve import serve_command


def test_serve_flag_defaults_are_serve_config_defaults() -> None:
    flags = inspect.signature(serve_command).parameters
    config = {f.name: f.default for f in dataclasses.fields(ServeConfig) if f.default is not dataclasses.MISSING}
    shared = set(flags) & set(config)
    assert {"host", "port", "max_body_bytes", "read_timeout_s", "session_idle_s"} <= shared
    for name in shared:
        assert flags[name].default == config[name], name
