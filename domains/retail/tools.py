"""Tools of the retail domain: look up customers, orders and products; change, cancel, return, exchange.

Tools reject only input that cannot be carried out (unknown ids, items not in the order, an order
that was never delivered being returned). Whether an action is *allowed* (order status, return
window, stock, gift card balance) is the agent's job under policy.md; `policy_check` states those
rules for the evaluator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import Field

from tauproxy.domain.arithmetic import evaluate_arithmetic
from tauproxy.domain.state import State
from tauproxy.domain.tools import tool
from tauproxy.errors import ToolExecutionError

from .db import RETURN_WINDOW_DAYS, TODAY, days_between, from_cents, name_zip_key, to_cents

UserId = Annotated[str, Field(pattern=r"^usr_[a-z]+_[a-z]+_\d{3}$", max_length=40)]
OrderId = Annotated[str, Field(pattern=r"^ord_\d{7}$", max_length=11)]
ProductId = Annotated[str, Field(pattern=r"^prd_\d{4}$", max_length=8)]
ItemId = Annotated[str, Field(pattern=r"^itm_\d{6}$", max_length=10)]
ItemIds = Annotated[list[ItemId], Field(min_length=1, max_length=10)]
PaymentMethodId = Annotated[str, Field(pattern=r"^(cc|pp|gc)_\d{5}$", max_length=8)]
ZipCode = Annotated[str, Field(pattern=r"^\d{5}$", max_length=5)]
Text = Annotated[str, Field(max_length=120)]
CancelReason = Literal["no longer needed", "ordered by mistake"]

Record = dict[str, Any]

# Statuses in which an order has not left the warehouse, so its contents can still physically change.
_CHANGEABLE = ("pending", "processed")


# ---------------------------------------------------------------- record access


def _user(db: State, user_id: str) -> Record:
    user = db.users.get(user_id)
    if user is None:
        raise ToolExecutionError(f"user {user_id} not found")
    return user


def _order(db: State, order_id: str) -> Record:
    order = db.orders.get(order_id)
    if order is None:
        raise ToolExecutionError(f"order {order_id} not found")
    return order


def _product(db: State, product_id: str) -> Record:
    product = db.products.get(product_id)
    if product is None:
        raise ToolExecutionError(f"product {product_id} not found")
    return product


def _payment_method(user: Record, method_id: str) -> Record:
    method = user["payment_methods"].get(method_id)
    if method is None:
        raise ToolExecutionError(f"payment method {method_id} is not one of user {user['user_id']}'s methods")
    return method


def _order_items(order: Record, item_ids: list[str]) -> list[Record]:
    if len(set(item_ids)) != len(item_ids):
        raise ToolExecutionError("an item id is listed twice")
    by_id = {item["item_id"]: item for item in order["items"]}
    missing = [item_id for item_id in item_ids if item_id not in by_id]
    if missing:
        raise ToolExecutionError(f"order {order['order_id']} has no item {', '.join(missing)}")
    return [by_id[item_id] for item_id in item_ids]


def _replacements(
    db: State, order: Record, item_ids: list[str], new_item_ids: list[str]
) -> list[tuple[Record, Record]]:
    """(ordered item, new variant) pairs, sorted by the old item id so the caller's order never matters."""
    if len(item_ids) != len(new_item_ids):
        raise ToolExecutionError("item_ids and new_item_ids must have the same length")
    pairs = []
    for item, new_id in zip(_order_items(order, item_ids), new_item_ids, strict=True):
        variant = _product(db, item["product_id"])["variants"].get(new_id)
        if variant is None:
            raise ToolExecutionError(f"{new_id} is not a variant of {item['name']} ({item['product_id']})")
        if new_id == item["item_id"]:
            raise ToolExecutionError(f"{new_id} is the item already in the order")
        pairs.append((item, variant))
    return sorted(pairs, key=lambda pair: pair[0]["item_id"])


def _price_difference_cents(pairs: list[tuple[Record, Record]]) -> int:
    return sum(to_cents(new["price"]) - to_cents(item["price"]) for item, new in pairs)


def order_total_cents(order: Record) -> int:
    return sum(to_cents(item["price"]) for item in order["items"])


