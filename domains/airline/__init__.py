"""The airline domain: Skylark Air's reservation desk (bookings, changes, cancellations, baggage,
compensation), with a generated DB (`db.py`) and a compositional task generator (`taskgen.py`)."""
