"""Plots and animations (matplotlib, Agg backend: no screen needed)."""
