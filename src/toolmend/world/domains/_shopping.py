"""Shopping: a product catalogue, a cart, checkout paid from the owner's accounts, and orders."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from toolmend.world._state import CartItem, Order, Product, WorldState
from toolmend.world.domains._base import WORLD_TOOLS, WRITES, Limit, fail, not_found
from toolmend.world.domains._finance import charge

Category = Literal["electronics", "books", "home", "sports", "toys"]
Sort = Literal["relevance", "price_asc", "price_desc", "rating"]


class ShippingAddress(BaseModel):
    street: Annotated[str, Field(min_length=1)]
    city: Annotated[str, Field(min_length=1)]
    postal_code: Annotated[str, Field(pattern=r"^[A-Za-z0-9 \-]{3,10}$")]


class ProductList(BaseModel):
    products: list[Product]
    count: int


class Cart(BaseModel):
    items: list[CartItem]
    item_count: int
    total: float


class Receipt(BaseModel):
    order_id: str
    total: float
    status: Literal["placed"]
    estimated_delivery: str


def _cart(state: WorldState) -> Cart:
    total = sum(state.products[i.product_id].price * i.quantity for i in state.cart)
    return Cart(items=list(state.cart), item_count=sum(i.quantity for i in state.cart), total=round(total, 2))


@WORLD_TOOLS.tool
def shop_search_products(
    state: WorldState,
    query: str = "",
    category: Category | None = None,
    max_price: Annotated[float, Field(gt=0)] | None = None,
    sort: Sort = "relevance",
    limit: Limit = 10,
) -> ProductList:
    """Search the catalogue.

    Args:
        query: Words to find in product names (case-insensitive); empty matches all.
        category: Only this category.
        max_price: Highest acceptable price in USD.
        sort: Result order.
        limit: Maximum number of products.
    """
    words = query.lower().split()
    hits = [
        p
        for p in state.products.values()
        if all(w in p.name.lower() for w in words)
        and (category is None or p.category == category)
        and (max_price is None or p.price <= max_price)
    ]
    keys = {
        "price_asc": lambda p: (p.price, p.product_id),
        "price_desc": lambda p: (-p.price, p.product_id),
        "rating": lambda p: (-p.rating, p.product_id),
        "relevance": lambda p: (p.product_id,),
    }
    hits.sort(key=keys[sort])
    return ProductList(products=hits[:limit], count=len(hits))


@WORLD_TOOLS.tool
def shop_get_product(state: WorldState, product_id: str) -> Product:
    """Details and stock of a product.

    Args:
        product_id: Id of the product (e.g. "SKU0004").
    """
    return state.products.get(product_id) or not_found("product", product_id)


@WORLD_TOOLS.tool(metadata=WRITES)
def shop_add_to_cart(
    state: WorldState, product_id: str, quantity: Annotated[int, Field(ge=1, le=10)] = 1
) -> Cart:
    """Put a product in the cart.

    Args:
        product_id: Id of the product.
        quantity: How many.
    """
    p = state.products.get(product_id) or not_found("product", product_id)
    in_cart = sum(i.quantity for i in state.cart if i.product_id == product_id)
    if p.stock < in_cart + quantity:
        fail("out_of_stock", f"only {p.stock} of {p.name!r} in stock", status=409, available=p.stock)
    state.cart.append(CartItem(product_id=product_id, quantity=quantity))
    state.touch()
    return _cart(state)


@WORLD_TOOLS.tool
def shop_view_cart(state: WorldState) -> Cart:
    """What is in the cart and what it costs."""
    return _cart(state)


@WORLD_TOOLS.tool(metadata=WRITES)
def shop_checkout(state: WorldState, payment_account_id: str, shipping_address: ShippingAddress) -> Receipt:
    """Buy everything in the cart, paying from an account, and ship it.

    Args:
        payment_account_id: Account to charge (e.g. "A0001").
        shipping_address: Where to deliver.
    """
    if not state.cart:
        fail("empty_cart", "the cart is empty; add products first")
    cart = _cart(state)
    charge(state, payment_account_id, cart.total, f"Order to {shipping_address.city}")
    for item in state.cart:
        state.products[item.product_id].stock -= item.quantity
    oid = state.next_id("O")
    delivery = (dt.date.fromisoformat(state.today) + dt.timedelta(days=4)).isoformat()
    state.orders[oid] = Order(
        order_id=oid,
        items=list(state.cart),
        total=cart.total,
        status="placed",
        placed_on=state.today,
        estimated_delivery=delivery,
    )
    state.cart.clear()
    state.touch()
    return Receipt(order_id=oid, total=cart.total, status="placed", estimated_delivery=delivery)


@WORLD_TOOLS.tool
def shop_order_status(state: WorldState, order_id: str) -> Order:
    """Status of an order.

    Args:
        order_id: Id of the order (e.g. "O0001").
    """
    return state.orders.get(order_id) or not_found("order", order_id)
