"""τ²-bench's prompt texts, read from the installed package without importing the modules that hold them.

τ²'s agent (`tau2.agent.llm_agent`), user simulator (`tau2.user.user_simulator`) and orchestrator
import `tau2.utils.llm_utils`, which imports litellm at module level (about 4.6 s, and strict replay
must never import litellm). Their prompts are module-level string constants, so tauproxy reads them
from the installed source files with `ast` (nothing is executed, nothing copied into this repository):

    llm_agent.py       AGENT_INSTRUCTION, SYSTEM_PROMPT    the agent's system prompt
    user_simulator.py  SYSTEM_PROMPT                       the user simulator's system prompt
    orchestrator.py    DEFAULT_FIRST_AGENT_MESSAGE         the agent's fixed greeting

The guidelines the user simulator's prompt embeds are data files, read as τ² reads them. A
constant that is missing or not a plain string (a τ² version that builds them differently) is a
ConfigError naming it; tests/tau2bench compare every text with what τ²'s own classes produce.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tauproxy.derived_cache import cached
from tauproxy.errors import ConfigError
from tauproxy.tau2bench.derived import prompt_files, tau2_inputs

GREETING_CALL = "AssistantMessage"


@dataclass(frozen=True)
class Tau2Prompts:
    agent_instruction: str
    agent_system_template: str  # {agent_instruction} and {domain_policy}
    user_system_template: str  # {global_user_sim_guidelines} and {instructions}
    user_guidelines: str  # the user simulator without tools
    user_guidelines_tools: str  # with tools (dual control)
    greeting: str

    def agent_system_prompt(self, policy: str) -> str:
        return self.agent_system_template.format(domain_policy=policy, agent_instruction=self.agent_instruction)

    def user_system_prompt(self, instructions: str, with_tools: bool) -> str:
        guidelines = self.user_guidelines_tools if with_tools else self.user_guidelines
        return self.user_system_template.format(global_user_sim_guidelines=guidelines, instructions=instructions)


@cache
def tau2_prompts() -> Tau2Prompts:
    """τ²'s prompts, from tauproxy's cross-process cache while τ²'s files are the ones they were read from."""
    return cached("tau2-prompts", tau2_inputs(prompt_files(), "source.py"), Tau2Prompts, read_prompts)


def read_prompts() -> Tau2Prompts:
    import tau2

    package = Path(tau2.__file__).parent
    agent = _constants(package / "agent" / "llm_agent.py")
    user = _constants(package / "user" / "user_simulator.py")
    greeting = _greeting(package / "orchestrator" / "orchestrator.py")
    from tau2.utils import DATA_DIR

    guidelines = Path(DATA_DIR) / "tau2" / "user_simulator"
    return Tau2Prompts(
        agent_instruction=_need(agent, "AGENT_INSTRUCTION", "llm_agent.py"),
        agent_system_template=_need(agent, "SYSTEM_PROMPT", "llm_agent.py"),
        user_system_template=_need(user, "SYSTEM_PROMPT", "user_simulator.py"),
        user_guidelines=(guidelines / "simulation_guidelines.md").read_text(),
        user_guidelines_tools=(guidelines / "simulation_guidelines_tools.md").read_text(),
        greeting=greeting,
    )


def _string(node: ast.expr) -> str | None:
    """A string literal, or a string literal's `.strip()` (how τ² writes its triple-quoted prompts)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if (
        isinstance(node, ast.Call)
        and not node.args
        and not node.keywords
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "strip"
    ):
        inner = _string(node.func.value)
        return inner.strip() if inner is not None else None
    return None


def _module(path: Path) -> ast.Module:
    try:
        return ast.parse(path.read_text(), filename=str(path))
    except (OSError, SyntaxError) as exc:
        raise ConfigError(f"τ²-bench's {path.name} cannot be read: {exc}") from None


def _constants(path: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for node in _module(path).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            text = _string(node.value)
            if text is not None:
                found[node.targets[0].id] = text
    return found


def _need(constants: dict[str, str], name: str, where: str) -> str:
    if name not in constants:
        raise ConfigError(f"τ²-bench's {where} has no string constant {name}: this τ² version is not supported")
    return constants[name]


def _greeting(path: Path) -> str:
    for node in _module(path).body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "DEFAULT_FIRST_AGENT_MESSAGE"
            and isinstance(node.value, ast.Call)
        ):
            for keyword in node.value.keywords:
                if keyword.arg == "content":
                    text = _string(keyword.value)
                    if text is not None:
                        return text
    raise ConfigError(
        "τ²-bench's orchestrator.py has no DEFAULT_FIRST_AGENT_MESSAGE content: this τ² version is not supported"
    )
