"""Tools of the telecom domain: Kestrel Mobile's back end for the agent, the user's phone for the user.

The phone's behaviour (signal, mobile data, speed) is computed by the pure functions of the "device
physics" section from four records: the phone, the line in it, the line's plan and where the user is.
Status-bar and speed-test tools and the task assertions all use them, so what the user sees and what
grading checks cannot drift apart.

Tools reject only input that cannot happen (unknown ids, paying a paid bill, resuming an active line).
Whether a back-end change is *allowed* is the agent's call under the policy; `policy_check` applies it.
"""

from __future__ import annotations

import copy
from typing import Annotated, Any, Literal

from pydantic import Field

from tauproxy.domain.state import State, Table
from tauproxy.domain.tools import assertion, tool, user_tool
from tauproxy.errors import ToolExecutionError

from .db import CYCLE_START, DEFAULT_APN, MAX_TOPUPS_PER_CYCLE, TODAY, TOPUP_PRICES

Record = dict[str, Any]
CustomerId = Annotated[str, Field(pattern=r"^C\d{4}$", max_length=5)]
LineId = Annotated[str, Field(pattern=r"^L\d{5}$", max_length=6)]
PlanId = Annotated[str, Field(pattern=r"^plan_[a-z0-9]{2,12}$", max_length=17)]
BillId = Annotated[str, Field(pattern=r"^B\d{6}$", max_length=7)]
PaymentMethodId = Annotated[str, Field(pattern=r"^pm_\d{6}$", max_length=9)]
PhoneNumber = Annotated[str, Field(min_length=7, max_length=20)]
NetworkMode = Literal["5g_4g_3g", "4g_3g", "3g_only", "2g_only"]
TopupSize = Literal[1, 3, 5]

NETWORK_MODES: dict[str, tuple[str, ...]] = {
    "5g_4g_3g": ("5g", "4g", "3g"),
    "4g_3g": ("4g", "3g"),
    "3g_only": ("3g",),
    "2g_only": ("2g",),
}
DATA_TECHNOLOGIES = frozenset({"5g", "4g", "3g"})
BASE_SPEED_MBPS = {"5g": 220.0, "4g": 48.0, "3g": 5.5}


def money(amount: float) -> str:
    return f"${amount:,.2f}"


# ------------------------------------------------------------------------------------- device physics


def data_allowance_gb(line: Record, plan: Record) -> float:
    return round(plan["data_gb"] + sum(t["gb"] for t in line["topups"]), 1)


def data_remaining_gb(line: Record, plan: Record) -> float:
    return round(max(0.0, data_allowance_gb(line, plan) - line["data_used_gb"]), 1)


def network_type(device: Record, line: Record | None, location: Record) -> str:
    """The radio technology the phone is registered on, or "none" (no service at all)."""
    if device["airplane_mode"] or not device["sim_seated"] or line is None or line["status"] != "active":
        return "none"
    available = set(location["technologies"])
    return next((tech for tech in NETWORK_MODES[device["network_mode"]] if tech in available), "none")


def service_ok(device: Record, line: Record | None, location: Record) -> bool:
    return network_type(device, line, location) != "none"


def apn_ok(device: Record) -> bool:
    return device["apn"] == DEFAULT_APN and not device["apn_pending_restart"]


def data_blocker(device: Record, line: Record | None, plan: Record | None, location: Record) -> str | None:
    """Why mobile data does not work (the first reason found), or None when it works."""
    tech = network_type(device, line, location)
    if tech == "none" or line is None or plan is None:
        return "no_service"
    if not device["mobile_data"]:
        return "mobile_data_off"
    if tech not in DATA_TECHNOLOGIES:
        return "network_too_old"
    if not apn_ok(device):
        return "apn"
    if data_remaining_gb(line, plan) <= 0:
        return "no_data_left"
    if location["abroad"] and not line["roaming_enabled"]:
        return "roaming_not_enabled_on_line"
    if location["abroad"] and not device["data_roaming"]:
        return "data_roaming_off_on_phone"
    return None


