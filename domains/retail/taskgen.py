"""Compositional task generator of the retail domain.

A task is one customer with one or two intents. Each intent is built by a "part builder" under a
condition: allowed, or forbidden by one policy rule (order status, items already modified, return
window, stock, gift card balance). Conditions also vary what the customer knows: email or name + zip
for authentication, and the order id or only a product that identifies the order.

Builders pick records from the DB as built and compute every figure from the trial state, and the
generator runs each golden action through the real tools (checking `policy_check` too) before a task is
accepted, so a shipped task can always be solved exactly as written.

    python -m tauproxy_domains.retail.taskgen      # rewrites tasks.json (seed 0, 60 tasks)
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tauproxy.domain.state import BaseState, State
from tauproxy.domain.tools import DomainFunction, marked_functions
from tauproxy.errors import ToolExecutionError

from . import tools
from .db import RETURN_WINDOW_DAYS, TODAY, build_db, days_between, random_address, to_cents

DOMAIN = "retail"
DEFAULT_SEED = 0
DEFAULT_COUNT = 60
# Allowed returns/exchanges stay well inside the window and refused ones well outside it, so an
# off-by-one reading of "within 30 days" never decides a task.
_RECENT_DAYS = RETURN_WINDOW_DAYS - 5
_LATE_DAYS = RETURN_WINDOW_DAYS + 6

Record = dict[str, Any]

_PERSONAS = [
    "A busy parent who answers in short sentences and wants things done quickly.",
    "A retired teacher, polite and patient, who likes to hear numbers twice before agreeing.",
    "A graduate student, casual and friendly, who types short messages.",
    "A small business owner, direct and a little impatient.",
    "A careful shopper who wants the exact amounts before saying yes to anything.",
    "A first-time customer who is unsure how things work and asks simple questions.",
]
_REASON_WORDS = {
    "no longer needed": "you no longer need it",
    "ordered by mistake": "you ordered it by mistake",
}
_GENERAL_INSTRUCTIONS = (
    "Give a piece of information only when the agent asks for it. "
    "Say yes when the agent asks you to confirm exactly what you asked for. "
    "Do not make up any information you were not given. "
    "End the conversation once your requests are handled or the agent has explained why they cannot be."
)
_ACCEPT_REFUSAL = "If the agent says this cannot be done, accept the explanation; do not insist or ask for a human."


@dataclass(frozen=True)
class Call:
    name: str
    arguments: dict[str, Any]


@dataclass
class Part:
    """One intent of a task, built for one user under one condition."""

    key: str
    summary: str
    request: str
    known: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    instructions: list[str] = field(default_factory=list)
    reads: list[Call] = field(default_factory=list)
    writes: list[Call] = field(default_factory=list)
    communicate: list[str] = field(default_factory=list)
    forbidden: list[Call] = field(default_factory=list)
    action_basis: bool = False
    needs_user_details: bool = False
    order_id: str | None = None
    # Gift cards whose balance this part reads or changes: two parts of one task must not share one,
    # or the figures would depend on the order in which the agent handles them.
    gift_cards: set[str] = field(default_factory=set)


@dataclass
class Context:
    raw: dict[str, dict[str, Any]]
    base: BaseState
    functions: dict[str, DomainFunction]
    rng: random.Random
    shared: dict[str, Any] = field(default_factory=dict)


Builder = Callable[[Context, State, str, set[str]], Part | None]


class GenerationError(RuntimeError):
    """A golden action failed or broke policy while generating: a bug in a builder."""


# ---------------------------------------------------------------- small helpers


def _money(cents: int) -> str:
    return f"${abs(cents) / 100:.2f}"


def _options_text(options: dict[str, str]) -> str:
    return ", ".join(f"{dim}: {value}" for dim, value in options.items())


def _method_text(method: Record) -> str:
    if method["source"] == "credit_card":
        return f"your {method['brand']} credit card ending in {method['last_four']}"
    if method["source"] == "paypal":
        return "your PayPal account"
    return "your gift card"


def _address_text(address: Record) -> str:
    second = f"address line 2 '{address['address2']}'" if address["address2"] else "no second address line"
    return (
        f"street '{address['address1']}', {second}, city '{address['city']}', state '{address['state']}', "
        f"country '{address['country']}', zip code '{address['zip']}'"
    )


def _address_args(address: Record) -> dict[str, str]:
    return {
        "address1": address["address1"],
        "address2": address["address2"],
        "city": address["city"],
        "state": address["state"],
        "country": address["country"],
        "zip_code": address["zip"],
    }


def _candidates(ctx: Context, user_id: str, exclude: set[str], wanted: Callable[[Record], bool]) -> list[Record]:
    """The user's orders (as built) that fit, in random order; searching the raw DB costs no JSON parsing."""
    orders = [ctx.raw["orders"][oid] for oid in ctx.raw["users"][user_id]["orders"] if oid not in exclude]
    found = [order for order in orders if wanted(order)]
    ctx.rng.shuffle(found)
    return found


