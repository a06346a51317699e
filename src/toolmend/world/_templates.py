"""Task templates of the built-in world: single-domain ones, then cross-domain chains.

Each template reads the initial state to pick ids and values that exist, writes the gold
calls into a :class:`~toolmend.world._tasks.Chain` and returns the user's query. Indices in
output paths (``"events.2.event_id"``) are computed here from the same ordering the tool uses.
"""

from __future__ import annotations

import datetime as dt
import random

from toolmend.world._state import Contact, Flight, WorldState
from toolmend.world._tasks import Chain, TaskTemplate

__all__ = ["TEMPLATES"]

TEMPLATES: dict[str, TaskTemplate] = {}


def template(fn: TaskTemplate) -> TaskTemplate:
    TEMPLATES[fn.__name__] = fn
    return fn


def _day(s: WorldState, offset: int) -> str:
    return (dt.date.fromisoformat(s.today) + dt.timedelta(days=offset)).isoformat()


def _cities(rng: random.Random, s: WorldState, k: int = 1) -> list[str]:
    return rng.sample(sorted(s.cities), k)


def _contact(rng: random.Random, s: WorldState) -> Contact:
    return rng.choice(sorted(s.contacts.values(), key=lambda c: c.contact_id))


def _flight(rng: random.Random, s: WorldState, within: int = 21) -> Flight:
    flights = [f for f in s.flights.values() if f.date <= _day(s, within)]
    return rng.choice(sorted(flights, key=lambda f: f.flight_id))


def _cheapest(s: WorldState, f: Flight) -> Flight:
    same = [
        g
        for g in s.flights.values()
        if (g.origin, g.destination, g.date) == (f.origin, f.destination, f.date)
    ]
    return min(same, key=lambda g: (g.price, g.flight_id))


def _account(rng: random.Random, s: WorldState) -> str:
    return rng.choice(sorted(s.accounts))


# -- weather ---------------------------------------------------------------------------------


@template
def weather_two_cities(s: WorldState, rng: random.Random, c: Chain) -> str:
    a, b = _cities(rng, s, 2)
    unit = rng.choice(("celsius", "fahrenheit"))
    c.call("weather_current", city=a, unit=unit)
    c.call("weather_current", city=b, unit=unit)
    return f"What's the weather like right now in {a} and in {b}? Give me {unit}."


@template
def weather_outing(s: WorldState, rng: random.Random, c: Chain) -> str:
    (city,) = _cities(rng, s)
    date = _day(s, rng.randint(1, 7))
    c.call("weather_forecast", city=city, date=date)
    c.call("weather_air_quality", city=city)
    return f"I want to go running in {city} on {date}. What's the forecast for that day, and how is the air quality?"


@template
def weather_alerts_now(s: WorldState, rng: random.Random, c: Chain) -> str:
    (city,) = _cities(rng, s)
    c.call("weather_alerts", city=city)
    c.call("weather_current", city=city, unit="fahrenheit")
    return (
        f"Are there any weather alerts for {city}? Also tell me the current temperature there in Fahrenheit."
    )


# -- mail and contacts -------------------------------------------------------------------------


@template
def mail_open_from_contact(s: WorldState, rng: random.Random, c: Chain) -> str:
    senders = sorted({e.sender for e in s.emails.values() if e.folder == "inbox"})
    sender = rng.choice(senders)
    person = next(p for p in s.contacts.values() if p.email == sender)
    (email,) = c.call("contacts_search", ["contacts.0.email"], name=person.name)
    (eid,) = c.call("mail_search", ["emails.0.email_id"], query=email)
    c.call("mail_read", email_id=eid)
    return f"Open the most recent email {person.name} sent me."


@template
def mail_reply_subject(s: WorldState, rng: random.Random, c: Chain) -> str:
    subject = rng.choice(sorted({e.subject for e in s.emails.values()}))
    body = rng.choice(
        ("Thanks, I'll take a look today.", "Sounds good to me.", "Can we discuss this tomorrow?")
    )
    (eid,) = c.call("mail_search", ["emails.0.email_id"], query=subject)
    c.call("mail_reply", email_id=eid, body=body)
    return f'Reply to the latest email about "{subject}" with: {body}'


