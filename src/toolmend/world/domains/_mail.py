"""Mail: search, read, send, reply to and file emails in the owner's mailbox."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from toolmend.world._state import Email, WorldState
from toolmend.world.domains._base import WORLD_TOOLS, WRITES, EmailAddress, Limit, fail, not_found

Folder = Literal["inbox", "archive", "sent", "spam", "trash"]


class EmailSummary(BaseModel):
    email_id: str
    sender: str
    subject: str
    date: str
    read: bool


class EmailList(BaseModel):
    emails: list[EmailSummary]
    count: int


class SentEmail(BaseModel):
    email_id: str
    status: Literal["sent"]
    recipients: list[str]


class MovedEmail(BaseModel):
    email_id: str
    folder: Folder


def _summary(e: Email) -> EmailSummary:
    return EmailSummary(email_id=e.email_id, sender=e.sender, subject=e.subject, date=e.date, read=e.read)


@WORLD_TOOLS.tool
def mail_search(
    state: WorldState,
    query: str = "",
    folder: Folder = "inbox",
    unread_only: bool = False,
    limit: Limit = 10,
) -> EmailList:
    """Search the mailbox; newest first.

    Args:
        query: Words to match in the subject, the sender address or the body (case-insensitive);
            empty matches every email.
        folder: Folder to search.
        unread_only: Only return emails not yet read.
        limit: Maximum number of emails to return.
    """
    q = query.lower().strip()
    hits = [
        e
        for e in state.emails.values()
        if e.folder == folder
        and (not unread_only or not e.read)
        and (not q or q in e.subject.lower() or q in e.sender.lower() or q in e.body.lower())
    ]
    hits.sort(key=lambda e: (e.date, e.email_id), reverse=True)
    return EmailList(emails=[_summary(e) for e in hits[:limit]], count=len(hits))


@WORLD_TOOLS.tool
def mail_read(state: WorldState, email_id: str) -> Email:
    """Open an email and mark it as read.

    Args:
        email_id: Id of the email, as returned by mail_search (e.g. "M0003").
    """
    email = state.emails.get(email_id) or not_found("email", email_id)
    if not email.read:
        email.read = True
        state.touch()
    return email


@WORLD_TOOLS.tool(metadata=WRITES)
def mail_send(
    state: WorldState,
    to: Annotated[list[EmailAddress], Field(min_length=1, max_length=20)],
    subject: Annotated[str, Field(min_length=1, max_length=200)],
    body: str,
    cc: list[EmailAddress] | None = None,
) -> SentEmail:
    """Send an email from the owner's address.

    Args:
        to: Recipient email addresses.
        subject: Subject line.
        body: Plain-text body.
        cc: Addresses to copy.
    """
    recipients = [*to, *(cc or [])]
    eid = state.next_id("M")
    state.emails[eid] = Email(
        email_id=eid,
        sender=state.owner_email,
        to=recipients,
        subject=subject,
        body=body,
        date=state.today,
        folder="sent",
        read=True,
    )
    state.touch()
    return SentEmail(email_id=eid, status="sent", recipients=recipients)


@WORLD_TOOLS.tool(metadata=WRITES)
def mail_reply(state: WorldState, email_id: str, body: Annotated[str, Field(min_length=1)]) -> SentEmail:
    """Reply to the sender of an email.

    Args:
        email_id: Id of the email to answer.
        body: Text of the reply.
    """
    original = state.emails.get(email_id) or not_found("email", email_id)
    if original.sender == state.owner_email:
        fail("invalid_operation", f"email {email_id!r} was sent by you; reply to a received email")
    subject = original.subject if original.subject.startswith("Re: ") else f"Re: {original.subject}"
    return mail_send(state, to=[original.sender], subject=subject, body=body)


@WORLD_TOOLS.tool(metadata=WRITES)
def mail_move(state: WorldState, email_id: str, folder: Folder) -> MovedEmail:
    """Move an email to another folder.

    Args:
        email_id: Id of the email.
        folder: Destination folder.
    """
    email = state.emails.get(email_id) or not_found("email", email_id)
    email.folder = folder
    state.touch()
    return MovedEmail(email_id=email_id, folder=folder)
