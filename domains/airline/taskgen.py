"""Compositional task generator of the airline domain.

Atomic intents (cancel, change flights, change cabin, add bags, fix passengers, compensation, booking, a
baggage question), each under a condition (allowed, or forbidden by a named policy rule; the reservation
id known, or to be looked up from the user's profile), make single-intent tasks; pairs of intents for
one user make multi-intent tasks. Every figure a task asks the agent to communicate is computed by running
the golden actions on a fresh copy of the DB, and every task is replayed and checked against
`policy_check` before it is kept.

    python -m tauproxy_domains.airline.taskgen            # rewrites tasks.json (seed 0, 60 tasks)
"""

from __future__ import annotations

import copy
import json
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from tauproxy.domain.state import BaseState, State
from tauproxy.domain.tools import DomainFunction, marked_functions
from tauproxy.errors import ToolExecutionError

from . import tools as airline_tools
from .db import (
    AIRPORTS,
    COMPENSATION,
    FIRST_NAMES,
    LAST_NAMES,
    TODAY,
    build_db,
    dates,
    shift_date,
)
from .tools import (
    airline_cancelled,
    booked_within_24h,
    booking_total,
    compensation_due,
    flight_status,
    flown_flights,
    free_bag_allowance,
    nonfree_bags,
    policy_check,
)

DOMAIN = "airline"
DB_SEED = 0
DEFAULT_COUNT = 60
POLICY_PATH = Path(__file__).with_name("policy.md")
TASKS_PATH = Path(__file__).with_name("tasks.json")
MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
BRAND_WORDS = {"visa": "Visa card", "mastercard": "Mastercard", "amex": "American Express card"}
CABIN_WORDS = {"basic_economy": "basic economy", "economy": "economy", "business": "business"}
PERSONAS = (
    "polite and patient; answers exactly what is asked",
    "in a hurry; gives short answers and dislikes small talk",
    "chatty; explains the background of the trip",
    "a nervous traveller who double-checks every figure",
    "a seasoned business traveller who knows airline jargon",
    "friendly but firm about what they want",
)
CONFIRM = "When the agent lists a change that matches your request and asks you to confirm, say yes."

Record = dict[str, Any]
Call = tuple[str, Record]


@dataclass
class Part:
    """One intent of a task: what the user says and knows, and what a correct agent does."""

    intent: str
    condition: str
    purpose: str
    reason: str
    known: list[str]
    unknown: list[str] = field(default_factory=list)
    instructions: list[str] = field(default_factory=list)
    actions: list[Call] = field(default_factory=list)
    communicate: list[str] = field(default_factory=list)
    forbidden: list[Call] = field(default_factory=list)
    basis: set[str] = field(default_factory=lambda: {"DB", "COMMUNICATE"})
    reservation_id: str | None = None


class World:
    """The DB the tasks run against, with fresh copies to run golden actions on."""

    def __init__(self, db: dict[str, dict[str, Record]]) -> None:
        self.db = db
        self.base = BaseState(db)
        # A shared read-only view for predicates; golden actions always run on fresh states.
        self.view = self.base.fresh()
        self.functions: dict[str, DomainFunction] = {
            f.name: f for f in marked_functions(vars(airline_tools), "airline/tools.py")
        }
        self.user_ids = sorted(db["users"])
        self.direct_keys = sorted(db["routes"])
        codes = sorted(db["airports"])
        self.indirect_keys = [f"{a}-{b}" for a in codes for b in codes if a != b and f"{a}-{b}" not in db["routes"]]
        self.policy = POLICY_PATH.read_text(encoding="utf-8")

    def user(self, user_id: str) -> Record:
        return self.db["users"][user_id]

    def reservation(self, reservation_id: str) -> Record:
        return self.db["reservations"][reservation_id]

    def run(self, calls: list[Call], state: State | None = None) -> list[Any]:
        """Outputs of `calls` run in order on `state` (default: a fresh copy); tool errors propagate."""
        target = state if state is not None else self.base.fresh()
        return [self.functions[name].call(target, copy.deepcopy(args)) for name, args in calls]


# ---------------------------------------------------------------------------------------------- wording


def city(code: str) -> str:
    return AIRPORTS[code][0]


def pretty(day: str) -> str:
    parsed = date.fromisoformat(day)
    return f"{MONTHS[parsed.month - 1]} {parsed.day}"


def trip_words(reservation: Record) -> str:
    origin, destination = city(reservation["origin"]), city(reservation["destination"])
    first_day = pretty(reservation["flights"][0]["date"])
    if reservation["flight_type"] == "round_trip":
        return f"round trip from {origin} to {destination} leaving on {first_day}"
    return f"trip from {origin} to {destination} on {first_day}"


def money(amount: int) -> str:
    return f"${abs(amount)}"


