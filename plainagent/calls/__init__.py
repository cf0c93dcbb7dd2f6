"""A tool call, checked (phases 1 and 5): schema.py turns a typed, documented function into the
schema the model reads, once per run; arguments.py checks a call's arguments against its hints and
turns them into what the hints name; results.py calls the tool (an async one awaited) and fits what
it returned for the model. For structured output: hints.py turns Python types into JSON Schema and
builds values back into them, validate.py checks a JSON value against a schema, each problem at its
path."""