def speed_mbps(device: Record, line: Record | None, plan: Record | None, location: Record) -> float:
    if data_blocker(device, line, plan, location) is not None:
        return 0.0
    tech = network_type(device, line, location)
    factor = (0.5 if location["abroad"] else 1.0) * location["signal_bars"] / 4
    return round(BASE_SPEED_MBPS[tech] * factor, 1)


def world(db: State) -> tuple[Record, Record | None, Record | None, Record]:
    """The phone, the line its SIM belongs to, that line's plan, and where the user is."""
    device = db.phone["device"]
    line = db.lines.get(device["line_id"])
    plan = db.plans.get(line["plan_id"]) if line is not None else None
    return device, line, plan, db.location["current"]


# ---------------------------------------------------------------------------------------------- lookups


def _customer(db: State, customer_id: str) -> Record:
    customer = db.customers.get(customer_id)
    if customer is None:
        raise ToolExecutionError(f"customer {customer_id} not found")
    return customer


def _line(db: State, line_id: str) -> Record:
    line = db.lines.get(line_id)
    if line is None:
        raise ToolExecutionError(f"line {line_id} not found")
    return line


def _plan(db: State, plan_id: str) -> Record:
    plan = db.plans.get(plan_id)
    if plan is None:
        raise ToolExecutionError(f"plan {plan_id} not found (see list_plans)")
    return plan


def _own(table: Table, rid: str) -> Record:
    """A copy of a record that only this trial holds, for editing.

    Records that a task's initialization data put in the state are the task's own objects, shared by every
    environment built for the task; editing them in place would leak one trial's changes into the next
    (and into grading's replays), so writes always edit a private copy.
    """
    record = copy.deepcopy(table[rid])
    table.put(rid, record)
    return record


def _own_line(db: State, line_id: str) -> Record:
    _line(db, line_id)
    return _own(db.lines, line_id)


def _own_device(db: State) -> Record:
    return _own(db.phone, "device")


def _normalise_number(text: str) -> str:
    digits = "".join(ch for ch in text if ch.isdigit())
    if len(digits) == 11 and digits.startswith("1"):
        digits = digits[1:]
    if len(digits) != 10:
        raise ToolExecutionError(f"{text!r} is not a 10-digit phone number")
    return f"{digits[:3]}-{digits[3:6]}-{digits[6:]}"


def is_overdue(bill: Record) -> bool:
    return bill["status"] == "unpaid" and bill["due_date"] < TODAY


def overdue_bills(db: State, customer_id: str) -> list[str]:
    return [bid for bid in _customer(db, customer_id)["bill_ids"] if is_overdue(db.bills[bid])]


def _customer_view(db: State, customer_id: str) -> Record:
    customer = _customer(db, customer_id)
    lines = [{"line_id": lid, "phone_number": db.lines[lid]["phone_number"]} for lid in customer["line_ids"]]
    return {
        "customer_id": customer_id,
        "name": customer["name"],
        "email": customer["email"],
        "lines": lines,
        "payment_methods": customer["payment_methods"],
    }


def _plan_view(plan_id: str, plan: Record) -> Record:
    return {
        "plan_id": plan_id,
        "name": plan["name"],
        "monthly_fee": money(plan["monthly_fee"]),
        "data_gb": plan["data_gb"],
        "roaming_included": plan["roaming_included"],
    }


def _line_view(db: State, line_id: str) -> Record:
    line = _line(db, line_id)
    plan = _plan(db, line["plan_id"])
    return {
        "line_id": line_id,
        "customer_id": line["customer_id"],
        "phone_number": line["phone_number"],
        "status": line["status"],
        "suspension_reason": line["suspension_reason"],
        "plan": _plan_view(line["plan_id"], plan),
        "roaming_enabled": line["roaming_enabled"],
        "cycle_start": CYCLE_START,
        "data_allowance_gb": data_allowance_gb(line, plan),
        "data_used_gb": line["data_used_gb"],
        "data_remaining_gb": data_remaining_gb(line, plan),
        "topups_this_cycle": [{**t, "price": money(t["price"])} for t in line["topups"]],
        "device_model": line["device_model"],
    }


