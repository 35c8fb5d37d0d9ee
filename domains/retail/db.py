"""The retail domain's starting state, generated from a seed: users, a product catalog, orders.

Tables:
    users               user_id -> profile, address, payment methods, order ids
    products            product_id -> name and variants (item_id -> options, price, availability)
    orders              order_id -> status, items, address, payment history, dates
    users_by_email      lower-cased email -> {"user_id"}
    users_by_name_zip   "first|last|zip" (lower-cased) -> {"user_ids"}: unique when built; an address
                        change can later make two users share a key
    product_index       "all" -> {product name: product_id}

The index tables exist so lookups touch one small record instead of parsing every user per trial.
"""

from __future__ import annotations

import itertools
import random
import re
from datetime import date, timedelta
from typing import Any

# The domain's fixed "today": the policy states it and every date is relative to it (never the clock).
TODAY = "2025-05-20"
RETURN_WINDOW_DAYS = 30
USER_COUNT = 500

Record = dict[str, Any]
Tables = dict[str, dict[str, Any]]

# name, base price in dollars, options as "dimension=value,value+delta,...; dimension=...", where a
# value's optional "+N" or "-N" is its price change in dollars.
_CATALOG: list[tuple[str, int, str]] = [
    ("Canvas Tote Bag", 24, "color=natural,black,olive,navy; size=small,large+6"),
    ("Running Shoes", 95, "color=black,white,red+4,blue+4; size=7,8,9,10,11,12"),
    ("Hiking Backpack", 70, "capacity=20L,30L+15,45L+35; color=forest green,charcoal,orange+3"),
    (
        "Insulated Water Bottle",
        22,
        "capacity=500ml,750ml+4,1L+8; color=steel,matte black+2,sky blue+2,coral+2",
    ),
    ("LED Desk Lamp", 38, "finish=white,black,brass+12; brightness=standard,high+10"),
    ("Wireless Headphones", 120, "color=black,silver,midnight blue+5; fit=on-ear,over-ear+20"),
    ("Drip Coffee Maker", 55, "capacity=5 cups,8 cups+15,12 cups+30; finish=stainless+8,black"),
    ("Yoga Mat", 30, "thickness=4mm,6mm+8,8mm+15; color=lavender,teal,graphite,sand"),
    (
        "Phone Case",
        25,
        "model=Nova 12,Nova 13,Pulse X,Pulse X Max+2; material=silicone,leather+15,clear plastic-3",
    ),
    ("Analog Wristwatch", 150, "band=leather,steel+40,nylon-10; dial=white,black,green+5"),
    ("Sunglasses", 60, "frame=tortoise,black,clear+5; lens=standard,polarized+25"),
    ("Electric Kettle", 35, "capacity=1L,1.7L+10; finish=stainless+5,white,matte black+3"),
    ("Hardcover Notebook", 14, "ruling=lined,dotted,blank; size=A5,A4+4; color=black,burgundy,navy"),
    ("Office Chair", 180, "color=black,gray,blue+10; armrests=fixed,adjustable+40"),
    ("Rain Jacket", 85, "color=yellow,navy,olive,black; size=XS,S,M,L,XL"),
    ("Wireless Mouse", 28, "color=black,white,rose+2; connectivity=bluetooth+5,usb receiver"),
    (
        "Mechanical Keyboard",
        90,
        "switches=linear,tactile+5,clicky+5; layout=tenkeyless,full size+15; backlight=white,RGB+12",
    ),
    ("Camping Tent", 160, "capacity=2 person,3 person+60,4 person+120; season=3-season,4-season+90"),
    ("Bicycle Helmet", 55, "size=S,M,L; color=matte black,white,neon green+4"),
    ("Cotton T-Shirt", 18, "color=white,black,heather gray,forest green+1,navy; size=XS,S,M,L,XL,XXL"),
]

