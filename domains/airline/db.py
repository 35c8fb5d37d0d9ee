"""The airline world: fixed fare rules plus a seeded generator of airports, flights, users and reservations.

Everything is derived from `random.Random(seed)` and fixed dates, so `build_db(seed)` is byte-identical for
a seed. The clock is never read: the domain's "now" is `NOW`, which policy.md states.
"""

from __future__ import annotations

import math
import random
from datetime import date, datetime, timedelta
from typing import Any

Record = dict[str, Any]
Tables = dict[str, dict[str, Record]]

TODAY = "2027-03-10"
NOW = "2027-03-10T05:00:00"
FIRST_DATE = "2027-03-01"
DAYS = 30
CABINS = ("basic_economy", "economy", "business")
TIERS = ("regular", "silver", "gold")
# Free checked bags per passenger, by the booking user's membership tier and the reservation's cabin.
FREE_BAGS: dict[str, dict[str, int]] = {
    "regular": {"basic_economy": 0, "economy": 1, "business": 2},
    "silver": {"basic_economy": 1, "economy": 2, "business": 2},
    "gold": {"basic_economy": 2, "economy": 2, "business": 3},
}
BAG_FEE = 45
INSURANCE_FEE = 30
MAX_PASSENGERS = 5
# Certificate value per passenger, by what happened to the flight.
COMPENSATION = {"cancelled": 100, "delayed": 50}
COVERED_REASONS = ("medical", "bereavement")
MIN_CONNECTION_MINUTES = 60
DB_SIZES = {"users": 500, "reservations": 2500}

HUBS = ("ATL", "ORD", "DEN", "DFW")
AIRPORTS: dict[str, tuple[str, str, float, float]] = {
    "BOS": ("Boston", "Boston Logan International", 42.36, -71.01),
    "JFK": ("New York", "John F. Kennedy International", 40.64, -73.78),
    "PHL": ("Philadelphia", "Philadelphia International", 39.87, -75.24),
    "ATL": ("Atlanta", "Hartsfield-Jackson Atlanta International", 33.64, -84.43),
    "MIA": ("Miami", "Miami International", 25.79, -80.29),
    "ORD": ("Chicago", "Chicago O'Hare International", 41.97, -87.91),
    "MSP": ("Minneapolis", "Minneapolis-Saint Paul International", 44.88, -93.22),
    "DFW": ("Dallas", "Dallas/Fort Worth International", 32.90, -97.04),
    "IAH": ("Houston", "George Bush Intercontinental", 29.99, -95.34),
    "DEN": ("Denver", "Denver International", 39.86, -104.67),
    "PHX": ("Phoenix", "Phoenix Sky Harbor International", 33.44, -112.01),
    "LAS": ("Las Vegas", "Harry Reid International", 36.08, -115.15),
    "LAX": ("Los Angeles", "Los Angeles International", 33.94, -118.41),
    "SFO": ("San Francisco", "San Francisco International", 37.62, -122.38),
    "SEA": ("Seattle", "Seattle-Tacoma International", 47.45, -122.31),
}

FIRST_NAMES = (
    "Ava",
    "Liam",
    "Noah",
    "Emma",
    "Mia",
    "Ethan",
    "Zoe",
    "Lucas",
    "Aria",
    "Mateo",
    "Nora",
    "Omar",
    "Priya",
    "Ravi",
    "Sofia",
    "Yuki",
    "Hana",
    "Diego",
    "Lena",
    "Jonas",
    "Amara",
    "Kofi",
    "Ines",
    "Tariq",
    "Maya",
    "Felix",
    "Chloe",
    "Arjun",
    "Leila",
    "Hugo",
    "Elena",
    "Marcus",
    "Nadia",
    "Ivan",
    "Grace",
    "Samuel",
    "Clara",
    "Theo",
    "Ruby",
    "Kai",
    "Isla",
    "Malik",
    "Farah",
    "Oscar",
    "Julia",
    "Anton",
    "Selin",
    "Daniel",
)
LAST_NAMES = (
    "Chen",
    "Garcia",
    "Okafor",
    "Novak",
    "Patel",
    "Kim",
    "Silva",
    "Haddad",
    "Johansson",
    "Mensah",
    "Rossi",
    "Tanaka",
    "Dubois",
    "Kowalski",
    "Nguyen",
    "Ibrahim",
    "Schmidt",
    "Moreau",
    "Costa",
    "Fischer",
    "Ali",
    "Murphy",
    "Larsen",
    "Reyes",
    "Sato",
    "Hughes",
    "Petrov",
    "Bauer",
    "Alvarez",
    "Walsh",
    "Yilmaz",
    "Brooks",
    "Lindqvist",
    "Mwangi",
    "Romano",
    "Castillo",
    "Park",
    "Osei",
    "Varga",
    "Quinn",
)
CARD_BRANDS = ("visa", "mastercard", "amex")
ID_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


