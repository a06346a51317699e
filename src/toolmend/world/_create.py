"""Building a :class:`~toolmend.world._state.WorldState` from a seed.

Everything is drawn from one ``random.Random(seed)`` over fixed pools, so the same seed gives
the same world on every machine and Python version (``random``'s Mersenne Twister and its
``choice``/``randint``/``uniform`` are stable across versions), and no wall clock or network is
involved: "today" is a fixed date chosen by the seed.
"""

from __future__ import annotations

import datetime as dt
import random

from toolmend.world._state import (
    Account,
    City,
    Contact,
    Email,
    Event,
    File,
    Flight,
    Hotel,
    Place,
    Product,
    Todo,
    Transaction,
    WorldState,
)

__all__ = ["CITIES", "create_state"]

# name, country, lat, lon, timezone, UTC offset, typical °C
CITIES: tuple[tuple[str, str, float, float, str, float, float], ...] = (
    ("Lisbon", "Portugal", 38.72, -9.14, "Europe/Lisbon", 0, 18),
    ("Paris", "France", 48.86, 2.35, "Europe/Paris", 1, 13),
    ("Berlin", "Germany", 52.52, 13.40, "Europe/Berlin", 1, 10),
    ("Madrid", "Spain", 40.42, -3.70, "Europe/Madrid", 1, 16),
    ("Rome", "Italy", 41.90, 12.50, "Europe/Rome", 1, 17),
    ("London", "United Kingdom", 51.51, -0.13, "Europe/London", 0, 11),
    ("New York", "United States", 40.71, -74.01, "America/New_York", -5, 12),
    ("Tokyo", "Japan", 35.68, 139.69, "Asia/Tokyo", 9, 16),
    ("Sydney", "Australia", -33.87, 151.21, "Australia/Sydney", 10, 19),
    ("Toronto", "Canada", 43.65, -79.38, "America/Toronto", -5, 8),
    ("Singapore", "Singapore", 1.35, 103.82, "Asia/Singapore", 8, 28),
    ("Cairo", "Egypt", 30.04, 31.24, "Africa/Cairo", 2, 22),
)
_FIRST = (
    "Ana",
    "Ben",
    "Chloe",
    "Diego",
    "Emma",
    "Farid",
    "Grace",
    "Hiro",
    "Ines",
    "Jonas",
    "Kira",
    "Liam",
    "Maya",
    "Nils",
    "Olga",
    "Pedro",
    "Quinn",
    "Rosa",
    "Sami",
    "Tara",
    "Uma",
    "Victor",
    "Wen",
    "Yara",
)
_LAST = (
    "Silva",
    "Martin",
    "Keller",
    "Rossi",
    "Novak",
    "Okafor",
    "Tanaka",
    "Haddad",
    "Larsen",
    "Moreau",
    "Costa",
    "Berg",
    "Ivanova",
    "Nguyen",
    "Schmidt",
    "Duarte",
)
_SUBJECTS = (
    "Quarterly report",
    "Team offsite",
    "Invoice 2231",
    "Project Falcon kickoff",
    "Lunch on Friday",
    "Contract renewal",
    "Budget review",
    "Conference travel",
    "Server migration",
    "Design feedback",
    "Hiring plan",
    "Customer visit",
)
_EVENT_TITLES = (
    "Standup",
    "1:1 with manager",
    "Dentist",
    "Budget review",
    "Gym",
    "Product demo",
    "Yoga class",
    "Client call",
    "Planning session",
    "Code review",
)
_PLACE_WORDS = {
    "restaurant": ("Bistro", "Trattoria", "Kitchen", "Grill", "Tavern"),
    "cafe": ("Coffee House", "Espresso Bar", "Tea Room"),
    "museum": ("Museum of Art", "History Museum", "Science Center"),
    "hotel": ("Grand Hotel", "Inn", "Suites"),
    "pharmacy": ("Pharmacy", "Chemist"),
    "park": ("Gardens", "Park"),
}
_ADJ = ("Blue", "Golden", "Old Town", "Riverside", "Royal", "Little", "Green", "Harbor", "Central", "Sunny")
_PRODUCTS = {
    "electronics": (
        ("Wireless Earbuds", 59),
        ("USB-C Charger", 25),
        ("Mechanical Keyboard", 89),
        ("4K Monitor", 329),
        ("Noise-Cancelling Headphones", 199),
        ("Portable SSD 1TB", 109),
    ),
    "books": (
        ("Python Cookbook", 45),
        ("Field Guide to Birds", 28),
        ("World Atlas", 35),
        ("Mystery Novel Box Set", 52),
    ),
    "home": (("Espresso Machine", 249), ("Desk Lamp", 39), ("Cast Iron Pan", 42), ("Air Purifier", 159)),
    "sports": (("Yoga Mat", 29), ("Running Shoes", 119), ("Water Bottle", 18), ("Tennis Racket", 139)),
    "toys": (("Building Blocks Set", 64), ("Puzzle 1000 pieces", 22), ("Remote Control Car", 79)),
}
_AIRLINES = ("SkyLark", "Atlantic Air", "Nordwind", "Pacific Wings", "Iberia Connect", "Sunline")
_RATES = {"USD": 1.0, "EUR": 1.08, "GBP": 1.27, "JPY": 0.0067, "CAD": 0.74, "AUD": 0.66, "CHF": 1.13}
_STOCKS = ("ACME", "GLOBX", "INITK", "UMBRL", "STARK", "WAYNE", "HOOLI", "PIEDP")
_FILES = (
    ("docs/meeting_notes.md", "# Meeting notes\nDecided to ship the beta on the 20th. Owners: design, QA."),
    ("docs/packing_list.txt", "passport\ncharger\nrain jacket\nheadphones"),
    ("docs/budget_2025.csv", "item,amount\ntravel,4200\nsoftware,1800\nhardware,3500"),
    ("projects/falcon/readme.md", "Project Falcon: migrate billing to the new platform by Q3."),
    ("projects/falcon/todo.txt", "- write migration plan\n- book kickoff room\n- invite stakeholders"),
    ("personal/recipes/pancakes.txt", "flour 200g, milk 300ml, 2 eggs, pinch of salt"),
    ("personal/journal.txt", "Started learning Portuguese. Need to practise every day."),
    ("reports/q1_sales.txt", "Q1 sales grew 12% over Q4, led by the electronics category."),
)


