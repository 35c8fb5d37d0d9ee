"""The telecom world: Kestrel Mobile's back end (customers, lines, plans, bills) and the user's phone.

One `State` holds both sides. The back-end tables are what the agent's tools read and write; the `phone`
table (one record, "device") and the `location` table (one record, "current") are the user's side, which
only user tools touch. Everything derives from `random.Random(seed)` and fixed dates, so `build_db(seed)`
is byte-identical for a seed; the domain's "today" is `TODAY`, which policy.md states.
"""

from __future__ import annotations

import random
from typing import Any

Record = dict[str, Any]
Tables = dict[str, dict[str, Record]]

CARRIER = "Kestrel Mobile"
TODAY = "2025-06-14"
CYCLE_START = "2025-06-01"
DB_SIZES = {"customers": 300}

# Plans are fixed; the policy lists the same figures.
PLANS: dict[str, Record] = {
    "plan_basic5": {"name": "Basic 5", "monthly_fee": 25.0, "data_gb": 5, "roaming_included": False},
    "plan_smart15": {"name": "Smart 15", "monthly_fee": 40.0, "data_gb": 15, "roaming_included": True},
    "plan_plus30": {"name": "Plus 30", "monthly_fee": 52.0, "data_gb": 30, "roaming_included": True},
    "plan_max100": {"name": "Max 100", "monthly_fee": 70.0, "data_gb": 100, "roaming_included": True},
}
# Data top-up sizes (GB) and prices; no other size exists.
TOPUP_PRICES: dict[int, float] = {1: 5.0, 3: 12.0, 5: 18.0}
MAX_TOPUPS_PER_CYCLE = 2

DEFAULT_APN: Record = {"name": "internet.kestrel", "proxy": ""}
BROKEN_APNS: tuple[Record, ...] = (
    {"name": "wap.kestrel", "proxy": "10.0.0.172"},
    {"name": "internet.kestrel.old", "proxy": "10.12.0.1"},
    {"name": "mms.kestrel", "proxy": ""},
)
HOME_TECHNOLOGIES = ["5g", "4g", "3g"]
# Abroad the partner networks offer no 5G; nowhere is 2G still switched on.
ABROAD: dict[str, Record] = {
    "Portugal": {"partner_network": "Lusanet", "technologies": ["4g", "3g"]},
    "Japan": {"partner_network": "Sakura Tel", "technologies": ["4g", "3g"]},
    "Canada": {"partner_network": "Maple Wireless", "technologies": ["4g", "3g"]},
    "Mexico": {"partner_network": "Celular Azteca", "technologies": ["4g", "3g"]},
    "France": {"partner_network": "Hexaphone", "technologies": ["4g", "3g"]},
}

FIRST_NAMES = (
    "Amara",
    "Bruno",
    "Chiara",
    "Dmitri",
    "Elena",
    "Farid",
    "Greta",
    "Hiro",
    "Ines",
    "Jonas",
    "Keiko",
    "Luca",
    "Mina",
    "Nadia",
    "Omar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sven",
    "Tala",
    "Uma",
    "Viktor",
    "Wren",
    "Yusuf",
    "Zoe",
    "Arjun",
    "Bea",
    "Cyrus",
    "Dalia",
    "Emil",
)
LAST_NAMES = (
    "Abbott",
    "Bauer",
    "Castillo",
    "Dube",
    "Eriksen",
    "Fontaine",
    "Gallo",
    "Haddad",
    "Ivanova",
    "Jensen",
    "Kowalski",
    "Lindqvist",
    "Moreau",
    "Nakamura",
    "Okafor",
    "Petrov",
    "Quiroga",
    "Rossi",
    "Sato",
    "Tanaka",
    "Ueda",
    "Varga",
    "Weber",
    "Xu",
    "Yilmaz",
    "Zimmer",
)
CARD_BRANDS = ("Visa", "Mastercard", "Amex")
DEVICES = ("Pixel 8", "Galaxy S23", "iPhone 14", "Moto G84", "Nokia X30", "iPhone 15")
BILL_PERIODS = (
    ("2025-03", "2025-04-05"),
    ("2025-04", "2025-05-05"),
    ("2025-05", "2025-06-05"),
    ("2025-06", "2025-07-05"),
)


