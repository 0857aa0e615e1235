"""What grading produces and what is made of it: records, feedback pages, late work, manual scores, reports, exports, the formgrader gradebook."""
