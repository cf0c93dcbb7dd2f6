"""The model beyond phase 0: client.py builds the SDK client with the request's deadline, retries.py
asks again for the free plan (malformed calls, short rate limits), context.py writes the system
prompt and keeps to the budget, output.py asks for the answer as output= wants it (structured
output), errors.py words what only a person can fix."""