def _person(rng: random.Random, used: set[str]) -> str:
    while True:
        name = f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"
        if name not in used:
            used.add(name)
            return name


def _email_of(name: str) -> str:
    return name.lower().replace(" ", ".") + "@example.com"


def _time(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def create_state(seed: int) -> WorldState:
    """The initial world for ``seed``."""
    rng = random.Random(seed)
    today = dt.date(2025, 1, 6) + dt.timedelta(days=rng.randint(0, 300))
    day = lambda offset: (today + dt.timedelta(days=offset)).isoformat()  # noqa: E731
    used: set[str] = set()
    owner = _person(rng, used)
    state = WorldState(seed=seed, today=today.isoformat(), owner_name=owner, owner_email=_email_of(owner))
    for name, country, lat, lon, tz, off, temp in CITIES:
        state.cities[name] = City(
            name=name,
            country=country,
            latitude=lat,
            longitude=lon,
            timezone=tz,
            utc_offset=off,
            climate_c=temp + rng.uniform(-4, 4),
        )
    city_names = list(state.cities)
    for _ in range(14):
        name = _person(rng, used)
        cid = state.next_id("C")
        state.contacts[cid] = Contact(
            contact_id=cid,
            name=name,
            email=_email_of(name),
            phone=f"+1-555-{rng.randint(1000, 9999)}",
            city=rng.choice(city_names),
        )
    contacts = list(state.contacts.values())
    for i in range(18):
        sender = rng.choice(contacts)
        eid = state.next_id("M")
        state.emails[eid] = Email(
            email_id=eid,
            sender=sender.email,
            to=[state.owner_email],
            subject=rng.choice(_SUBJECTS),
            date=day(-rng.randint(0, 20)),
            body=f"Hi {owner.split()[0]}, a note about this from {sender.name}.",
            read=i % 3 == 0,
        )
    for _ in range(12):
        start = rng.choice(range(8 * 60, 17 * 60, 30))
        eid = state.next_id("EV")
        state.events[eid] = Event(
            event_id=eid,
            title=rng.choice(_EVENT_TITLES),
            date=day(rng.randint(0, 10)),
            start_time=_time(start),
            end_time=_time(start + rng.choice((30, 60, 90))),
            location=rng.choice(("Room 2", "Online", "Office", "")),
        )
    for path, content in _FILES:
        state.files[path] = File(path=path, content=content, modified=day(-rng.randint(1, 60)))
    for city in city_names:
        for category, words in _PLACE_WORDS.items():
            for _ in range(2 if category in ("restaurant", "cafe") else 1):
                pid = state.next_id("P")
                state.places[pid] = Place(
                    place_id=pid,
                    name=f"{rng.choice(_ADJ)} {rng.choice(words)}",
                    city=city,
                    category=category,
                    rating=round(rng.uniform(3.2, 4.9), 1),
                    address=f"{rng.randint(1, 200)} {rng.choice(_LAST)} Street, {city}",
                    price_level=rng.randint(1, 4),
                )
    for label, currency in (("Checking", "USD"), ("Savings", "USD"), ("Travel", "EUR"), ("Business", "GBP")):
        aid = state.next_id("A")
        state.accounts[aid] = Account(
            account_id=aid, name=label, currency=currency, balance=round(rng.uniform(2500, 9000), 2)
        )
        for _ in range(3):
            state.transactions.append(
                Transaction(
                    transaction_id=state.next_id("T"),
                    account_id=aid,
                    date=day(-rng.randint(1, 30)),
                    amount=-round(rng.uniform(5, 150), 2),
                    description=rng.choice(("Groceries", "Coffee", "Taxi", "Books")),
                )
            )
    state.rates_to_usd = dict(_RATES)
    state.stocks = {s: round(rng.uniform(20, 400), 2) for s in _STOCKS}
    for _ in range(60):
        origin, dest = rng.sample(city_names, 2)
        dep = rng.choice(range(6 * 60, 21 * 60, 15))
        fid = state.next_id("FL")
        state.flights[fid] = Flight(
            flight_id=fid,
            airline=rng.choice(_AIRLINES),
            origin=origin,
            destination=dest,
            date=day(rng.randint(1, 21)),
            depart_time=_time(dep),
            arrive_time=_time(min(dep + rng.randint(60, 300), 23 * 60 + 59)),
            cabin=rng.choice(("economy", "economy", "premium", "business")),
            price=float(rng.randint(60, 900)),
            seats_left=rng.randint(1, 9),
        )
    for city in city_names:
        for _ in range(3):
            hid = state.next_id("H")
            state.hotels[hid] = Hotel(
                hotel_id=hid,
                name=f"{rng.choice(_ADJ)} {rng.choice(_PLACE_WORDS['hotel'])}",
                city=city,
                stars=rng.randint(2, 5),
                price_per_night=float(rng.randint(60, 380)),
                rooms_left=rng.randint(1, 12),
            )
    for category, items in _PRODUCTS.items():
        for name, price in items:
            pid = state.next_id("SKU")
            state.products[pid] = Product(
                product_id=pid,
                name=name,
                category=category,
                price=round(price * rng.uniform(0.85, 1.15), 2),
                stock=rng.randint(0, 40),
                rating=round(rng.uniform(3.0, 5.0), 1),
            )
    for title in ("Renew passport", "Call the plumber", "Prepare slides", "Buy a birthday gift"):
        tid = state.next_id("TD")
        state.todos[tid] = Todo(
            todo_id=tid,
            title=title,
            due_date=day(rng.randint(1, 14)),
            priority=rng.choice(("low", "medium", "high")),
        )
    return state