def build_db(seed: int) -> Tables:
    """The whole starting state for `seed`: {table: {record_id: record}}."""
    rng = random.Random(seed)
    routes = _route_pairs(rng)
    flights = _flights(rng, routes)
    route_index = _route_index(flights)
    users = _users(rng, DB_SIZES["users"])
    reservations = _reservations(rng, users, flights, route_index, DB_SIZES["reservations"])
    return {
        "airports": _airports(),
        "flights": flights,
        "routes": route_index,
        "users": users,
        "reservations": reservations,
        "meta": {"counters": {"bookings": 0}},
    }


def dates() -> list[str]:
    start = date.fromisoformat(FIRST_DATE)
    return [(start + timedelta(days=offset)).isoformat() for offset in range(DAYS)]


def shift_date(day: str, days: int) -> str:
    return (date.fromisoformat(day) + timedelta(days=days)).isoformat()


def minutes(hhmm: str) -> int:
    hours, mins = hhmm.split(":")
    return int(hours) * 60 + int(mins)


def hhmm(total: int) -> str:
    return f"{total // 60:02d}:{total % 60:02d}"


def _airports() -> dict[str, Record]:
    return {code: {"code": code, "city": city, "name": name} for code, (city, name, _, _) in AIRPORTS.items()}


def _distance_miles(a: str, b: str) -> float:
    _, _, lat1, lon1 = AIRPORTS[a]
    _, _, lat2, lon2 = AIRPORTS[b]
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dlat, dlon = p2 - p1, math.radians(lon2 - lon1)
    h = math.sin(dlat / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dlon / 2) ** 2
    return 3959 * 2 * math.asin(math.sqrt(h))


def _route_pairs(rng: random.Random) -> list[tuple[str, str]]:
    """Directed city pairs served: every hub to every airport, plus a few seeded point-to-point routes."""
    codes = list(AIRPORTS)
    undirected = {tuple(sorted((hub, other))) for hub in HUBS for other in codes if other != hub}
    spokes = [code for code in codes if code not in HUBS]
    spoke_pairs = [(a, b) for i, a in enumerate(spokes) for b in spokes[i + 1 :]]
    undirected.update(tuple(sorted(pair)) for pair in rng.sample(spoke_pairs, 10))
    return [pair for a, b in sorted(undirected) for pair in ((a, b), (b, a))]


def _flights(rng: random.Random, routes: list[tuple[str, str]]) -> dict[str, Record]:
    per_route = [rng.randint(1, 3) for _ in routes]
    numbers = rng.sample(range(100, 1000), sum(per_route))
    flights: dict[str, Record] = {}
    for (origin, destination), count in zip(routes, per_route, strict=True):
        distance = _distance_miles(origin, destination)
        duration = int(round((35 + distance / 8) / 5) * 5)
        base_fare = 60 + distance * 0.11
        latest = min(20 * 60, 23 * 60 + 55 - duration)
        departures = sorted(rng.sample(range(6 * 60, latest + 1, 5), count))
        for departure in departures:
            number = f"SL{numbers.pop()}"
            flights[number] = {
                "flight_number": number,
                "origin": origin,
                "destination": destination,
                "scheduled_departure": hhmm(departure),
                "scheduled_arrival": hhmm(departure + duration),
                "dates": {day: _flight_day(rng, day, departure, duration, base_fare) for day in dates()},
            }
    return dict(sorted(flights.items()))


def _flight_day(rng: random.Random, day: str, departure: int, duration: int, base_fare: float) -> Record:
    factor = rng.uniform(0.8, 1.35)
    economy = round(base_fare * factor)
    prices = {
        "basic_economy": round(economy * 0.72),
        "economy": economy,
        "business": round(economy * 2.4 + 80),
    }
    status = _status_for(rng, day)
    record: Record = {"status": status, "prices": prices}
    if status == "landed":
        delay = rng.choice((0, 0, 0, 5, 10, 20))
        record["actual_departure"] = hhmm(departure + delay)
        record["actual_arrival"] = hhmm(min(departure + duration + delay, 23 * 60 + 59))
    if status in ("available", "delayed"):
        record["seats_left"] = {
            "basic_economy": rng.randint(0, 12),
            "economy": rng.randint(0, 30),
            "business": rng.randint(0, 8),
        }
    if status == "delayed":
        delay = rng.choice((45, 90, 150, 240))
        record["delay_minutes"] = delay
        record["estimated_departure"] = hhmm(min(departure + delay, 23 * 60 + 59))
    return record


