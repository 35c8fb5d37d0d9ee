"""The telecom domain (dual control): Kestrel Mobile's technical support desk. The agent works the carrier's
back end; the user holds the phone. Generated DB (`db.py`) and fault-atom task generator (`taskgen.py`)."""