@template
def mail_archive_subject(s: WorldState, rng: random.Random, c: Chain) -> str:
    subject = rng.choice(sorted({e.subject for e in s.emails.values()}))
    folder = rng.choice(("archive", "trash"))
    (eid,) = c.call("mail_search", ["emails.0.email_id"], query=subject)
    c.call("mail_move", email_id=eid, folder=folder)
    return f'Move the newest "{subject}" email to the {folder}.'


@template
def mail_to_contact(s: WorldState, rng: random.Random, c: Chain) -> str:
    person = _contact(rng, s)
    subject, body = rng.choice(
        (
            ("Dinner next week", "Are you free for dinner next week?"),
            ("Slides", "Could you send me the slides from Monday?"),
            ("Happy birthday", "Happy birthday! Hope you have a great day."),
        )
    )
    (email,) = c.call("contacts_search", ["contacts.0.email"], name=person.name)
    c.call("mail_send", to=[email], subject=subject, body=body)
    return f'Email {person.name} with the subject "{subject}" saying: {body}'


@template
def contacts_add_and_greet(s: WorldState, rng: random.Random, c: Chain) -> str:
    first, last = rng.choice(("Lena", "Omar", "Priya", "Tomas")), rng.choice(("Fischer", "Alves", "Sato"))
    address = f"{first.lower()}.{last.lower()}@example.org"
    (email,) = c.call("contacts_add", ["email"], name=f"{first} {last}", email=address)
    c.call("mail_send", to=[email], subject="Nice to meet you", body=f"Hi {first}, great meeting you today!")
    return (
        f"Save {first} {last} ({address}) to my contacts and then send them an email titled "
        f'"Nice to meet you" saying: Hi {first}, great meeting you today!'
    )


# -- calendar ----------------------------------------------------------------------------------


@template
def calendar_day(s: WorldState, rng: random.Random, c: Chain) -> str:
    date = _day(s, rng.randint(0, 10))
    c.call("calendar_list_events", date=date)
    return f"What's on my calendar on {date}?"


@template
def calendar_schedule_free(s: WorldState, rng: random.Random, c: Chain) -> str:
    date = _day(s, rng.randint(11, 25))
    minutes = rng.choice((30, 45, 60, 90))
    title = rng.choice(("Deep work", "Read papers", "Plan the quarter", "Call mom"))
    start, end = c.call(
        "calendar_find_free_slot", ["start_time", "end_time"], date=date, duration_minutes=minutes
    )
    c.call("calendar_create_event", title=title, date=date, start_time=start, end_time=end)
    return f'Find the first free {minutes}-minute slot on {date} and block it as "{title}".'


@template
def calendar_invite(s: WorldState, rng: random.Random, c: Chain) -> str:
    person = _contact(rng, s)
    date, hour = _day(s, rng.randint(1, 20)), rng.randint(9, 16)
    (email,) = c.call("contacts_search", ["contacts.0.email"], name=person.name)
    c.call(
        "calendar_create_event",
        title=f"Meeting with {person.name}",
        date=date,
        start_time=f"{hour:02d}:00",
        end_time=f"{hour + 1:02d}:00",
        attendees=[email],
    )
    return f"Set up a one-hour meeting with {person.name} on {date} at {hour:02d}:00 and invite them."


def _event_on(s: WorldState, rng: random.Random) -> tuple[str, int, str]:
    event = rng.choice(sorted(s.events.values(), key=lambda e: e.event_id))
    same_day = sorted(
        (e for e in s.events.values() if e.date == event.date),
        key=lambda e: (e.date, e.start_time, e.event_id),
    )
    return event.date, same_day.index(event), f'"{event.title}" at {event.start_time}'


@template
def calendar_reschedule(s: WorldState, rng: random.Random, c: Chain) -> str:
    date, index, label = _event_on(s, rng)
    hour = rng.randint(18, 21)
    (eid,) = c.call("calendar_list_events", [f"events.{index}.event_id"], date=date)
    c.call("calendar_update_event", event_id=eid, start_time=f"{hour:02d}:00", end_time=f"{hour:02d}:45")
    return f"Move my {label} on {date} to {hour:02d}:00–{hour:02d}:45 the same day."


