# nbgrader's exchange for everyone on the hub (docs/homework.md): install as
# /etc/jupyter/nbgrader_config.py. The exchange folder must exist, owned by root, mode
# 1777 (everyone writes, nobody removes another's files):
#
#   mkdir -p /srv/nbgrader/exchange && chmod 1777 /srv/nbgrader/exchange
#
# The instructor's course folder (with release/<assignment>/ and, after collect,
# submitted/<student>/<assignment>/) is the folder they run `nbgrader` in.

import os

c = get_config()  # noqa: F821 (nbgrader defines it)

c.CourseDirectory.course_id = os.environ.get("NBGRADER_COURSE", "transformers")
c.Exchange.root = os.environ.get("NBGRADER_EXCHANGE", "/srv/nbgrader/exchange")
