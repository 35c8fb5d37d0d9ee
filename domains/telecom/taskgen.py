"""Compositional task generator for the telecom domain: tasks are built from fault atoms.

A fault atom breaks one thing, either on the phone (the user must fix it) or on the back end (the agent
must). A task picks 1 to 3 atoms, always at least one on the phone and usually one on the back end, for
one customer's line; initialization data writes the broken records, the golden actions fix each atom in
a valid order (diagnosis reads first, back end before phone), and env assertions check the end state.

    python -m tauproxy_domains.telecom.taskgen [--seed 0] [--n 44] [--out tasks.json]
"""

from __future__ import annotations

import argparse
import copy
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .db import (
    ABROAD,
    BROKEN_APNS,
    PLANS,
    TOPUP_PRICES,
    abroad_location,
    build_db,
    default_device,
    home_location,
)
from .tools import data_blocker, money, service_ok

Record = dict[str, Any]
DOMAIN = "telecom"
DEFAULT_N = 44
RECOMMENDED_MODE = "5g_4g_3g"
CHEAPEST_ROAMING_PLAN = "plan_smart15"
OVERDUE_PERIOD = "2025-05"

USER_ATOMS = (
    "sim_unseated",
    "airplane_on",
    "network_mode_2g_only",
    "data_off",
    "roaming_phone_off",
    "apn_broken",
)
AGENT_ATOMS = ("line_suspended_unpaid", "roaming_backend_off", "data_exhausted")
# Canonical order of the fixes: back end first (a suspended line masks every phone fault), then the phone
# from the SIM card upwards, the way a support script goes.
ATOM_ORDER = AGENT_ATOMS + USER_ATOMS
BIGGEST_PLAN_GB = max(p["data_gb"] for p in PLANS.values())
ROAMING_ATOMS = frozenset({"roaming_backend_off", "roaming_phone_off"})

PERSONAS = (
    "Retired teacher, patient but unsure about phone settings; likes each step spelled out.",
    "Busy nurse between shifts; wants short, clear instructions and no small talk.",
    "University student, comfortable with apps, slightly impatient.",
    "Small-business owner who depends on the phone for work calls; polite but worried.",
    "Tourist on a tight schedule; answers briefly and follows instructions carefully.",
    "Parent juggling kids in the background; sometimes asks the agent to repeat a step.",
    "Software tester; describes exactly what the screen shows, nothing more.",
    "Elderly customer who calls the status bar 'the top of the screen'; cooperative.",
)
NO_SERVICE_REASONS = (
    "My phone says there is no service, so I can't call or text anyone.",
    "Since this morning my phone has no signal at all.",
    "My phone stopped connecting to the network; calls just fail.",
)
NO_SERVICE_ABROAD = (
    "I'm traveling in {country} and my phone shows no service at all.",
    "I just landed in {country} and my phone can't find any network.",
)
NO_DATA_REASONS = (
    "My mobile internet stopped working. Nothing loads unless I'm on Wi-Fi.",
    "Apps and web pages won't load over mobile data anymore.",
    "I have signal but no mobile internet on my phone.",
)
UNKNOWN_INFO = (
    "You do not know why the phone is not working, and you cannot see your account, bills, plan or data balance."
)
TASK_INSTRUCTIONS = (
    "Use your phone tools only when the agent asks, one step at a time, and say what the screen shows "
    "afterwards. Agree to a payment, top-up or plan change only if it matches what you know. End the chat "
    "once the phone works again."
)
NO_DATA_ABROAD = (
    "I've just arrived in {country} and my mobile data doesn't work here.",
    "I'm on a trip in {country} and I can't get online with my phone.",
)


@dataclass
class Draft:
    """One task in the making: the records it changes and what the golden run must do."""

    atoms: list[str]
    customer_id: str
    line_id: str
    customer: Record
    line: Record
    device: Record
    location: Record
    known: list[str] = field(default_factory=list)
    agent_actions: list[tuple[str, Record]] = field(default_factory=list)
    user_actions: list[tuple[str, Record]] = field(default_factory=list)
    changed_bills: dict[str, Record] = field(default_factory=dict)
    communicate: list[str] = field(default_factory=list)
    assertions: list[Record] = field(default_factory=list)
    variants: Record = field(default_factory=dict)