def net_paid_cents(order: Record) -> dict[str, int]:
    """Money held per payment method: payments minus refunds, in the order methods were first used."""
    net: dict[str, int] = {}
    for entry in order["payment_history"]:
        sign = 1 if entry["transaction_type"] == "payment" else -1
        method_id = entry["payment_method_id"]
        net[method_id] = net.get(method_id, 0) + sign * to_cents(entry["amount"])
    return {method_id: cents for method_id, cents in net.items() if cents > 0}


def _record_transaction(db: State, order: Record, method_id: str, cents: int) -> None:
    """Charge (cents > 0) or refund (cents < 0) a method; gift card balances change immediately."""
    if cents == 0:
        return
    kind = "payment" if cents > 0 else "refund"
    order["payment_history"].append(
        {"transaction_type": kind, "amount": from_cents(abs(cents)), "payment_method_id": method_id}
    )
    method = _user(db, order["user_id"])["payment_methods"].get(method_id)
    if method is not None and method["source"] == "gift_card":
        method["balance"] = from_cents(to_cents(method["balance"]) - cents)


def _require_status(order: Record, allowed: tuple[str, ...], action: str) -> None:
    if order["status"] not in allowed:
        raise ToolExecutionError(f"order {order['order_id']} is {order['status']}; it cannot {action}")


def _address(address1: str, address2: str, city: str, state: str, country: str, zip_code: str) -> Record:
    return {
        "address1": address1.strip(),
        "address2": address2.strip(),
        "city": city.strip(),
        "state": state.strip(),
        "country": country.strip(),
        "zip": zip_code.strip(),
    }


# ---------------------------------------------------------------- read tools


@tool("read")
def find_user_id_by_email(db: State, email: Text) -> str:
    """Find a customer's user id by their email address.

    Args:
        email: The customer's email address, such as maya.okafor12@example.com.
    """
    entry = db.users_by_email.get(email.strip().lower())
    if entry is None:
        raise ToolExecutionError(f"no user with email {email}")
    return entry["user_id"]


@tool("read")
def find_user_id_by_name_zip(db: State, first_name: Text, last_name: Text, zip_code: ZipCode) -> str:
    """Find a customer's user id by their first name, last name and the zip code of their address.

    Args:
        first_name: The customer's first name, such as Maya.
        last_name: The customer's last name, such as Okafor.
        zip_code: The 5-digit zip code of the customer's address, such as 97205.
    """
    entry = db.users_by_name_zip.get(name_zip_key(first_name, last_name, zip_code))
    if entry is None or not entry["user_ids"]:
        raise ToolExecutionError(f"no user named {first_name} {last_name} with zip code {zip_code}")
    if len(entry["user_ids"]) > 1:
        raise ToolExecutionError("several users match this name and zip code; ask for the email address instead")
    return entry["user_ids"][0]


@tool("read")
def get_user_details(db: State, user_id: UserId) -> Record:
    """Get a customer's profile: name, email, default address, payment methods and order ids.

    Args:
        user_id: The user's id, such as usr_maya_okafor_417.
    """
    return _user(db, user_id)


@tool("read")
def get_order_details(db: State, order_id: OrderId) -> Record:
    """Get an order: status, items, shipping address, payment history, tracking and dates.

    Args:
        order_id: The order's id, such as ord_4827163.
    """
    return _order(db, order_id)


@tool("read")
def get_product_details(db: State, product_id: ProductId) -> Record:
    """Get a product and all of its variants (item id, options, price, availability).

    Args:
        product_id: The product's id, such as prd_4821.
    """
    return _product(db, product_id)


@tool("read")
def list_all_product_types(db: State) -> dict[str, str]:
    """List every product type the store sells, as a map from product name to product id."""
    return dict(db.product_index["all"])


@tool("read")
def calculate(db: State, expression: Annotated[str, Field(max_length=200)]) -> str:
    """Calculate an arithmetic expression of numbers, + - * / and parentheses; the result has 2 decimals.

    Args:
        expression: The expression, such as 49.99 + 12.50 - 5.
    """
    return f"{round(evaluate_arithmetic(expression), 2):.2f}"


@tool("read")
def transfer_to_human_agents(db: State, summary: Annotated[str, Field(max_length=1000)]) -> str:
    """Hand the conversation to a human agent. Use only when the policy says so.

    Args:
        summary: A short summary of the customer's issue for the human agent.
    """
    return "Transfer successful"


