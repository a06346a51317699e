"""Travel: flight and hotel search and booking, paid from the owner's accounts."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from toolmend.world._state import Booking, Flight, Hotel, WorldState
from toolmend.world.domains._base import WORLD_TOOLS, WRITES, Date, Limit, city_of, fail, not_found
from toolmend.world.domains._finance import charge

Cabin = Literal["economy", "premium", "business"]


class FlightList(BaseModel):
    flights: list[Flight]
    count: int


class HotelList(BaseModel):
    hotels: list[Hotel]
    count: int


class Confirmation(BaseModel):
    booking_id: str
    item_id: str
    total_price: float
    currency: Literal["USD"]
    status: Literal["confirmed", "cancelled"]


def _confirmation(b: Booking) -> Confirmation:
    return Confirmation(
        booking_id=b.booking_id, item_id=b.item_id, total_price=b.total_price, currency="USD", status=b.status
    )


@WORLD_TOOLS.tool
def travel_search_flights(
    state: WorldState,
    origin: str,
    destination: str,
    date: Date,
    cabin: Cabin | None = None,
    max_price: Annotated[float, Field(gt=0)] | None = None,
    limit: Limit = 10,
) -> FlightList:
    """Flights between two cities on a day, cheapest first.

    Args:
        origin: Departure city.
        destination: Arrival city.
        date: Day of departure.
        cabin: Only this cabin class.
        max_price: Highest acceptable price in USD per seat.
        limit: Maximum number of flights.
    """
    o, d = city_of(state, origin), city_of(state, destination)
    hits = sorted(
        (
            f
            for f in state.flights.values()
            if f.origin == o.name
            and f.destination == d.name
            and f.date == date
            and (cabin is None or f.cabin == cabin)
            and (max_price is None or f.price <= max_price)
        ),
        key=lambda f: (f.price, f.flight_id),
    )
    return FlightList(flights=hits[:limit], count=len(hits))


@WORLD_TOOLS.tool
def travel_get_flight(state: WorldState, flight_id: str) -> Flight:
    """Details of a flight.

    Args:
        flight_id: Id of the flight (e.g. "FL0007").
    """
    return state.flights.get(flight_id) or not_found("flight", flight_id)


@WORLD_TOOLS.tool(metadata=WRITES)
def travel_book_flight(
    state: WorldState,
    flight_id: str,
    passenger_name: Annotated[str, Field(min_length=1)],
    payment_account_id: str,
    seats: Annotated[int, Field(ge=1, le=9)] = 1,
) -> Confirmation:
    """Book seats on a flight and pay from an account.

    Args:
        flight_id: Id of the flight.
        passenger_name: Name of the lead passenger.
        payment_account_id: Account to charge (e.g. "A0001").
        seats: Number of seats.
    """
    f = state.flights.get(flight_id) or not_found("flight", flight_id)
    if f.seats_left < seats:
        fail("sold_out", f"flight {flight_id} has {f.seats_left} seat(s) left", status=409)
    total = round(f.price * seats, 2)
    charge(state, payment_account_id, total, f"Flight {f.flight_id} {f.origin}-{f.destination}")
    f.seats_left -= seats
    bid = state.next_id("B")
    state.bookings[bid] = Booking(
        booking_id=bid,
        kind="flight",
        item_id=flight_id,
        guest_name=passenger_name,
        total_price=total,
        check_in=f.date,
    )
    return _confirmation(state.bookings[bid])


@WORLD_TOOLS.tool
def travel_search_hotels(
    state: WorldState,
    city: str,
    min_stars: Annotated[int, Field(ge=1, le=5)] = 1,
    max_price_per_night: Annotated[float, Field(gt=0)] | None = None,
) -> HotelList:
    """Hotels in a city with free rooms, cheapest first.

    Args:
        city: City to stay in.
        min_stars: Lowest acceptable star rating.
        max_price_per_night: Highest acceptable nightly price in USD.
    """
    c = city_of(state, city)
    hits = sorted(
        (
            h
            for h in state.hotels.values()
            if h.city == c.name
            and h.stars >= min_stars
            and h.rooms_left > 0
            and (max_price_per_night is None or h.price_per_night <= max_price_per_night)
        ),
        key=lambda h: (h.price_per_night, h.hotel_id),
    )
    return HotelList(hotels=hits, count=len(hits))


@WORLD_TOOLS.tool(metadata=WRITES)
def travel_book_hotel(
    state: WorldState,
    hotel_id: str,
    check_in: Date,
    nights: Annotated[int, Field(ge=1, le=30)],
    guest_name: Annotated[str, Field(min_length=1)],
    payment_account_id: str,
) -> Confirmation:
    """Book a room and pay from an account.

    Args:
        hotel_id: Id of the hotel (e.g. "H0003").
        check_in: Arrival day; not in the past.
        nights: Number of nights.
        guest_name: Name on the booking.
        payment_account_id: Account to charge.
    """
    h = state.hotels.get(hotel_id) or not_found("hotel", hotel_id)
    if dt.date.fromisoformat(check_in) < dt.date.fromisoformat(state.today):
        fail("invalid_date", f"check_in {check_in} is in the past (today is {state.today})")
    if h.rooms_left < 1:
        fail("sold_out", f"hotel {hotel_id} has no rooms left", status=409)
    total = round(h.price_per_night * nights, 2)
    charge(state, payment_account_id, total, f"Hotel {h.name}, {h.city}")
    h.rooms_left -= 1
    bid = state.next_id("B")
    state.bookings[bid] = Booking(
        booking_id=bid,
        kind="hotel",
        item_id=hotel_id,
        guest_name=guest_name,
        total_price=total,
        check_in=check_in,
        nights=nights,
    )
    return _confirmation(state.bookings[bid])


@WORLD_TOOLS.tool(metadata=WRITES)
def travel_cancel_booking(state: WorldState, booking_id: str) -> Confirmation:
    """Cancel a flight or hotel booking.

    Args:
        booking_id: Id of the booking (e.g. "B0001").
    """
    b = state.bookings.get(booking_id) or not_found("booking", booking_id)
    if b.status == "cancelled":
        fail("invalid_operation", f"booking {booking_id} is already cancelled", status=409)
    b.status = "cancelled"
    state.touch()
    return _confirmation(b)
