"""What a run leaves behind (beyond the tutorial): answer.py is what run() returns (the answer,
or a stop, with the run's totals); and, in the person's state folder for a command-line run,
transcript.py writes one JSON line per event, resume.py reads a transcript back for --continue,
listing.py lists a workspace's runs for --runs and picks the one --continue and --undo take,
forget.py removes old ones for --forget-runs."""