def _status(*statuses: str) -> Callable[[Record], bool]:
    return lambda order: order["status"] in statuses


def _delivered_within(low: int, high: int) -> Callable[[Record], bool]:
    def wanted(order: Record) -> bool:
        return order["status"] == "delivered" and low <= days_between(order["delivery_date"], TODAY) <= high

    return wanted


@dataclass(frozen=True)
class OrderRef:
    phrase: str
    known: list[str]
    unknown: list[str]
    id_known: bool


def _refer(ctx: Context, user_id: str, order: Record, mentioned: tuple[Record, ...] = ()) -> OrderRef:
    """The order id, or half the time only a product found in no other order of the user."""
    oid = order["order_id"]
    others = [ctx.raw["orders"][o] for o in ctx.raw["users"][user_id]["orders"] if o != oid]
    taken = {item["name"] for other in others for item in other["items"]}
    unique = sorted(item["name"] for item in order["items"] if item["name"] not in taken)
    if not unique or ctx.rng.random() >= 0.5:
        # The id is in the request itself, which keeps two orders of one task apart.
        return OrderRef(phrase=f"order {oid}", known=[], unknown=[], id_known=True)
    product = ctx.rng.choice(unique)
    # The request already names the items it is about; repeating one of them as the order's label reads badly.
    named = product in {item["name"] for item in mentioned}
    return OrderRef(
        phrase="order" if named else f"order with the {product}",
        known=[f"No other order of yours has the {product} in it."],
        unknown=[f"the id of your order with the {product}"],
        id_known=False,
    )


def _held_methods(order: Record) -> dict[str, int]:
    return tools.net_paid_cents(order)


def _original_method(order: Record) -> str:
    return order["payment_history"][0]["payment_method_id"]


def _gift_cards(user: Record, *method_ids: str) -> set[str]:
    return {m for m in method_ids if user["payment_methods"].get(m, {}).get("source") == "gift_card"}


def _can_pay(user: Record, method_id: str, cents: int) -> bool:
    method = user["payment_methods"][method_id]
    return method["source"] != "gift_card" or cents <= to_cents(method["balance"])


def _item_names(items: list[Record]) -> str:
    names = [f"the {item['name']}" for item in items]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _swapped_names(swaps: list[tuple[Record, Record]]) -> str:
    return _item_names([item for item, _ in swaps])


def _variants_word(swaps: list[tuple[Record, Record]]) -> str:
    return "another variant" if len(swaps) == 1 else "other variants"


def _sum_reads(items: list[Record]) -> list[Call]:
    """A `calculate` call for a sum of several prices, so the figure shows up in a tool output."""
    if len(items) < 2:
        return []
    return [Call("calculate", {"expression": " + ".join(f"{item['price']:.2f}" for item in items)})]


def _swap_target(ctx: Context, state: State, item: Record, available: bool) -> Record | None:
    """Another variant of the item's product, preferring one that differs in a single option."""
    variants = state.products[item["product_id"]]["variants"].values()
    others = [
        v
        for v in variants
        if v["item_id"] != item["item_id"] and v["available"] == available and v["price"] != item["price"]
    ]
    if not others:
        return None
    close = [v for v in others if sum(v["options"][k] != item["options"][k] for k in item["options"]) == 1]
    return ctx.rng.choice(sorted(close or others, key=lambda v: v["item_id"]))


# ---------------------------------------------------------------- part builders


def _cancel(ctx: Context, state: State, user_id: str, exclude: set[str]) -> Part | None:
    for raw in _candidates(ctx, user_id, exclude, _status("pending")):
        order = state.orders[raw["order_id"]]
        ref = _refer(ctx, user_id, order)
        reason = ctx.rng.choice(sorted(_REASON_WORDS))
        held = _held_methods(order)
        return Part(
            key="cancel",
            summary=f"cancel pending order {order['order_id']} (allowed)",
            request=f"cancel your {ref.phrase}, because {_REASON_WORDS[reason]}",
            known=ref.known,
            unknown=[*ref.unknown, "how much the cancellation will refund"],
            instructions=[f"If asked for the reason of the cancellation, say {_REASON_WORDS[reason]}."],
            reads=[Call("get_order_details", {"order_id": order["order_id"]})],
            writes=[Call("cancel_pending_order", {"order_id": order["order_id"], "reason": reason})],
            communicate=[_money(sum(held.values()))],
            needs_user_details=not ref.id_known,
            order_id=order["order_id"],
            gift_cards=_gift_cards(state.users[user_id], *held),
        )
    return None


