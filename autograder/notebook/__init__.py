"""Notebooks as the grader reads them: the solution source, a submission merged with it, cell kinds, the statements a run needs."""
