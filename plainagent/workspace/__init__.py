"""The workspace on disk (phases 1 and 2): files.py confines every path and opens only regular
files in it; reading.py reads a file or a folder for the model; changes.py makes write_file's and
edit_file's changes, each kept for undo first; writes.py makes each write whole or not at all,
and swaps.py puts its new file in place (undo's exchanged, or moved aside, and looked at);
edits.py plans an exact replacement; undo.py keeps and takes back a run's changes, in the record
undo_record.py writes and reads, comparing with undo_state.py; a command's changes are kept in
store.py's content store (objects.py; packs.py, many at once) by walk.py's walk, recorded by
snapshot.py and put back by undo_steps.py."""