def _status_for(rng: random.Random, day: str) -> str:
    roll = rng.random()
    if day < TODAY:
        return "cancelled" if roll < 0.04 else "landed"
    if day <= shift_date(TODAY, 1):
        return "cancelled" if roll < 0.04 else "delayed" if roll < 0.2 else "available"
    return "cancelled" if roll < 0.03 else "available"


def _route_index(flights: dict[str, Record]) -> dict[str, Record]:
    """`routes["ORIG-DEST"]` lists that pair's flight numbers, so searches never scan the flights table."""
    index: dict[str, Record] = {}
    for number, flight in flights.items():
        key = f"{flight['origin']}-{flight['destination']}"
        entry = index.setdefault(key, {"origin": flight["origin"], "destination": flight["destination"]})
        entry.setdefault("flights", []).append(number)
    return dict(sorted(index.items()))


def _person(rng: random.Random) -> Record:
    birth = date(1948, 1, 1) + timedelta(days=rng.randint(0, 365 * 60))
    return {
        "first_name": rng.choice(FIRST_NAMES),
        "last_name": rng.choice(LAST_NAMES),
        "dob": birth.isoformat(),
    }


def _users(rng: random.Random, count: int) -> dict[str, Record]:
    users: dict[str, Record] = {}
    payment_numbers = iter(rng.sample(range(1_000_000, 10_000_000), count * 8))
    while len(users) < count:
        person = _person(rng)
        user_id = f"{person['first_name']}_{person['last_name']}_{rng.randint(1000, 9999)}".lower()
        if user_id in users:
            continue
        users[user_id] = {
            "user_id": user_id,
            "name": {"first_name": person["first_name"], "last_name": person["last_name"]},
            "email": f"{user_id.replace('_', '.')}@example.com",
            "dob": person["dob"],
            "membership": rng.choices(TIERS, weights=(55, 30, 15))[0],
            "payment_methods": _payment_methods(rng, payment_numbers),
            "saved_passengers": [_person(rng) for _ in range(rng.randint(0, 3))],
            "reservations": [],
        }
    return users


def _payment_methods(rng: random.Random, numbers: Any) -> dict[str, Record]:
    methods: dict[str, Record] = {}
    for _ in range(rng.randint(1, 2)):
        methods[f"card_{next(numbers)}"] = {
            "source": "credit_card",
            "brand": rng.choice(CARD_BRANDS),
            "last_four": f"{rng.randint(0, 9999):04d}",
        }
    for _ in range(rng.choices((0, 1, 2), weights=(50, 40, 10))[0]):
        methods[f"gift_{next(numbers)}"] = {"source": "gift_card", "balance": rng.randint(20, 600)}
    for _ in range(rng.choices((0, 1, 2), weights=(65, 28, 7))[0]):
        methods[f"cert_{next(numbers)}"] = {
            "source": "certificate",
            "amount": rng.choice((50, 100, 150, 250)),
        }
    return methods


class _Itineraries:
    """Bookable shapes for generated reservations: direct flights and valid one-stop connections."""

    def __init__(self, flights: dict[str, Record], route_index: dict[str, Record]) -> None:
        self.direct = {key: entry["flights"] for key, entry in route_index.items()}
        self.onestop: dict[str, list[list[str]]] = {}
        for first_key, first in route_index.items():
            for second_key, second in route_index.items():
                origin, via = first_key.split("-")
                if second_key.split("-")[0] != via or second["destination"] == origin:
                    continue
                key = f"{origin}-{second['destination']}"
                if key in self.direct:
                    continue
                for leg1 in first["flights"]:
                    for leg2 in second["flights"]:
                        if connects(flights[leg1], flights[leg2]):
                            self.onestop.setdefault(key, []).append([leg1, leg2])
        self.direct_keys = sorted(self.direct)
        self.onestop_keys = sorted(self.onestop)

    def pick(self, rng: random.Random) -> tuple[str, list[str]]:
        if rng.random() < 0.65:
            key = rng.choice(self.direct_keys)
            return key, [rng.choice(self.direct[key])]
        key = rng.choice(self.onestop_keys)
        return key, list(rng.choice(self.onestop[key]))

    def back(self, rng: random.Random, key: str, legs: int) -> list[str] | None:
        origin, destination = key.split("-")
        reverse = f"{destination}-{origin}"
        if legs == 1:
            return [rng.choice(self.direct[reverse])]
        options = self.onestop.get(reverse)
        return list(rng.choice(options)) if options else None