def build_db(seed: int) -> Tables:
    rng = random.Random(seed)
    tables: Tables = {
        "plans": {pid: dict(plan) for pid, plan in PLANS.items()},
        "customers": {},
        "lines": {},
        "phone_index": {},
        "bills": {},
    }
    numbers: set[str] = set()
    line_no = 10001
    bill_no = 100001
    for index in range(DB_SIZES["customers"]):
        customer_id = f"C{1001 + index}"
        customer = _customer(rng, index)
        for _ in range(rng.choice((1, 1, 1, 2, 2, 3))):
            line_id = f"L{line_no}"
            line_no += 1
            number = _phone_number(rng, numbers)
            tables["lines"][line_id] = _line(rng, customer_id, number)
            tables["phone_index"][number] = {"line_id": line_id, "customer_id": customer_id}
            customer["line_ids"].append(line_id)
        fees = sum(PLANS[tables["lines"][lid]["plan_id"]]["monthly_fee"] for lid in customer["line_ids"])
        for period, due in BILL_PERIODS:
            bill_id = f"B{bill_no}"
            bill_no += 1
            extras = rng.choice((0.0, 0.0, 0.0, 4.5, 7.25, 12.0))
            tables["bills"][bill_id] = {
                "customer_id": customer_id,
                "period": period,
                "amount": round(fees + extras, 2),
                "due_date": due,
                "status": "unpaid" if due > TODAY else "paid",
                "paid_with": None if due > TODAY else customer["payment_methods"][0]["payment_method_id"],
            }
            customer["bill_ids"].append(bill_id)
        tables["customers"][customer_id] = customer
    first_line = next(iter(tables["lines"]))
    tables["phone"] = {"device": default_device(first_line, "Pixel 8")}
    tables["location"] = {"current": home_location()}
    return tables


def _customer(rng: random.Random, index: int) -> Record:
    first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
    methods = []
    for k in range(rng.choice((1, 1, 2))):
        methods.append(
            {
                "payment_method_id": f"pm_{200001 + index * 3 + k}",
                "type": "credit_card",
                "brand": rng.choice(CARD_BRANDS),
                "last4": f"{rng.randint(0, 9999):04d}",
            }
        )
    return {
        "name": f"{first} {last}",
        "email": f"{first.lower()}.{last.lower()}{index}@example.com",
        "line_ids": [],
        "bill_ids": [],
        "payment_methods": methods,
    }


def _phone_number(rng: random.Random, taken: set[str]) -> str:
    while True:
        number = f"{rng.choice(('415', '628', '510', '707'))}-555-{rng.randint(0, 9999):04d}"
        if number not in taken:
            taken.add(number)
            return number


def _line(rng: random.Random, customer_id: str, number: str) -> Record:
    plan_id = rng.choice(("plan_basic5", "plan_smart15", "plan_smart15", "plan_plus30", "plan_max100"))
    topups = []
    if rng.random() < 0.15:
        size = rng.choice(tuple(TOPUP_PRICES))
        topups.append({"gb": size, "price": TOPUP_PRICES[size], "date": "2025-06-08"})
    allowance = PLANS[plan_id]["data_gb"] + sum(t["gb"] for t in topups)
    # Lines start with data left; tasks that need an exhausted allowance set it themselves.
    used = round(rng.uniform(0.05, 0.85) * allowance, 1)
    return {
        "customer_id": customer_id,
        "phone_number": number,
        "plan_id": plan_id,
        "status": "active",
        "suspension_reason": None,
        "roaming_enabled": rng.random() < 0.3 and PLANS[plan_id]["roaming_included"],
        "data_used_gb": used,
        "topups": topups,
        "device_model": rng.choice(DEVICES),
    }


def default_device(line_id: str, model: str) -> Record:
    """A healthy phone: SIM in, airplane mode off, mobile data on, the carrier's APN, automatic mode."""
    return {
        "line_id": line_id,
        "model": model,
        "airplane_mode": False,
        "mobile_data": True,
        "data_roaming": False,
        "sim_seated": True,
        "network_mode": "5g_4g_3g",
        "apn": dict(DEFAULT_APN),
        "apn_pending_restart": False,
        "wifi": False,
        "wifi_calling": False,
        "boot_count": 0,
    }


def home_location() -> Record:
    return {
        "country": "home",
        "abroad": False,
        "network": CARRIER,
        "technologies": list(HOME_TECHNOLOGIES),
        "signal_bars": 4,
    }


def abroad_location(country: str) -> Record:
    info = ABROAD[country]
    return {
        "country": country,
        "abroad": True,
        "network": info["partner_network"],
        "technologies": list(info["technologies"]),
        "signal_bars": 3,
    }