# ---------------------------------------------------------------- write tools


@tool("write")
def cancel_pending_order(db: State, order_id: OrderId, reason: CancelReason) -> Record:
    """Cancel an order and refund every payment to the method it came from (gift cards immediately).

    Args:
        order_id: The order's id, such as ord_4827163.
        reason: Why the customer cancels: "no longer needed" or "ordered by mistake".
    """
    order = _order(db, order_id)
    if order["status"] == "cancelled":
        raise ToolExecutionError(f"order {order_id} is already cancelled")
    refunded = 0
    for method_id, cents in net_paid_cents(order).items():
        _record_transaction(db, order, method_id, -cents)
        refunded += cents
    order["status"] = "cancelled"
    order["cancellation"] = {"reason": reason, "date": TODAY}
    return {**order, "refund_total": from_cents(refunded)}


@tool("write")
def modify_pending_order_items(
    db: State, order_id: OrderId, item_ids: ItemIds, new_item_ids: ItemIds, payment_method_id: PaymentMethodId
) -> Record:
    """Swap items of an order for other variants of the same products, settling the price difference.

    Args:
        order_id: The order's id, such as ord_4827163.
        item_ids: The item ids in the order to replace.
        new_item_ids: The new variants' item ids, in the same order as item_ids.
        payment_method_id: The method that pays a positive price difference or receives a negative one.
    """
    order = _order(db, order_id)
    _require_status(order, _CHANGEABLE, "have its items changed")
    pairs = _replacements(db, order, item_ids, new_item_ids)
    _payment_method(_user(db, order["user_id"]), payment_method_id)
    difference = _price_difference_cents(pairs)
    for item, variant in pairs:
        item.update(item_id=variant["item_id"], options=dict(variant["options"]), price=variant["price"])
    _record_transaction(db, order, payment_method_id, difference)
    order["items_modified"] = True
    return {**order, "price_difference": from_cents(difference)}


@tool("write")
def modify_pending_order_address(
    db: State,
    order_id: OrderId,
    address1: Text,
    address2: Text,
    city: Text,
    state: Text,
    country: Text,
    zip_code: ZipCode,
) -> Record:
    """Change the shipping address of an order.

    Args:
        order_id: The order's id, such as ord_4827163.
        address1: Street address, such as 412 Alder Street.
        address2: Second address line, such as Apt 3B; an empty string if there is none.
        city: City, such as Portland.
        state: Two-letter state code, such as OR.
        country: Country, such as USA.
        zip_code: 5-digit zip code, such as 97205.
    """
    order = _order(db, order_id)
    _require_status(order, _CHANGEABLE, "have its address changed")
    order["address"] = _address(address1, address2, city, state, country, zip_code)
    return order


@tool("write")
def modify_pending_order_payment(db: State, order_id: OrderId, payment_method_id: PaymentMethodId) -> Record:
    """Pay an order with another payment method: the old method is refunded and the new one charged.

    Args:
        order_id: The order's id, such as ord_4827163.
        payment_method_id: The new payment method's id, such as cc_48213.
    """
    order = _order(db, order_id)
    _require_status(order, _CHANGEABLE, "change its payment")
    _payment_method(_user(db, order["user_id"]), payment_method_id)
    held = net_paid_cents(order)
    if list(held) == [payment_method_id]:
        raise ToolExecutionError(f"order {order_id} is already paid with {payment_method_id}")
    for method_id, cents in held.items():
        _record_transaction(db, order, method_id, -cents)
    _record_transaction(db, order, payment_method_id, order_total_cents(order))
    return order


@tool("write")
def modify_user_address(
    db: State,
    user_id: UserId,
    address1: Text,
    address2: Text,
    city: Text,
    state: Text,
    country: Text,
    zip_code: ZipCode,
) -> Record:
    """Change a customer's default address (existing orders keep their own shipping address).

    Args:
        user_id: The user's id, such as usr_maya_okafor_417.
        address1: Street address, such as 412 Alder Street.
        address2: Second address line, such as Apt 3B; an empty string if there is none.
        city: City, such as Portland.
        state: Two-letter state code, such as OR.
        country: Country, such as USA.
        zip_code: 5-digit zip code, such as 97205.
    """
    user = _user(db, user_id)
    address = _address(address1, address2, city, state, country, zip_code)
    _reindex_name_zip(db, user, user["address"]["zip"], address["zip"])
    user["address"] = address
    return user


