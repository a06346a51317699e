"""Maps: geocoding, distances, places to go and time zones for the world's cities."""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from toolmend.world._state import Place, WorldState
from toolmend.world.domains._base import WORLD_TOOLS, Limit, city_of, fail, not_found

Mode = Literal["driving", "walking", "cycling", "transit", "flying"]
Category = Literal["restaurant", "cafe", "museum", "hotel", "pharmacy", "park"]
_SPEED_KPH: dict[str, float] = {"driving": 80, "walking": 5, "cycling": 18, "transit": 45, "flying": 750}


class Location(BaseModel):
    city: str
    country: str
    latitude: float
    longitude: float


class Distance(BaseModel):
    origin: str
    destination: str
    mode: Mode
    distance_km: float
    duration_minutes: int


class PlaceList(BaseModel):
    places: list[Place]
    count: int


class TimeZone(BaseModel):
    city: str
    timezone: str
    utc_offset_hours: float


@WORLD_TOOLS.tool
def maps_geocode(state: WorldState, city: Annotated[str, Field(min_length=1)]) -> Location:
    """Coordinates and country of a city.

    Args:
        city: City name, e.g. "Tokyo".
    """
    c = city_of(state, city)
    return Location(city=c.name, country=c.country, latitude=c.latitude, longitude=c.longitude)


@WORLD_TOOLS.tool
def maps_distance(state: WorldState, origin: str, destination: str, mode: Mode = "driving") -> Distance:
    """Great-circle distance between two cities and the travel time for a mode of transport.

    Args:
        origin: Starting city.
        destination: Destination city.
        mode: How to travel.
    """
    a, b = city_of(state, origin), city_of(state, destination)
    lat1, lat2 = math.radians(a.latitude), math.radians(b.latitude)
    dlat, dlon = lat2 - lat1, math.radians(b.longitude - a.longitude)
    h = math.sin(dlat / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin(dlon / 2) ** 2
    km = round(2 * 6371.0 * math.asin(math.sqrt(h)), 1)
    if mode in ("driving", "walking", "cycling") and km > 3000:
        fail("no_route", f"no {mode} route between {a.name} and {b.name}", status=422)
    return Distance(
        origin=a.name,
        destination=b.name,
        mode=mode,
        distance_km=km,
        duration_minutes=max(1, round(km / _SPEED_KPH[mode] * 60)),
    )


@WORLD_TOOLS.tool
def maps_search_places(
    state: WorldState,
    city: str,
    category: Category,
    min_rating: Annotated[float, Field(ge=0, le=5)] = 0,
    limit: Limit = 5,
) -> PlaceList:
    """Places of a kind in a city, best rated first.

    Args:
        city: City to search.
        category: Kind of place.
        min_rating: Lowest acceptable rating (0 to 5).
        limit: Maximum number of places.
    """
    c = city_of(state, city)
    hits = sorted(
        (
            p
            for p in state.places.values()
            if p.city == c.name and p.category == category and p.rating >= min_rating
        ),
        key=lambda p: (-p.rating, p.place_id),
    )
    return PlaceList(places=hits[:limit], count=len(hits))


@WORLD_TOOLS.tool
def maps_place_details(state: WorldState, place_id: str) -> Place:
    """Full details of a place.

    Args:
        place_id: Id of the place (e.g. "P0012").
    """
    return state.places.get(place_id) or not_found("place", place_id)


@WORLD_TOOLS.tool
def maps_timezone(state: WorldState, city: str) -> TimeZone:
    """Time zone of a city.

    Args:
        city: City name.
    """
    c = city_of(state, city)
    return TimeZone(city=c.name, timezone=c.timezone, utc_offset_hours=c.utc_offset)
