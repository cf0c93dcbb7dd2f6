"""What every layer uses: settings.py (each setting declared once, resolved once) with values.py
(how a setting's text becomes its value), ownfiles.py (what in the agent's folder nothing may
change) and terminal.py (what a person is shown, keys redacted, nothing hidden)."""
