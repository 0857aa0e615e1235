"""Grading a whole class: discovery, sharding, the pool of grading processes, progress, resume, and joining shards."""