def _reindex_name_zip(db: State, user: Record, old_zip: str, new_zip: str) -> None:
    """Keep name + zip authentication working after a move: the index follows the default address."""
    if old_zip == new_zip:
        return
    first, last = user["name"]["first_name"], user["name"]["last_name"]
    old_key, new_key = name_zip_key(first, last, old_zip), name_zip_key(first, last, new_zip)
    old_entry = db.users_by_name_zip.get(old_key)
    if old_entry is not None and user["user_id"] in old_entry["user_ids"]:
        old_entry["user_ids"].remove(user["user_id"])
        if not old_entry["user_ids"]:
            db.users_by_name_zip.delete(old_key)
    new_entry = db.users_by_name_zip.get(new_key)
    if new_entry is None:
        db.users_by_name_zip.put(new_key, {"user_ids": [user["user_id"]]})
    else:
        new_entry["user_ids"] = sorted({*new_entry["user_ids"], user["user_id"]})


@tool("write")
def return_delivered_order_items(
    db: State, order_id: OrderId, item_ids: ItemIds, payment_method_id: PaymentMethodId
) -> Record:
    """Request a return of delivered items; the refund is paid to the given method once they arrive.

    Args:
        order_id: The order's id, such as ord_4827163.
        item_ids: All the item ids in the order to return, in one call.
        payment_method_id: The method that receives the refund.
    """
    order = _order(db, order_id)
    _require_status(order, ("delivered",), "be returned")
    items = sorted(_order_items(order, item_ids), key=lambda item: item["item_id"])
    _payment_method(_user(db, order["user_id"]), payment_method_id)
    order["status"] = "return requested"
    order["return_request"] = {
        "item_ids": [item["item_id"] for item in items],
        "refund_amount": from_cents(sum(to_cents(item["price"]) for item in items)),
        "payment_method_id": payment_method_id,
        "requested_date": TODAY,
    }
    return order


@tool("write")
def exchange_delivered_order_items(
    db: State, order_id: OrderId, item_ids: ItemIds, new_item_ids: ItemIds, payment_method_id: PaymentMethodId
) -> Record:
    """Request an exchange of delivered items for other variants of the same products.

    Args:
        order_id: The order's id, such as ord_4827163.
        item_ids: All the item ids in the order to exchange, in one call.
        new_item_ids: The new variants' item ids, in the same order as item_ids.
        payment_method_id: The method that pays a positive price difference or receives a negative one.
    """
    order = _order(db, order_id)
    _require_status(order, ("delivered",), "be exchanged")
    pairs = _replacements(db, order, item_ids, new_item_ids)
    _payment_method(_user(db, order["user_id"]), payment_method_id)
    order["status"] = "exchange requested"
    order["exchange_request"] = {
        "item_ids": [item["item_id"] for item, _ in pairs],
        "new_item_ids": [variant["item_id"] for _, variant in pairs],
        "price_difference": from_cents(_price_difference_cents(pairs)),
        "payment_method_id": payment_method_id,
        "requested_date": TODAY,
    }
    return order


# ---------------------------------------------------------------- the written policy, as code

PolicyRule = Callable[[State, dict[str, Any]], str | None]


def policy_check(db: State, name: str, arguments: dict[str, Any]) -> str | None:
    """Why calling tool `name` with `arguments` on `db` breaks policy.md, or None if it does not."""
    rule = _POLICY_RULES.get(name)
    if rule is None:
        return None
    try:
        return rule(db, arguments)
    except (KeyError, TypeError, ValueError, AttributeError):
        # Unknown ids or malformed arguments: the tool rejects those itself, no policy rule is at stake.
        return None


def _not_pending(order: Record, action: str) -> str | None:
    if order["status"] != "pending":
        return f"order {order['order_id']} is {order['status']}; only pending orders can {action}"
    return None