def generate_tasks(seed: int, n: int = DEFAULT_N, db: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """`n` tasks for the DB of seed 0 (the one the pack loads), deterministic for `seed`."""
    rng = random.Random(seed)
    db = db if db is not None else build_db(0)
    used: set[str] = set()
    return [_task(rng, db, seed, index, used) for index in range(n)]


# --------------------------------------------------------------------------------------- composition


def _pick_atoms(rng: random.Random, index: int) -> list[str]:
    atoms = {USER_ATOMS[index % len(USER_ATOMS)]}
    size = rng.choices((1, 2, 3), weights=(2, 5, 3))[0]
    if size >= 2 and rng.random() < 0.85:
        atoms.add(rng.choice(AGENT_ATOMS))
    while len(atoms) < size:
        atoms.add(rng.choice(ATOM_ORDER))
    return [atom for atom in ATOM_ORDER if atom in atoms]


def _task(rng: random.Random, db: dict[str, Any], seed: int, index: int, used: set[str]) -> dict[str, Any]:
    atoms = _pick_atoms(rng, index)
    abroad = bool(ROAMING_ATOMS & set(atoms))
    variants: Record = {}
    if "roaming_backend_off" in atoms:
        variants["roaming_needs_plan"] = "data_exhausted" not in atoms and rng.random() < 0.35
    if "data_exhausted" in atoms:
        variants["data_fix"] = rng.choice(("topup", "plan"))
    line_id = _pick_line(rng, db, used, abroad, variants)
    used.add(line_id)
    line = copy.deepcopy(db["lines"][line_id])
    customer_id = line["customer_id"]
    location = abroad_location(rng.choice(sorted(ABROAD))) if abroad else home_location()
    draft = Draft(
        atoms=atoms,
        customer_id=customer_id,
        line_id=line_id,
        customer=db["customers"][customer_id],
        line=line,
        device=default_device(line_id, line["device_model"]),
        location=location,
        variants=variants,
    )
    draft.device["wifi"] = rng.random() < 0.3  # a harmless distractor: the speed test ignores Wi-Fi
    if abroad:
        line["roaming_enabled"] = True
        draft.device["data_roaming"] = True
    for atom in atoms:
        _APPLY[atom](rng, db, draft)
    return _render(rng, seed, index, draft, db)


def _pick_line(rng: random.Random, db: dict[str, Any], used: set[str], abroad: bool, variants: Record) -> str:
    def fits(line_id: str) -> bool:
        line = db["lines"][line_id]
        plan = PLANS[line["plan_id"]]
        customer = db["customers"][line["customer_id"]]
        cards = [(m["brand"], m["last4"]) for m in customer["payment_methods"]]
        if line_id in used or line["status"] != "active" or len(set(cards)) != len(cards):
            return False
        if variants.get("roaming_needs_plan"):
            return line["plan_id"] == "plan_basic5"
        if abroad and not plan["roaming_included"]:
            return False
        if variants.get("data_fix") == "plan" and plan["data_gb"] == BIGGEST_PLAN_GB:
            return False
        return not (variants.get("data_fix") == "topup" and len(line["topups"]) >= 2)

    candidates = [line_id for line_id in sorted(db["lines"]) if fits(line_id)]
    return rng.choice(candidates)


# ------------------------------------------------------------------------------------------ fault atoms


def _sim_unseated(rng: random.Random, db: dict[str, Any], draft: Draft) -> None:
    draft.device["sim_seated"] = False
    draft.user_actions.append(("reseat_sim_card", {}))


def _airplane_on(rng: random.Random, db: dict[str, Any], draft: Draft) -> None:
    draft.device["airplane_mode"] = True
    draft.user_actions.append(("toggle_airplane_mode", {"on": False}))


def _network_mode(rng: random.Random, db: dict[str, Any], draft: Draft) -> None:
    draft.device["network_mode"] = "2g_only"
    draft.user_actions.append(("set_network_mode", {"mode": RECOMMENDED_MODE}))


def _data_off(rng: random.Random, db: dict[str, Any], draft: Draft) -> None:
    draft.device["mobile_data"] = False
    draft.user_actions.append(("toggle_mobile_data", {"on": True}))


def _roaming_phone_off(rng: random.Random, db: dict[str, Any], draft: Draft) -> None:
    draft.device["data_roaming"] = False
    draft.user_actions.append(("toggle_data_roaming", {"on": True}))


def _apn_broken(rng: random.Random, db: dict[str, Any], draft: Draft) -> None:
    draft.device["apn"] = dict(rng.choice(BROKEN_APNS))
    draft.user_actions.extend([("reset_apn_settings", {}), ("reboot_device", {})])


def _line_suspended(rng: random.Random, db: dict[str, Any], draft: Draft) -> None:
    draft.line["status"] = "suspended"
    draft.line["suspension_reason"] = "nonpayment"
    bill_id = next(b for b in draft.customer["bill_ids"] if db["bills"][b]["period"] == OVERDUE_PERIOD)
    bill = {**db["bills"][bill_id], "status": "unpaid", "paid_with": None}
    draft.changed_bills[bill_id] = bill
    method = rng.choice(draft.customer["payment_methods"])
    draft.known.append(
        f"If a payment is needed, you want to pay with your {method['brand']} card ending in {method['last4']}."
    )
    draft.agent_actions.extend(
        [
            ("get_bills", {"customer_id": draft.customer_id}),
            ("make_payment", {"bill_id": bill_id, "payment_method_id": method["payment_method_id"]}),
            ("resume_line", {"line_id": draft.line_id}),
        ]
    )
    draft.communicate.append(money(bill["amount"]))
    draft.assertions.extend(
        [
            _assert("assistant", "line_status", {"line_id": draft.line_id}, "active"),
            _assert("assistant", "has_overdue_bills", {"customer_id": draft.customer_id}, False),
        ]
    )


def _roaming_backend_off(rng: random.Random, db: dict[str, Any], draft: Draft) -> None:
    draft.line["roaming_enabled"] = False
    if draft.variants.get("roaming_needs_plan"):
        draft.known.append(
            "If your plan does not cover roaming, you are willing to switch to the cheapest plan that does."
        )
        draft.agent_actions.extend(
            [
                ("list_plans", {}),
                ("change_plan", {"line_id": draft.line_id, "plan_id": CHEAPEST_ROAMING_PLAN}),
            ]
        )
        draft.communicate.append(money(PLANS[CHEAPEST_ROAMING_PLAN]["monthly_fee"]))
        draft.assertions.append(_line_plan_is(draft.line_id, CHEAPEST_ROAMING_PLAN))
    draft.agent_actions.append(("enable_roaming", {"line_id": draft.line_id}))


def _data_exhausted(rng: random.Random, db: dict[str, Any], draft: Draft) -> None:
    line = draft.line
    plan = PLANS[line["plan_id"]]
    line["data_used_gb"] = round(plan["data_gb"] + sum(t["gb"] for t in line["topups"]), 1)
    if draft.variants["data_fix"] == "topup":
        size = rng.choice(sorted(TOPUP_PRICES))
        draft.known.append(f"If you have run out of data, you want a {size} GB top-up.")
        draft.agent_actions.append(("add_data_topup", {"line_id": draft.line_id, "gb": size}))
        draft.communicate.append(money(TOPUP_PRICES[size]))
        added = _assert("assistant", "topup_gb_added_today", {"line_id": draft.line_id}, size)
        draft.assertions.append(added)
        return
    bigger = sorted(pid for pid, p in PLANS.items() if p["data_gb"] > plan["data_gb"])
    target = rng.choice(bigger)
    name = PLANS[target]["name"]
    draft.known.append(f"If you have run out of data, you would rather move to {name} than buy a top-up.")
    change = ("change_plan", {"line_id": draft.line_id, "plan_id": target})
    draft.agent_actions.extend([("list_plans", {}), change])
    draft.communicate.append(money(PLANS[target]["monthly_fee"]))
    draft.assertions.append(_line_plan_is(draft.line_id, target))


_APPLY = {
    "sim_unseated": _sim_unseated,
    "airplane_on": _airplane_on,
    "network_mode_2g_only": _network_mode,
    "data_off": _data_off,
    "roaming_phone_off": _roaming_phone_off,
    "apn_broken": _apn_broken,
    "line_suspended_unpaid": _line_suspended,
    "roaming_backend_off": _roaming_backend_off,
    "data_exhausted": _data_exhausted,
}


# ------------------------------------------------------------------------------------------- rendering


def _assert(side: str, name: str, arguments: Record, value: Any) -> Record:
    return {"env_type": side, "func_name": name, "arguments": arguments, "assert_value": value}


def _line_plan_is(line_id: str, plan_id: str) -> Record:
    return _assert("assistant", "line_plan", {"line_id": line_id}, plan_id)


def _render(rng: random.Random, seed: int, index: int, draft: Draft, db: dict[str, Any]) -> dict[str, Any]:
    golden = [
        ("assistant", "get_customer_by_phone", {"phone_number": draft.line["phone_number"]}),
        ("user", "check_status_bar", {}),
        ("assistant", "get_line_details", {"line_id": draft.line_id}),
        *(("assistant", name, args) for name, args in draft.agent_actions),
        *(("user", name, args) for name, args in draft.user_actions),
        ("user", "run_speed_test", {}),
    ]
    actions = [
        {"action_id": f"{i}_{name}", "requestor": side, "name": name, "arguments": args}
        for i, (side, name, args) in enumerate(golden)
    ]
    assertions = [
        _assert("user", "service_working", {}, True),
        _assert("user", "mobile_data_working", {}, True),
    ]
    if draft.location["abroad"]:
        assertions.append(_assert("user", "roaming_data_working", {}, True))
    assertions.extend(draft.assertions)
    agent_data: Record = {"lines": {draft.line_id: draft.line}}
    if draft.changed_bills:
        agent_data["bills"] = draft.changed_bills
    return {
        "id": f"{DOMAIN}_{seed}_{index}_{'-'.join(draft.atoms)}",
        "description": {
            "purpose": f"Dual control: restore service and mobile data by fixing {', '.join(draft.atoms)}.",
            "faults": draft.atoms,
            "user_faults": [a for a in draft.atoms if a in USER_ATOMS],
            "agent_faults": [a for a in draft.atoms if a in AGENT_ATOMS],
            "variants": draft.variants,
        },
        "user_scenario": {
            "persona": rng.choice(PERSONAS),
            "instructions": {
                "domain": DOMAIN,
                "reason_for_call": _reason(rng, draft, db),
                "known_info": _known_info(draft),
                "unknown_info": UNKNOWN_INFO,
                "task_instructions": TASK_INSTRUCTIONS,
            },
        },
        "initial_state": {
            "initialization_data": {
                "agent_data": agent_data,
                "user_data": {"phone": {"device": draft.device}, "location": {"current": draft.location}},
            }
        },
        "evaluation_criteria": {
            "actions": actions,
            "env_assertions": assertions,
            "communicate_info": draft.communicate,
            "reward_basis": ["ENV_ASSERTION", "COMMUNICATE"] if draft.communicate else ["ENV_ASSERTION"],
        },
    }


def _known_info(draft: Draft) -> str:
    parts = [
        f"Your name is {draft.customer['name']}.",
        f"The phone with the problem has the number {draft.line['phone_number']}.",
    ]
    if draft.location["abroad"]:
        parts.append(f"You are traveling in {draft.location['country']}.")
    return " ".join([*parts, *draft.known])


def _reason(rng: random.Random, draft: Draft, db: dict[str, Any]) -> str:
    """The complaint follows the symptom the broken state really shows, computed like the phone does."""
    plan = PLANS[draft.line["plan_id"]]
    abroad = draft.location["abroad"]
    if not service_ok(draft.device, draft.line, draft.location):
        texts = NO_SERVICE_ABROAD if abroad else NO_SERVICE_REASONS
    else:
        assert data_blocker(draft.device, draft.line, plan, draft.location) is not None, draft.atoms
        texts = NO_DATA_ABROAD if abroad else NO_DATA_REASONS
    return rng.choice(texts).format(country=draft.location["country"])


def dumps(tasks: list[dict[str, Any]]) -> str:
    return json.dumps(tasks, indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Generate telecom tasks from fault atoms.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n", type=int, default=DEFAULT_N)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("tasks.json"))
    args = parser.parse_args(argv)
    args.out.write_text(dumps(generate_tasks(args.seed, args.n)), encoding="utf-8")


if __name__ == "__main__":
    main()
