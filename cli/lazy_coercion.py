"""typer checks an option's value through a pydantic adapter: built on the first value, not before.

typer (0.29) builds a parameter's checker when the parameter is first processed, whatever its value,
though a missing value (None) never reaches it. On `tauproxy CMD --help` the root's own options are
processed with no value (`--install-completion`, `--show-completion`), and building their checker
imports pydantic: about 0.1 s of start-up for nothing. This defers the build to the first value, so a
parameter without one costs nothing; every value given is checked exactly as typer checks it.

A private hook of typer's (older typers have none: then nothing is changed).
tests/cli/test_lazy_commands.py checks that every command's `--help` leaves pydantic unloaded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tauproxy.runner.collector import paused_collector


def apply() -> None:
    try:
        import typer.core
        from typer._coercion import RuntimeParam, TypeDescriptor, build_runtime_param
    except ImportError:
        return
    if getattr(typer.core, "build_runtime_param", None) is not build_runtime_param:
        return  # already applied, or typer no longer builds checkers this way

    @dataclass(frozen=True)
    class BuiltOnFirstValue(RuntimeParam):
        descriptor: TypeDescriptor
        built: list[RuntimeParam] = field(default_factory=list)  # typer's own checker, once built

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if not self.built:
                # The first one imports pydantic; checkers live as long as the process, so the
                # collector's passes while they are built find no garbage (runner/collector.py).
                with paused_collector():
                    self.built.append(build_runtime_param(self.descriptor))
            return self.built[0]._coerce_value(value, param=param, ctx=ctx)

    def build_on_first_value(descriptor: TypeDescriptor) -> RuntimeParam:
        return BuiltOnFirstValue(
            parameter_info=descriptor.parameter_info, annotation=descriptor.annotation, descriptor=descriptor
        )

    typer.core.build_runtime_param = build_on_first_value  # type: ignore[attr-defined]