def card_words(user: Record, payment_id: str) -> str:
    method = user["payment_methods"][payment_id]
    if method["source"] == "gift_card":
        return f"your gift card {payment_id}"
    return f"your {BRAND_WORDS[method['brand']]} ending in {method['last_four']}"


def _reference(world: World, rng: random.Random, user_id: str, reservation: Record) -> tuple[str, list[str], str]:
    """How the user points at a reservation: by id, or (when it is unambiguous) by route and date."""

    def key(r: Record) -> tuple[str, str, str]:
        return r["origin"], r["destination"], r["flights"][0]["date"]

    twins = [rid for rid in world.user(user_id)["reservations"] if key(world.reservation(rid)) == key(reservation)]
    words = trip_words(reservation)
    if len(twins) == 1 and rng.random() < 0.5:
        return f"my {words}", ["You do not remember the reservation id; describe the trip instead."], "lookup"
    return f"my {words} (reservation {reservation['reservation_id']})", [], "id_known"


def _pick(
    world: World, rng: random.Random, user_id: str, taken: set[str], wanted: Callable[[Record], bool]
) -> Record | None:
    options = [
        world.reservation(rid)
        for rid in world.user(user_id)["reservations"]
        if rid not in taken and wanted(world.reservation(rid))
    ]
    return rng.choice(options) if options else None


def _changeable(world: World, reservation: Record) -> bool:
    return (
        reservation["status"] == "active"
        and not flown_flights(reservation)
        and not airline_cancelled(world.view, reservation)
    )


def _a_card(rng: random.Random, user: Record) -> str:
    return rng.choice(sorted(pid for pid, m in user["payment_methods"].items() if m["source"] == "credit_card"))


def _person(rng: random.Random) -> Record:
    born = date(1950, 1, 1).toordinal() + rng.randint(0, 365 * 55)
    return {
        "first_name": rng.choice(FIRST_NAMES),
        "last_name": rng.choice(LAST_NAMES),
        "dob": date.fromordinal(born).isoformat(),
    }


def _person_words(person: Record) -> str:
    return f"{person['first_name']} {person['last_name']} (born {person['dob']})"


# ---------------------------------------------------------------------------------------------- intents


def cancel_allowed(world: World, rng: random.Random, user_id: str, taken: set[str], ground: str) -> Part | None:
    view = world.view

    def wanted(r: Record) -> bool:
        if r["status"] != "active" or flown_flights(r):
            return False
        recent, cancelled, business = (
            booked_within_24h(r),
            airline_cancelled(view, r),
            r["cabin"] == "business",
        )
        grounds = {
            "within_24h": recent and not cancelled and not business,
            "airline_cancelled": cancelled and not recent and not business,
            "business": business and not recent and not cancelled,
            "insurance": r["insurance"] == "yes" and not (recent or cancelled or business),
        }
        return grounds[ground]

    reservation = _pick(world, rng, user_id, taken, wanted)
    if reservation is None:
        return None
    rid = reservation["reservation_id"]
    ref, unknown, how = _reference(world, rng, user_id, reservation)
    actions: list[Call] = [("get_reservation_details", {"reservation_id": rid})]
    reason = "change_of_plans"
    if ground == "within_24h":
        text = f"I booked {ref} less than a day ago, but my plans changed. Please cancel it and refund me."
    elif ground == "business":
        text = f"My meeting was called off, so I need to cancel {ref}. It's a business class booking."
    elif ground == "airline_cancelled":
        leg = next(
            leg
            for leg in reservation["flights"]
            if flight_status(view, leg["flight_number"], leg["date"]) == "cancelled"
        )
        actions.append(("get_flight_status", {"flight_number": leg["flight_number"], "date": leg["date"]}))
        reason = "airline_cancelled_flight"
        text = (
            f"Your airline cancelled flight {leg['flight_number']} on {pretty(leg['date'])}, part of {ref}. "
            "I don't want to rebook; cancel the whole reservation and refund me."
        )
    else:
        reason = rng.choice(("medical", "bereavement"))
        cause = (
            "I broke my ankle and my doctor says I cannot fly"
            if reason == "medical"
            else ("there has been a death in my family")
        )
        text = f"I have to cancel {ref}: {cause}. I bought travel insurance."
    write: Call = ("cancel_reservation", {"reservation_id": rid, "reason": reason})
    refund = world.run([*actions, write])[-1]["refund_total"]
    return Part(
        intent="cancel",
        condition=f"allowed:{ground}:{how}",
        purpose=f"Cancellation allowed ({ground.replace('_', ' ')}); the agent cancels, states the refund.",
        reason=text,
        known=[],
        unknown=[*unknown, "You do not know how much will be refunded."],
        instructions=["Ask how much will be refunded.", CONFIRM],
        actions=[*actions, write],
        communicate=[money(refund)] if refund else [],
        reservation_id=rid,
    )