_FIRST_NAMES = [
    "Maya",
    "Omar",
    "Lena",
    "Tobias",
    "Priya",
    "Jonah",
    "Ingrid",
    "Mateo",
    "Keiko",
    "Darius",
    "Sofia",
    "Elliot",
    "Amara",
    "Felix",
    "Yara",
    "Caleb",
    "Nadia",
    "Rowan",
    "Leila",
    "Hugo",
    "Zara",
    "Isaac",
    "Mira",
    "Anton",
    "Talia",
    "Desmond",
    "Freya",
    "Luca",
    "Noor",
    "Silas",
    "Ava",
    "Kenji",
    "Rosa",
    "Milo",
    "Hana",
    "Victor",
    "Esme",
    "Theo",
    "Lucia",
    "Arjun",
]
_LAST_NAMES = [
    "Okafor",
    "Lindqvist",
    "Moreau",
    "Castillo",
    "Nakamura",
    "Brennan",
    "Haddad",
    "Kowalski",
    "Osei",
    "Varga",
    "Ferreira",
    "Novak",
    "Sato",
    "Mbeki",
    "Larsen",
    "Quinn",
    "Rahman",
    "Delgado",
    "Ivanova",
    "Whitfield",
    "Abara",
    "Costa",
    "Fischer",
    "Gallo",
    "Herrera",
    "Jansen",
    "Kaur",
    "Mendez",
    "Nilsen",
    "Patel",
    "Rossi",
    "Sandoval",
    "Tanaka",
    "Ueda",
    "Weber",
    "Young",
    "Zimmer",
    "Boateng",
    "Duarte",
    "Eriksen",
]
_STREETS = [
    "Alder",
    "Birch",
    "Cedar",
    "Dogwood",
    "Elm",
    "Fern",
    "Granite",
    "Harbor",
    "Juniper",
    "Kestrel",
    "Lark",
    "Maple",
    "Nettle",
    "Oak",
    "Pine",
    "Quarry",
    "Ridge",
    "Spruce",
    "Tamarack",
    "Willow",
]
_STREET_KINDS = ["Street", "Avenue", "Lane", "Road", "Drive", "Court", "Way"]
# city, state, first three digits of its zip codes
_CITIES = [
    ("Portland", "OR", "972"),
    ("Denver", "CO", "802"),
    ("Austin", "TX", "787"),
    ("Madison", "WI", "537"),
    ("Raleigh", "NC", "276"),
    ("Tucson", "AZ", "857"),
    ("Boise", "ID", "837"),
    ("Albany", "NY", "122"),
    ("Omaha", "NE", "681"),
    ("Savannah", "GA", "314"),
    ("Burlington", "VT", "054"),
    ("Spokane", "WA", "992"),
    ("Columbus", "OH", "432"),
    ("Richmond", "VA", "232"),
    ("Fresno", "CA", "937"),
    ("Tulsa", "OK", "741"),
]
_EMAIL_DOMAINS = ["example.com", "example.net", "example.org"]
_CARD_BRANDS = ["Visa", "Mastercard", "Amex", "Discover"]
_CARRIERS = ["ParcelPath", "SwiftShip", "Northstar Freight"]

# status of a generated order and its weight
_STATUS_WEIGHTS = [
    ("pending", 22),
    ("processed", 14),
    ("delivered", 44),
    ("cancelled", 10),
    ("return requested", 5),
    ("exchange requested", 5),
]


def build_db(seed: int) -> Tables:
    """The whole starting state for `seed`; the same seed always gives the same data."""
    rng = random.Random(seed)
    products = _build_products(rng)
    users = _build_users(rng)
    orders = _build_orders(rng, users, products)
    return {
        "users": users,
        "products": products,
        "orders": orders,
        "users_by_email": {u["email"].lower(): {"user_id": uid} for uid, u in users.items()},
        "users_by_name_zip": _name_zip_index(users),
        "product_index": {"all": {p["name"]: pid for pid, p in products.items()}},
    }


def _name_zip_index(users: dict[str, Record]) -> dict[str, Record]:
    index: dict[str, Record] = {}
    for user_id, user in users.items():
        key = name_zip_key(user["name"]["first_name"], user["name"]["last_name"], user["address"]["zip"])
        index.setdefault(key, {"user_ids": []})["user_ids"].append(user_id)
    return index


def name_zip_key(first_name: str, last_name: str, zip_code: str) -> str:
    return f"{first_name.strip().lower()}|{last_name.strip().lower()}|{zip_code.strip()}"


def days_between(earlier: str, later: str) -> int:
    return (date.fromisoformat(later) - date.fromisoformat(earlier)).days


def shift_date(day: str, days: int) -> str:
    return (date.fromisoformat(day) + timedelta(days=days)).isoformat()


def to_cents(amount: float) -> int:
    return round(amount * 100)


def from_cents(cents: int) -> float:
    return round(cents / 100, 2)


_OPTION = re.compile(r"^(.*?)([+-]\d+)?$")


def _parse_options(spec: str) -> dict[str, list[tuple[str, int]]]:
    options: dict[str, list[tuple[str, int]]] = {}
    for dimension in spec.split(";"):
        name, values = dimension.split("=")
        parsed = [_OPTION.match(value.strip()) for value in values.split(",")]
        options[name.strip()] = [(m.group(1), int(m.group(2) or 0)) for m in parsed if m]
    return options