def connects(first: Record, second: Record) -> bool:
    gap = minutes(second["scheduled_departure"]) - minutes(first["scheduled_arrival"])
    return first["destination"] == second["origin"] and gap >= MIN_CONNECTION_MINUTES


def _reservations(
    rng: random.Random,
    users: dict[str, Record],
    flights: dict[str, Record],
    route_index: dict[str, Record],
    count: int,
) -> dict[str, Record]:
    itineraries = _Itineraries(flights, route_index)
    user_ids = list(users)
    all_days = dates()
    reservations: dict[str, Record] = {}
    while len(reservations) < count:
        reservation_id = "".join(rng.choice(ID_ALPHABET) for _ in range(6))
        if reservation_id in reservations:
            continue
        user = users[rng.choice(user_ids)]
        key, outbound = itineraries.pick(rng)
        out_index = rng.randint(0, DAYS - 3)
        segments = [(number, all_days[out_index]) for number in outbound]
        back_index = out_index + rng.randint(1, 5)
        flight_type = "one_way"
        if rng.random() < 0.4 and back_index < DAYS:
            back = itineraries.back(rng, key, len(outbound))
            if back:
                flight_type = "round_trip"
                segments += [(number, all_days[back_index]) for number in back]
        reservations[reservation_id] = _reservation(rng, reservation_id, user, key, flight_type, segments, flights)
        user["reservations"].append(reservation_id)
    return reservations


def _reservation(
    rng: random.Random,
    reservation_id: str,
    user: Record,
    key: str,
    flight_type: str,
    segments: list[tuple[str, str]],
    flights: dict[str, Record],
) -> Record:
    cabin = rng.choices(CABINS, weights=(25, 55, 20))[0]
    passengers = _passengers(rng, user)
    legs = [
        {
            "flight_number": number,
            "origin": flights[number]["origin"],
            "destination": flights[number]["destination"],
            "date": day,
            "price": flights[number]["dates"][day]["prices"][cabin],
        }
        for number, day in segments
    ]
    allowance = FREE_BAGS[user["membership"]][cabin] * len(passengers)
    total_bags = sum(rng.choice((0, 0, 1, 1, 2)) for _ in passengers)
    nonfree = max(0, total_bags - allowance)
    insurance = "yes" if rng.random() < 0.3 else "no"
    total = sum(leg["price"] for leg in legs) * len(passengers) + nonfree * BAG_FEE
    total += INSURANCE_FEE * len(passengers) if insurance == "yes" else 0
    payment_id = _pay_with(rng, user)
    history = [{"payment_id": payment_id, "amount": total}]
    status = "active"
    if rng.random() < 0.04:
        status = "cancelled"
        history.append({"payment_id": payment_id, "amount": -total})
    origin, destination = key.split("-")
    return {
        "reservation_id": reservation_id,
        "user_id": user["user_id"],
        "origin": origin,
        "destination": destination,
        "flight_type": flight_type,
        "cabin": cabin,
        "flights": legs,
        "passengers": passengers,
        "payment_history": history,
        "created_at": _created_at(rng, legs[0]["date"]),
        "total_baggages": total_bags,
        "nonfree_baggages": nonfree,
        "insurance": insurance,
        "status": status,
    }


def _passengers(rng: random.Random, user: Record) -> list[Record]:
    count = rng.choices((1, 2, 3, 4), weights=(50, 30, 12, 8))[0]
    pool = [dict(p) for p in user["saved_passengers"]]
    passengers: list[Record] = []
    if rng.random() < 0.85:
        passengers.append({**user["name"], "dob": user["dob"]})
    while len(passengers) < count:
        passengers.append(pool.pop(0) if pool else _person(rng))
    return passengers


def _pay_with(rng: random.Random, user: Record) -> str:
    methods = user["payment_methods"]
    cards = [pid for pid, m in methods.items() if m["source"] == "credit_card"]
    gifts = [pid for pid, m in methods.items() if m["source"] == "gift_card"]
    if gifts and rng.random() < 0.2:
        return rng.choice(gifts)
    return rng.choice(cards)


def _created_at(rng: random.Random, first_day: str) -> str:
    now = datetime.fromisoformat(NOW)
    if first_day >= TODAY and rng.random() < 0.12:
        # Booked within the last 24 hours: the free-cancellation window of the policy.
        return (now - timedelta(minutes=rng.randint(30, 23 * 60))).isoformat()
    latest = min(datetime.fromisoformat(first_day) - timedelta(days=1), now - timedelta(hours=30))
    return (latest - timedelta(minutes=5 * rng.randint(0, 12 * 24 * 50))).isoformat()
