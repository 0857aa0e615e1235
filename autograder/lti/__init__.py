"""The course as an LTI 1.3 Advantage tool (issue 40).

- :mod:`.store`: the tool's own folder: its private key (made once, mode 0600), the
  platforms registered with it, the line items it made, and grades not yet delivered.
- :mod:`.launch`: OIDC login initiation and the verified launch (pylti1p3), mapped to a user
  and an assignment; :mod:`.web`: the same as tornado routes, with the tool's JWKS.
- :mod:`.ags`: scores back into the LMS gradebook; :mod:`.nrps`: the course's roster.
- :mod:`.commands`: ``python -m autograder lti register|config|push`` and ``roster --lti``.
"""