def cancel_forbidden(world: World, rng: random.Random, user_id: str, taken: set[str]) -> Part | None:
    def wanted(r: Record) -> bool:
        return _changeable(world, r) and not booked_within_24h(r) and r["cabin"] != "business"

    reservation = _pick(world, rng, user_id, taken, wanted)
    if reservation is None:
        return None
    rid = reservation["reservation_id"]
    ref, unknown, how = _reference(world, rng, user_id, reservation)
    insured = reservation["insurance"] == "yes"
    condition = "uncovered_reason" if insured else "no_insurance"
    attempt: Call = ("cancel_reservation", {"reservation_id": rid, "reason": "change_of_plans"})
    world.run([attempt])
    return Part(
        intent="cancel",
        condition=f"forbidden:{condition}:{how}",
        purpose=(
            "Refusal: economy/basic reservation booked more than 24 hours ago, no airline cancellation, "
            + ("insurance but change of plans is not a covered reason." if insured else "no travel insurance.")
        ),
        reason=f"My plans changed and I no longer need {ref}. I'd like to cancel it for a full refund.",
        known=["You simply changed your plans; nobody is ill."],
        unknown=unknown,
        instructions=[
            "If the agent refuses, ask once why. Do not invent another reason. Then accept and end the chat."
        ],
        actions=[("get_reservation_details", {"reservation_id": rid})],
        communicate=["24 hours"],
        forbidden=[attempt],
        reservation_id=rid,
    )


def _pieces(reservation: Record) -> list[list[Record]]:
    """The legs of each direction: legs up to the destination are outbound, the rest return."""
    legs = reservation["flights"]
    if reservation["flight_type"] != "round_trip":
        return [legs]
    cut = next(i for i, leg in enumerate(legs) if leg["destination"] == reservation["destination"]) + 1
    return [legs[:cut], legs[cut:]]


def _new_dates(world: World, reservation: Record, index: int) -> list[str]:
    """Dates the legs of direction `index` could move to: bookable, seats for all, order kept."""
    pieces = _pieces(reservation)
    piece = pieces[index]
    low, high = TODAY, "9999-12-31"
    if index == 0 and len(pieces) == 2:
        high = pieces[1][0]["date"]
    if index == 1:
        low = shift_date(pieces[0][-1]["date"], 1)
    seats = len(reservation["passengers"])
    options = []
    for day in dates():
        if not low <= day < high or day == piece[0]["date"]:
            continue
        days = [world.db["flights"][leg["flight_number"]]["dates"][day] for leg in piece]
        if all(d["status"] == "available" and d["seats_left"][reservation["cabin"]] >= seats for d in days):
            options.append(day)
    return options


def change_flight(world: World, rng: random.Random, user_id: str, taken: set[str], basic: bool) -> Part | None:
    def wanted(r: Record) -> bool:
        return _changeable(world, r) and (r["cabin"] == "basic_economy") == basic

    reservation = _pick(world, rng, user_id, taken, wanted)
    if reservation is None:
        return None
    index = rng.randrange(len(_pieces(reservation)))
    options = _new_dates(world, reservation, index)
    if not options:
        return None
    new_day = rng.choice(options)
    piece = _pieces(reservation)[index]
    moved = {id(leg) for leg in piece}
    flights = [
        {"flight_number": leg["flight_number"], "date": new_day if id(leg) in moved else leg["date"]}
        for leg in reservation["flights"]
    ]
    rid = reservation["reservation_id"]
    user = world.user(user_id)
    card = _a_card(rng, user)
    search_tool = "search_direct_flight" if len(piece) == 1 else "search_onestop_flight"
    search: Call = (
        search_tool,
        {"origin": piece[0]["origin"], "destination": piece[-1]["destination"], "date": new_day},
    )
    write: Call = (
        "update_reservation_flights",
        {"reservation_id": rid, "flights": flights, "payment_id": card},
    )
    reads: list[Call] = [("get_reservation_details", {"reservation_id": rid}), search]
    outputs = world.run([*reads, write])
    if not _offered(outputs[1], [leg["flight_number"] for leg in piece]):
        return None
    ref, unknown, how = _reference(world, rng, user_id, reservation)
    direction = "return" if index == 1 else "outbound" if len(_pieces(reservation)) == 2 else "one-way"
    numbers = " and ".join(leg["flight_number"] for leg in piece)
    what = ref if direction == "one-way" else f"the {direction} flights of {ref}"
    text = (
        f"I need to move {what} from {pretty(piece[0]['date'])} to {pretty(new_day)}. Same flights, just the new date."
    )
    known = [
        f"You want the same flight number{'s' if len(piece) > 1 else ''} ({numbers}) on {new_day}.",
        f"Any fare difference goes to or comes from {card_words(user, card)}.",
    ]
    if basic:
        return Part(
            intent="change_flight",
            condition=f"forbidden:basic_economy:{how}",
            purpose="Refusal: basic economy flights cannot be changed.",
            reason=text,
            known=known,
            unknown=unknown,
            instructions=["If the agent says it cannot be done, ask why once, then accept and end the chat."],
            actions=reads[:1],
            communicate=["basic economy"],
            forbidden=[write],
            reservation_id=rid,
        )
    difference = outputs[-1]["price_difference"]
    return Part(
        intent="change_flight",
        condition=f"allowed:{direction}:{how}",
        purpose="Flight change allowed; the agent states the fare difference and changes the date.",
        reason=text,
        known=known,
        unknown=[*unknown, "You do not know the fare difference."],
        instructions=["Ask what the fare difference is before you agree.", CONFIRM],
        actions=[*reads, write],
        communicate=[money(difference)] if difference else [],
        reservation_id=rid,
    )


