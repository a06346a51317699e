"""Contacts: the owner's address book."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from toolmend.world._state import Contact, WorldState
from toolmend.world.domains._base import WORLD_TOOLS, WRITES, EmailAddress, fail, not_found


class ContactList(BaseModel):
    contacts: list[Contact]
    count: int


@WORLD_TOOLS.tool
def contacts_search(state: WorldState, name: Annotated[str, Field(min_length=1)]) -> ContactList:
    """Find contacts whose name contains the given text (case-insensitive).

    Args:
        name: Full or partial name, e.g. "Rosa" or "Rosa Keller".
    """
    q = name.lower().strip()
    hits = [c for c in state.contacts.values() if q in c.name.lower()]
    return ContactList(contacts=hits, count=len(hits))


@WORLD_TOOLS.tool
def contacts_get(state: WorldState, contact_id: str) -> Contact:
    """Get one contact by id.

    Args:
        contact_id: Id of the contact (e.g. "C0004").
    """
    return state.contacts.get(contact_id) or not_found("contact", contact_id)


@WORLD_TOOLS.tool
def contacts_list_by_city(state: WorldState, city: str) -> ContactList:
    """List the contacts who live in a city.

    Args:
        city: City name, e.g. "Berlin".
    """
    hits = [c for c in state.contacts.values() if c.city.lower() == city.lower()]
    return ContactList(contacts=hits, count=len(hits))


@WORLD_TOOLS.tool(metadata=WRITES)
def contacts_add(
    state: WorldState,
    name: Annotated[str, Field(min_length=1)],
    email: EmailAddress,
    phone: Annotated[str, Field(pattern=r"^\+?[0-9 \-]{6,20}$")] = "",
    city: str = "",
) -> Contact:
    """Add a contact to the address book.

    Args:
        name: Full name.
        email: Email address.
        phone: Phone number with optional country code, e.g. "+1-555-0100".
        city: Home city.
    """
    if any(c.email == email for c in state.contacts.values()):
        fail("conflict", f"a contact with email {email!r} already exists", status=409)
    cid = state.next_id("C")
    state.contacts[cid] = Contact(contact_id=cid, name=name, email=email, phone=phone, city=city)
    state.touch()
    return state.contacts[cid]
