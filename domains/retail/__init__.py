"""The retail domain: an online store's customer service (orders, returns, exchanges, payments)."""