def _cancel_refused(status: str) -> Builder:
    def build(ctx: Context, state: State, user_id: str, exclude: set[str]) -> Part | None:
        for raw in _candidates(ctx, user_id, exclude, _status(status)):
            order = state.orders[raw["order_id"]]
            ref = _refer(ctx, user_id, order)
            reason = ctx.rng.choice(sorted(_REASON_WORDS))
            return Part(
                key=f"cancel_{status}",
                summary=f"cancel order {order['order_id']} refused: it is {status}",
                request=f"cancel your {ref.phrase}, because {_REASON_WORDS[reason]}",
                known=ref.known,
                unknown=ref.unknown,
                instructions=[
                    f"If asked for the reason, say {_REASON_WORDS[reason]}.",
                    f"{_ACCEPT_REFUSAL} Do not ask for a return or anything else instead.",
                ],
                reads=[Call("get_order_details", {"order_id": order["order_id"]})],
                communicate=[status],
                forbidden=[Call("cancel_pending_order", {"order_id": order["order_id"], "reason": reason})],
                needs_user_details=not ref.id_known,
                order_id=order["order_id"],
            )
        return None

    return build


def _pick_swaps(
    ctx: Context, state: State, order: Record, available: bool, max_items: int
) -> list[tuple[Record, Record]]:
    items = list(order["items"])
    ctx.rng.shuffle(items)
    swaps = []
    for item in items:
        target = _swap_target(ctx, state, item, available)
        if target is not None:
            swaps.append((item, target))
        if len(swaps) == max_items:
            break
    return swaps


def _pick_method(ctx: Context, user: Record, cents: int, prefer: str | None = None) -> str | None:
    """A payment method of the user able to pay `cents` (the preferred one half the time)."""
    methods = sorted(user["payment_methods"])
    ctx.rng.shuffle(methods)
    if prefer is not None and ctx.rng.random() < 0.5:
        methods.insert(0, prefer)
    for method_id in methods:
        if _can_pay(user, method_id, cents):
            return method_id
    return None


def _swap_texts(swaps: list[tuple[Record, Record]]) -> list[str]:
    return [
        f"You want your {item['name']} (currently {_options_text(item['options'])}) replaced by the one with "
        f"{_options_text(new['options'])}."
        for item, new in swaps
    ]


def _swap_call(name: str, order_id: str, swaps: list[tuple[Record, Record]], method_id: str) -> Call:
    return Call(
        name,
        {
            "order_id": order_id,
            "item_ids": [item["item_id"] for item, _ in swaps],
            "new_item_ids": [new["item_id"] for _, new in swaps],
            "payment_method_id": method_id,
        },
    )


def _swap_reads(order_id: str, swaps: list[tuple[Record, Record]]) -> list[Call]:
    products = sorted({item["product_id"] for item, _ in swaps})
    return [
        Call("get_order_details", {"order_id": order_id}),
        *(Call("get_product_details", {"product_id": pid}) for pid in products),
    ]


def _difference_cents(swaps: list[tuple[Record, Record]]) -> int:
    return sum(to_cents(new["price"]) - to_cents(item["price"]) for item, new in swaps)


def _modify_items(ctx: Context, state: State, user_id: str, exclude: set[str]) -> Part | None:
    user = state.users[user_id]
    wanted = _status("pending")
    for raw in _candidates(ctx, user_id, exclude, lambda o: wanted(o) and not o["items_modified"]):
        order = state.orders[raw["order_id"]]
        swaps = _pick_swaps(ctx, state, order, available=True, max_items=ctx.rng.choice([1, 1, 2]))
        difference = _difference_cents(swaps)
        method_id = _pick_method(ctx, user, difference, prefer=_original_method(order)) if swaps else None
        if not swaps or difference == 0 or method_id is None:
            continue
        ref = _refer(ctx, user_id, order, tuple(i for i, _ in swaps))
        method = user["payment_methods"][method_id]
        return Part(
            key="modify_items",
            summary=f"swap {len(swaps)} item(s) of pending order {order['order_id']} (allowed)",
            request=f"change {_swapped_names(swaps)} in your {ref.phrase} to {_variants_word(swaps)}",
            known=[*ref.known, *_swap_texts(swaps)],
            unknown=[*ref.unknown, "the item ids and the price difference"],
            instructions=[f"Any price difference should be charged or refunded to {_method_text(method)}."],
            reads=_swap_reads(order["order_id"], swaps),
            writes=[_swap_call("modify_pending_order_items", order["order_id"], swaps, method_id)],
            communicate=[_money(difference)],
            needs_user_details=True,
            order_id=order["order_id"],
            gift_cards=_gift_cards(user, method_id),
        )
    return None


