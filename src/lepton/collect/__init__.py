"""Everything with side effects on the process or the driver: backends and context sources."""
