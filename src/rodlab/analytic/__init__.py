"""Closed-form and independently computed references (never using the simulators under test)."""