def _offered(results: list[Any], numbers: list[str]) -> bool:
    for result in results:
        legs = result if isinstance(result, list) else [result]
        if [leg["flight_number"] for leg in legs] == numbers:
            return True
    return False


def change_cabin(world: World, rng: random.Random, user_id: str, taken: set[str]) -> Part | None:
    reservation = _pick(world, rng, user_id, taken, lambda r: _changeable(world, r))
    if reservation is None:
        return None
    current = reservation["cabin"]
    if current == "business":
        target = "economy"
    else:
        target = "business" if current == "economy" or rng.random() < 0.4 else "economy"
    rid = reservation["reservation_id"]
    user = world.user(user_id)
    card = _a_card(rng, user)
    write: Call = ("update_reservation_cabin", {"reservation_id": rid, "cabin": target, "payment_id": card})
    read: Call = ("get_reservation_details", {"reservation_id": rid})
    difference = world.run([read, write])[-1]["price_difference"]
    ref, unknown, how = _reference(world, rng, user_id, reservation)
    verb = "downgrade" if target == "economy" and current == "business" else "upgrade"
    return Part(
        intent="change_cabin",
        condition=f"allowed:{current}->{target}:{how}",
        purpose=f"Cabin change ({verb}); the agent states the price difference for all passengers.",
        reason=f"I'd like to {verb} {ref} to {CABIN_WORDS[target]} for everyone on the booking.",
        known=[f"Settle any difference with {card_words(user, card)}."],
        unknown=[*unknown, "You do not know the price difference."],
        instructions=["Ask how much the difference is, then accept it.", CONFIRM],
        actions=[read, write],
        communicate=[money(difference)] if difference else [],
        reservation_id=rid,
    )


def add_bags(world: World, rng: random.Random, user_id: str, taken: set[str]) -> Part | None:
    reservation = _pick(world, rng, user_id, taken, lambda r: r["status"] == "active" and not flown_flights(r))
    if reservation is None:
        return None
    user = world.user(user_id)
    passengers = len(reservation["passengers"])
    for extra in [*rng.sample((1, 2), 2), 3]:
        total = reservation["total_baggages"] + extra
        nonfree = nonfree_bags(user["membership"], reservation["cabin"], passengers, total)
        if nonfree > reservation["nonfree_baggages"]:
            break
    else:
        return None
    rid = reservation["reservation_id"]
    card = _a_card(rng, user)
    write: Call = (
        "update_reservation_baggages",
        {"reservation_id": rid, "total_baggages": total, "nonfree_baggages": nonfree, "payment_id": card},
    )
    read: Call = ("get_reservation_details", {"reservation_id": rid})
    fee = world.run([read, write])[-1]["bag_fee"]
    ref, unknown, how = _reference(world, rng, user_id, reservation)
    return Part(
        intent="add_bags",
        condition=f"allowed:{user['membership']}:{how}",
        purpose="Add checked bags; the agent applies the tier allowance and states the fee.",
        reason=f"Please add {extra} more checked bag{'s' if extra > 1 else ''} to {ref}.",
        known=[f"Pay any fee with {card_words(user, card)}."],
        unknown=[*unknown, "You do not know how many bags are free or what the fee is."],
        instructions=["Ask what it will cost before you confirm.", CONFIRM],
        actions=[read, write],
        communicate=[money(fee)],
        reservation_id=rid,
    )