@template
def calendar_cancel(s: WorldState, rng: random.Random, c: Chain) -> str:
    date, index, label = _event_on(s, rng)
    (eid,) = c.call("calendar_list_events", [f"events.{index}.event_id"], date=date)
    c.call("calendar_delete_event", event_id=eid)
    return f"Cancel the {label} on {date}."


# -- files -------------------------------------------------------------------------------------


@template
def files_show(s: WorldState, rng: random.Random, c: Chain) -> str:
    path = rng.choice(sorted(s.files))
    c.call("files_read", path=path)
    return f"Show me what's in {path}."


@template
def files_backup(s: WorldState, rng: random.Random, c: Chain) -> str:
    path = rng.choice(sorted(s.files))
    backup = "backup/" + path.replace("/", "_")
    (content,) = c.call("files_read", ["content"], path=path)
    c.call("files_write", path=backup, content=content)
    return f"Make a copy of {path} at {backup}."


@template
def files_find_read(s: WorldState, rng: random.Random, c: Chain) -> str:
    keyword = rng.choice(("falcon", "budget", "passport", "sales", "eggs", "portuguese", "beta"))
    (path,) = c.call("files_search", ["files.0.path"], keyword=keyword)
    c.call("files_read", path=path)
    return f'Find the first file that mentions "{keyword}" and read it to me.'


@template
def files_list_dir(s: WorldState, rng: random.Random, c: Chain) -> str:
    directory = rng.choice(("docs", "projects", "projects/falcon", "personal", "reports"))
    c.call("files_list", directory=directory)
    return f"Which files are in my {directory} folder?"


# -- maps --------------------------------------------------------------------------------------


@template
def maps_how_far(s: WorldState, rng: random.Random, c: Chain) -> str:
    a, b = _cities(rng, s, 2)
    mode = rng.choice(("flying", "transit"))
    c.call("maps_distance", origin=a, destination=b, mode=mode)
    return f"How far is {b} from {a}, and how long does it take by {mode}?"


@template
def maps_best_place(s: WorldState, rng: random.Random, c: Chain) -> str:
    (city,) = _cities(rng, s)
    category = rng.choice(("restaurant", "cafe", "museum"))
    (pid,) = c.call("maps_search_places", ["places.0.place_id"], city=city, category=category)
    c.call("maps_place_details", place_id=pid)
    return f"What's the best-rated {category} in {city}? Give me its full details."


@template
def maps_compare_cities(s: WorldState, rng: random.Random, c: Chain) -> str:
    a, b = _cities(rng, s, 2)
    c.call("maps_geocode", city=a)
    c.call("maps_geocode", city=b)
    c.call("maps_timezone", city=b)
    return f"Give me the coordinates of {a} and {b}, and the time zone of {b}."


# -- finance -----------------------------------------------------------------------------------


@template
def finance_two_balances(s: WorldState, rng: random.Random, c: Chain) -> str:
    a, b = rng.sample(sorted(s.accounts), 2)
    c.call("finance_get_balance", account_id=a)
    c.call("finance_get_balance", account_id=b)
    return f"How much money is in accounts {a} and {b}?"


@template
def finance_move_money(s: WorldState, rng: random.Random, c: Chain) -> str:
    a, b = rng.sample(sorted(s.accounts), 2)
    amount = float(rng.randint(2, 20) * 50)
    (to,) = c.call("finance_transfer", ["to_account_id"], from_account_id=a, to_account_id=b, amount=amount)
    c.call("finance_get_balance", account_id=to)
    return f"Transfer {amount:.0f} from account {a} to account {b}, then tell me the new balance of {b}."