def _modify_items_refused(condition: str) -> Builder:
    """`processed`: the order left the warehouse; `twice`: its items were already modified once."""

    def wanted(order: Record) -> bool:
        if condition == "processed":
            return order["status"] == "processed"
        return order["status"] == "pending" and order["items_modified"]

    def build(ctx: Context, state: State, user_id: str, exclude: set[str]) -> Part | None:
        user = state.users[user_id]
        for raw in _candidates(ctx, user_id, exclude, wanted):
            order = state.orders[raw["order_id"]]
            swaps = _pick_swaps(ctx, state, order, available=True, max_items=1)
            method_id = _pick_method(ctx, user, _difference_cents(swaps)) if swaps else None
            if not swaps or method_id is None:
                continue
            ref = _refer(ctx, user_id, order, tuple(i for i, _ in swaps))
            return Part(
                key=f"modify_items_{condition}",
                summary=f"swap an item of order {order['order_id']} refused: "
                + ("it is processed" if condition == "processed" else "its items were already modified"),
                request=f"change {_swapped_names(swaps)} in your {ref.phrase} to another variant",
                known=[*ref.known, *_swap_texts(swaps)],
                unknown=ref.unknown,
                instructions=[
                    f"Any price difference should go to {_method_text(user['payment_methods'][method_id])}.",
                    f"{_ACCEPT_REFUSAL} Do not cancel the order instead.",
                ],
                reads=[Call("get_order_details", {"order_id": order["order_id"]})],
                communicate=["processed" if condition == "processed" else "once"],
                forbidden=[_swap_call("modify_pending_order_items", order["order_id"], swaps, method_id)],
                needs_user_details=not ref.id_known,
                order_id=order["order_id"],
            )
        return None

    return build


def _new_address(ctx: Context, current: Record) -> tuple[Record, bool]:
    """One new address per task, so "I moved" intents of a task agree on it; True if already told."""
    shared = ctx.shared.get("new_address")
    if shared is not None and shared != current:
        return shared, True
    address = random_address(ctx.rng)
    while address == current:
        address = random_address(ctx.rng)
    ctx.shared["new_address"] = address
    return address, False


def _order_address(ctx: Context, state: State, user_id: str, exclude: set[str]) -> Part | None:
    for raw in _candidates(ctx, user_id, exclude, _status("pending")):
        order = state.orders[raw["order_id"]]
        address, told = _new_address(ctx, order["address"])
        ref = _refer(ctx, user_id, order)
        where = "that same new address" if told else _address_text(address)
        return Part(
            key="order_address",
            summary=f"change the shipping address of pending order {order['order_id']} (allowed)",
            request=f"have your {ref.phrase} shipped to a new address",
            known=[*ref.known, f"Your {ref.phrase} should be shipped to {where}."],
            unknown=ref.unknown,
            reads=[Call("get_order_details", {"order_id": order["order_id"]})],
            writes=[Call("modify_pending_order_address", {"order_id": order["order_id"], **_address_args(address)})],
            needs_user_details=not ref.id_known,
            order_id=order["order_id"],
        )
    return None


def _default_address(ctx: Context, state: State, user_id: str, exclude: set[str]) -> Part | None:
    user = state.users[user_id]
    address, told = _new_address(ctx, user["address"])
    where = "that same new address" if told else _address_text(address)
    return Part(
        key="default_address",
        summary=f"change the default address of {user_id} (allowed)",
        request="update the default address of your account because you moved",
        known=[f"Your account's default address should become {where}."],
        writes=[Call("modify_user_address", {"user_id": user_id, **_address_args(address)})],
        needs_user_details=True,
    )


def _payment(ctx: Context, state: State, user_id: str, exclude: set[str]) -> Part | None:
    user = state.users[user_id]
    for raw in _candidates(ctx, user_id, exclude, _status("pending")):
        order = state.orders[raw["order_id"]]
        held = _held_methods(order)
        total = tools.order_total_cents(order)
        choices = [m for m in sorted(user["payment_methods"]) if m not in held and _can_pay(user, m, total)]
        if not choices:
            continue
        method_id = ctx.rng.choice(choices)
        method_text = _method_text(user["payment_methods"][method_id])
        ref = _refer(ctx, user_id, order)
        return Part(
            key="payment",
            summary=f"pay pending order {order['order_id']} with {method_id} instead (allowed)",
            request=f"switch the payment of your {ref.phrase} to {method_text}",
            known=ref.known,
            unknown=ref.unknown,
            reads=[Call("get_order_details", {"order_id": order["order_id"]})],
            writes=[
                Call(
                    "modify_pending_order_payment",
                    {"order_id": order["order_id"], "payment_method_id": method_id},
                )
            ],
            needs_user_details=True,
            order_id=order["order_id"],
            gift_cards=_gift_cards(user, method_id, *held),
        )
    return None


