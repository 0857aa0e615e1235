"""LMS downloads built the way each LMS builds them, from its own source code.

One module per LMS (:mod:`lms.canvas`, :mod:`lms.moodle`, :mod:`lms.gradescope`); each
docstring cites, for every rule it follows, the file and function of the LMS's source
it comes from. The tests of ``collect`` use these instead of zips made by hand, so they
check what the LMSs really write (file names, folders, and the zip entries' times: both
Canvas and Moodle stamp every entry with the time of the download, not of the upload).
"""