def _build_products(rng: random.Random) -> dict[str, Record]:
    catalog = [(name, base, _parse_options(spec)) for name, base, spec in _CATALOG]
    variant_total = sum(_variant_count(options) for _, _, options in catalog)
    product_numbers = rng.sample(range(1000, 10000), len(catalog))
    item_numbers = iter(rng.sample(range(100000, 1000000), variant_total))
    products: dict[str, Record] = {}
    for (name, base, options), number in zip(catalog, product_numbers, strict=True):
        product_id = f"prd_{number}"
        variants: dict[str, Record] = {}
        for combo in itertools.product(*options.values()):
            item_id = f"itm_{next(item_numbers)}"
            cents = (base + sum(delta for _, delta in combo)) * 100 + rng.randint(-300, 300)
            variants[item_id] = {
                "item_id": item_id,
                "options": {dim: value for dim, (value, _) in zip(options, combo, strict=True)},
                "price": from_cents(max(cents, 299)),
                "available": rng.random() < 0.72,
            }
        products[product_id] = {"product_id": product_id, "name": name, "variants": variants}
    return products


def _variant_count(options: dict[str, list[tuple[str, int]]]) -> int:
    count = 1
    for values in options.values():
        count *= len(values)
    return count


def random_address(rng: random.Random) -> Record:
    city, state, prefix = rng.choice(_CITIES)
    second = rng.random()
    address2 = (
        f"Apt {rng.randint(1, 40)}{rng.choice('ABCD')}"
        if second < 0.3
        else (f"Suite {rng.randint(100, 900)}" if second < 0.4 else "")
    )
    return {
        "address1": f"{rng.randint(10, 9899)} {rng.choice(_STREETS)} {rng.choice(_STREET_KINDS)}",
        "address2": address2,
        "city": city,
        "state": state,
        "country": "USA",
        "zip": f"{prefix}{rng.randint(1, 99):02d}",
    }


def _build_users(rng: random.Random) -> dict[str, Record]:
    users: dict[str, Record] = {}
    seen_name_zip: set[str] = set()
    seen_email: set[str] = set()
    method_numbers = iter(rng.sample(range(10000, 100000), USER_COUNT * 4))
    while len(users) < USER_COUNT:
        first, last = rng.choice(_FIRST_NAMES), rng.choice(_LAST_NAMES)
        address = random_address(rng)
        key = name_zip_key(first, last, address["zip"])
        user_id = f"usr_{first.lower()}_{last.lower()}_{rng.randint(100, 999)}"
        email = f"{first.lower()}.{last.lower()}{rng.randint(1, 99)}@{rng.choice(_EMAIL_DOMAINS)}"
        # Name + zip and email must each identify one user, or authentication would be ambiguous.
        if key in seen_name_zip or email in seen_email or user_id in users:
            continue
        seen_name_zip.add(key)
        seen_email.add(email)
        users[user_id] = {
            "user_id": user_id,
            "name": {"first_name": first, "last_name": last},
            "email": email,
            "address": address,
            "payment_methods": _payment_methods(rng, method_numbers),
            "orders": [],
        }
    return users


def _payment_methods(rng: random.Random, numbers: Any) -> dict[str, Record]:
    methods: dict[str, Record] = {}
    last_fours: set[str] = set()
    for _ in range(rng.choice([1, 1, 2])):
        last_four = f"{rng.randint(0, 9999):04d}"
        if last_four in last_fours:
            continue
        last_fours.add(last_four)
        method_id = f"cc_{next(numbers)}"
        methods[method_id] = {
            "id": method_id,
            "source": "credit_card",
            "brand": rng.choice(_CARD_BRANDS),
            "last_four": last_four,
        }
    if rng.random() < 0.45:
        method_id = f"pp_{next(numbers)}"
        methods[method_id] = {"id": method_id, "source": "paypal"}
    if rng.random() < 0.45:
        method_id = f"gc_{next(numbers)}"
        methods[method_id] = {
            "id": method_id,
            "source": "gift_card",
            "balance": from_cents(rng.randint(0, 30000)),
        }
    return methods


def _build_orders(rng: random.Random, users: dict[str, Record], products: dict[str, Record]) -> dict[str, Record]:
    counts = {uid: rng.randint(1, 9) for uid in users}
    numbers = iter(rng.sample(range(1000000, 10000000), sum(counts.values())))
    product_list = list(products.values())
    statuses = [s for s, _ in _STATUS_WEIGHTS]
    weights = [w for _, w in _STATUS_WEIGHTS]
    orders: dict[str, Record] = {}
    for user_id, user in users.items():
        for _ in range(counts[user_id]):
            order_id = f"ord_{next(numbers)}"
            status = rng.choices(statuses, weights)[0]
            orders[order_id] = _order(rng, order_id, user, status, product_list)
            user["orders"].append(order_id)
    return orders


