"""Weather: current conditions, forecasts, alerts and air quality for the world's cities.

Values are a deterministic function of the seed, the city and the date (no real service).
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import BaseModel

from toolmend.world._state import City, WorldState
from toolmend.world.domains._base import WORLD_TOOLS, Date, city_of, fail, noise

Unit = Literal["celsius", "fahrenheit"]
Condition = Literal["sunny", "partly cloudy", "cloudy", "rain", "thunderstorm", "snow", "fog"]
_CONDITIONS: tuple[Condition, ...] = (
    "sunny",
    "partly cloudy",
    "cloudy",
    "rain",
    "thunderstorm",
    "snow",
    "fog",
)


class CurrentWeather(BaseModel):
    city: str
    temperature: float
    unit: Unit
    condition: Condition
    humidity_pct: int
    wind_kph: float


class Forecast(BaseModel):
    city: str
    date: str
    high: float
    low: float
    unit: Unit
    condition: Condition
    precipitation_chance_pct: int


class Alert(BaseModel):
    severity: Literal["advisory", "watch", "warning"]
    headline: str


class Alerts(BaseModel):
    city: str
    alerts: list[Alert]
    count: int


class AirQuality(BaseModel):
    city: str
    aqi: int
    category: Literal["good", "moderate", "unhealthy for sensitive groups", "unhealthy"]


def _convert(celsius: float, unit: Unit) -> float:
    return round(celsius if unit == "celsius" else celsius * 9 / 5 + 32, 1)


def _temp(state: WorldState, city: City, date: str) -> float:
    return city.climate_c + (noise(state.seed, city.name, date, "t") - 0.5) * 10


def _condition(state: WorldState, city: City, date: str, temp_c: float) -> Condition:
    c = _CONDITIONS[int(noise(state.seed, city.name, date, "c") * len(_CONDITIONS))]
    return "rain" if c == "snow" and temp_c > 3 else c


@WORLD_TOOLS.tool
def weather_current(state: WorldState, city: str, unit: Unit = "celsius") -> CurrentWeather:
    """Current weather in a city.

    Args:
        city: City name, e.g. "Lisbon".
        unit: Temperature unit.
    """
    c = city_of(state, city)
    t = _temp(state, c, state.today)
    return CurrentWeather(
        city=c.name,
        temperature=_convert(t, unit),
        unit=unit,
        condition=_condition(state, c, state.today, t),
        humidity_pct=30 + int(noise(state.seed, c.name, "h") * 60),
        wind_kph=round(noise(state.seed, c.name, "w") * 40, 1),
    )


@WORLD_TOOLS.tool
def weather_forecast(state: WorldState, city: str, date: Date, unit: Unit = "celsius") -> Forecast:
    """Forecast for a city on a day from today up to 14 days ahead.

    Args:
        city: City name.
        date: Day of the forecast.
        unit: Temperature unit.
    """
    c = city_of(state, city)
    ahead = (dt.date.fromisoformat(date) - dt.date.fromisoformat(state.today)).days
    if not 0 <= ahead <= 14:
        fail("out_of_range", f"forecasts cover {state.today} to 14 days ahead; {date} is outside")
    t = _temp(state, c, date)
    cond = _condition(state, c, date, t)
    rainy = cond in ("rain", "thunderstorm", "snow")
    return Forecast(
        city=c.name,
        date=date,
        high=_convert(t + 4, unit),
        low=_convert(t - 4, unit),
        unit=unit,
        condition=cond,
        precipitation_chance_pct=(60 if rainy else 5) + int(noise(date, c.name) * 35),
    )


@WORLD_TOOLS.tool
def weather_alerts(state: WorldState, city: str) -> Alerts:
    """Active weather alerts for a city.

    Args:
        city: City name.
    """
    c = city_of(state, city)
    t = _temp(state, c, state.today)
    alerts: list[Alert] = []
    if _condition(state, c, state.today, t) == "thunderstorm":
        alerts.append(Alert(severity="warning", headline=f"Severe thunderstorms expected in {c.name}"))
    if t > 30:
        alerts.append(Alert(severity="advisory", headline=f"Heat advisory for {c.name}"))
    return Alerts(city=c.name, alerts=alerts, count=len(alerts))


@WORLD_TOOLS.tool
def weather_air_quality(state: WorldState, city: str) -> AirQuality:
    """Air-quality index (US AQI) in a city today.

    Args:
        city: City name.
    """
    c = city_of(state, city)
    aqi = 15 + int(noise(state.seed, c.name, state.today, "aqi") * 150)
    category: Literal["good", "moderate", "unhealthy for sensitive groups", "unhealthy"] = (
        "good"
        if aqi <= 50
        else "moderate"
        if aqi <= 100
        else "unhealthy for sensitive groups"
        if aqi <= 150
        else "unhealthy"
    )
    return AirQuality(city=c.name, aqi=aqi, category=category)