def _payment_short(ctx: Context, state: State, user_id: str, exclude: set[str]) -> Part | None:
    user = state.users[user_id]
    cards = [m for m, method in sorted(user["payment_methods"].items()) if method["source"] == "gift_card"]
    if not cards:
        return None
    card = cards[0]
    balance = to_cents(user["payment_methods"][card]["balance"])
    for raw in _candidates(ctx, user_id, exclude, _status("pending")):
        order = state.orders[raw["order_id"]]
        if card in _held_methods(order) or tools.order_total_cents(order) <= balance:
            continue
        ref = _refer(ctx, user_id, order)
        return Part(
            key="payment_gift_card_short",
            summary=f"pay order {order['order_id']} with gift card {card} refused: balance too low",
            request=f"switch the payment of your {ref.phrase} to your gift card",
            known=ref.known,
            unknown=[*ref.unknown, "the balance of your gift card"],
            instructions=[f"{_ACCEPT_REFUSAL} Keep the current payment method; do not pick another one."],
            reads=[Call("get_order_details", {"order_id": order["order_id"]})],
            communicate=[_money(balance)],
            forbidden=[
                Call("modify_pending_order_payment", {"order_id": order["order_id"], "payment_method_id": card})
            ],
            needs_user_details=True,
            order_id=order["order_id"],
            gift_cards={card},
        )
    return None


def _pick_items(ctx: Context, order: Record, most: int) -> list[Record]:
    count = min(len(order["items"]), ctx.rng.choice(range(1, most + 1)))
    return sorted(ctx.rng.sample(order["items"], count), key=lambda item: item["item_id"])


def _return(ctx: Context, state: State, user_id: str, exclude: set[str]) -> Part | None:
    user = state.users[user_id]
    for raw in _candidates(ctx, user_id, exclude, _delivered_within(1, _RECENT_DAYS)):
        order = state.orders[raw["order_id"]]
        items = _pick_items(ctx, order, most=2)
        original = _original_method(order)
        cards = [m for m, method in sorted(user["payment_methods"].items()) if method["source"] == "gift_card"]
        to_card = bool(cards) and cards[0] != original and ctx.rng.random() < 0.4
        method_id = cards[0] if to_card else original
        where = "your gift card" if to_card else "the payment method you paid the order with"
        ref = _refer(ctx, user_id, order, tuple(items))
        refund = sum(to_cents(item["price"]) for item in items)
        return Part(
            key="return",
            summary=f"return {len(items)} item(s) of order {order['order_id']}, refund to {method_id}",
            request=f"return {_item_names(items)} from your {ref.phrase}",
            known=[*ref.known, f"You want the refund to go to {where}."],
            unknown=[*ref.unknown, "how much the return will refund"],
            reads=[Call("get_order_details", {"order_id": order["order_id"]}), *_sum_reads(items)],
            writes=[
                Call(
                    "return_delivered_order_items",
                    {
                        "order_id": order["order_id"],
                        "item_ids": [item["item_id"] for item in items],
                        "payment_method_id": method_id,
                    },
                )
            ],
            communicate=[_money(refund)],
            needs_user_details=True,
            order_id=order["order_id"],
        )
    return None


def _return_late(ctx: Context, state: State, user_id: str, exclude: set[str]) -> Part | None:
    for raw in _candidates(ctx, user_id, exclude, _delivered_within(_LATE_DAYS, 10_000)):
        order = state.orders[raw["order_id"]]
        items = _pick_items(ctx, order, most=1)
        ref = _refer(ctx, user_id, order, tuple(items))
        return Part(
            key="return_late",
            summary=f"return from order {order['order_id']} refused: delivered "
            f"{days_between(order['delivery_date'], TODAY)} days ago",
            request=f"return {_item_names(items)} from your {ref.phrase} for a refund",
            known=[*ref.known, "You want the refund on the payment method you paid with."],
            unknown=[*ref.unknown, "the exact delivery date"],
            instructions=[_ACCEPT_REFUSAL],
            reads=[Call("get_order_details", {"order_id": order["order_id"]})],
            communicate=[f"{RETURN_WINDOW_DAYS} days"],
            forbidden=[
                Call(
                    "return_delivered_order_items",
                    {
                        "order_id": order["order_id"],
                        "item_ids": [item["item_id"] for item in items],
                        "payment_method_id": _original_method(order),
                    },
                )
            ],
            action_basis=True,
            needs_user_details=not ref.id_known,
            order_id=order["order_id"],
        )
    return None


