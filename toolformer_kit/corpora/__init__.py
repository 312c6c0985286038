"""The recipes' corpora (real text the evaluation does not ask about) and the campaigns' seeded selections of it."""