@template
def finance_balance_in(s: WorldState, rng: random.Random, c: Chain) -> str:
    account = _account(rng, s)
    target = rng.choice(("USD", "EUR", "JPY", "CHF", "CAD"))
    balance, currency = c.call("finance_get_balance", ["balance", "currency"], account_id=account)
    c.call("finance_convert_currency", amount=balance, from_currency=currency, to_currency=target)
    return f"What is the balance of account {account} worth in {target}?"


@template
def finance_quotes(s: WorldState, rng: random.Random, c: Chain) -> str:
    symbols = rng.sample(sorted(s.stocks), rng.randint(2, 3))
    for sym in symbols:
        c.call("finance_stock_quote", symbol=sym)
    return f"Get me the latest quotes for {', '.join(symbols)}."


@template
def finance_recent_spending(s: WorldState, rng: random.Random, c: Chain) -> str:
    accounts = list(s.accounts.values())
    index = rng.randrange(len(accounts))
    limit = rng.choice((3, 5))
    (aid,) = c.call("finance_list_accounts", [f"accounts.{index}.account_id"])
    c.call("finance_transactions", account_id=aid, limit=limit)
    return f"Show the last {limit} transactions of my {accounts[index].name} account."


# -- travel ------------------------------------------------------------------------------------


@template
def travel_cheapest_flight(s: WorldState, rng: random.Random, c: Chain) -> str:
    f = _flight(rng, s)
    account = _account(rng, s)
    (fid,) = c.call(
        "travel_search_flights",
        ["flights.0.flight_id"],
        origin=f.origin,
        destination=f.destination,
        date=f.date,
    )
    c.call("travel_book_flight", flight_id=fid, passenger_name=s.owner_name, payment_account_id=account)
    return (
        f"Book me the cheapest flight from {f.origin} to {f.destination} on {f.date}, "
        f"paid from account {account}. I'm {s.owner_name}."
    )


@template
def travel_hotel_stay(s: WorldState, rng: random.Random, c: Chain) -> str:
    (city,) = _cities(rng, s)
    stars = rng.randint(1, max(h.stars for h in s.hotels.values() if h.city == city))
    check_in, nights, account = _day(s, rng.randint(1, 20)), rng.randint(1, 4), _account(rng, s)
    (hid,) = c.call("travel_search_hotels", ["hotels.0.hotel_id"], city=city, min_stars=stars)
    c.call(
        "travel_book_hotel",
        hotel_id=hid,
        check_in=check_in,
        nights=nights,
        guest_name=s.owner_name,
        payment_account_id=account,
    )
    return (
        f"Book the cheapest hotel in {city} with at least {stars} stars from {check_in} for {nights} "
        f"night(s), under my name ({s.owner_name}), paying with account {account}."
    )


# -- shopping and to-dos -------------------------------------------------------------------------


@template
def shop_buy_product(s: WorldState, rng: random.Random, c: Chain) -> str:
    product = rng.choice(sorted((p for p in s.products.values() if p.stock >= 3), key=lambda p: p.product_id))
    qty, account = rng.randint(1, 3), _account(rng, s)
    city = rng.choice(sorted(s.cities))
    address = {
        "street": f"{rng.randint(1, 99)} Elm Street",
        "city": city,
        "postal_code": f"{rng.randint(10000, 99999)}",
    }
    (pid,) = c.call("shop_search_products", ["products.0.product_id"], query=product.name)
    c.call("shop_add_to_cart", product_id=pid, quantity=qty)
    c.call("shop_checkout", payment_account_id=account, shipping_address=address)
    c.order(1, 2)  # the checkout needs the cart filled: an empty one fails with empty_cart
    return (
        f"Order {qty} x {product.name}, pay with account {account} and ship to {address['street']}, "
        f"{city} {address['postal_code']}."
    )


@template
def shop_cheapest_in_category(s: WorldState, rng: random.Random, c: Chain) -> str:
    category = rng.choice(("electronics", "books", "home", "sports", "toys"))
    (pid,) = c.call("shop_search_products", ["products.0.product_id"], category=category, sort="price_asc")
    c.call("shop_get_product", product_id=pid)
    return f"What's the cheapest thing in the {category} category? I want to see its stock and rating."