# ----------------------------------------------------------------------------------- agent tools: reads


@tool("read")
def get_customer_by_phone(db: State, phone_number: PhoneNumber) -> Record:
    """Find the customer who owns a mobile number, with their lines and payment methods on file.

    Args:
        phone_number: The mobile number, such as 415-555-0142.
    """
    entry = db.phone_index.get(_normalise_number(phone_number))
    if entry is None:
        raise ToolExecutionError(f"no Kestrel Mobile line has the number {phone_number}")
    return _customer_view(db, entry["customer_id"])


@tool("read")
def get_customer_by_id(db: State, customer_id: CustomerId) -> Record:
    """Get a customer's profile: name, lines and payment methods on file.

    Args:
        customer_id: The customer's id, such as C1042.
    """
    return _customer_view(db, customer_id)


@tool("read")
def get_line_details(db: State, line_id: LineId) -> Record:
    """Get a line's status, plan, roaming setting and data usage for the current billing cycle.

    Args:
        line_id: The line's id, such as L10057.
    """
    return _line_view(db, line_id)


@tool("read")
def list_plans(db: State) -> list[Record]:
    """List every mobile plan Kestrel Mobile offers, cheapest first."""
    ordered = sorted(db.plans.items(), key=lambda item: (item[1]["monthly_fee"], item[0]))
    return [_plan_view(pid, plan) for pid, plan in ordered]


@tool("read")
def get_plan_details(db: State, plan_id: PlanId) -> Record:
    """Get one plan's monthly fee, data allowance and whether it includes roaming.

    Args:
        plan_id: The plan's id, such as plan_smart15.
    """
    return _plan_view(plan_id, _plan(db, plan_id))


@tool("read")
def get_bills(db: State, customer_id: CustomerId) -> list[Record]:
    """List a customer's bills, newest first, with whether each one is paid or overdue.

    Args:
        customer_id: The customer's id.
    """
    bills = []
    for bill_id in _customer(db, customer_id)["bill_ids"]:
        bill = db.bills[bill_id]
        bills.append(
            {
                "bill_id": bill_id,
                "period": bill["period"],
                "amount": money(bill["amount"]),
                "due_date": bill["due_date"],
                "status": bill["status"],
                "overdue": is_overdue(bill),
            }
        )
    return sorted(bills, key=lambda b: b["period"], reverse=True)


# ---------------------------------------------------------------------------------- agent tools: writes


@tool("write")
def make_payment(db: State, bill_id: BillId, payment_method_id: PaymentMethodId) -> Record:
    """Pay a bill in full with a payment method the customer has on file.

    Args:
        bill_id: The bill to pay, such as B100231.
        payment_method_id: The customer's payment method, such as pm_200117.
    """
    if bill_id not in db.bills:
        raise ToolExecutionError(f"bill {bill_id} not found")
    bill = _own(db.bills, bill_id)
    if bill["status"] == "paid":
        raise ToolExecutionError(f"bill {bill_id} is already paid")
    methods = {m["payment_method_id"] for m in _customer(db, bill["customer_id"])["payment_methods"]}
    if payment_method_id not in methods:
        raise ToolExecutionError(f"payment method {payment_method_id} is not on file for this customer")
    bill["status"] = "paid"
    bill["paid_with"] = payment_method_id
    return {
        "payment_id": f"PAY-{bill_id}",
        "bill_id": bill_id,
        "amount_charged": money(bill["amount"]),
        "payment_method_id": payment_method_id,
        "date": TODAY,
        "bill_status": "paid",
    }