def _exchange(ctx: Context, state: State, user_id: str, exclude: set[str]) -> Part | None:
    user = state.users[user_id]
    for raw in _candidates(ctx, user_id, exclude, _delivered_within(1, _RECENT_DAYS)):
        order = state.orders[raw["order_id"]]
        swaps = _pick_swaps(ctx, state, order, available=True, max_items=1)
        difference = _difference_cents(swaps)
        method_id = _pick_method(ctx, user, difference, prefer=_original_method(order)) if swaps else None
        if not swaps or method_id is None:
            continue
        ref = _refer(ctx, user_id, order, tuple(i for i, _ in swaps))
        return Part(
            key="exchange",
            summary=f"exchange an item of order {order['order_id']} (allowed)",
            request=f"exchange {_swapped_names(swaps)} from your {ref.phrase} for another variant",
            known=[*ref.known, *_swap_texts(swaps)],
            unknown=[*ref.unknown, "the item ids and the price difference"],
            instructions=[
                f"Any price difference should be charged or refunded to "
                f"{_method_text(user['payment_methods'][method_id])}."
            ],
            reads=_swap_reads(order["order_id"], swaps),
            writes=[_swap_call("exchange_delivered_order_items", order["order_id"], swaps, method_id)],
            communicate=[_money(difference)],
            needs_user_details=True,
            order_id=order["order_id"],
            gift_cards=_gift_cards(user, method_id),
        )
    return None


def _exchange_out_of_stock(ctx: Context, state: State, user_id: str, exclude: set[str]) -> Part | None:
    for raw in _candidates(ctx, user_id, exclude, _delivered_within(1, _RECENT_DAYS)):
        order = state.orders[raw["order_id"]]
        swaps = _pick_swaps(ctx, state, order, available=False, max_items=1)
        if not swaps:
            continue
        ref = _refer(ctx, user_id, order, tuple(i for i, _ in swaps))
        return Part(
            key="exchange_out_of_stock",
            summary=f"exchange in order {order['order_id']} refused: the wanted variant is out of stock",
            request=f"exchange {_swapped_names(swaps)} from your {ref.phrase} for another variant",
            known=[*ref.known, *_swap_texts(swaps)],
            unknown=[*ref.unknown, "whether the variant you want is in stock"],
            instructions=[
                "Any price difference should go to the payment method you paid the order with.",
                f"{_ACCEPT_REFUSAL} You do not want any other variant; keep the item you have.",
            ],
            reads=_swap_reads(order["order_id"], swaps),
            communicate=["out of stock"],
            forbidden=[_swap_call("exchange_delivered_order_items", order["order_id"], swaps, _original_method(order))],
            action_basis=True,
            needs_user_details=not ref.id_known,
            order_id=order["order_id"],
        )
    return None


def _status_question(ctx: Context, state: State, user_id: str, exclude: set[str]) -> Part | None:
    status = ctx.rng.choice(["pending", "processed", "delivered"])
    for raw in _candidates(ctx, user_id, exclude, _status(status)):
        order = state.orders[raw["order_id"]]
        ref = _refer(ctx, user_id, order)
        answer = {"pending": "pending", "processed": order["tracking_number"], "delivered": "delivered"}[status]
        ask = "its tracking number" if status == "processed" else "its status"
        return Part(
            key="status",
            summary=f"status of {status} order {order['order_id']}: tell {answer}",
            request=f"find out where your {ref.phrase} is and get {ask}",
            known=ref.known,
            unknown=[*ref.unknown, "the status and tracking number of that order"],
            instructions=["You only want information about this order; do not change anything."],
            reads=[Call("get_order_details", {"order_id": order["order_id"]})],
            communicate=[answer],
            action_basis=True,
            needs_user_details=not ref.id_known,
            order_id=order["order_id"],
        )
    return None


def _refund_quote(ctx: Context, state: State, user_id: str, exclude: set[str]) -> Part | None:
    for raw in _candidates(ctx, user_id, exclude, _delivered_within(1, _RECENT_DAYS)):
        order = state.orders[raw["order_id"]]
        items = _pick_items(ctx, order, most=2)
        ref = _refer(ctx, user_id, order, tuple(items))
        refund = sum(to_cents(item["price"]) for item in items)
        return Part(
            key="refund_quote",
            summary=f"quote the refund for returning {len(items)} item(s) of order {order['order_id']}",
            request=f"know how much a return of {_item_names(items)} from your {ref.phrase} would refund",
            known=ref.known,
            unknown=[*ref.unknown, "the refund amount"],
            instructions=["You only want to know the amount; do not start the return in this conversation."],
            reads=[Call("get_order_details", {"order_id": order["order_id"]}), *_sum_reads(items)],
            communicate=[_money(refund)],
            needs_user_details=not ref.id_known,
            order_id=order["order_id"],
        )
    return None