@template
def todo_finish(s: WorldState, rng: random.Random, c: Chain) -> str:
    todos = sorted(s.todos.values(), key=lambda t: (t.due_date or "9999-12-31", t.todo_id))
    index = rng.randrange(len(todos))
    (tid,) = c.call("todo_list", [f"todos.{index}.todo_id"], status="open")
    c.call("todo_complete", todo_id=tid)
    return f'Mark "{todos[index].title}" as done on my to-do list.'


@template
def todo_add(s: WorldState, rng: random.Random, c: Chain) -> str:
    title = rng.choice(("Water the plants", "Pay rent", "Book a dentist appointment", "Send invoices"))
    due, priority = _day(s, rng.randint(1, 30)), rng.choice(("low", "medium", "high"))
    c.call("todo_create", title=title, due_date=due, priority=priority)
    return f'Add "{title}" to my to-dos, due {due}, {priority} priority.'


# -- cross-domain chains -------------------------------------------------------------------------


@template
def trip_book_and_share(s: WorldState, rng: random.Random, c: Chain) -> str:
    f, person, account = _flight(rng, s), _contact(rng, s), _account(rng, s)
    (email,) = c.call("contacts_search", ["contacts.0.email"], name=person.name)
    fid, dep, arr = c.call(
        "travel_search_flights",
        ["flights.0.flight_id", "flights.0.depart_time", "flights.0.arrive_time"],
        origin=f.origin,
        destination=f.destination,
        date=f.date,
    )
    c.call("travel_book_flight", flight_id=fid, passenger_name=s.owner_name, payment_account_id=account)
    c.call(
        "calendar_create_event", title=f"Flight to {f.destination}", date=f.date, start_time=dep, end_time=arr
    )
    c.call(
        "mail_send",
        to=[email],
        subject=f"My trip to {f.destination}",
        body=f"I'm flying from {f.origin} to {f.destination} on {f.date}.",
    )
    return (
        f"Book the cheapest {f.origin}–{f.destination} flight on {f.date} for me ({s.owner_name}) with "
        f'account {account}, put it in my calendar as "Flight to {f.destination}", and email '
        f"{person.name} that I'm flying from {f.origin} to {f.destination} on {f.date}."
    )


@template
def trip_flight_and_hotel(s: WorldState, rng: random.Random, c: Chain) -> str:
    f, person, account = _flight(rng, s), _contact(rng, s), _account(rng, s)
    nights = rng.randint(1, 5)
    (email,) = c.call("contacts_search", ["contacts.0.email"], name=person.name)
    (fid,) = c.call(
        "travel_search_flights",
        ["flights.0.flight_id"],
        origin=f.origin,
        destination=f.destination,
        date=f.date,
    )
    (hid,) = c.call("travel_search_hotels", ["hotels.0.hotel_id"], city=f.destination)
    c.call("travel_book_flight", flight_id=fid, passenger_name=s.owner_name, payment_account_id=account)
    c.call(
        "travel_book_hotel",
        hotel_id=hid,
        check_in=f.date,
        nights=nights,
        guest_name=s.owner_name,
        payment_account_id=account,
    )
    c.call(
        "mail_send",
        to=[email],
        subject=f"{f.destination} trip booked",
        body=f"Flight and hotel are booked: {f.destination}, {nights} night(s) from {f.date}.",
    )
    return (
        f"I'm {s.owner_name}. Book the cheapest flight {f.origin} to {f.destination} on {f.date} and the "
        f"cheapest hotel there for {nights} night(s) from that day, both on account {account}; then let "
        f"{person.name} know by email."
    )


@template
def flight_destination_weather(s: WorldState, rng: random.Random, c: Chain) -> str:
    f = _flight(rng, s, within=14)
    city, date = c.call("travel_get_flight", ["destination", "date"], flight_id=f.flight_id)
    c.call("weather_forecast", city=city, date=date)
    return f"What will the weather be like where flight {f.flight_id} lands, on the day it flies?"