@tool("write")
def enable_roaming(db: State, line_id: LineId) -> Record:
    """Switch international roaming on for a line on the network side.

    Args:
        line_id: The line's id.
    """
    line = _own_line(db, line_id)
    line["roaming_enabled"] = True
    return {"line_id": line_id, "roaming_enabled": True}


@tool("write")
def disable_roaming(db: State, line_id: LineId) -> Record:
    """Switch international roaming off for a line on the network side.

    Args:
        line_id: The line's id.
    """
    line = _own_line(db, line_id)
    line["roaming_enabled"] = False
    return {"line_id": line_id, "roaming_enabled": False}


@tool("write")
def add_data_topup(db: State, line_id: LineId, gb: TopupSize) -> Record:
    """Add a one-off data top-up to a line for the current billing cycle; its price goes on the next bill.

    Args:
        line_id: The line's id.
        gb: The top-up size in GB: 1, 3 or 5.
    """
    line = _own_line(db, line_id)
    line["topups"].append({"gb": gb, "price": TOPUP_PRICES[gb], "date": TODAY})
    plan = _plan(db, line["plan_id"])
    return {
        "line_id": line_id,
        "added_gb": gb,
        "price": money(TOPUP_PRICES[gb]),
        "data_remaining_gb": data_remaining_gb(line, plan),
    }


@tool("write")
def suspend_line(db: State, line_id: LineId) -> Record:
    """Suspend a line at the customer's request (for example a lost phone): it loses all service.

    Args:
        line_id: The line's id.
    """
    line = _own_line(db, line_id)
    if line["status"] == "suspended":
        raise ToolExecutionError(f"line {line_id} is already suspended")
    line["status"] = "suspended"
    line["suspension_reason"] = "customer_request"
    return {"line_id": line_id, "status": "suspended"}


@tool("write")
def resume_line(db: State, line_id: LineId) -> Record:
    """Lift the suspension of a line so that it has service again.

    Args:
        line_id: The line's id.
    """
    line = _own_line(db, line_id)
    if line["status"] == "active":
        raise ToolExecutionError(f"line {line_id} is not suspended")
    line["status"] = "active"
    line["suspension_reason"] = None
    return {"line_id": line_id, "status": "active"}


@tool("write")
def change_plan(db: State, line_id: LineId, plan_id: PlanId) -> Record:
    """Move a line to another plan, starting today; data already used this cycle counts against the new plan.

    Args:
        line_id: The line's id.
        plan_id: The new plan's id, from list_plans.
    """
    line = _own_line(db, line_id)
    plan = _plan(db, plan_id)
    if line["plan_id"] == plan_id:
        raise ToolExecutionError(f"line {line_id} is already on {plan['name']}")
    line["plan_id"] = plan_id
    return {"line_id": line_id, "plan": _plan_view(plan_id, plan), "data_remaining_gb": data_remaining_gb(line, plan)}


@tool("read")
def transfer_to_human_agents(db: State, summary: str) -> str:
    """Hand the conversation to a human agent. Use only when the policy says so.

    Args:
        summary: A short summary of the customer's issue for the human agent.
    """
    return "Transfer successful"


# ------------------------------------------------------------------------------- user tools: the phone


@user_tool("read")
def check_status_bar(db: State) -> Record:
    """Look at the status bar at the top of your phone's screen: signal, network type and icons."""
    device, line, plan, location = world(db)
    tech = network_type(device, line, location)
    connected = data_blocker(device, line, plan, location) is None
    data_icon = "connected" if connected else ("on, not connected" if device["mobile_data"] else "off")
    return {
        "carrier": location["network"] if tech != "none" else "No service",
        "network_type": tech.upper() if tech != "none" else "none",
        "signal_bars": location["signal_bars"] if tech != "none" else 0,
        "mobile_data_icon": data_icon,
        "airplane_mode_icon": device["airplane_mode"],
        "roaming_icon": location["abroad"] and tech != "none",
        "wifi_icon": device["wifi"],
    }


