"""The state of the built-in tool world: plain pydantic records, no behaviour.

Every tool in :mod:`toolmend.world.domains` reads and writes one :class:`WorldState`. Each
write bumps ``version``, which the environment mixes into its cache keys so that reads made
after a write are never answered from a stale cache entry.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

__all__ = [
    "Account",
    "Booking",
    "CartItem",
    "City",
    "Contact",
    "Email",
    "Event",
    "File",
    "Flight",
    "Hotel",
    "Order",
    "Place",
    "Product",
    "Todo",
    "Transaction",
    "WorldState",
]


class City(BaseModel):
    name: str
    country: str
    latitude: float
    longitude: float
    timezone: str
    utc_offset: float
    climate_c: float
    """Typical temperature; the weather tools vary around it deterministically."""


class Contact(BaseModel):
    contact_id: str
    name: str
    email: str
    phone: str
    city: str


class Email(BaseModel):
    email_id: str
    sender: str
    to: list[str]
    subject: str
    body: str
    date: str
    folder: str = "inbox"
    read: bool = False


class Event(BaseModel):
    event_id: str
    title: str
    date: str
    start_time: str
    end_time: str
    location: str = ""
    attendees: list[str] = Field(default_factory=list)


class File(BaseModel):
    path: str
    content: str
    modified: str


class Place(BaseModel):
    place_id: str
    name: str
    city: str
    category: str
    rating: float
    address: str
    price_level: int


class Account(BaseModel):
    account_id: str
    name: str
    currency: str
    balance: float


class Transaction(BaseModel):
    transaction_id: str
    account_id: str
    date: str
    amount: float
    """Negative for money going out."""
    description: str


class Flight(BaseModel):
    flight_id: str
    airline: str
    origin: str
    destination: str
    date: str
    depart_time: str
    arrive_time: str
    cabin: str
    price: float
    seats_left: int


class Hotel(BaseModel):
    hotel_id: str
    name: str
    city: str
    stars: int
    price_per_night: float
    rooms_left: int


class Booking(BaseModel):
    booking_id: str
    kind: str
    item_id: str
    guest_name: str
    total_price: float
    status: str = "confirmed"
    check_in: str = ""
    nights: int = 0


class Product(BaseModel):
    product_id: str
    name: str
    category: str
    price: float
    stock: int
    rating: float


class CartItem(BaseModel):
    product_id: str
    quantity: int


class Order(BaseModel):
    order_id: str
    items: list[CartItem]
    total: float
    status: str
    placed_on: str
    estimated_delivery: str


class Todo(BaseModel):
    todo_id: str
    title: str
    due_date: str | None = None
    priority: str = "medium"
    done: bool = False


class WorldState(BaseModel):
    """Everything the world's tools can see or change."""

    seed: int
    today: str
    owner_name: str
    owner_email: str
    version: int = 0
    cities: dict[str, City] = Field(default_factory=dict)
    contacts: dict[str, Contact] = Field(default_factory=dict)
    emails: dict[str, Email] = Field(default_factory=dict)
    events: dict[str, Event] = Field(default_factory=dict)
    files: dict[str, File] = Field(default_factory=dict)
    places: dict[str, Place] = Field(default_factory=dict)
    accounts: dict[str, Account] = Field(default_factory=dict)
    transactions: list[Transaction] = Field(default_factory=list)
    rates_to_usd: dict[str, float] = Field(default_factory=dict)
    stocks: dict[str, float] = Field(default_factory=dict)
    flights: dict[str, Flight] = Field(default_factory=dict)
    hotels: dict[str, Hotel] = Field(default_factory=dict)
    bookings: dict[str, Booking] = Field(default_factory=dict)
    products: dict[str, Product] = Field(default_factory=dict)
    cart: list[CartItem] = Field(default_factory=list)
    orders: dict[str, Order] = Field(default_factory=dict)
    todos: dict[str, Todo] = Field(default_factory=dict)
    counters: dict[str, int] = Field(default_factory=dict)

    def next_id(self, prefix: str) -> str:
        """A fresh id such as ``"E0013"``; deterministic because counters live in the state."""
        n = self.counters.get(prefix, 0) + 1
        self.counters[prefix] = n
        return f"{prefix}{n:04d}"

    def touch(self) -> None:
        """Record a write."""
        self.version += 1