def update_passengers(world: World, rng: random.Random, user_id: str, taken: set[str]) -> Part | None:
    reservation = _pick(world, rng, user_id, taken, lambda r: r["status"] == "active" and not flown_flights(r))
    if reservation is None:
        return None
    passengers = [dict(p) for p in reservation["passengers"]]
    index = len(passengers) - 1
    old = passengers[index]
    ref, unknown, how = _reference(world, rng, user_id, reservation)
    if rng.random() < 0.5:
        condition = "fix_dob"
        born = date.fromisoformat(old["dob"])
        new = {
            **old,
            "dob": born.replace(year=born.year + rng.choice((-1, 1)), day=min(born.day, 28)).isoformat(),
        }
        text = (
            f"The date of birth of {old['first_name']} {old['last_name']} on {ref} is wrong. It should be {new['dob']}."
        )
    else:
        condition = "replace"
        new = _person(rng)
        text = (
            f"{old['first_name']} {old['last_name']} can no longer travel on {ref}. "
            f"{_person_words(new)} will take that seat instead."
        )
    passengers[index] = new
    rid = reservation["reservation_id"]
    write: Call = ("update_reservation_passengers", {"reservation_id": rid, "passengers": passengers})
    read: Call = ("get_reservation_details", {"reservation_id": rid})
    world.run([read, write])
    return Part(
        intent="update_passengers",
        condition=f"allowed:{condition}:{how}",
        purpose="Passenger details change; the other passengers stay as they are.",
        reason=text,
        known=[f"The new details: {_person_words(new)}."],
        unknown=unknown,
        instructions=[CONFIRM],
        actions=[read, write],
        basis={"DB"},
        reservation_id=rid,
    )


def _disrupted_leg(world: World, reservation: Record) -> tuple[Record, str] | None:
    statuses = [(leg, flight_status(world.view, leg["flight_number"], leg["date"])) for leg in reservation["flights"]]
    for wanted in ("cancelled", "delayed"):
        for leg, status in statuses:
            if status == wanted:
                return leg, status
    return None


def compensation(world: World, rng: random.Random, user_id: str, taken: set[str], eligible: bool) -> Part | None:
    user = world.user(user_id)
    # Delays are rarer than cancellations in the DB; asking for one first keeps both kinds in the set.
    preferred = rng.choice(("delayed", "cancelled"))

    def wanted(r: Record, kinds: tuple[str, ...]) -> bool:
        found = _disrupted_leg(world, r)
        if r["status"] != "active" or found is None or found[1] not in kinds:
            return False
        return (compensation_due(world.view, user, r) > 0) == eligible

    reservation = _pick(world, rng, user_id, taken, lambda r: wanted(r, (preferred,)))
    reservation = reservation or _pick(world, rng, user_id, taken, lambda r: wanted(r, ("delayed", "cancelled")))
    if reservation is None:
        return None
    found = _disrupted_leg(world, reservation)
    assert found is not None
    leg, status = found
    rid = reservation["reservation_id"]
    reads: list[Call] = [
        ("get_reservation_details", {"reservation_id": rid}),
        ("get_flight_status", {"flight_number": leg["flight_number"], "date": leg["date"]}),
    ]
    ref, unknown, how = _reference(world, rng, user_id, reservation)
    record = world.db["flights"][leg["flight_number"]]["dates"][leg["date"]]
    what = "was cancelled" if status == "cancelled" else f"is delayed by {record['delay_minutes']} minutes"
    text = (
        f"Flight {leg['flight_number']} on {pretty(leg['date'])}, part of {ref}, {what}. "
        "That is really disruptive and I'd like some compensation."
    )
    amount = COMPENSATION[status] * len(reservation["passengers"])
    write: Call = ("send_certificate", {"user_id": user_id, "reservation_id": rid, "amount": amount})
    if not eligible:
        world.run([*reads, write])
        return Part(
            intent="compensation",
            condition=f"forbidden:{status}:{how}",
            purpose="Refusal: a regular member without insurance outside business gets no compensation.",
            reason=text,
            known=["You do not want to change or cancel anything; you only want compensation."],
            unknown=unknown,
            instructions=["If the agent refuses, ask once why, then accept and end the chat."],
            actions=reads,
            forbidden=[write],
            basis={"DB", "ACTION"},
            reservation_id=rid,
        )
    world.run([*reads, write])
    ground = (
        user["membership"]
        if user["membership"] != "regular"
        else "insurance"
        if reservation["insurance"] == "yes"
        else "business"
    )
    return Part(
        intent="compensation",
        condition=f"allowed:{status}:{ground}:{how}",
        purpose="Compensation allowed; the agent issues a certificate of the policy amount and states it.",
        reason=text,
        known=["You do not want to change or cancel anything; you only want compensation."],
        unknown=[*unknown, "You do not know what compensation you can get."],
        instructions=["Ask how much the compensation is.", CONFIRM],
        actions=[*reads, write],
        communicate=[money(amount)],
        reservation_id=rid,
    )