@user_tool("read")
def check_network_settings(db: State) -> Record:
    """Open the phone's mobile network settings screen and read every switch on it."""
    device = db.phone["device"]
    return {
        "airplane_mode": device["airplane_mode"],
        "mobile_data": device["mobile_data"],
        "data_roaming": device["data_roaming"],
        "network_mode": device["network_mode"],
        "wifi": device["wifi"],
        "wifi_calling": device["wifi_calling"],
    }


@user_tool("read")
def check_sim_status(db: State) -> Record:
    """Open the SIM card status screen of your phone."""
    device, line, _, _ = world(db)
    if not device["sim_seated"]:
        return {"sim_card": "not detected", "status": "no SIM card"}
    if line is None:
        return {"sim_card": "detected", "status": "not provisioned"}
    status = "ready" if line["status"] == "active" else "blocked by carrier"
    return {"sim_card": "detected", "status": status, "phone_number": line["phone_number"]}


@user_tool("read")
def check_apn_settings(db: State) -> Record:
    """Open the access point (APN) settings used for mobile data."""
    device = db.phone["device"]
    view: Record = {"apn_name": device["apn"]["name"], "proxy": device["apn"]["proxy"] or "not set"}
    if device["apn_pending_restart"]:
        view["notice"] = "APN changes take effect after the phone restarts"
    return view


@user_tool("read")
def check_data_usage(db: State) -> Record:
    """Open the data usage screen: mobile data used since the billing cycle started."""
    _, line, _, _ = world(db)
    used = line["data_used_gb"] if line is not None else 0.0
    return {"cycle_start": CYCLE_START, "mobile_data_used_gb": used}


@user_tool("read")
def run_speed_test(db: State) -> Record:
    """Run a speed test over the mobile network (Wi-Fi is not used for the test)."""
    device, line, plan, location = world(db)
    down = speed_mbps(device, line, plan, location)
    if down == 0.0:
        return {"connection": "mobile", "result": "no internet connection", "download_mbps": 0.0, "upload_mbps": 0.0}
    return {"connection": "mobile", "result": "ok", "download_mbps": down, "upload_mbps": round(down / 4, 1)}


@user_tool("write")
def toggle_airplane_mode(db: State, on: bool) -> Record:
    """Switch airplane mode on or off.

    Args:
        on: True to switch airplane mode on, False to switch it off.
    """
    _own_device(db)["airplane_mode"] = on
    return check_status_bar(db)


@user_tool("write")
def toggle_mobile_data(db: State, on: bool) -> Record:
    """Switch mobile data on or off.

    Args:
        on: True to switch mobile data on.
    """
    _own_device(db)["mobile_data"] = on
    return check_status_bar(db)


@user_tool("write")
def toggle_data_roaming(db: State, on: bool) -> Record:
    """Switch the phone's data roaming setting on or off (mobile data outside the home country).

    Args:
        on: True to allow data roaming.
    """
    _own_device(db)["data_roaming"] = on
    return check_status_bar(db)


@user_tool("write")
def set_network_mode(db: State, mode: NetworkMode) -> Record:
    """Choose which network generations the phone may use.

    Args:
        mode: One of 5g_4g_3g (automatic, recommended), 4g_3g, 3g_only or 2g_only.
    """
    _own_device(db)["network_mode"] = mode
    return check_status_bar(db)


@user_tool("write")
def reset_apn_settings(db: State) -> Record:
    """Reset the access point (APN) settings to the carrier's defaults; takes effect after a restart."""
    device = _own_device(db)
    device["apn"] = dict(DEFAULT_APN)
    device["apn_pending_restart"] = True
    return check_apn_settings(db)


@user_tool("write")
def reseat_sim_card(db: State) -> Record:
    """Take the SIM card out of the phone and push it back in firmly."""
    _own_device(db)["sim_seated"] = True
    return check_sim_status(db)


