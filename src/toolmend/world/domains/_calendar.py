"""Calendar: the owner's events, free-slot search and scheduling."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from toolmend.world._state import Event, WorldState
from toolmend.world.domains._base import WORLD_TOOLS, WRITES, Date, EmailAddress, Time, fail, not_found

Duration = Annotated[int, Field(ge=15, le=480, description="Length in minutes (15 to 480).")]


class EventList(BaseModel):
    events: list[Event]
    count: int


class Slot(BaseModel):
    date: str
    start_time: str
    end_time: str


class Deleted(BaseModel):
    event_id: str
    deleted: bool


def _minutes(t: str) -> int:
    hours, minutes = t.split(":")
    return int(hours) * 60 + int(minutes)


def _clock(m: int) -> str:
    return f"{m // 60:02d}:{m % 60:02d}"


@WORLD_TOOLS.tool
def calendar_list_events(state: WorldState, date: Date, end_date: Date | None = None) -> EventList:
    """List events on a date, or on every date of an inclusive range; in time order.

    Args:
        date: First (or only) day.
        end_date: Last day of the range; defaults to ``date``.
    """
    last = end_date or date
    if last < date:
        fail("invalid_range", f"end_date {last} is before date {date}")
    hits = sorted(
        (e for e in state.events.values() if date <= e.date <= last),
        key=lambda e: (e.date, e.start_time, e.event_id),
    )
    return EventList(events=hits, count=len(hits))


@WORLD_TOOLS.tool(metadata=WRITES)
def calendar_create_event(
    state: WorldState,
    title: Annotated[str, Field(min_length=1, max_length=120)],
    date: Date,
    start_time: Time,
    end_time: Time,
    location: str = "",
    attendees: list[EmailAddress] | None = None,
) -> Event:
    """Create an event in the owner's calendar.

    Args:
        title: What the event is.
        date: Day of the event.
        start_time: Start, local time.
        end_time: End, local time; must be after the start.
        location: Where it takes place.
        attendees: Email addresses to invite.
    """
    if _minutes(end_time) <= _minutes(start_time):
        fail("invalid_range", f"end_time {end_time} must be after start_time {start_time}")
    eid = state.next_id("EV")
    state.events[eid] = Event(
        event_id=eid,
        title=title,
        date=date,
        start_time=start_time,
        end_time=end_time,
        location=location,
        attendees=list(attendees or []),
    )
    state.touch()
    return state.events[eid]


@WORLD_TOOLS.tool(metadata=WRITES)
def calendar_update_event(
    state: WorldState,
    event_id: str,
    date: Date | None = None,
    start_time: Time | None = None,
    end_time: Time | None = None,
    location: str | None = None,
) -> Event:
    """Move or change an existing event; only the given fields change.

    Args:
        event_id: Id of the event (e.g. "EV0002").
        date: New day.
        start_time: New start.
        end_time: New end.
        location: New location.
    """
    event = state.events.get(event_id) or not_found("event", event_id)
    updated = event.model_copy(
        update={
            k: v
            for k, v in {
                "date": date,
                "start_time": start_time,
                "end_time": end_time,
                "location": location,
            }.items()
            if v is not None
        }
    )
    if _minutes(updated.end_time) <= _minutes(updated.start_time):
        fail("invalid_range", f"end_time {updated.end_time} must be after start_time {updated.start_time}")
    state.events[event_id] = updated
    state.touch()
    return updated


@WORLD_TOOLS.tool(metadata=WRITES)
def calendar_delete_event(state: WorldState, event_id: str) -> Deleted:
    """Delete an event.

    Args:
        event_id: Id of the event.
    """
    if state.events.pop(event_id, None) is None:
        not_found("event", event_id)
    state.touch()
    return Deleted(event_id=event_id, deleted=True)


@WORLD_TOOLS.tool
def calendar_find_free_slot(
    state: WorldState,
    date: Date,
    duration_minutes: Duration,
    earliest: Time = "09:00",
    latest: Time = "18:00",
) -> Slot:
    """The first free period of the given length on a day, between two times.

    Args:
        date: Day to search.
        duration_minutes: How long the slot must be.
        earliest: Do not start before this time.
        latest: Finish by this time.
    """
    busy = sorted(
        (_minutes(e.start_time), _minutes(e.end_time)) for e in state.events.values() if e.date == date
    )
    start = _minutes(earliest)
    for b_start, b_end in busy:
        if b_start - start >= duration_minutes:
            break
        start = max(start, b_end)
    if start + duration_minutes > _minutes(latest):
        fail(
            "no_availability",
            f"no free {duration_minutes}-minute slot on {date} between {earliest} and {latest}",
            status=404,
        )
    return Slot(date=date, start_time=_clock(start), end_time=_clock(start + duration_minutes))
