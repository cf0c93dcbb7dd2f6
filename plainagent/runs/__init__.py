"""What a command-line run leaves behind: transcript.py writes one JSON line per event, resume.py
reads a transcript back for --continue."""
