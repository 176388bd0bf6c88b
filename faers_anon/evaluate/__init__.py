"""``faers-anon evaluate``: every model and method on every quarter and θ* setting (SPEC §7–§9)."""