def baggage_question(world: World, rng: random.Random, user_id: str, taken: set[str]) -> Part | None:
    user = world.user(user_id)

    def wanted(r: Record) -> bool:
        return r["status"] == "active" and free_bag_allowance(user["membership"], r["cabin"], len(r["passengers"])) > 0

    reservation = _pick(world, rng, user_id, taken, wanted)
    if reservation is None:
        return None
    allowance = free_bag_allowance(user["membership"], reservation["cabin"], len(reservation["passengers"]))
    rid = reservation["reservation_id"]
    read: Call = ("get_reservation_details", {"reservation_id": rid})
    world.run([read])
    ref, unknown, how = _reference(world, rng, user_id, reservation)
    return Part(
        intent="baggage_question",
        condition=f"info:{user['membership']}:{reservation['cabin']}:{how}",
        purpose="Information only: the free checked-bag allowance of the reservation (tier x cabin x pax).",
        reason=f"How many checked bags can we take for free, in total, on {ref}?",
        known=["You only want the number; do not change anything."],
        unknown=[*unknown, "You do not know your allowance."],
        instructions=["Ask for the total for the whole booking."],
        actions=[read],
        communicate=[str(allowance)],
        basis={"DB", "ACTION", "COMMUNICATE"},
        reservation_id=rid,
    )


def _traveller(user: Record) -> Record:
    return {**user["name"], "dob": user["dob"]}


def _booking_party(rng: random.Random, user: Record) -> list[Record]:
    party = [_traveller(user)]
    if rng.random() < 0.45:
        saved = user["saved_passengers"]
        party.append(dict(rng.choice(saved)) if saved else _person(rng))
    return party


def _book_payment(rng: random.Random, user: Record, total: int) -> str:
    gifts = sorted(
        pid for pid, m in user["payment_methods"].items() if m["source"] == "gift_card" and m["balance"] >= total
    )
    return rng.choice(gifts) if gifts and rng.random() < 0.5 else _a_card(rng, user)


def _bookable(options: list[Any], cabin: str, seats: int) -> list[Any]:
    def fits(option: Any) -> bool:
        legs = option if isinstance(option, list) else [option]
        return all(leg["seats_left"][cabin] >= seats for leg in legs)

    return [option for option in options if fits(option)]


def book(world: World, rng: random.Random, user_id: str, taken: set[str], onestop: bool) -> Part | None:
    user = world.user(user_id)
    keys = world.indirect_keys if onestop else world.direct_keys
    origin, destination = rng.choice(keys).split("-")
    day = rng.choice([d for d in dates() if d > TODAY])
    cabin = rng.choices(("basic_economy", "economy", "business"), weights=(2, 5, 2))[0]
    party = _booking_party(rng, user)
    tool_name = "search_onestop_flight" if onestop else "search_direct_flight"
    searches: list[Call] = [(tool_name, {"origin": origin, "destination": destination, "date": day})]
    options = _bookable(world.run(searches)[0], cabin, len(party))
    if not options:
        return None
    outbound = rng.choice(options)
    legs = outbound if onestop else [outbound]
    flight_type = "one_way"
    back_legs: list[Record] = []
    back_day = shift_date(day, rng.randint(2, 6))
    if not onestop and rng.random() < 0.4 and back_day <= dates()[-1]:
        back_search: Call = (
            "search_direct_flight",
            {"origin": destination, "destination": origin, "date": back_day},
        )
        back_options = _bookable(world.run([back_search])[0], cabin, len(party))
        if back_options:
            back_legs = [rng.choice(back_options)]
            searches.append(back_search)
            flight_type = "round_trip"
    flights = [{"flight_number": leg["flight_number"], "date": leg["date"]} for leg in [*legs, *back_legs]]
    bags = rng.choice((0, 1, 1, 2, 3))
    nonfree = nonfree_bags(user["membership"], cabin, len(party), bags)
    insurance = rng.choice(("yes", "no"))
    total = booking_total(world.view, cabin, flights, len(party), insurance, nonfree)
    payment = _book_payment(rng, user, total)
    args = {
        "user_id": user_id,
        "origin": origin,
        "destination": destination,
        "flight_type": flight_type,
        "cabin": cabin,
        "flights": flights,
        "passengers": party,
        "payment_methods": [{"payment_id": payment, "amount": total}],
        "total_baggages": bags,
        "nonfree_baggages": nonfree,
        "insurance": insurance,
    }
    write: Call = ("book_reservation", args)
    world.run([("get_user_details", {"user_id": user_id}), *searches, write])
    return Part(
        intent="book",
        condition=f"allowed:{'onestop' if onestop else 'direct'}:{flight_type}",
        purpose="Booking; the agent finds the flights, applies allowance and insurance, states the total.",
        reason=_booking_reason(origin, destination, day, flight_type, back_day, onestop),
        known=_booking_known(user, cabin, legs, back_legs, party, bags, insurance, payment),
        unknown=["You do not know flight numbers, fares or the total price."],
        instructions=["Ask for the total price before you confirm.", CONFIRM],
        actions=[*searches, write],
        communicate=[money(total)],
    )


def _booking_reason(origin: str, destination: str, day: str, flight_type: str, back_day: str, onestop: bool) -> str:
    route = f"from {city(origin)} to {city(destination)}"
    if flight_type == "round_trip":
        dates_words = f"going on {pretty(day)} and coming back on {pretty(back_day)}"
        return f"I'd like to book a round trip {route}, {dates_words}."
    kind = "a one-way trip with one connection" if onestop else "a one-way direct flight"
    return f"I'd like to book {kind} {route} on {pretty(day)}."


