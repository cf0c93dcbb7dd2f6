"""The model beyond the tutorial's phase 0: deadline.py keeps a request and its retries
within AGENT_TIMEOUT, request.py says what options= may add to a request and checks a reply's
shape, retries.py asks again for the free plan (malformed calls, short rate limits), streaming.py
puts a streamed reply together, context.py writes the system prompt and keeps to the budget,
output.py asks for the answer as output= wants it (structured output), errors.py words what only a
person can fix."""
