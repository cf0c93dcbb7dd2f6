"""What every layer uses (beyond the tutorial): settings.py (each setting declared once, resolved
once) with values.py (how a setting's text becomes its value), ownfiles.py (what in the agent's
folder nothing may change) with startup.py (a place its Python reads code from at its start in
the workspace stops it), ownmodules.py (the tutorial's own files found by where they are),
statefolder.py (where the command line keeps runs, outside every project); screen.py (what a
person is shown, nothing hidden), redaction.py (no key in what is written or shown) and
keyboard.py (what a person types, read so nothing typed ahead answers); for arun(): awaiting.py
(the run in a thread of its own, async functions awaited on the caller's loop) and stop.py (where
a cancelled run stops, as on Ctrl-C)."""