def _booking_known(
    user: Record,
    cabin: str,
    legs: list[Record],
    back_legs: list[Record],
    party: list[Record],
    bags: int,
    insurance: str,
    payment: str,
) -> list[str]:
    if len(legs) == 2:
        choice = (
            f"You want the itinerary connecting in {city(legs[0]['destination'])} that leaves at "
            f"{legs[0]['scheduled_departure']} and continues at {legs[1]['scheduled_departure']}."
        )
    else:
        choice = f"You want the flight that departs at {legs[0]['scheduled_departure']}."
    if back_legs:
        choice += f" Coming back, the flight that departs at {back_legs[0]['scheduled_departure']}."
    travellers = " and ".join(_person_words(p) for p in party)
    return [
        f"Cabin: {CABIN_WORDS[cabin]}. {choice}",
        f"Passengers: {travellers}.",
        f"You want {bags} checked bag{'s' if bags != 1 else ''} in total and "
        + ("travel insurance." if insurance == "yes" else "no travel insurance."),
        f"Pay everything with {card_words(user, payment)}.",
    ]


# ---------------------------------------------------------------------------------------------- composing

Builder = Callable[[World, random.Random, str, set[str]], "Part | None"]


def _with(builder: Callable[..., Part | None], **fixed: Any) -> Builder:
    return lambda world, rng, user_id, taken: builder(world, rng, user_id, taken, **fixed)


INTENTS: dict[str, Builder] = {
    "cancel_24h": _with(cancel_allowed, ground="within_24h"),
    "cancel_airline": _with(cancel_allowed, ground="airline_cancelled"),
    "cancel_business": _with(cancel_allowed, ground="business"),
    "cancel_insurance": _with(cancel_allowed, ground="insurance"),
    "cancel_refused": cancel_forbidden,
    "change_flight": _with(change_flight, basic=False),
    "change_flight_refused": _with(change_flight, basic=True),
    "change_cabin": change_cabin,
    "add_bags": add_bags,
    "update_passengers": update_passengers,
    "compensation": _with(compensation, eligible=True),
    "compensation_refused": _with(compensation, eligible=False),
    "book_direct": _with(book, onestop=False),
    "book_onestop": _with(book, onestop=True),
    "baggage_question": baggage_question,
}
PAIRS: tuple[tuple[str, str], ...] = (
    ("cancel_24h", "add_bags"),
    ("change_flight", "baggage_question"),
    ("compensation", "change_cabin"),
    ("cancel_refused", "update_passengers"),
    ("change_flight_refused", "add_bags"),
    ("compensation_refused", "baggage_question"),
    ("book_direct", "cancel_business"),
    ("change_cabin", "add_bags"),
    ("cancel_refused", "baggage_question"),
    ("update_passengers", "compensation"),
    ("cancel_insurance", "change_flight"),
    ("add_bags", "compensation_refused"),
)
ATTEMPTS = 400


