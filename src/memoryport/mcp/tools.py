"""MCP tools from memoryport's tool schemas, and the two tools only the server has.

``memory``, ``session_search`` and the active provider's tools keep the JSON schema
``Memory.tool_schemas()`` gives them; the arguments are checked against the schema's
property types (strict: a number is not a string) before the call, and unknown argument
names are refused. ``remember_turn`` feeds the session store and providers for a client
without lifecycle hooks; ``recall`` returns the fenced prefetch for a query.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Union

from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import CallToolResult, TextContent
from pydantic import (
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    create_model,
)

from memoryport.errors import tool_error_json
from memoryport.fence import build_memory_context_block
from memoryport.mcp.clients import ClientState

__all__ = [
    "SERVER_TOOLS",
    "DirectArguments",
    "ToolCall",
    "direct_arguments",
    "recall",
    "remember_turn",
    "schema_tool",
    "tool_result",
    "tool_result_wire",
]

ToolCall = Callable[[str, dict[str, Any]], Awaitable[CallToolResult]]
"""``call(tool_name, arguments) -> result``: runs one tool for the calling client."""

_TYPES: dict[str, Any] = {
    "string": StrictStr,
    "integer": StrictInt,
    "number": Union[StrictInt, StrictFloat],  # noqa: UP007 (a runtime type expression)
    "boolean": StrictBool,
    "array": list[Any],
    "object": dict[str, Any],
}

SERVER_TOOLS: list[dict[str, Any]] = [
    {
        "name": "remember_turn",
        "description": (
            "Store one completed conversation turn (the user's message and your final "
            "answer) in this client's session, and sync it to the memory providers. Call it "
            "once per turn, after answering."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "user": {"type": "string", "description": "The user's message."},
                "assistant": {"type": "string", "description": "Your final answer."},
            },
            "required": ["user", "assistant"],
        },
    },
    {
        "name": "recall",
        "description": (
            "Recall what memory knows that is relevant to a query (the user's message), as "
            "one fenced <memory-context> block: background, not new user input."
        ),
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "The user's message."}},
            "required": ["query"],
        },
    },
]
"""The tools only the MCP server has (their names are reserved in every client's memory)."""


class _Arguments(ArgModelBase):
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")


def _arg_model(name: str, schema: dict[str, Any]) -> type[ArgModelBase]:
    properties = schema.get("properties")
    props: dict[str, Any] = properties if isinstance(properties, dict) else {}
    required = set(schema.get("required") or ())
    fields: dict[str, Any] = {}
    for index, (prop, spec) in enumerate(props.items()):
        kind = spec.get("type") if isinstance(spec, dict) else None
        annotation = _TYPES.get(kind, Any) if isinstance(kind, str) else Any
        if prop in required:
            fields[f"arg{index}"] = (annotation, Field(alias=prop))
        else:
            fields[f"arg{index}"] = (annotation | None, Field(default=None, alias=prop))
    model: type[ArgModelBase] = create_model(
        f"{name}Arguments", __base__=_Arguments, **fields
    )
    return model


def _input_schema(schema: Any) -> dict[str, Any]:
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return {"type": "object", "properties": {}}
    return dict(schema)


def schema_tool(schema: dict[str, Any], call: ToolCall) -> Tool:
    """An MCP tool with ``schema``'s name, description and parameters that runs ``call``."""
    name = str(schema["name"])
    parameters = _input_schema(schema.get("parameters"))

    async def run(**arguments: Any) -> CallToolResult:
        given = {key: value for key, value in arguments.items() if value is not None}
        return await call(name, given)

    tool = Tool.from_function(
        run, name=name, description=str(schema.get("description") or name),
        structured_output=False,
    )
    tool.parameters = parameters
    tool.fn_metadata = FuncMetadata(arg_model=_arg_model(name, parameters))
    return tool


@dataclass(frozen=True)
class DirectArguments:
    """One tool's argument check for the server's direct ``tools/call`` path: the same
    model ``schema_tool`` gives the SDK, or "leave this call to the SDK"."""

    model: type[ArgModelBase]
    text_fields: frozenset[str]

    def parse(self, arguments: Mapping[str, Any]) -> dict[str, Any] | None:
        """The arguments the tool runs with (validated, ``None`` values dropped), or None
        when the SDK must take the call: a string given for a field that is not a string
        (the SDK may read it as JSON first) or arguments that fail the check (the SDK
        writes the error result)."""
        for key, value in arguments.items():
            if isinstance(value, str) and key not in self.text_fields:
                return None
        try:
            parsed = self.model.model_validate(arguments)
        except ValidationError:
            return None
        return {k: v for k, v in parsed.model_dump_one_level().items() if v is not None}


def direct_arguments(schema: dict[str, Any]) -> DirectArguments:
    """The :class:`DirectArguments` of a memoryport tool schema."""
    parameters = _input_schema(schema.get("parameters"))
    properties = parameters.get("properties")
    props: dict[str, Any] = properties if isinstance(properties, dict) else {}
    texts = frozenset(
        name for name, spec in props.items()
        if isinstance(spec, dict) and spec.get("type") == "string"
    )  # fmt: skip
    return DirectArguments(_arg_model(str(schema["name"]), parameters), texts)


def _answer(text: str) -> tuple[dict[str, Any] | None, bool]:
    try:
        data = json.loads(text)
    except ValueError:
        return None, False
    structured = data if isinstance(data, dict) else None
    return structured, structured is not None and structured.get("success") is False


def tool_result(text: str) -> CallToolResult:
    """A memoryport tool's JSON answer as an MCP result (``isError`` on ``success: false``)."""
    structured, failed = _answer(text)
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=failed,
    )


def tool_result_wire(text: str, *, error: bool = False) -> dict[str, Any]:
    """:func:`tool_result` as the wire mapping ``CallToolResult`` dumps to (before the
    protocol version's sieve); ``error``: a failure message, not a tool's answer."""
    structured, failed = (None, True) if error else _answer(text)
    wire: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if structured is not None:
        wire["structuredContent"] = structured
    wire["isError"] = failed
    wire["resultType"] = "complete"
    return wire


def _blank(name: str, **values: str) -> str | None:
    for key, value in values.items():
        if not value.strip():
            return tool_error_json(
                f"{name}: {key!r} is empty; pass the text of the turn", "ToolArgumentError"
            )
    return None


def remember_turn(state: ClientState, user: str, assistant: str) -> str:
    """Store one turn in the client's session (the turn ``recall`` opened for the same
    message, else a new one) and sync providers; the JSON answer."""
    problem = _blank("remember_turn", user=user, assistant=assistant)
    if problem:
        return problem
    memory = state.memory
    with state.lock:
        turn = state.pending
        state.pending = None
    if turn is None or turn.closed or turn.query.strip() != user.strip():
        turn = memory.begin_turn(user)
    memory.end_turn(turn, assistant)
    return json.dumps({"success": True, "session_id": turn.session_id, "turn": turn.number})


def recall(state: ClientState, query: str) -> str:
    """Open the client's next turn for ``query`` (prefetch runs once) and return its fenced
    recall; a following ``remember_turn`` with the same message closes that turn."""
    problem = _blank("recall", query=query)
    if problem:
        return problem
    turn = state.memory.begin_turn(query)
    with state.lock:
        state.pending = turn
    block = build_memory_context_block(turn.contexts, budget_chars=turn.budget_chars)
    return json.dumps(
        {
            "success": True,
            "context": block,
            "providers": [label for label, _ in turn.contexts],
            "session_id": turn.session_id,
        },
        ensure_ascii=False,
    )
