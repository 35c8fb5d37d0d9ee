"""Safe arithmetic for domains' calculator tools: numbers, + - * / and parentheses, never eval."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable

from tauproxy.errors import ToolExecutionError

_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
_UNARY: dict[type[ast.unaryop], Callable[[float], float]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def evaluate_arithmetic(expression: str) -> float:
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        raise ToolExecutionError(f"not an arithmetic expression: {expression}") from None
    return _evaluate(tree.body)


def _evaluate(node: ast.expr) -> float:
    """Walk the parsed expression; anything but numbers and the four operations is refused."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Div) and right == 0:
            raise ToolExecutionError("division by zero")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    raise ToolExecutionError("only numbers, + - * / and parentheses are allowed")