def generate_tasks(seed: int, n: int = DEFAULT_COUNT, db: dict | None = None) -> list[dict]:
    """`n` tasks for the DB `db` (default: the pack's DB, build_db(0)); the same seed gives the same tasks.

    One task in four combines two intents; the rest cycle through every single intent.
    """
    world = World(db if db is not None else build_db(DB_SEED))
    rng = random.Random(seed)
    singles = list(INTENTS)
    used_users: set[str] = set()
    tasks: list[dict] = []
    for index in range(n):
        if index % 4 == 3:
            plan = list(PAIRS[(index // 4) % len(PAIRS)])
        else:
            plan = [singles[(index - index // 4) % len(singles)]]
        task = _make_task(world, rng, seed, index, plan, used_users)
        if task is None:
            raise RuntimeError(f"no user of the DB fits intents {plan}")
        tasks.append(task)
    return tasks


def _make_task(
    world: World, rng: random.Random, seed: int, index: int, plan: list[str], used_users: set[str]
) -> dict | None:
    candidates = [u for u in world.user_ids if u not in used_users]
    for user_id in rng.sample(candidates, min(ATTEMPTS, len(candidates))):
        parts = _parts_for(world, rng, user_id, plan)
        if parts is None:
            continue
        task = _assemble(world, rng, seed, index, plan, user_id, parts)
        if verify(world, task) is None:
            used_users.add(user_id)
            return task
    return None


def _parts_for(world: World, rng: random.Random, user_id: str, plan: list[str]) -> list[Part] | None:
    taken: set[str] = set()
    parts = []
    for name in plan:
        try:
            part = INTENTS[name](world, rng, user_id, taken)
        except ToolExecutionError:
            return None
        if part is None:
            return None
        if part.reservation_id:
            taken.add(part.reservation_id)
        parts.append(part)
    return parts


def _action(index: int, call: Call) -> Record:
    name, arguments = call
    compare = sorted(arguments)
    if name == "cancel_reservation":
        # The reason is the agent's wording of the user's story; the DB does not keep it.
        compare = ["reservation_id"]
    return {
        "action_id": f"a{index}",
        "requestor": "assistant",
        "name": name,
        "arguments": arguments,
        "compare_args": compare,
    }


def _assemble(
    world: World, rng: random.Random, seed: int, index: int, plan: list[str], user_id: str, parts: list[Part]
) -> dict:
    user = world.user(user_id)
    calls: list[Call] = [("get_user_details", {"user_id": user_id})]
    for part in parts:
        calls.extend(part.actions)
    basis = sorted(set().union(*(p.basis for p in parts)), key=["DB", "ACTION", "COMMUNICATE"].index)
    communicate = [info for p in parts for info in p.communicate]
    if not communicate and "COMMUNICATE" in basis:
        basis.remove("COMMUNICATE")
    forbidden = [{"name": name, "arguments": args} for p in parts for name, args in p.forbidden]
    description: Record = {
        "purpose": " Then: ".join(p.purpose for p in parts),
        "intents": [f"{p.intent}:{p.condition}" for p in parts],
    }
    if forbidden:
        description["forbidden_actions"] = forbidden
    name = f"{user['name']['first_name']} {user['name']['last_name']}"
    return {
        "id": f"{DOMAIN}_{seed}_{index}_{'+'.join(plan)}",
        "description": description,
        "user_scenario": {
            "persona": f"{name}, {rng.choice(PERSONAS)}.",
            "instructions": {
                "domain": DOMAIN,
                "reason_for_call": _reason(parts),
                "known_info": " ".join([f"Your user id is {user_id}.", *(k for p in parts for k in p.known)]),
                "unknown_info": " ".join(u for p in parts for u in p.unknown) or None,
                "task_instructions": _instructions(parts),
            },
        },
        "evaluation_criteria": {
            "actions": [_action(i, call) for i, call in enumerate(calls)],
            "communicate_info": communicate,
            "nl_assertions": [],
            "reward_basis": basis,
        },
    }


def _reason(parts: list[Part]) -> str:
    if len(parts) == 1:
        return parts[0].reason
    return f"I have two things to sort out. First: {parts[0].reason} Second: {parts[1].reason}"


def _instructions(parts: list[Part]) -> str:
    lines = ["Give your user id when asked. Answer questions only with the information you were given."]
    if len(parts) > 1:
        lines.append("Raise the second request only after the first one is settled.")
    seen: list[str] = []
    for part in parts:
        seen.extend(line for line in part.instructions if line not in seen)
    lines.extend(seen)
    return " ".join(lines)


def verify(world: World, task: dict) -> str | None:
    """Replay a task on a fresh state: why it is not sound, or None.

    Golden actions must run without error and pass `policy_check`; forbidden actions must run, be flagged
    and change the final state; every communicated figure must come from a tool output or the policy.
    """
    state = world.base.fresh()
    texts = []
    for action in task["evaluation_criteria"]["actions"]:
        reason = policy_check(state, action["name"], action["arguments"])
        if reason:
            return f"golden {action['name']} breaks policy: {reason}"
        try:
            output = world.run([(action["name"], action["arguments"])], state)[0]
        except ToolExecutionError as exc:
            return f"golden {action['name']} fails: {exc}"
        texts.append(json.dumps(output, sort_keys=True))
    forbidden_actions = task["description"].get("forbidden_actions", [])
    # Hashing the whole DB is the slow part of verifying, so only refusals pay for it.
    golden_hash = state.sha256() if forbidden_actions else ""
    for forbidden in forbidden_actions:
        if policy_check(state, forbidden["name"], forbidden["arguments"]) is None:
            return f"forbidden {forbidden['name']} is not flagged by policy_check"
        try:
            world.run([(forbidden["name"], forbidden["arguments"])], state)
        except ToolExecutionError as exc:
            return f"forbidden {forbidden['name']} fails at the tool level: {exc}"
    if forbidden_actions and state.sha256() == golden_hash:
        return "forbidden actions do not change the state"
    evidence = (" ".join(texts) + " " + world.policy).lower()
    for info in task["evaluation_criteria"]["communicate_info"]:
        if info.lower().lstrip("$") not in evidence:
            return f"communicate_info {info!r} appears in no tool output"
    return None


def write_tasks(tasks: list[dict], path: Path = TASKS_PATH) -> None:
    path.write_text(json.dumps(tasks, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    seed = int(args[0]) if args else 0
    count = int(args[1]) if len(args) > 1 else DEFAULT_COUNT
    write_tasks(generate_tasks(seed, count))


if __name__ == "__main__":
    main()