BUILDERS: dict[str, Builder] = {
    "cancel": _cancel,
    "cancel_processed": _cancel_refused("processed"),
    "cancel_delivered": _cancel_refused("delivered"),
    "modify_items": _modify_items,
    "modify_items_processed": _modify_items_refused("processed"),
    "modify_items_twice": _modify_items_refused("twice"),
    "order_address": _order_address,
    "default_address": _default_address,
    "payment": _payment,
    "payment_gift_card_short": _payment_short,
    "return": _return,
    "return_late": _return_late,
    "exchange": _exchange,
    "exchange_out_of_stock": _exchange_out_of_stock,
    "status": _status_question,
    "refund_quote": _refund_quote,
}

MULTI_RECIPES: list[tuple[str, str]] = [
    ("cancel", "return"),
    ("modify_items", "order_address"),
    ("return", "exchange"),
    ("cancel_processed", "status"),
    ("payment_gift_card_short", "cancel"),
    ("return_late", "exchange"),
    ("exchange_out_of_stock", "return"),
    ("default_address", "order_address"),
    ("modify_items_twice", "cancel"),
    ("refund_quote", "payment"),
]
RECIPES: list[tuple[str, ...]] = [(key,) for key in BUILDERS] + list(MULTI_RECIPES)


# ---------------------------------------------------------------- assembling and checking a task


def _auth(ctx: Context, user: Record) -> tuple[Call, list[str], list[str], str]:
    first, last = user["name"]["first_name"], user["name"]["last_name"]
    if ctx.rng.random() < 0.5:
        known = [f"Your name is {first} {last} and your email address is {user['email']}."]
        return Call("find_user_id_by_email", {"email": user["email"]}), known, [], "email"
    zip_code = user["address"]["zip"]
    known = [f"Your name is {first} {last} and your zip code is {zip_code}."]
    call = Call("find_user_id_by_name_zip", {"first_name": first, "last_name": last, "zip_code": zip_code})
    return call, known, ["the email address of your account"], "name_zip"


_COMPARE: dict[str, list[str]] = {
    "find_user_id_by_email": ["email"],
    "find_user_id_by_name_zip": ["zip_code"],
    "get_user_details": ["user_id"],
    "get_order_details": ["order_id"],
    "get_product_details": ["product_id"],
    "calculate": [],
    "modify_user_address": ["user_id"],
}


def _golden_calls(ctx: Context, auth: Call, user_id: str, parts: list[Part]) -> list[Call]:
    calls = [auth]
    if any(part.needs_user_details for part in parts):
        calls.append(Call("get_user_details", {"user_id": user_id}))
    for part in parts:
        calls.extend(part.reads)
        calls.extend(part.writes)
    unique: list[Call] = []
    for call in calls:
        # A second identical lookup adds nothing; writes always count.
        if call not in unique or ctx.functions[call.name].is_write:
            unique.append(call)
    return unique


def _run(ctx: Context, state: State, call: Call) -> Any:
    """Execute a golden call like the environment would; a failure or a policy breach is a builder bug."""
    problem = tools.policy_check(state, call.name, call.arguments)
    if problem:
        raise GenerationError(f"golden {call.name} {call.arguments} breaks policy: {problem}")
    return ctx.functions[call.name].call(state, call.arguments)


def _refusals_hold(ctx: Context, parts: list[Part]) -> bool:
    """Each forbidden call is flagged before and after the golden writes, and still runs at the tool level."""
    forbidden = [call for part in parts for call in part.forbidden]
    if not forbidden:
        return True
    fresh = ctx.base.fresh()
    if not all(tools.policy_check(fresh, c.name, c.arguments) for c in forbidden):
        return False
    state = ctx.base.fresh()
    for call in (c for part in parts for c in part.writes):
        ctx.functions[call.name].call(state, call.arguments)
    for call in forbidden:
        if not tools.policy_check(state, call.name, call.arguments):
            return False
        try:
            ctx.functions[call.name].call(state, call.arguments)
        except ToolExecutionError:
            return False
    return True


