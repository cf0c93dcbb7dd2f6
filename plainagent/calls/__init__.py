"""A tool call, checked (phases 1 and 5): schema.py turns a typed, documented function into the
schema the model reads, and checks a call's arguments against it; results.py fits what the tool
returned for the model."""
