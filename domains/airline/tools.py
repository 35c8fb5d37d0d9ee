"""Tools of the airline domain, plus `policy_check`, which applies the written policy to a proposed call.

Tools reject only input that cannot happen (unknown ids, no seats, a gift card without the balance, a
reservation that is already cancelled). Whether a change is *allowed* is the agent's call under the policy;
`policy_check` is how tests and graders tell whether a write broke it.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tauproxy.domain.arithmetic import evaluate_arithmetic
from tauproxy.domain.state import State
from tauproxy.domain.tools import tool
from tauproxy.errors import ToolExecutionError

from .db import (
    BAG_FEE,
    COMPENSATION,
    COVERED_REASONS,
    FREE_BAGS,
    ID_ALPHABET,
    INSURANCE_FEE,
    MAX_PASSENGERS,
    MIN_CONNECTION_MINUTES,
    NOW,
    TODAY,
    minutes,
)

Record = dict[str, Any]
Cabin = Literal["basic_economy", "economy", "business"]
CancelReason = Literal["change_of_plans", "airline_cancelled_flight", "medical", "bereavement", "other"]
UserId = Annotated[str, Field(pattern=r"^[a-z]+_[a-z]+_\d{4}$", max_length=40)]
ReservationId = Annotated[str, Field(pattern=r"^[A-Z0-9]{6}$", min_length=6, max_length=6)]
FlightNumber = Annotated[str, Field(pattern=r"^SL\d{3,4}$", max_length=6)]
Day = Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$", max_length=10)]
AirportCode = Annotated[str, Field(pattern=r"^[A-Z]{3}$", min_length=3, max_length=3)]
PaymentId = Annotated[str, Field(pattern=r"^(card|gift|cert)_\d{7}$", max_length=12)]
PersonName = Annotated[str, Field(min_length=1, max_length=40)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FlightChoice(_Strict):
    flight_number: FlightNumber
    date: Day


class Passenger(_Strict):
    first_name: PersonName
    last_name: PersonName
    dob: Day


class PaymentPart(_Strict):
    payment_id: PaymentId
    amount: Annotated[int, Field(ge=0)]


# ---------------------------------------------------------------------------------------------- lookups


def _user(db: State, user_id: str) -> Record:
    user = db.users.get(user_id)
    if user is None:
        raise ToolExecutionError(f"user {user_id} not found")
    return user


def _reservation(db: State, reservation_id: str) -> Record:
    reservation = db.reservations.get(reservation_id)
    if reservation is None:
        raise ToolExecutionError(f"reservation {reservation_id} not found")
    return reservation


def _active_reservation(db: State, reservation_id: str) -> Record:
    reservation = _reservation(db, reservation_id)
    if reservation["status"] != "active":
        raise ToolExecutionError(f"reservation {reservation_id} is {reservation['status']}; it cannot be changed")
    return reservation


def _flight_day(db: State, flight_number: str, day: str) -> tuple[Record, Record]:
    flight = db.flights.get(flight_number)
    if flight is None:
        raise ToolExecutionError(f"flight {flight_number} not found")
    record = flight["dates"].get(day)
    if record is None:
        raise ToolExecutionError(f"flight {flight_number} has no schedule on {day}")
    return flight, record


def _bookable_day(db: State, flight_number: str, day: str, cabin: str, seats: int) -> tuple[Record, Record]:
    """A flight-day that physically can take `seats` more passengers in `cabin`."""
    flight, record = _flight_day(db, flight_number, day)
    if record["status"] not in ("available", "delayed"):
        raise ToolExecutionError(f"flight {flight_number} on {day} is {record['status']} and cannot be booked")
    if record["seats_left"][cabin] < seats:
        raise ToolExecutionError(
            f"flight {flight_number} on {day} has {record['seats_left'][cabin]} {cabin} seats, not {seats}"
        )
    return flight, record


def _move_seats(db: State, flight_number: str, day: str, cabin: str, delta: int) -> None:
    """Give seats back (delta > 0) or take them (delta < 0); flights already gone keep no seat count."""
    flight = db.flights.get(flight_number)
    record = flight["dates"].get(day) if flight else None
    if record is not None and "seats_left" in record:
        record["seats_left"][cabin] += delta


def _payment_method(user: Record, payment_id: str) -> Record:
    method = user["payment_methods"].get(payment_id)
    if method is None:
        raise ToolExecutionError(f"payment method {payment_id} is not on the profile of user {user['user_id']}")
    return method


def _settle(user: Record, reservation: Record, payment_id: str, amount: int) -> None:
    """Charge (amount > 0) or refund (amount < 0) one payment method and log it on the reservation."""
    method = _payment_method(user, payment_id)
    if amount == 0:
        return
    if method["source"] == "certificate":
        if amount < 0 or method["amount"] < amount:
            raise ToolExecutionError(f"certificate {payment_id} cannot pay or receive ${abs(amount)}")
        # Single use, like at booking: the remainder is forfeited (policy.md keeps agents from this path).
        del user["payment_methods"][payment_id]
    elif method["source"] == "gift_card":
        if method["balance"] < amount:
            raise ToolExecutionError(f"gift card {payment_id} has a balance of ${method['balance']}, not ${amount}")
        method["balance"] -= amount
    reservation["payment_history"].append({"payment_id": payment_id, "amount": amount})


def _flight_summary(flight: Record, day: str, record: Record) -> Record:
    summary = {
        "flight_number": flight["flight_number"],
        "origin": flight["origin"],
        "destination": flight["destination"],
        "date": day,
        "scheduled_departure": flight["scheduled_departure"],
        "scheduled_arrival": flight["scheduled_arrival"],
        "status": record["status"],
        "prices": record["prices"],
    }
    if "seats_left" in record:
        summary["seats_left"] = record["seats_left"]
    return summary


def _available_on(db: State, origin: str, destination: str, day: str) -> list[Record]:
    route = db.routes.get(f"{origin}-{destination}")
    found = []
    for number in route["flights"] if route else []:
        flight = db.flights[number]
        record = flight["dates"].get(day)
        if record is not None and record["status"] == "available":
            found.append(_flight_summary(flight, day, record))
    return sorted(found, key=lambda f: f["scheduled_departure"])


def _check_airports(db: State, origin: str, destination: str) -> None:
    for code in (origin, destination):
        if code not in db.airports:
            raise ToolExecutionError(f"unknown airport code {code}")
    if origin == destination:
        raise ToolExecutionError("origin and destination must differ")


def _new_id(seed: str, taken: Callable[[str], bool], alphabet: str, length: int) -> str:
    """A deterministic id from `seed`; re-hashes on collision so equal states give equal ids."""
    attempt = 0
    while True:
        digest = hashlib.sha256(f"{seed}#{attempt}".encode()).digest()
        candidate = "".join(alphabet[byte % len(alphabet)] for byte in digest[:length])
        if not taken(candidate):
            return candidate
        attempt += 1


# ---------------------------------------------------------------------------------------------- rules
# Pure helpers shared by policy_check and the task generator, so both read the policy the same way.


def free_bag_allowance(membership: str, cabin: str, passengers: int) -> int:
    return FREE_BAGS[membership][cabin] * passengers


def nonfree_bags(membership: str, cabin: str, passengers: int, total_bags: int) -> int:
    return max(0, total_bags - free_bag_allowance(membership, cabin, passengers))


def flown_flights(reservation: Record) -> list[Record]:
    return [leg for leg in reservation["flights"] if leg["date"] < TODAY]


def booked_within_24h(reservation: Record) -> bool:
    return datetime.fromisoformat(reservation["created_at"]) >= datetime.fromisoformat(NOW) - timedelta(hours=24)


def flight_status(db: State, flight_number: str, day: str) -> str:
    flight = db.flights.get(flight_number)
    record = flight["dates"].get(day) if flight else None
    return record["status"] if record else "unknown"


def airline_cancelled(db: State, reservation: Record) -> bool:
    return any(flight_status(db, leg["flight_number"], leg["date"]) == "cancelled" for leg in reservation["flights"])


def cancellation_grounds(db: State, reservation: Record, reason: str) -> str | None:
    """Which policy ground allows cancelling, or None when none does."""
    if booked_within_24h(reservation):
        return "booked within the last 24 hours"
    if airline_cancelled(db, reservation):
        return "a flight was cancelled by the airline"
    if reservation["cabin"] == "business":
        return "business cabin"
    if reservation["insurance"] == "yes" and reason in COVERED_REASONS:
        return "travel insurance covers the reason"
    return None


def compensation_due(db: State, user: Record, reservation: Record) -> int:
    """Certificate amount the policy grants for this reservation (0: not eligible)."""
    eligible = (
        user["membership"] in ("silver", "gold")
        or reservation["insurance"] == "yes"
        or reservation["cabin"] == "business"
    )
    statuses = {flight_status(db, leg["flight_number"], leg["date"]) for leg in reservation["flights"]}
    per_passenger = next((COMPENSATION[s] for s in ("cancelled", "delayed") if s in statuses), 0)
    return per_passenger * len(reservation["passengers"]) if eligible else 0


def booking_total(db: State, cabin: str, flights: list[Record], passengers: int, insurance: str, nonfree: int) -> int:
    fares = sum(_flight_day(db, f["flight_number"], f["date"])[1]["prices"][cabin] for f in flights)
    return fares * passengers + (INSURANCE_FEE * passengers if insurance == "yes" else 0) + nonfree * BAG_FEE


def _directions(reservation: Record) -> list[tuple[str, str]]:
    """(origin, destination) of each direction of the trip: one for one way, two for a round trip."""
    if reservation["flight_type"] == "round_trip":
        return [
            (reservation["origin"], reservation["destination"]),
            (reservation["destination"], reservation["origin"]),
        ]
    return [(reservation["origin"], reservation["destination"])]


def _split_legs(legs: list[Record], directions: list[tuple[str, str]]) -> list[list[Record]] | None:
    """Cut a chain of legs into one connected piece per direction; None when the legs do not fit."""
    pieces: list[list[Record]] = []
    rest = list(legs)
    for origin, destination in directions:
        piece: list[Record] = []
        here = origin
        while rest and (not piece or piece[-1]["destination"] != destination):
            leg = rest.pop(0)
            if leg["origin"] != here:
                return None
            piece.append(leg)
            here = leg["destination"]
        if not piece or piece[-1]["destination"] != destination:
            return None
        pieces.append(piece)
    return pieces if not rest else None


def _legs_of(db: State, flights: list[Record]) -> list[Record]:
    legs = []
    for choice in flights:
        flight = db.flights.get(choice["flight_number"])
        if flight is None:
            return []
        legs.append({**choice, "origin": flight["origin"], "destination": flight["destination"]})
    return legs


def itinerary_problem(db: State, legs: list[Record], directions: list[tuple[str, str]]) -> str | None:
    """Why a set of legs is not a valid trip for these directions (connections, dates, order), or None."""
    pieces = _split_legs(legs, directions)
    if pieces is None:
        return "the flights do not form the trip's route"
    previous_day = ""
    for piece in pieces:
        if piece[0]["date"] < previous_day:
            return "the return travels before the outbound"
        for first, second in itertools.pairwise(piece):
            gap = minutes(db.flights[second["flight_number"]]["scheduled_departure"]) - minutes(
                db.flights[first["flight_number"]]["scheduled_arrival"]
            )
            if first["date"] != second["date"] or gap < MIN_CONNECTION_MINUTES:
                return f"no valid connection between {first['flight_number']} and {second['flight_number']}"
        previous_day = piece[-1]["date"]
    return None


# ---------------------------------------------------------------------------------------------- read tools


@tool("read")
def get_user_details(db: State, user_id: UserId) -> Record:
    """Get a user's profile: name, date of birth, membership tier, payment methods, saved passengers and
    reservation ids.

    Args:
        user_id: The user's id, such as ava_chen_1234.
    """
    return _user(db, user_id)


@tool("read")
def get_reservation_details(db: State, reservation_id: ReservationId) -> Record:
    """Get a reservation: route, trip type, cabin, flights with the price paid per passenger, passengers,
    payment history, baggage counts, travel insurance, booking time and status.

    Args:
        reservation_id: The reservation id, six letters or digits such as 8SATKV.
    """
    return _reservation(db, reservation_id)


@tool("read")
def search_direct_flight(db: State, origin: AirportCode, destination: AirportCode, date: Day) -> list[Record]:
    """Search the direct flights between two airports on a date that can still be booked, with seats left
    and prices per cabin.

    Args:
        origin: Origin airport code, such as BOS.
        destination: Destination airport code, such as DEN.
        date: Travel date, YYYY-MM-DD.
    """
    _check_airports(db, origin, destination)
    return _available_on(db, origin, destination, date)


@tool("read")
def search_onestop_flight(db: State, origin: AirportCode, destination: AirportCode, date: Day) -> list[list[Record]]:
    """Search itineraries with exactly one connection between two airports on a date. Each result is a pair
    of flights; the second leaves at least 60 minutes after the first lands, on the same date.

    Args:
        origin: Origin airport code, such as BOS.
        destination: Destination airport code, such as SEA.
        date: Travel date, YYYY-MM-DD.
    """
    _check_airports(db, origin, destination)
    results = []
    for via in db.airports.ids():
        if via in (origin, destination):
            continue
        firsts = _available_on(db, origin, via, date)
        seconds = _available_on(db, via, destination, date) if firsts else []
        for first in firsts:
            for second in seconds:
                gap = minutes(second["scheduled_departure"]) - minutes(first["scheduled_arrival"])
                if gap >= MIN_CONNECTION_MINUTES:
                    results.append([first, second])
    return sorted(results, key=lambda pair: (pair[0]["scheduled_departure"], pair[1]["scheduled_departure"]))


@tool("read")
def get_flight_status(db: State, flight_number: FlightNumber, date: Day) -> Record:
    """Get the status of a flight on a date (available, delayed, cancelled or landed) with its times.

    Args:
        flight_number: The flight number, such as SL123.
        date: The flight date, YYYY-MM-DD.
    """
    flight, record = _flight_day(db, flight_number, date)
    return {**_flight_summary(flight, date, record), **record}


@tool("read")
def calculate(db: State, expression: Annotated[str, Field(max_length=200)]) -> str:
    """Evaluate an arithmetic expression with numbers, + - * / and parentheses; the result is rounded to
    2 decimals.

    Args:
        expression: The expression, such as (320 + 45) * 2.
    """
    return str(round(evaluate_arithmetic(expression), 2))


@tool("read")
def transfer_to_human_agents(db: State, summary: str) -> str:
    """Transfer the user to a human agent, with a summary of the issue. Use only when the policy says so.

    Args:
        summary: A short summary of the user's issue for the human agent.
    """
    return "Transfer successful"


# ---------------------------------------------------------------------------------------------- write tools


@tool("write")
def book_reservation(
    db: State,
    user_id: UserId,
    origin: AirportCode,
    destination: AirportCode,
    flight_type: Literal["one_way", "round_trip"],
    cabin: Cabin,
    flights: list[FlightChoice],
    passengers: list[Passenger],
    payment_methods: list[PaymentPart],
    total_baggages: Annotated[int, Field(ge=0, le=40)],
    nonfree_baggages: Annotated[int, Field(ge=0, le=40)],
    insurance: Literal["yes", "no"],
) -> Record:
    """Book a new reservation. The payment amounts must add up to the total: fares of every flight for
    every passenger, plus travel insurance and non-free bags.

    Args:
        user_id: The id of the user who books and pays.
        origin: Origin airport code of the trip.
        destination: Destination airport code of the trip.
        flight_type: one_way or round_trip.
        cabin: basic_economy, economy or business, for every flight.
        flights: Every flight of the trip in travel order, each with flight_number and date (YYYY-MM-DD).
        passengers: Each passenger's first_name, last_name and dob (YYYY-MM-DD).
        payment_methods: Payment ids from the user's profile with the amount (whole dollars) taken from each.
        total_baggages: Checked bags for the whole reservation.
        nonfree_baggages: How many of those bags are paid for.
        insurance: yes or no, travel insurance for every passenger.
    """
    user = _user(db, user_id)
    _check_airports(db, origin, destination)
    if not flights or not passengers:
        raise ToolExecutionError("a booking needs at least one flight and one passenger")
    chosen = [f.model_dump() for f in flights]
    legs = []
    for choice in chosen:
        flight, record = _bookable_day(db, choice["flight_number"], choice["date"], cabin, len(passengers))
        legs.append({**_leg(flight, choice["date"]), "price": record["prices"][cabin]})
    total = booking_total(db, cabin, chosen, len(passengers), insurance, nonfree_baggages)
    parts = [p.model_dump() for p in payment_methods]
    _pay_booking(user, parts, total)
    for leg in legs:
        _move_seats(db, leg["flight_number"], leg["date"], cabin, -len(passengers))
    reservation_id = _next_reservation_id(db)
    reservation = {
        "reservation_id": reservation_id,
        "user_id": user_id,
        "origin": origin,
        "destination": destination,
        "flight_type": flight_type,
        "cabin": cabin,
        "flights": legs,
        "passengers": [p.model_dump() for p in passengers],
        "payment_history": [part for part in parts if part["amount"] > 0],
        "created_at": NOW,
        "total_baggages": total_baggages,
        "nonfree_baggages": nonfree_baggages,
        "insurance": insurance,
        "status": "active",
    }
    db.reservations.put(reservation_id, reservation)
    user["reservations"].append(reservation_id)
    return {**reservation, "total_price": total}


def _leg(flight: Record, day: str) -> Record:
    return {
        "flight_number": flight["flight_number"],
        "origin": flight["origin"],
        "destination": flight["destination"],
        "date": day,
    }


def _pay_booking(user: Record, parts: list[Record], total: int) -> None:
    paid = sum(part["amount"] for part in parts)
    if paid != total:
        raise ToolExecutionError(f"the payment amounts add up to ${paid} but the booking costs ${total}")
    if len({part["payment_id"] for part in parts}) != len(parts):
        raise ToolExecutionError("each payment method may appear once")
    for part in parts:
        method = _payment_method(user, part["payment_id"])
        if method["source"] == "gift_card" and method["balance"] < part["amount"]:
            raise ToolExecutionError(f"gift card {part['payment_id']} has a balance of ${method['balance']}")
        if method["source"] == "certificate" and method["amount"] < part["amount"]:
            raise ToolExecutionError(f"certificate {part['payment_id']} is worth ${method['amount']}")
    for part in parts:
        method = user["payment_methods"][part["payment_id"]]
        if method["source"] == "gift_card":
            method["balance"] -= part["amount"]
        elif method["source"] == "certificate" and part["amount"] > 0:
            # A certificate is single use: whatever is left of it is forfeited.
            del user["payment_methods"][part["payment_id"]]


def _next_reservation_id(db: State) -> str:
    counters = db.meta["counters"]
    counters["bookings"] += 1
    return _new_id(f"booking-{counters['bookings']}", lambda rid: rid in db.reservations, ID_ALPHABET, 6)


@tool("write")
def cancel_reservation(db: State, reservation_id: ReservationId, reason: CancelReason) -> Record:
    """Cancel a whole reservation and refund it to the original payment methods (travel certificate
    amounts are not refunded).

    Args:
        reservation_id: The reservation to cancel.
        reason: Why the user cancels: change_of_plans, airline_cancelled_flight, medical, bereavement
            or other.
    """
    reservation = _active_reservation(db, reservation_id)
    user = _user(db, reservation["user_id"])
    refunds = []
    for payment_id, net in _net_paid(reservation).items():
        method = user["payment_methods"].get(payment_id)
        if net <= 0 or method is None or method["source"] == "certificate":
            continue
        if method["source"] == "gift_card":
            method["balance"] += net
        refunds.append({"payment_id": payment_id, "amount": -net})
    reservation["payment_history"].extend(refunds)
    reservation["status"] = "cancelled"
    for leg in reservation["flights"]:
        if leg["date"] >= TODAY:
            _move_seats(db, leg["flight_number"], leg["date"], reservation["cabin"], len(reservation["passengers"]))
    return {**reservation, "refund_total": -sum(r["amount"] for r in refunds)}


def _net_paid(reservation: Record) -> dict[str, int]:
    net: dict[str, int] = {}
    for entry in reservation["payment_history"]:
        net[entry["payment_id"]] = net.get(entry["payment_id"], 0) + entry["amount"]
    return net


@tool("write")
def update_reservation_flights(
    db: State, reservation_id: ReservationId, flights: list[FlightChoice], payment_id: PaymentId
) -> Record:
    """Replace the flights of a reservation, keeping its cabin and passengers. Give the full list of flights
    after the change, including unchanged ones. Unchanged flights keep the price paid; new flights cost
    today's fare. The difference for all passengers is charged to, or refunded to, payment_id.

    Args:
        reservation_id: The reservation to change.
        flights: Every flight of the reservation after the change, in travel order, each with flight_number
            and date (YYYY-MM-DD).
        payment_id: A credit card or gift card of the user that pays or receives the fare difference.
    """
    reservation = _active_reservation(db, reservation_id)
    user = _user(db, reservation["user_id"])
    cabin, seats = reservation["cabin"], len(reservation["passengers"])
    kept = {(leg["flight_number"], leg["date"]): leg for leg in reservation["flights"]}
    legs = []
    for choice in (f.model_dump() for f in flights):
        old = kept.get((choice["flight_number"], choice["date"]))
        if old is not None:
            legs.append(dict(old))
            continue
        flight, record = _bookable_day(db, choice["flight_number"], choice["date"], cabin, seats)
        legs.append({**_leg(flight, choice["date"]), "price": record["prices"][cabin]})
    if not legs:
        raise ToolExecutionError("a reservation needs at least one flight")
    chosen = {(leg["flight_number"], leg["date"]) for leg in legs}
    released = [leg for key, leg in kept.items() if key not in chosen]
    if any(leg["date"] < TODAY for leg in released):
        raise ToolExecutionError("a flight that has already flown cannot be changed")
    difference = (sum(leg["price"] for leg in legs) - sum(leg["price"] for leg in kept.values())) * seats
    _settle(user, reservation, payment_id, difference)
    _swap_seats(db, released, [leg for leg in legs if (leg["flight_number"], leg["date"]) not in kept], cabin, seats)
    reservation["flights"] = legs
    return {**reservation, "price_difference": difference}


def _swap_seats(db: State, released: list[Record], taken: list[Record], cabin: str, seats: int) -> None:
    for leg in released:
        _move_seats(db, leg["flight_number"], leg["date"], cabin, seats)
    for leg in taken:
        _move_seats(db, leg["flight_number"], leg["date"], cabin, -seats)


@tool("write")
def update_reservation_cabin(db: State, reservation_id: ReservationId, cabin: Cabin, payment_id: PaymentId) -> Record:
    """Move every flight of a reservation to another cabin. Each flight is repriced at today's fare of the
    new cabin; the difference for all passengers is charged to, or refunded to, payment_id.

    Args:
        reservation_id: The reservation to change.
        cabin: The new cabin: basic_economy, economy or business.
        payment_id: A credit card or gift card of the user that pays or receives the fare difference.
    """
    reservation = _active_reservation(db, reservation_id)
    user = _user(db, reservation["user_id"])
    old_cabin, seats = reservation["cabin"], len(reservation["passengers"])
    if cabin == old_cabin:
        raise ToolExecutionError(f"reservation {reservation_id} is already in {cabin}")
    if flown_flights(reservation):
        raise ToolExecutionError("a reservation with flights already flown cannot change cabin")
    new_prices = [
        _bookable_day(db, leg["flight_number"], leg["date"], cabin, seats)[1]["prices"][cabin]
        for leg in reservation["flights"]
    ]
    difference = (sum(new_prices) - sum(leg["price"] for leg in reservation["flights"])) * seats
    _settle(user, reservation, payment_id, difference)
    for leg, price in zip(reservation["flights"], new_prices, strict=True):
        _move_seats(db, leg["flight_number"], leg["date"], old_cabin, seats)
        _move_seats(db, leg["flight_number"], leg["date"], cabin, -seats)
        leg["price"] = price
    reservation["cabin"] = cabin
    return {**reservation, "price_difference": difference}


@tool("write")
def update_reservation_baggages(
    db: State,
    reservation_id: ReservationId,
    total_baggages: Annotated[int, Field(ge=0, le=40)],
    nonfree_baggages: Annotated[int, Field(ge=0, le=40)],
    payment_id: PaymentId,
) -> Record:
    """Set the checked bag counts of a reservation. Each added non-free bag is charged the bag fee to
    payment_id.

    Args:
        reservation_id: The reservation to change.
        total_baggages: The new total number of checked bags for the whole reservation.
        nonfree_baggages: How many of those bags are paid for (beyond the free allowance).
        payment_id: A credit card or gift card of the user that pays the bag fee.
    """
    reservation = _active_reservation(db, reservation_id)
    user = _user(db, reservation["user_id"])
    if nonfree_baggages > total_baggages:
        raise ToolExecutionError("nonfree_baggages cannot exceed total_baggages")
    fee = (nonfree_baggages - reservation["nonfree_baggages"]) * BAG_FEE
    _settle(user, reservation, payment_id, fee)
    reservation["total_baggages"] = total_baggages
    reservation["nonfree_baggages"] = nonfree_baggages
    return {**reservation, "bag_fee": fee}


@tool("write")
def update_reservation_passengers(db: State, reservation_id: ReservationId, passengers: list[Passenger]) -> Record:
    """Replace the passenger details of a reservation. The number of passengers cannot change.

    Args:
        reservation_id: The reservation to change.
        passengers: Every passenger after the change, each with first_name, last_name and dob (YYYY-MM-DD).
    """
    reservation = _active_reservation(db, reservation_id)
    if len(passengers) != len(reservation["passengers"]):
        raise ToolExecutionError(
            f"reservation {reservation_id} has {len(reservation['passengers'])} passengers; keep that number"
        )
    reservation["passengers"] = [p.model_dump() for p in passengers]
    return reservation


@tool("write")
def send_certificate(
    db: State, user_id: UserId, reservation_id: ReservationId, amount: Annotated[int, Field(gt=0, le=2000)]
) -> Record:
    """Issue a travel certificate to a user as compensation for a disrupted flight of one of their
    reservations. The certificate appears among the user's payment methods.

    Args:
        user_id: The user who receives the certificate.
        reservation_id: The reservation whose flight was disrupted.
        amount: The certificate value in whole dollars.
    """
    user = _user(db, user_id)
    _reservation(db, reservation_id)
    methods = user["payment_methods"]
    number = _new_id(f"cert-{user_id}-{reservation_id}", lambda n: f"cert_{n}" in methods, "0123456789", 7)
    certificate_id = f"cert_{number}"
    methods[certificate_id] = {
        "source": "certificate",
        "amount": amount,
        "reservation_id": reservation_id,
        "issued": TODAY,
    }
    return {"certificate_id": certificate_id, **methods[certificate_id]}


# ---------------------------------------------------------------------------------------------- policy


def policy_check(db: State, name: str, arguments: dict[str, Any]) -> str | None:
    """Why calling `name` with `arguments` in state `db` would break policy.md, or None if it would not.

    Only the rules a state can show are checked; the conversational ones (identity, explicit confirmation)
    are left to the graders.
    """
    check = _CHECKS.get(name)
    if check is None:
        return None
    try:
        return check(db, arguments)
    except (KeyError, TypeError, ValueError, ToolExecutionError) as exc:
        return f"{name}: arguments do not describe a valid request ({exc})"


def _check_cancel(db: State, args: Record) -> str | None:
    reservation = _reservation(db, args["reservation_id"])
    if reservation["status"] != "active":
        return "the reservation is not active"
    if flown_flights(reservation):
        return "a reservation with a flight already flown cannot be cancelled"
    if cancellation_grounds(db, reservation, args["reason"]) is None:
        return (
            "cancellation needs one of: booked within 24 hours, an airline-cancelled flight, business cabin, "
            "or travel insurance with a covered reason"
        )
    if args["reason"] == "airline_cancelled_flight" and not airline_cancelled(db, reservation):
        return "no flight of the reservation was cancelled by the airline"
    return None


def _check_change_flights(db: State, args: Record) -> str | None:
    reservation = _reservation(db, args["reservation_id"])
    if reservation["cabin"] == "basic_economy":
        return "basic economy flights cannot be changed"
    if flown_flights(reservation):
        return "flights cannot be changed once a flight of the reservation has been flown"
    legs = _legs_of(db, args["flights"])
    if not legs:
        return "unknown flight"
    problem = itinerary_problem(db, legs, _directions(reservation))
    if problem:
        return f"origin, destination and trip type must stay the same: {problem}"
    kept = {(leg["flight_number"], leg["date"]) for leg in reservation["flights"]}
    for leg in legs:
        new = (leg["flight_number"], leg["date"]) not in kept
        if new and flight_status(db, leg["flight_number"], leg["date"]) != "available":
            return f"flight {leg['flight_number']} on {leg['date']} is not available"
    return _check_settlement(db, reservation, args["payment_id"])


def _check_cabin(db: State, args: Record) -> str | None:
    reservation = _reservation(db, args["reservation_id"])
    if flown_flights(reservation):
        return "the cabin cannot be changed once a flight of the reservation has been flown"
    return _check_settlement(db, reservation, args["payment_id"])


def _check_settlement(db: State, reservation: Record, payment_id: str) -> str | None:
    method = _user(db, reservation["user_id"])["payment_methods"].get(payment_id)
    if method is None or method["source"] not in ("credit_card", "gift_card"):
        return "fare differences are settled with a credit card or gift card of the reservation's owner"
    return None


def _check_baggages(db: State, args: Record) -> str | None:
    reservation = _reservation(db, args["reservation_id"])
    if args["total_baggages"] < reservation["total_baggages"]:
        return "checked bags can be added but never removed"
    membership = _user(db, reservation["user_id"])["membership"]
    expected = nonfree_bags(membership, reservation["cabin"], len(reservation["passengers"]), args["total_baggages"])
    if args["nonfree_baggages"] != expected:
        return f"with this allowance {expected} of {args['total_baggages']} bags are paid for"
    return _check_settlement(db, reservation, args["payment_id"])


def _check_passengers(db: State, args: Record) -> str | None:
    reservation = _reservation(db, args["reservation_id"])
    if flown_flights(reservation):
        return "passengers cannot be changed once a flight of the reservation has been flown"
    if len(args["passengers"]) != len(reservation["passengers"]):
        return "the number of passengers cannot change"
    return None


def _check_certificate(db: State, args: Record) -> str | None:
    user = _user(db, args["user_id"])
    reservation = _reservation(db, args["reservation_id"])
    if reservation["user_id"] != user["user_id"]:
        return "compensation only for the user's own reservations"
    if any(m.get("reservation_id") == reservation["reservation_id"] for m in user["payment_methods"].values()):
        return "one compensation certificate per reservation"
    due = compensation_due(db, user, reservation)
    if due == 0:
        return "no compensation: needs a delayed or cancelled flight and silver/gold, insurance or business"
    if args["amount"] != due:
        return f"the compensation for this reservation is ${due}"
    return None


def _check_booking(db: State, args: Record) -> str | None:
    user = _user(db, args["user_id"])
    passengers = len(args["passengers"])
    if passengers > MAX_PASSENGERS:
        return f"at most {MAX_PASSENGERS} passengers per reservation"
    legs = _legs_of(db, args["flights"])
    directions = [(args["origin"], args["destination"])]
    if args["flight_type"] == "round_trip":
        directions.append((args["destination"], args["origin"]))
    problem = "unknown flight" if not legs else itinerary_problem(db, legs, directions)
    if problem:
        return problem
    for leg in legs:
        if flight_status(db, leg["flight_number"], leg["date"]) != "available" or leg["date"] < TODAY:
            return f"flight {leg['flight_number']} on {leg['date']} is not available"
    expected = nonfree_bags(user["membership"], args["cabin"], passengers, args["total_baggages"])
    if args["nonfree_baggages"] != expected:
        return f"with this allowance {expected} of {args['total_baggages']} bags are paid for"
    return _check_booking_payment(user, args["payment_methods"])


def _check_booking_payment(user: Record, parts: list[Record]) -> str | None:
    sources = [user["payment_methods"].get(p["payment_id"], {}).get("source") for p in parts]
    limits = {"credit_card": 1, "certificate": 1, "gift_card": 3}
    for source, limit in limits.items():
        if sources.count(source) > limit:
            return f"at most {limit} {source.replace('_', ' ')} per booking"
    return None


_CHECKS: dict[str, Callable[[State, Record], str | None]] = {
    "cancel_reservation": _check_cancel,
    "update_reservation_flights": _check_change_flights,
    "update_reservation_cabin": _check_cabin,
    "update_reservation_baggages": _check_baggages,
    "update_reservation_passengers": _check_passengers,
    "send_certificate": _check_certificate,
    "book_reservation": _check_booking,
}
