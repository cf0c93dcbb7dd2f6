"""What every layer uses: settings.py (each setting declared once, resolved once), ownfiles.py (what
in the agent's folder nothing may change) and terminal.py (what a person is shown, keys redacted,
nothing hidden)."""
