"""A tool call, checked (phases 1 and 5): hints.py turns type hints into JSON Schema, the one
converter, for a tool's parameters and output= alike; schema.py reads a typed, documented function
once per run into the schema the model reads; validate.py checks a JSON value against a schema and
builds it back into its type, the one checker, which arguments.py applies to a call's arguments;
results.py calls the tool (an async one awaited) and fits what it returned for the model."""