def _order(rng: random.Random, order_id: str, user: Record, status: str, products: list[Record]) -> Record:
    chosen = rng.sample(products, rng.choice([1, 1, 2, 2, 3, 4]))
    items = [_order_item(rng, product) for product in chosen]
    total = from_cents(sum(to_cents(item["price"]) for item in items))
    method_id = rng.choice(sorted(user["payment_methods"]))
    order: Record = {
        "order_id": order_id,
        "user_id": user["user_id"],
        "status": status,
        "items": items,
        "address": dict(user["address"]) if rng.random() < 0.9 else random_address(rng),
        "payment_history": [{"transaction_type": "payment", "amount": total, "payment_method_id": method_id}],
        "items_modified": False,
        "placed_date": TODAY,
        "tracking_number": None,
        "carrier": None,
        "expected_delivery_date": None,
        "delivery_date": None,
        "cancellation": None,
        "return_request": None,
        "exchange_request": None,
    }
    _apply_status_history(rng, order, status, products)
    return order


def _order_item(rng: random.Random, product: Record) -> Record:
    variant = rng.choice(list(product["variants"].values()))
    return {
        "item_id": variant["item_id"],
        "product_id": product["product_id"],
        "name": product["name"],
        "options": dict(variant["options"]),
        "price": variant["price"],
    }


def _apply_status_history(rng: random.Random, order: Record, status: str, products: list[Record]) -> None:
    """Dates, tracking and request records consistent with the order's status."""
    if status == "pending":
        order["placed_date"] = shift_date(TODAY, -rng.randint(0, 3))
        # Some pending orders already had their one allowed item change.
        order["items_modified"] = rng.random() < 0.18
        return
    if status == "processed":
        order["placed_date"] = shift_date(TODAY, -rng.randint(2, 6))
        order["expected_delivery_date"] = shift_date(TODAY, rng.randint(1, 5))
        _ship(rng, order)
        return
    if status == "cancelled":
        order["placed_date"] = shift_date(TODAY, -rng.randint(3, 90))
        reason = rng.choice(["no longer needed", "ordered by mistake"])
        order["cancellation"] = {
            "reason": reason,
            "date": shift_date(order["placed_date"], rng.randint(0, 2)),
        }
        payment = order["payment_history"][0]
        order["payment_history"].append({**payment, "transaction_type": "refund"})
        return
    # Delivered and the two request statuses share a delivery.
    recent = status != "delivered"
    delivered_ago = rng.randint(2, 25) if recent else rng.randint(1, 110)
    order["delivery_date"] = shift_date(TODAY, -delivered_ago)
    order["placed_date"] = shift_date(order["delivery_date"], -rng.randint(2, 6))
    _ship(rng, order)
    if status == "return requested":
        _add_return_request(rng, order)
    elif status == "exchange requested":
        _add_exchange_request(rng, order, products)


def _ship(rng: random.Random, order: Record) -> None:
    order["tracking_number"] = f"TRK{rng.randint(10**9, 10**10 - 1)}"
    order["carrier"] = rng.choice(_CARRIERS)


def _add_return_request(rng: random.Random, order: Record) -> None:
    item = rng.choice(order["items"])
    order["return_request"] = {
        "item_ids": [item["item_id"]],
        "refund_amount": item["price"],
        "payment_method_id": order["payment_history"][0]["payment_method_id"],
        "requested_date": _request_date(rng, order),
    }


def _request_date(rng: random.Random, order: Record) -> str:
    days_since = days_between(order["delivery_date"], TODAY)
    return shift_date(order["delivery_date"], rng.randint(1, min(5, days_since)))


def _add_exchange_request(rng: random.Random, order: Record, products: list[Record]) -> None:
    item = rng.choice(order["items"])
    product = next(p for p in products if p["product_id"] == item["product_id"])
    others = [v for v in product["variants"].values() if v["item_id"] != item["item_id"]]
    new = rng.choice(others)
    order["exchange_request"] = {
        "item_ids": [item["item_id"]],
        "new_item_ids": [new["item_id"]],
        "price_difference": from_cents(to_cents(new["price"]) - to_cents(item["price"])),
        "payment_method_id": order["payment_history"][0]["payment_method_id"],
        "requested_date": _request_date(rng, order),
    }