def _gift_card_shortfall(db: State, order: Record, method_id: str, cents: int) -> str | None:
    method = db.users[order["user_id"]]["payment_methods"][method_id]
    if method["source"] == "gift_card" and cents > to_cents(method["balance"]):
        return f"gift card {method_id} has ${method['balance']:.2f}, less than the ${from_cents(cents):.2f} due"
    return None


def _out_of_stock(db: State, order: Record, item_ids: list[str], new_item_ids: list[str]) -> str | None:
    by_id = {item["item_id"]: item for item in order["items"]}
    for item_id, new_id in zip(item_ids, new_item_ids, strict=True):
        variant = db.products[by_id[item_id]["product_id"]]["variants"][new_id]
        if not variant["available"]:
            return f"variant {new_id} is out of stock"
    return None


def _outside_window(order: Record) -> str | None:
    if order["status"] != "delivered" or order["delivery_date"] is None:
        status = order["status"]
        return f"order {order['order_id']} is {status}; only delivered orders can be returned or exchanged"
    days = days_between(order["delivery_date"], TODAY)
    if days > RETURN_WINDOW_DAYS:
        window = RETURN_WINDOW_DAYS
        return f"order {order['order_id']} was delivered {days} days ago, beyond the {window}-day window"
    return None


def _difference(db: State, order: Record, args: dict[str, Any]) -> int:
    by_id = {item["item_id"]: item for item in order["items"]}
    cents = 0
    for item_id, new_id in zip(args["item_ids"], args["new_item_ids"], strict=True):
        item = by_id[item_id]
        cents += to_cents(db.products[item["product_id"]]["variants"][new_id]["price"]) - to_cents(item["price"])
    return cents


def _first_problem(*checks: Callable[[], str | None]) -> str | None:
    for check in checks:
        problem = check()
        if problem:
            return problem
    return None


def _rule_cancel(db: State, args: dict[str, Any]) -> str | None:
    return _not_pending(db.orders[args["order_id"]], "be cancelled")


def _rule_modify_items(db: State, args: dict[str, Any]) -> str | None:
    order = db.orders[args["order_id"]]
    return _first_problem(
        lambda: _not_pending(order, "have their items modified"),
        lambda: "the items of an order can be modified only once" if order["items_modified"] else None,
        lambda: _out_of_stock(db, order, args["item_ids"], args["new_item_ids"]),
        lambda: _gift_card_shortfall(db, order, args["payment_method_id"], _difference(db, order, args)),
    )


def _rule_modify_address(db: State, args: dict[str, Any]) -> str | None:
    return _not_pending(db.orders[args["order_id"]], "have their address changed")


def _rule_modify_payment(db: State, args: dict[str, Any]) -> str | None:
    order = db.orders[args["order_id"]]
    return _first_problem(
        lambda: _not_pending(order, "change their payment method"),
        lambda: _gift_card_shortfall(db, order, args["payment_method_id"], order_total_cents(order)),
    )


def _rule_return(db: State, args: dict[str, Any]) -> str | None:
    order = db.orders[args["order_id"]]
    method_id = args["payment_method_id"]
    paid_with = {e["payment_method_id"] for e in order["payment_history"] if e["transaction_type"] == "payment"}
    method = db.users[order["user_id"]]["payment_methods"][method_id]

    def wrong_refund_method() -> str | None:
        if method_id in paid_with or method["source"] == "gift_card":
            return None
        return f"refunds go to the original payment method or a gift card, not {method_id}"

    return _first_problem(lambda: _outside_window(order), wrong_refund_method)


def _rule_exchange(db: State, args: dict[str, Any]) -> str | None:
    order = db.orders[args["order_id"]]
    return _first_problem(
        lambda: _outside_window(order),
        lambda: _out_of_stock(db, order, args["item_ids"], args["new_item_ids"]),
        lambda: _gift_card_shortfall(db, order, args["payment_method_id"], _difference(db, order, args)),
    )


_POLICY_RULES: dict[str, PolicyRule] = {
    "cancel_pending_order": _rule_cancel,
    "modify_pending_order_items": _rule_modify_items,
    "modify_pending_order_address": _rule_modify_address,
    "modify_pending_order_payment": _rule_modify_payment,
    "return_delivered_order_items": _rule_return,
    "exchange_delivered_order_items": _rule_exchange,
}
