"""Phase 2, around the loop: gate.py is the one call a tool call passes before it runs (what needs a
person, asked; what they refused, refused); prompt.py asks at the terminal; previews.py shows
exactly what would change."""
