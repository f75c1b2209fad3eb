from decimal import ROUND_HALF_UP, Decimal

lines = [("widget", 3, Decimal("2.50")), ("gizmo", 1, Decimal("99.99")), ("gadget", 2, Decimal("10.00"))]
subtotal = sum(q * p for _, q, p in lines)
tax = (subtotal * Decimal("0.0825")).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
for name, q, p in lines:
    print(f"{name:<8}{q:>3} x {p:>6} = {q * p:>8}")
print("subtotal", subtotal, "tax", tax, "total", subtotal + tax)