@template
def flight_packing_todo(s: WorldState, rng: random.Random, c: Chain) -> str:
    f = _flight(rng, s)
    (date,) = c.call("travel_get_flight", ["date"], flight_id=f.flight_id)
    c.call("todo_create", title=f"Pack for flight {f.flight_id}", due_date=date, priority="high")
    return f'Add a high-priority to-do "Pack for flight {f.flight_id}" due on the day that flight leaves.'


@template
def flight_destination_info(s: WorldState, rng: random.Random, c: Chain) -> str:
    f = _flight(rng, s)
    (city,) = c.call("travel_get_flight", ["destination"], flight_id=f.flight_id)
    c.call("maps_timezone", city=city)
    c.call("maps_geocode", city=city)
    return f"Where does flight {f.flight_id} go? Tell me that city's time zone and coordinates."


@template
def share_file_by_mail(s: WorldState, rng: random.Random, c: Chain) -> str:
    person, path = _contact(rng, s), rng.choice(sorted(s.files))
    (email,) = c.call("contacts_search", ["contacts.0.email"], name=person.name)
    (content,) = c.call("files_read", ["content"], path=path)
    c.call("mail_send", to=[email], subject=f"File: {path}", body=content)
    return f'Send {person.name} the contents of {path} by email, subject "File: {path}".'


@template
def product_price_abroad(s: WorldState, rng: random.Random, c: Chain) -> str:
    product = rng.choice(sorted(s.products.values(), key=lambda p: p.product_id))
    target = rng.choice(("EUR", "GBP", "JPY", "AUD"))
    (price,) = c.call("shop_search_products", ["products.0.price"], query=product.name)
    c.call("finance_convert_currency", amount=price, from_currency="USD", to_currency=target)
    return f"How much is the {product.name} in {target}?"


@template
def dinner_with_contact(s: WorldState, rng: random.Random, c: Chain) -> str:
    person = _contact(rng, s)
    date = _day(s, rng.randint(1, 20))
    (email,) = c.call("contacts_search", ["contacts.0.email"], name=person.name)
    (place,) = c.call("maps_search_places", ["places.0.name"], city=person.city, category="restaurant")
    c.call(
        "calendar_create_event",
        title=f"Dinner with {person.name}",
        date=date,
        start_time="19:30",
        end_time="21:30",
        location=place,
        attendees=[email],
    )
    return (
        f"Plan dinner with {person.name} on {date} from 19:30 to 21:30 at the best-rated restaurant in "
        f"{person.city}; add it to my calendar and invite them."
    )


@template
def forecast_to_file(s: WorldState, rng: random.Random, c: Chain) -> str:
    (city,) = _cities(rng, s)
    date = _day(s, rng.randint(0, 14))
    path = f"notes/weather_{city.lower().replace(' ', '_')}_{date.replace('-', '')}.txt"
    (condition,) = c.call("weather_forecast", ["condition"], city=city, date=date)
    c.call("files_write", path=path, content=condition)
    return f"Save the expected conditions in {city} on {date} to {path}."


@template
def contact_local_weather(s: WorldState, rng: random.Random, c: Chain) -> str:
    person = _contact(rng, s)
    (city,) = c.call("contacts_search", ["contacts.0.city"], name=person.name)
    c.call("weather_current", city=city)
    return f"What's the weather where {person.name} lives?"


@template
def contact_distance(s: WorldState, rng: random.Random, c: Chain) -> str:
    person = _contact(rng, s)
    (dest,) = _cities(rng, s)
    (city,) = c.call("contacts_search", ["contacts.0.city"], name=person.name)
    c.call("maps_distance", origin=city, destination=dest, mode="flying")
    return f"How far would {person.name} have to fly from home to get to {dest}?"


@template
def email_locals(s: WorldState, rng: random.Random, c: Chain) -> str:
    city = rng.choice(sorted({p.city for p in s.contacts.values()}))
    (email,) = c.call("contacts_list_by_city", ["contacts.0.email"], city=city)
    c.call("mail_send", to=[email], subject=f"Visiting {city}", body=f"I'll be in {city} soon. Coffee?")
    return f'Email the first of my contacts who lives in {city}: subject "Visiting {city}", asking to meet for coffee.'
