"""Finance: the owner's bank accounts, transfers, exchange rates and stock quotes."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from toolmend.world._state import Account, Transaction, WorldState
from toolmend.world.domains._base import WORLD_TOOLS, WRITES, Date, Limit, fail, noise, not_found

Currency = Literal["USD", "EUR", "GBP", "JPY", "CAD", "AUD", "CHF"]
Amount = Annotated[float, Field(gt=0, le=1_000_000, description="A positive amount of money.")]


class AccountList(BaseModel):
    accounts: list[Account]
    count: int


class Balance(BaseModel):
    account_id: str
    balance: float
    currency: Currency


class Transfer(BaseModel):
    transaction_id: str
    from_account_id: str
    to_account_id: str
    amount: float
    currency: Currency
    from_balance: float


class TransactionList(BaseModel):
    transactions: list[Transaction]
    count: int


class Conversion(BaseModel):
    amount: float
    from_currency: Currency
    to_currency: Currency
    rate: float
    converted: float


class Quote(BaseModel):
    symbol: str
    price: float
    change_pct: float
    currency: Literal["USD"]


def _account(state: WorldState, account_id: str) -> Account:
    return state.accounts.get(account_id) or not_found("account", account_id)


def _rate(state: WorldState, src: str, dst: str) -> float:
    return state.rates_to_usd[src] / state.rates_to_usd[dst]


@WORLD_TOOLS.tool
def finance_list_accounts(state: WorldState) -> AccountList:
    """List the owner's bank accounts with their balances."""
    accounts = list(state.accounts.values())
    return AccountList(accounts=accounts, count=len(accounts))


@WORLD_TOOLS.tool
def finance_get_balance(state: WorldState, account_id: str) -> Balance:
    """Current balance of an account.

    Args:
        account_id: Id of the account (e.g. "A0001").
    """
    a = _account(state, account_id)
    return Balance(account_id=a.account_id, balance=a.balance, currency=a.currency)


def charge(state: WorldState, account_id: str, amount_usd: float, description: str) -> Account:
    """Take a USD amount from an account in its own currency; shared with travel and shopping."""
    a = _account(state, account_id)
    cost = round(amount_usd * _rate(state, "USD", a.currency), 2)
    if cost > a.balance:
        fail(
            "insufficient_funds",
            f"account {account_id} holds {a.balance:.2f} {a.currency}; {cost:.2f} {a.currency} is needed",
            status=402,
        )
    a.balance = round(a.balance - cost, 2)
    state.transactions.append(
        Transaction(
            transaction_id=state.next_id("T"),
            account_id=account_id,
            date=state.today,
            amount=-cost,
            description=description,
        )
    )
    state.touch()
    return a


@WORLD_TOOLS.tool(metadata=WRITES)
def finance_transfer(
    state: WorldState,
    from_account_id: str,
    to_account_id: str,
    amount: Amount,
    memo: Annotated[str, Field(max_length=140)] = "",
) -> Transfer:
    """Move money between two of the owner's accounts; the amount is in the source account's currency.

    Args:
        from_account_id: Account to take the money from.
        to_account_id: Account to put it in (converted at today's rate).
        amount: How much to move.
        memo: Note shown on both statements.
    """
    src, dst = _account(state, from_account_id), _account(state, to_account_id)
    if src.account_id == dst.account_id:
        fail("invalid_operation", "cannot transfer to the same account")
    if amount > src.balance:
        fail(
            "insufficient_funds",
            f"account {src.account_id} holds {src.balance:.2f} {src.currency}",
            status=402,
        )
    src.balance = round(src.balance - amount, 2)
    dst.balance = round(dst.balance + amount * _rate(state, src.currency, dst.currency), 2)
    tid = state.next_id("T")
    for account, value in ((src, -amount), (dst, amount * _rate(state, src.currency, dst.currency))):
        state.transactions.append(
            Transaction(
                transaction_id=tid,
                account_id=account.account_id,
                date=state.today,
                amount=round(value, 2),
                description=memo or "Transfer",
            )
        )
    state.touch()
    return Transfer(
        transaction_id=tid,
        from_account_id=src.account_id,
        to_account_id=dst.account_id,
        amount=amount,
        currency=src.currency,
        from_balance=src.balance,
    )


@WORLD_TOOLS.tool
def finance_transactions(
    state: WorldState, account_id: str, since: Date | None = None, limit: Limit = 10
) -> TransactionList:
    """Recent transactions of an account, newest first.

    Args:
        account_id: Id of the account.
        since: Only transactions on or after this date.
        limit: Maximum number of transactions.
    """
    _account(state, account_id)
    hits = [
        t for t in state.transactions if t.account_id == account_id and (since is None or t.date >= since)
    ]
    hits.sort(key=lambda t: (t.date, t.transaction_id), reverse=True)
    return TransactionList(transactions=hits[:limit], count=len(hits))


@WORLD_TOOLS.tool
def finance_convert_currency(
    state: WorldState, amount: Amount, from_currency: Currency, to_currency: Currency
) -> Conversion:
    """Convert an amount between currencies at today's rate.

    Args:
        amount: Amount in the source currency.
        from_currency: ISO code of the source currency.
        to_currency: ISO code of the target currency.
    """
    rate = round(_rate(state, from_currency, to_currency), 6)
    return Conversion(
        amount=amount,
        from_currency=from_currency,
        to_currency=to_currency,
        rate=rate,
        converted=round(amount * rate, 2),
    )


@WORLD_TOOLS.tool
def finance_stock_quote(state: WorldState, symbol: Annotated[str, Field(pattern=r"^[A-Z]{1,5}$")]) -> Quote:
    """Latest price of a stock.

    Args:
        symbol: Ticker symbol in capitals, e.g. "ACME".
    """
    if symbol not in state.stocks:
        fail("not_found", f"unknown ticker {symbol!r}", status=404)
    change = round((noise(state.seed, symbol, state.today) - 0.5) * 6, 2)
    return Quote(
        symbol=symbol,
        price=round(state.stocks[symbol] * (1 + change / 100), 2),
        change_pct=change,
        currency="USD",
    )
