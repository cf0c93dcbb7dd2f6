"""What a command-line run leaves behind, in the person's state folder: transcript.py writes one
JSON line per event, resume.py reads a transcript back for --continue, listing.py lists a
workspace's runs for --runs and picks the one --continue and --undo take."""