def _build_parts(ctx: Context, keys: tuple[str, ...], user_id: str) -> list[Part] | None:
    """Build each intent on the state the previous ones left, running their golden calls as we go."""
    state = ctx.base.fresh()
    ctx.shared = {}
    parts: list[Part] = []
    used_orders: set[str] = set()
    for key in keys:
        part = BUILDERS[key](ctx, state, user_id, used_orders)
        if part is None:
            return None
        if any(part.gift_cards & other.gift_cards for other in parts):
            return None
        if part.order_id:
            used_orders.add(part.order_id)
        for call in [*part.reads, *part.writes]:
            _run(ctx, state, call)
        parts.append(part)
    return parts if _refusals_hold(ctx, parts) else None


def _action(index: int, call: Call) -> dict[str, Any]:
    compare = _COMPARE.get(call.name, ["order_id"])
    return {
        "action_id": f"a{index}",
        "requestor": "assistant",
        "name": call.name,
        "arguments": call.arguments,
        "compare_args": compare,
    }


def _join_requests(parts: list[Part]) -> str:
    if len(parts) == 1:
        return f"You want to {parts[0].request}."
    return f"You want to {parts[0].request}. You also want to {parts[1].request}."


def _assemble(ctx: Context, task_id: str, user: Record, parts: list[Part]) -> dict[str, Any]:
    auth, auth_known, auth_unknown, auth_kind = _auth(ctx, user)
    golden = _golden_calls(ctx, auth, user["user_id"], parts)
    communicate = list(dict.fromkeys(info for part in parts for info in part.communicate))
    basis = ["DB", "COMMUNICATE"] + (["ACTION"] if any(part.action_basis for part in parts) else [])
    forbidden = [{"name": c.name, "arguments": c.arguments} for part in parts for c in part.forbidden]
    unknown = [*auth_unknown, *(info for part in parts for info in part.unknown)]
    instructions = " ".join([_GENERAL_INSTRUCTIONS, *(text for part in parts for text in part.instructions)])
    description: dict[str, Any] = {
        "purpose": "; ".join(part.summary for part in parts),
        "intents": [part.key for part in parts],
        "authentication": auth_kind,
        "refusal": bool(forbidden),
    }
    if forbidden:
        description["forbidden_actions"] = forbidden
    return {
        "id": task_id,
        "description": description,
        "user_scenario": {
            "persona": ctx.rng.choice(_PERSONAS),
            "instructions": {
                "domain": DOMAIN,
                "reason_for_call": _join_requests(parts),
                "known_info": " ".join([*auth_known, *(info for part in parts for info in part.known)]),
                "unknown_info": ("You do not know " + "; ".join(unknown) + ".") if unknown else None,
                "task_instructions": instructions,
            },
        },
        "evaluation_criteria": {
            "actions": [_action(index, call) for index, call in enumerate(golden, start=1)],
            "communicate_info": communicate,
            "reward_basis": basis,
        },
    }


def _users_in_order(ctx: Context, used: set[str]) -> list[str]:
    """Every user, shuffled, those not yet in a task first so tasks spread over the DB."""
    users = sorted(ctx.raw["users"])
    ctx.rng.shuffle(users)
    return [u for u in users if u not in used] + [u for u in users if u in used]


def generate_tasks(seed: int, n: int, db: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """`n` tasks for the DB `db` (default: the pack's DB, build_db(0)); the same seed gives the same tasks."""
    raw = db if db is not None else build_db(0)
    ctx = Context(
        raw=raw,
        base=BaseState(raw),
        functions={f.name: f for f in marked_functions(vars(tools), "retail/tools.py")},
        rng=random.Random(seed),
    )
    tasks: list[dict[str, Any]] = []
    used_users: set[str] = set()
    schedule: list[tuple[str, ...]] = []
    while len(tasks) < n:
        if not schedule:
            schedule = ctx.rng.sample(RECIPES, len(RECIPES))
        keys = schedule.pop()
        for user_id in _users_in_order(ctx, used_users):
            parts = _build_parts(ctx, keys, user_id)
            if parts is None:
                continue
            used_users.add(user_id)
            task_id = f"{DOMAIN}_{seed}_{len(tasks)}_{'__'.join(keys)}"
            tasks.append(_assemble(ctx, task_id, ctx.raw["users"][user_id], parts))
            break
        else:
            raise GenerationError(f"no user of the DB fits the recipe {keys}")
    return tasks


def write_tasks(path: Path, seed: int = DEFAULT_SEED, n: int = DEFAULT_COUNT) -> None:
    tasks = generate_tasks(seed, n)
    path.write_text(json.dumps(tasks, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def main() -> None:
    write_tasks(Path(__file__).with_name("tasks.json"))


if __name__ == "__main__":
    main()