@user_tool("write")
def reboot_device(db: State) -> Record:
    """Restart the phone; pending settings changes are applied."""
    device = _own_device(db)
    device["apn_pending_restart"] = False
    device["boot_count"] += 1
    return check_status_bar(db)


@user_tool("write")
def toggle_wifi(db: State, on: bool) -> Record:
    """Switch Wi-Fi on or off.

    Args:
        on: True to switch Wi-Fi on.
    """
    _own_device(db)["wifi"] = on
    return check_status_bar(db)


@user_tool("write")
def set_wifi_calling(db: State, on: bool) -> Record:
    """Switch Wi-Fi calling on or off.

    Args:
        on: True to let calls go over Wi-Fi.
    """
    _own_device(db)["wifi_calling"] = on
    return {"wifi_calling": on}


# ----------------------------------------------------------------------------------------- assertions


@assertion
def service_working(db: State) -> bool:
    device, line, _, location = world(db)
    return service_ok(device, line, location)


@assertion
def mobile_data_working(db: State) -> bool:
    return data_blocker(*world(db)) is None


@assertion
def roaming_data_working(db: State) -> bool:
    device, line, plan, location = world(db)
    return bool(location["abroad"]) and data_blocker(device, line, plan, location) is None


@assertion
def line_status(db: State, line_id: str) -> str | None:
    line = db.lines.get(line_id)
    return None if line is None else line["status"]


@assertion
def line_plan(db: State, line_id: str) -> str | None:
    line = db.lines.get(line_id)
    return None if line is None else line["plan_id"]


@assertion
def topup_gb_added_today(db: State, line_id: str) -> int:
    line = db.lines.get(line_id)
    return 0 if line is None else sum(t["gb"] for t in line["topups"] if t["date"] == TODAY)


@assertion
def has_overdue_bills(db: State, customer_id: str) -> bool:
    customer = db.customers.get(customer_id)
    return customer is not None and bool(overdue_bills(db, customer_id))


# ------------------------------------------------------------------------------------------ the policy


def policy_check(db: State, name: str, arguments: dict[str, Any]) -> str | None:
    """Why calling agent tool `name` with `arguments` now would break policy.md, or None if it would not."""
    rule = _RULES.get(name)
    if rule is None:
        return None
    line = db.lines.get(str(arguments.get("line_id", "")))
    if line is None:
        return None  # the tool itself rejects unknown lines
    return rule(db, line, arguments)


def _resume_rule(db: State, line: Record, arguments: dict[str, Any]) -> str | None:
    if overdue_bills(db, line["customer_id"]):
        return "a line may not be resumed while the account has an overdue bill; it must be paid first"
    return None


def _account_in_order(db: State, line: Record) -> str | None:
    if line["status"] != "active":
        return "the line is suspended; it must be resumed first"
    if overdue_bills(db, line["customer_id"]):
        return "the account has an overdue bill; it must be paid first"
    return None


def _roaming_rule(db: State, line: Record, arguments: dict[str, Any]) -> str | None:
    if not db.plans[line["plan_id"]]["roaming_included"]:
        return "roaming can only be enabled on a plan that includes roaming"
    return _account_in_order(db, line)


def _topup_rule(db: State, line: Record, arguments: dict[str, Any]) -> str | None:
    if sum(1 for t in line["topups"] if t["date"] >= CYCLE_START) >= MAX_TOPUPS_PER_CYCLE:
        return f"a line may have at most {MAX_TOPUPS_PER_CYCLE} top-ups per billing cycle"
    return _account_in_order(db, line)


def _plan_rule(db: State, line: Record, arguments: dict[str, Any]) -> str | None:
    return _account_in_order(db, line)


_RULES = {
    "resume_line": _resume_rule,
    "enable_roaming": _roaming_rule,
    "add_data_topup": _topup_rule,
    "change_plan": _plan_rule,
}
